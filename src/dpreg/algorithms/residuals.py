"""The clipped-residual gradient ``X^T clip(y - X theta, -C, C)`` of the row-based fits.

BoostedAdaSSP's rounds (:mod:`dpreg.algorithms.boosted`, (B5)) and DP-GD's
steps (:mod:`dpreg.algorithms.gd`) release, per repeat, the sum over the rows
of ``x_i clip(y_i - x_i^T theta, -C, C)``.  Written directly it is two passes
over the ``n x d`` rows per round (``X theta``, then ``X^T r``).  With
``e = r - clip(r)``, zero on every row inside the clip,

    X^T clip(r) = X^T y - (X^T X) theta - X_S^T e_S,

where ``S`` is the set of clipped rows: one pass (``X theta``, which finds
``S``) plus a ``d x d`` product and the clipped rows only.  The two forms are
equal in exact arithmetic and differ by rounding (relative 1e-15 of
``||X^T y||``, far below every release's noise).  When more than a quarter of
the rows clip, or a residual is not finite, the direct form is used.

Every repeat is computed on its own (one matrix-vector product each), so
that its value does not depend on how many repeats run beside it (the
registry's prefix-stability contract), and the ``(R, n)`` work arrays are
allocated once per fit, not per round.
``X^T X`` and ``X^T y`` of the rows are computed once per (statistics, rows)
pair and kept in the statistics' cache, so every round, candidate and
epsilon of a fold shares them.
"""

from __future__ import annotations

import numpy as np

from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck

__all__ = ["ClippedGradient"]

#: Above this share of clipped rows the direct form ``X^T clip(r)`` is cheaper.
DIRECT_SHARE = 0.25


def _gram(stats: SuffStats, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(X^T X, X^T y)`` of these very rows (not the fold's chunked statistics)."""
    key = ("rows-gram", id(X), id(y))
    hit = stats._cache.get(key)
    if hit is not None and hit[0] is X and hit[1] is y:  # the arrays are kept alive
        return hit[2], hit[3]
    gram, xty = X.T @ X, X.T @ y
    stats._cache[key] = (X, y, gram, xty)
    return gram, xty


class ClippedGradient:
    """``X^T clip(y - X theta_r, -C, C)`` for each row ``theta_r`` of an (R, d) ``theta``.

    One object per fit: it holds the rows, the clip ``C`` and the work
    arrays of ``R`` repeats.  Each call records the clip for
    :mod:`dpreg.privacy.drawcheck` as implying the sensitivity
    ``row_norm * C`` of ``release``.
    """

    def __init__(
        self,
        stats: SuffStats,
        X: np.ndarray,
        y: np.ndarray,
        repeats: int,
        *,
        clip: float,
        row_norm: float,
    ) -> None:
        self.stats, self.X, self.y = stats, X, y
        self.clip, self.row_norm = float(clip), float(row_norm)
        n = len(y)
        self._resid = np.empty((repeats, n))
        self._clipped = np.empty((repeats, n))

    def __call__(self, theta: np.ndarray, *, release: str) -> np.ndarray:
        X, y, C = self.X, self.y, self.clip
        R, n = theta.shape[0], len(y)
        resid, clipped = self._resid[:R], self._clipped[:R]
        # repeat by repeat, so that a repeat's value does not depend on how many there are
        for r in range(R):
            np.dot(X, theta[r], out=resid[r])
        np.subtract(y, resid, out=resid)
        drawcheck.clip(resid, C, release=release, row_norm=self.row_norm, out=clipped)
        g = np.empty((R, X.shape[1]))
        for r in range(R):
            rows = np.flatnonzero(clipped[r] != resid[r])  # the clipped rows, and every NaN
            excess = resid[r, rows] - clipped[r, rows]
            if len(rows) > DIRECT_SHARE * n or not np.isfinite(excess).all():
                np.dot(clipped[r], X, out=g[r])  # many clipped rows, or an infinite residual
                continue
            gram, xty = _gram(self.stats, X, y)
            g[r] = xty - gram @ theta[r]
            if len(rows):
                g[r] -= excess @ X[rows]
        return g
