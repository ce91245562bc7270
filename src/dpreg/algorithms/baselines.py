"""Non-private references: trivial (theta = 0), OLS and ridge with lambda = 1.

They release nothing and are drawn as reference curves; the estimator warns
when one of them is fitted, since nothing about them is private.
"""

from __future__ import annotations

import numpy as np

from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, PendingSolve, finish
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy.mechanisms import Release

__all__ = ["ENTRIES"]


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
]
