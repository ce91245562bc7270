"""Per-fold moments of a row source, taken in one chunked pass.

:class:`_Moments` accumulates count, sums, sums of squares and maxima per
fold; :func:`_moments_pass` fills them for several clipping configurations at
once.  The fold fitting (:mod:`dpreg.preprocess.folds`) derives every
transform from these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpreg._validation import DPRegError
from dpreg.preprocess.spec import RowSource


# --------------------------------------------------------------------------
# per-fold moments
# --------------------------------------------------------------------------
@dataclass
class _Moments:
    """Shifted column sums of a set of rows, combinable across chunks."""

    shift: np.ndarray
    n: np.ndarray  # (K,)
    s1: np.ndarray  # (K, d)
    s2: np.ndarray  # (K, d)
    y1: np.ndarray  # (K,)
    y2: np.ndarray
    ymin: np.ndarray
    ymax: np.ndarray
    yshift: float = 0.0

    @classmethod
    def empty(cls, K: int, shift: np.ndarray, yshift: float) -> _Moments:
        d = shift.size
        return cls(
            shift,
            np.zeros(K),
            np.zeros((K, d)),
            np.zeros((K, d)),
            np.zeros(K),
            np.zeros(K),
            np.full(K, np.inf),
            np.full(K, -np.inf),
            yshift,
        )

    def add(self, k: int, X: np.ndarray, y: np.ndarray | None) -> None:
        if X.shape[0] == 0:
            return
        Xc = X - self.shift
        self.n[k] += X.shape[0]
        self.s1[k] += Xc.sum(axis=0)
        self.s2[k] += np.einsum("ij,ij->j", Xc, Xc)
        if y is not None:
            yc = y - self.yshift
            self.y1[k] += yc.sum()
            self.y2[k] += yc @ yc
            self.ymin[k] = min(self.ymin[k], float(y.min()))
            self.ymax[k] = max(self.ymax[k], float(y.max()))

    def over(self, sel: np.ndarray) -> dict[str, Any]:
        n = float(self.n[sel].sum())
        if n < 2:
            raise DPRegError("a statistics fold holds fewer than 2 rows; use fewer folds")
        m1 = self.s1[sel].sum(axis=0) / n
        m2 = self.s2[sel].sum(axis=0) / n
        var = m2 - m1 * m1
        # below the rounding floor of the shifted sums the column is constant
        var = np.where(var > 1e-12 * m2, var, 0.0) * n / (n - 1)
        ym1 = float(self.y1[sel].sum()) / n
        return {
            "n": n,
            "mean": self.shift + m1,
            "sd": np.sqrt(var),
            "ymean": self.yshift + ym1,  # type: ignore[attr-defined]
            "ymin": float(self.ymin[sel].min()),
            "ymax": float(self.ymax[sel].max()),
        }


# --------------------------------------------------------------------------
# fitting in passes
# --------------------------------------------------------------------------
def _moments_pass(
    source: RowSource, K: int, clip_taus: list[np.ndarray] | None, configs: list[np.ndarray]
) -> list[dict[str, Any]]:
    """Per config: moments over its statistics rows (after its clipping, if any)."""
    first = next(source.chunks())
    shift = first[0][0].astype(float) if first[0].shape[0] else np.zeros(source.d)
    yshift = float(first[1][0]) if first[1].shape[0] else 0.0
    if clip_taus is None:
        mom = _Moments.empty(K, shift, yshift)
        for X, y, f in source.chunks():
            for k in range(K):
                m = f == k
                mom.add(k, X[m], y[m])
        return [mom.over(sel) for sel in configs]
    out = []
    moms = [_Moments.empty(1, np.minimum(shift, tau), yshift) for tau in clip_taus]
    for X, y, f in source.chunks():
        for c, sel in enumerate(configs):
            rows = np.isin(f, np.flatnonzero(sel))
            moms[c].add(0, np.minimum(X[rows], clip_taus[c]), y[rows])
    for mom in moms:
        out.append(mom.over(np.array([True])))
    return out
