"""Non-private references: trivial (theta = 0), OLS, ridge with lambda = 1 and
cross-validated ridge.

They release nothing and are drawn as reference curves; the estimator warns
when one of them is fitted, since nothing about them is private.

``ridge-cv`` chooses lambda by K-fold cross-validation *inside* the training
fold (the test fold is never seen): the training rows are split into K
sub-folds (row ``i`` in sub-fold ``i mod K``), each lambda of the grid
:data:`RIDGE_CV_GRID` (scaled by ``n``, so the penalty is relative to the
size of ``XᵀX``) is fitted on K - 1 sub-folds and scored on the held-out
one, and the lambda of the lowest mean validation MSE is refitted on the
whole training fold (Hastie, Tibshirani & Friedman 2009, Section 7.10).
The training fold's sufficient statistics cannot give the sub-fold ones, so
the entry fits on the rows (``needs_rows``).
"""

from __future__ import annotations

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, PendingSolve, finish
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy.mechanisms import Release

__all__ = ["ENTRIES", "RIDGE_CV_GRID", "ridge_cv_lambda"]

#: lambda / n of the cross-validated ridge's grid: 0 (OLS) and 10^-6 ... 10^2.
RIDGE_CV_GRID = (0.0, *np.logspace(-6, 2, 17).tolist())


def _no_releases(ctx) -> list[Release]:
    return []


def _fit_trivial(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    size = opts.size
    return FitResult(np.zeros((size, stats.d)), np.full(size, np.nan), np.zeros(size, bool))


def _fit_ols(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    """Least squares ``theta = (X^T X)^+ X^T y`` (minimum-norm where singular)."""
    theta = np.linalg.lstsq(stats.xtx, stats.xty, rcond=None)[0]
    ok = bool(np.all(np.isfinite(theta)))
    size = opts.size
    out = np.tile(theta, (size, 1)) if ok else np.full((size, stats.d), np.nan)
    return FitResult(out, np.full(size, np.nan), np.full(size, not ok))


def _fit_ridge(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult | PendingSolve:
    """Ridge ``(X^T X + I)^{-1} X^T y``: lambda = 1 whatever ``xtx_offset`` is."""
    size = opts.size
    A = np.broadcast_to(stats.offset_xtx(1.0), (size, stats.d, stats.d))
    b = np.broadcast_to(stats.xty, (size, stats.d))
    return finish(A, b, np.ones(size), opts)


def ridge_cv_lambda(X: np.ndarray, y: np.ndarray, folds: int) -> tuple[float, np.ndarray]:
    """(lambda, mean validation MSE per grid point) of ``folds``-fold CV on (X, y).

    Ties go to the larger lambda (the simpler model).  Raises
    :class:`DPRegError` when ``folds`` is not an integer in [2, n].
    """
    n, d = X.shape
    if isinstance(folds, bool) or not isinstance(folds, int | np.integer) or not 2 <= folds <= n:
        raise DPRegError(f"ridge-cv: folds must be an integer in [2, n={n}], got {folds!r}")
    subs = [(X[k::folds], y[k::folds]) for k in range(folds)]  # row i in sub-fold i mod K
    xtx = np.stack([Xk.T @ Xk for Xk, _ in subs])
    xty = np.stack([Xk.T @ yk for Xk, yk in subs])
    grid = np.asarray(RIDGE_CV_GRID) * n
    eye = np.eye(d)
    scores = np.zeros(grid.size)
    for k, (Xk, yk) in enumerate(subs):
        A = (xtx.sum(0) - xtx[k])[None] + grid[:, None, None] * eye  # one system per lambda
        b = np.broadcast_to((xty.sum(0) - xty[k])[:, None], (grid.size, d, 1))
        theta = np.linalg.lstsq(A[0], b[0, :, 0], rcond=None)[0][None]  # lambda 0: min-norm
        if grid.size > 1:
            theta = np.concatenate([theta, np.linalg.solve(A[1:], b[1:])[..., 0]])
        resid = Xk @ theta.T - yk[:, None]
        scores += np.mean(resid**2, axis=0) / folds
    best = int(np.flatnonzero(scores <= scores.min() * (1 + 1e-12))[-1])
    return float(grid[best]), scores


def _fit_ridge_cv(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    """Ridge with lambda from K-fold CV on the training rows (:func:`ridge_cv_lambda`).

    Fewer rows than folds: leave-one-out (K = n); a single row cannot be
    cross-validated and gets lambda = 0 (minimum-norm least squares).
    """
    X, y = opts.rows  # type: ignore[misc]
    folds = opts.params["folds"]
    if isinstance(folds, bool) or not isinstance(folds, int | np.integer) or folds < 2:
        raise DPRegError(f"ridge-cv: folds must be an integer >= 2, got {folds!r}")
    k = min(int(folds), stats.n)
    lam = ridge_cv_lambda(np.asarray(X, float), np.asarray(y, float), k)[0] if k >= 2 else 0.0
    theta = np.linalg.lstsq(stats.offset_xtx(lam), stats.xty, rcond=None)[0]
    ok = bool(np.all(np.isfinite(theta)))
    size = opts.size
    out = np.tile(theta, (size, 1)) if ok else np.full((size, stats.d), np.nan)
    return FitResult(out, np.full(size, lam), np.full(size, not ok))


ENTRIES = [
    Algorithm(
        "trivial",
        "trivial (θ = 0)",
        private=False,
        calibration="none",
        release_fn=_no_releases,
        fit_fn=_fit_trivial,
        stacks_runs=True,
        style=Style("0.5", ":", "."),
        reference="predicts the centred target's mean (0)",
    ),
    Algorithm(
        "ols",
        "OLS (non-private)",
        private=False,
        calibration="none",
        release_fn=_no_releases,
        fit_fn=_fit_ols,
        style=Style("darkslategray", "-.", "d"),
        reference="ordinary least squares",
    ),
    Algorithm(
        "ridge",
        "ridge λ=1 (non-private)",
        private=False,
        calibration="none",
        release_fn=_no_releases,
        fit_fn=_fit_ridge,
        stacks_runs=True,
        has_lambda=True,
        style=Style("black", ":", "d"),
        reference="(XᵀX + I)⁻¹Xᵀy, Wang (2018)'s non-private baseline",
    ),
    Algorithm(
        "ridge-cv",
        "ridge, λ by CV (non-private)",
        private=False,
        calibration="none",
        release_fn=_no_releases,
        fit_fn=_fit_ridge_cv,
        has_lambda=True,
        needs_rows=True,
        hyperparameters={"folds": 5},
        style=Style("slategray", "--", "8"),
        reference="ridge with lambda chosen by K-fold CV inside the training fold "
        "(Hastie, Tibshirani & Friedman 2009, Sec. 7.10)",
    ),
]
