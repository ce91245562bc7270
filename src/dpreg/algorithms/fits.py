"""What fit and release functions are given and return, and the batched solves.

A release function gets a :class:`ReleaseContext`; a fit function (see
:mod:`dpreg.algorithms.base`) gets a :class:`FitOptions` and returns a :class:`FitResult` or, when its last step is one linear solve
per repeat and ``opts.solve`` is false, a :class:`PendingSolve`; the sweep
stacks the pending systems of a whole epsilon grid into one batched solve
(:func:`solve_batched`, :func:`_stack`).  :func:`draw_noise` is the one draw
of standard-normal noise blocks every fit uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from dpreg._validation import DPRegError
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = [
    "FitOptions",
    "FitResult",
    "PendingSolve",
    "ReleaseContext",
    "add_to_diagonal",
    "draw_noise",
    "finish",
    "solve_batched",
]


@dataclass(frozen=True)
class FitResult:
    """Coefficients of ``R`` repeats.

    Attributes
    ----------
    theta : ndarray, shape (R, d)
        Coefficients; NaN rows where the trial failed.
    lam : ndarray, shape (R,)
        The ridge parameter actually used (NaN where the algorithm has none).
    failed : ndarray of bool, shape (R,)
        Trials whose solve failed, gave non-finite coefficients, or whose
        algorithm declined to answer (e.g. a failed safety test).
    released : mapping or None
        With ``capture=True``: release name -> the noisy values of the ``R``
        repeats (leading axis ``R``), exactly as the fit used them.
    """

    theta: np.ndarray
    lam: np.ndarray
    failed: np.ndarray
    released: Mapping[str, np.ndarray] | None = None


class PendingSolve(NamedTuple):
    """Noisy systems ``A[r] theta = b[r]`` handed back for one stacked solve."""

    A: np.ndarray
    b: np.ndarray
    lam: np.ndarray
    released: Mapping[str, np.ndarray] | None = None


@dataclass(frozen=True)
class FitOptions:
    """Everything a fit function receives besides the statistics and releases."""

    rng: np.random.Generator | None
    size: int
    rho: float = 0.05
    xtx_offset: float = 1.0
    params: Mapping[str, Any] = field(default_factory=dict)
    rows: tuple[np.ndarray, np.ndarray] | None = None
    solve: bool = True
    capture: bool = False
    #: The entry's noise layout (:attr:`Algorithm.noise_kinds`), for :func:`draw_noise`.
    noise_kinds: tuple[str, ...] = ()
    #: Seed of the epsilon-free random step (:attr:`Algorithm.epsilon_free_step`);
    #: ``None``: that step draws from ``rng`` like everything else.
    shared_seed: np.random.SeedSequence | None = None
    #: Results of the epsilon-free step, shared by the fits of one grid call.
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class ReleaseContext:
    """The arguments of a release function (hashable, so release lists are cached).

    ``n`` is the number of training rows (``None`` where unknown: an
    algorithm whose calibration needs it then raises), ``params`` the
    resolved hyperparameters as sorted ``(key, value)`` pairs.
    """

    epsilon: float
    delta: float
    d: int
    bound_x: float = 1.0
    bound_y: float = 1.0
    rho: float = 0.05
    n: int | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, key: str) -> Any:
        return dict(self.params)[key]

    def need_n(self, algorithm: str) -> int:
        if self.n is None:
            raise DPRegError(f"{algorithm}: its calibration depends on n; pass n=")
        return int(self.n)


def solve_batched(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``A[r] theta[r] = b[r]`` for all ``r`` in one call.

    Falls back to one solve per repeat only when the batched call reports a
    singular matrix, to find which repeats failed.  Returns
    ``(theta, failed)``; failed rows of ``theta`` are NaN.
    """
    R, d = b.shape
    try:
        theta = np.linalg.solve(A, b[..., None])[..., 0]
        failed = np.zeros(R, dtype=bool)
    except np.linalg.LinAlgError:
        theta = np.full((R, d), np.nan)
        failed = np.zeros(R, dtype=bool)
        for r in range(R):
            try:
                theta[r] = np.linalg.solve(A[r], b[r])
            except np.linalg.LinAlgError:
                failed[r] = True
    bad = ~np.all(np.isfinite(theta), axis=1)
    failed |= bad
    theta[failed] = np.nan
    return theta, failed


def finish(
    A: np.ndarray,
    b: np.ndarray,
    lam: np.ndarray,
    opts: FitOptions,
    released: Mapping[str, np.ndarray] | None = None,
) -> FitResult | PendingSolve:
    """Solve the noisy systems now, or hand them back for one stacked solve."""
    rec = released if opts.capture else None
    if not opts.solve:
        return PendingSolve(A, b, lam, rec)
    theta, failed = solve_batched(A, b)
    return FitResult(theta, lam, failed, rec)


def add_to_diagonal(A: np.ndarray, value: float | np.ndarray) -> np.ndarray:
    """``A[r] + value[r] I`` in place for a stack ``A`` of shape ``(R, d, d)``; returns ``A``.

    ``value`` is a scalar or one value per matrix.
    """
    idx = np.arange(A.shape[-1])
    A[:, idx, idx] += np.asarray(value, dtype=float)[..., None] if np.ndim(value) else value
    return A


def draw_noise(
    kinds: Sequence[str],
    releases: Sequence[Release],
    d: int,
    *,
    rng: np.random.Generator,
    size: int,
) -> list[np.ndarray]:
    """The Gaussian noise of every release of one run, ``size`` repeats at once.

    Each repeat consumes one contiguous block of standard normals,
    ``[release 1 | release 2 | ...]`` in the order of ``releases``; ``kinds``
    says how each part is shaped (``scalar``, ``vector`` or a matrix kind of
    :func:`dpreg.privacy.mechanisms.matrix_from_normals`).  One generator, one call,
    repeat-major: the first ``R`` repeats do not change when ``size`` grows,
    and algorithms with the same ``kinds`` consume the same normals.

    Returns one array per release (``(size,)``, ``(size, d)`` or
    ``(size, d, d)``), each multiplied by its release's ``scale``.
    """
    return mech.normal_block_noise(
        tuple(kinds),
        [r.scale for r in releases],
        d,
        rng=as_generator(rng),
        size=int(size),
        releases=[r.name for r in releases],
    )


def _as_result(part: FitResult | PendingSolve) -> FitResult:
    if isinstance(part, FitResult):
        return part
    theta, failed = solve_batched(part.A, part.b)
    return FitResult(theta, part.lam, failed, part.released)


def _merge_released(parts: Sequence[FitResult | PendingSolve]) -> dict[str, np.ndarray] | None:
    recs = [p.released for p in parts]
    if any(r is None for r in recs):
        return None
    keys = list(recs[0])  # type: ignore[arg-type]
    return {k: np.concatenate([r[k] for r in recs]) for k in keys}  # type: ignore[index]


def _stack(parts: list[FitResult | PendingSolve], capture: bool) -> FitResult:
    released = _merge_released(parts) if capture else None
    pending = [p for p in parts if isinstance(p, PendingSolve)]
    if len(pending) == len(parts):
        A = np.concatenate([p.A for p in pending])
        b = np.concatenate([p.b for p in pending])
        theta, failed = solve_batched(A, b)
        return FitResult(theta, np.concatenate([p.lam for p in pending]), failed, released)
    done = [_as_result(p) for p in parts]
    return FitResult(
        np.concatenate([p.theta for p in done]),
        np.concatenate([p.lam for p in done]),
        np.concatenate([p.failed for p in done]),
        released,
    )
