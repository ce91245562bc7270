"""Sufficient statistics of a linear regression.

A DP linear-regression trial needs only the sufficient statistics of its
training fold: ``n``, ``X^T X``, ``X^T y`` and the norm bounds (Wang 2018,
Section 4; Kalaja 2020, Section 3.1).  :class:`SuffStats` holds them.  They
are additive, so the statistics of the training fold are those of the whole
table minus those of the test fold, and chunks of a table too large for
memory simply add up.

:class:`ScoreStats` are the analogous statistics of a *test* fold: the
squared error of any coefficient vector is a quadratic form in them, so a
whole batch of trials is scored with d x d work and no pass over rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpreg._validation import DPRegError, check_bound, check_finite_array

__all__ = ["BOUND_RTOL", "ScoreStats", "SuffStats", "check_rows_within_bounds"]

#: Relative slack for floating-point rounding in the bound check: a row
#: divided by its own norm (or by the largest norm) may come out at
#: 1 + 2**-52; anything beyond this tolerance is a violated bound.
BOUND_RTOL = 1e-12


def check_rows_within_bounds(
    X: np.ndarray, y: np.ndarray, *, bound_x: float, bound_y: float, what: str = "training"
) -> tuple[float, float]:
    """Raise :class:`DPRegError` if any row breaks ``||x_i|| <= B_X`` or ``|y_i| <= B_Y``.

    Returns the observed maxima ``(max ||x_i||, max |y_i|)``.  A violated
    bound is a privacy bug (the noise would be calibrated to a sensitivity
    the data does not respect), so this check runs before any release.
    """
    norms = np.sqrt(np.einsum("ij,ij->i", X, X)) if X.size else np.zeros(len(X))
    max_x = float(norms.max()) if norms.size else 0.0
    max_y = float(np.abs(y).max()) if y.size else 0.0
    if max_x > bound_x * (1 + BOUND_RTOL):
        i = int(norms.argmax())
        raise DPRegError(
            f"{what} row {i} has norm {max_x:.17g} > bound_x={bound_x:g}; "
            "rows must satisfy ||x_i|| <= bound_x before any private release "
            "(rescale the data or raise the bound)"
        )
    if max_y > bound_y * (1 + BOUND_RTOL):
        i = int(np.abs(y).argmax())
        raise DPRegError(
            f"{what} row {i} has |y| = {max_y:.17g} > bound_y={bound_y:g}; "
            "targets must satisfy |y_i| <= bound_y before any private release"
        )
    return max_x, max_y


@dataclass(frozen=True)
class SuffStats:
    """``n``, ``X^T X``, ``X^T y``, ``y^T y`` and the bounds the rows respect.

    Build with :meth:`from_arrays`, which checks every row against the
    bounds; combine with ``+`` (chunks) and ``-`` (total minus test fold).
    :meth:`stack` puts the statistics of several runs with the same ``n``,
    ``d`` and bounds on a leading axis (``xtx`` of shape ``(R, d, d)``), for
    fit functions that treat runs as repeats
    (:attr:`dpreg.algorithms.Algorithm.stacks_runs`).
    """

    n: int
    xtx: np.ndarray
    xty: np.ndarray
    yty: float
    bound_x: float = 1.0
    bound_y: float = 1.0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def d(self) -> int:
        return int(self.xty.shape[-1])

    @classmethod
    def stack(cls, runs: list[SuffStats] | tuple[SuffStats, ...]) -> SuffStats:
        """The statistics of several runs on a leading axis (same ``n``, ``d`` and bounds)."""
        if not runs:
            raise DPRegError("cannot stack the statistics of zero runs")
        first = runs[0]
        for other in runs[1:]:
            first._check_compatible(other)
            if other.n != first.n:
                raise DPRegError("cannot stack statistics of different numbers of rows")
        return cls(
            first.n,
            np.stack([r.xtx for r in runs]),
            np.stack([r.xty for r in runs]),
            np.array([r.yty for r in runs], dtype=float),  # type: ignore[arg-type]
            first.bound_x,
            first.bound_y,
        )

    @classmethod
    def from_arrays(
        cls, X: np.ndarray, y: np.ndarray, *, bound_x: float = 1.0, bound_y: float = 1.0
    ) -> SuffStats:
        """Statistics of the rows ``(X, y)``, after checking they respect the bounds."""
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise DPRegError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
        check_finite_array(X, "X")
        check_finite_array(y, "y")
        bx = check_bound(bound_x, "bound_x")
        by = check_bound(bound_y, "bound_y")
        check_rows_within_bounds(X, y, bound_x=bx, bound_y=by)
        return cls(X.shape[0], X.T @ X, X.T @ y, float(y @ y), bx, by)

    @classmethod
    def zeros(cls, d: int, *, bound_x: float = 1.0, bound_y: float = 1.0) -> SuffStats:
        return cls(0, np.zeros((d, d)), np.zeros(d), 0.0, bound_x, bound_y)

    def _check_compatible(self, other: SuffStats) -> None:
        if not isinstance(other, SuffStats):
            raise TypeError(f"cannot combine SuffStats with {type(other).__name__}")
        if self.d != other.d or (self.bound_x, self.bound_y) != (other.bound_x, other.bound_y):
            raise DPRegError("cannot combine statistics with different d or bounds")

    def __add__(self, other: SuffStats) -> SuffStats:
        self._check_compatible(other)
        return SuffStats(
            self.n + other.n,
            self.xtx + other.xtx,
            self.xty + other.xty,
            self.yty + other.yty,
            self.bound_x,
            self.bound_y,
        )

    def __sub__(self, other: SuffStats) -> SuffStats:
        self._check_compatible(other)
        if other.n > self.n:
            raise DPRegError("cannot subtract statistics of more rows than the total holds")
        return SuffStats(
            self.n - other.n,
            self.xtx - other.xtx,
            self.xty - other.xty,
            self.yty - other.yty,
            self.bound_x,
            self.bound_y,
        )

    def offset_xtx(self, offset: float) -> np.ndarray:
        """``X^T X + offset I`` (computed once per statistics object; read-only)."""
        key = ("offset", float(offset))
        if key not in self._cache:
            A = self.xtx + float(offset) * np.eye(self.d)
            A.setflags(write=False)
            self._cache[key] = A
        return self._cache[key]

    def eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (ascending) and eigenvectors of ``X^T X`` (cached, read-only)."""
        if "eigh" not in self._cache:
            w, V = np.linalg.eigh(self.xtx)
            w.setflags(write=False)
            V.setflags(write=False)
            self._cache["eigh"] = (w, V)
        return self._cache["eigh"]

    def lambda_min(self, offset: float = 0.0) -> float:
        """Smallest eigenvalue of ``X^T X + offset I`` (cached; one per run when stacked)."""
        if "eig" not in self._cache:
            w = np.linalg.eigvalsh(self.xtx)[..., 0]  # a stack: each matrix on its own
            self._cache["eig"] = float(w) if w.ndim == 0 else w
        return self._cache["eig"] + float(offset)


