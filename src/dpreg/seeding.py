"""Deterministic random streams (scientific-python SPEC 7).

Every random draw in the package comes from a :class:`numpy.random.Generator`
passed as the keyword-only ``rng``.  The pipeline derives those generators
from ``np.random.SeedSequence([root_seed, *stable ids])`` where each stable id
is computed from a *name* (dataset, variant, algorithm, ε value) with a fixed
cryptographic hash.  Python's built-in :func:`hash` is salted per process and is
never used.  Because the key of a stream is made of names and not of positions,
a trial's noise does not depend on what else is configured, on job order or on
the number of cores.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

from dpreg._validation import DPRegError

__all__ = ["as_generator", "seed_sequence", "stable_id"]


@lru_cache(maxsize=65536, typed=True)
def stable_id(value: object) -> int:
    """A 32-bit integer id of ``value`` that is the same in every process.

    Floats are keyed by ``repr`` so that ``0.1`` and ``0.10000000000000002``
    differ, while ``1`` and ``1.0`` coincide (both map to ``'1.0'``).
    """
    if isinstance(value, bool):
        text = f"bool:{value}"
    elif isinstance(value, int | float | np.integer | np.floating):
        text = f"num:{float(value)!r}"
    else:
        text = f"str:{value}"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "little")


def seed_sequence(root_seed: int, *keys: object) -> np.random.SeedSequence:
    """``SeedSequence([root_seed, stable_id(k) for k in keys])``."""
    return np.random.SeedSequence([int(root_seed), *(stable_id(k) for k in keys)])


def as_generator(rng: object, name: str = "rng") -> np.random.Generator:
    """Normalise ``rng`` once with :func:`numpy.random.default_rng` (SPEC 7).

    Every public function that takes ``rng`` (or an estimator's
    ``random_state``) calls this once at its boundary and passes the
    resulting :class:`numpy.random.Generator` on.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence, BitGenerator or Generator
        ``None`` draws fresh OS entropy (not reproducible); an int ``>= 0`` or
        a ``SeedSequence`` seeds a new ``Generator``; a ``BitGenerator`` is
        wrapped; a ``Generator`` is returned unchanged (so the caller's stream
        advances).
    name : str
        The parameter name used in the error message.

    Raises
    ------
    DPRegError
        For any other type (floats, bools, strings, legacy ``RandomState``)
        or a negative seed.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence | np.random.BitGenerator):
        return np.random.default_rng(rng)
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise DPRegError(f"{name} must be a seed >= 0, got {rng!r}")
        return np.random.default_rng(int(rng))
    raise DPRegError(
        f"{name} must be None, an int seed >= 0, a numpy SeedSequence, BitGenerator or "
        f"Generator, got {type(rng).__name__} {rng!r}"
    )
