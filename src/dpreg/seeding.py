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


def as_generator(rng: object) -> np.random.Generator:
    """Normalise ``rng`` once with :func:`numpy.random.default_rng`.

    Accepts ``None`` (fresh OS entropy), an int seed, a ``SeedSequence``,
    a ``BitGenerator`` or a ``Generator`` (returned unchanged).
    """
    return np.random.default_rng(rng)  # type: ignore[arg-type]