@dataclass(frozen=True)
class ScoreStats:
    """Statistics that score any coefficient vector on a test fold.

    For test rows with design ``u_i`` (already mapped so that the prediction
    in the shared target scale is ``o_i + u_i theta``) and residual target
    ``r_i = t_i - o_i``::

        SSE(theta) = r^T r - 2 theta^T U^T r + theta^T U^T U theta

    ``t_sum`` and ``t_sq`` (of the shared-scale target ``t``) give the total
    sum of squares for R^2.
    """

    m: int
    uu: np.ndarray
    ur: np.ndarray
    rr: float
    t_sum: float
    t_sq: float

    @classmethod
    def from_arrays(cls, U: np.ndarray, r: np.ndarray, t: np.ndarray) -> ScoreStats:
        U = np.asarray(U, dtype=float)
        return cls(U.shape[0], U.T @ U, U.T @ r, float(r @ r), float(t.sum()), float(t @ t))

    @classmethod
    def zeros(cls, d: int) -> ScoreStats:
        return cls(0, np.zeros((d, d)), np.zeros(d), 0.0, 0.0, 0.0)

    def __add__(self, other: ScoreStats) -> ScoreStats:
        return ScoreStats(
            self.m + other.m,
            self.uu + other.uu,
            self.ur + other.ur,
            self.rr + other.rr,
            self.t_sum + other.t_sum,
            self.t_sq + other.t_sq,
        )

    def sse(self, theta: np.ndarray) -> np.ndarray:
        """Sum of squared errors of each row of ``theta`` (shape ``(R, d)``)."""
        theta = np.atleast_2d(theta)
        quad = np.einsum("rd,de,re->r", theta, self.uu, theta)
        out = self.rr - 2.0 * (theta @ self.ur) + quad
        return np.maximum(out, 0.0)

    def mse(self, theta: np.ndarray) -> np.ndarray:
        return self.sse(theta) / self.m

    def r2(self, theta: np.ndarray) -> np.ndarray:
        return self.r2_from_sse(self.sse(theta))

    def r2_from_sse(self, sse: np.ndarray) -> np.ndarray:
        """``1 - SSE / SST`` on the test fold (NaN when the target is constant there)."""
        sst = self.t_sq - self.t_sum**2 / self.m
        if sst <= 0:
            return np.full(np.shape(sse), np.nan)
        return 1.0 - sse / sst
