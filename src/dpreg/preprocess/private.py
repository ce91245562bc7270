"""Private pre-processing (thesis option 3): transform statistics released with noise."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpreg.preprocess.spec import RowSource, VariantSpec
from dpreg.preprocess.transform import FittedTransform, FoldData
from dpreg.stats import ScoreStats, SuffStats

__all__ = [
    "PublicRanges",
    "RawMoments",
    "private_fold_data",
    "private_stat_releases",
    "raw_fold_moments",
]


# --------------------------------------------------------------------------
# private pre-processing (thesis option 3): affine transforms from raw moments
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class RawMoments:
    """Raw moments of rows shifted by the public centre ``c`` of their ranges.

    ``sx = sum (x - c)``, ``sxx = sum (x - c)(x - c)^T``, ``sxy``, ``sy``, ``syy``
    (``y`` shifted by ``c_y``).  Additive, so a training fold is the total
    minus its test fold.
    """

    n: float
    sx: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray
    sy: float
    syy: float

    def __sub__(self, o: RawMoments) -> RawMoments:
        return RawMoments(
            self.n - o.n,
            self.sx - o.sx,
            self.sxx - o.sxx,
            self.sxy - o.sxy,
            self.sy - o.sy,
            self.syy - o.syy,
        )

    def __add__(self, o: RawMoments) -> RawMoments:
        return RawMoments(
            self.n + o.n,
            self.sx + o.sx,
            self.sxx + o.sxx,
            self.sxy + o.sxy,
            self.sy + o.sy,
            self.syy + o.syy,
        )


@dataclass(frozen=True)
class PublicRanges:
    """Per-column ranges ``[lo, hi]`` of ``X`` and ``[ylo, yhi]`` of ``y`` treated as public.

    Private pre-processing needs a priori ranges to bound sensitivities; the
    pipeline takes them as domain knowledge (listed as such in the ledger).
    """

    lo: np.ndarray
    hi: np.ndarray
    ylo: float
    yhi: float

    @property
    def centre(self) -> np.ndarray:
        return (self.lo + self.hi) / 2

    @property
    def ycentre(self) -> float:
        return (self.ylo + self.yhi) / 2


def raw_fold_moments(source: RowSource, folds: int) -> tuple[PublicRanges, list[RawMoments]]:
    """Column ranges (one pass) and per-fold raw moments about their centres (second pass)."""
    lo = np.full(source.d, np.inf)
    hi = np.full(source.d, -np.inf)
    ylo, yhi = np.inf, -np.inf
    for X, y, _ in source.chunks():
        lo = np.minimum(lo, X.min(axis=0))
        hi = np.maximum(hi, X.max(axis=0))
        ylo, yhi = min(ylo, float(y.min())), max(yhi, float(y.max()))
    ranges = PublicRanges(lo, hi, ylo, yhi)
    d = source.d
    mom = [
        RawMoments(0.0, np.zeros(d), np.zeros((d, d)), np.zeros(d), 0.0, 0.0) for _ in range(folds)
    ]
    for X, y, f in source.chunks():
        Xc = X - ranges.centre
        yc = y - ranges.ycentre
        for k in range(folds):
            m = f == k
            if m.any():
                A, b = Xc[m], yc[m]
                mom[k] = mom[k] + RawMoments(
                    float(m.sum()), A.sum(0), A.T @ A, A.T @ b, float(b.sum()), float(b @ b)
                )
    return ranges, mom


def private_stat_releases(ranges: PublicRanges, *, epsilon: float, delta: float, d: int):
    """The three Gaussian releases of private pre-processing, calibrated with exact GDP.

    ``sum (x - c)`` (L2 sensitivity ``||r||``, ``r = (hi - lo)/2``),
    ``sum (x - c)^2`` (``||r^2||``) and ``sum (y - c_y)`` (``r_y``) under
    add/remove of one row; ``mu = gdp_mu(epsilon, delta)`` split as
    ``mu / sqrt(3)`` per release (Dong, Roth & Su 2019).
    """
    import math

    from dpreg.mechanisms import Release, gdp_mu

    r = (ranges.hi - ranges.lo) / 2
    ry = (ranges.yhi - ranges.ylo) / 2
    sens = [float(np.linalg.norm(r)), float(np.linalg.norm(r * r)), float(ry)]
    mu = gdp_mu(epsilon=epsilon, delta=delta)
    names = ["column_sums", "column_sums_of_squares", "y_sum"]
    return [
        Release(
            nm,
            "gaussian",
            max(s, 1e-300),
            max(s, 1e-300) * math.sqrt(3) / mu,
            epsilon / 3,
            delta / 3,
            "gdp",
            True,
        )
        for nm, s in zip(names, sens, strict=True)
    ]


def private_fold_data(
    spec: VariantSpec,
    ranges: PublicRanges,
    train: RawMoments,
    test: RawMoments,
    shared: tuple[float, float],
    releases: list,
    *,
    fold: int,
    rng: np.random.Generator,
) -> FoldData:
    """Fit a maxnorm variant from *noisy* moments and build its fold statistics.

    Means and sds of ``X`` and the mean of ``y`` come from the noisy
    releases; ``y_scale`` and ``x_max`` are derived from the public ranges,
    so every training row provably lies in the unit ball.
    """
    n = train.n
    c = ranges.centre
    s1 = train.sx + rng.standard_normal(c.size) * releases[0].scale
    s2 = np.diag(train.sxx) + rng.standard_normal(c.size) * releases[1].scale
    sy = train.sy + rng.standard_normal() * releases[2].scale
    m1 = s1 / n
    var = np.maximum(s2 / n - m1 * m1, 0.0) * n / max(n - 1, 1)
    width = np.where(ranges.hi > ranges.lo, ranges.hi - ranges.lo, 1.0)
    sd = np.maximum(np.sqrt(var), 1e-3 * width) if spec.standardize else np.ones_like(c)
    mean = np.clip(c + m1, ranges.lo, ranges.hi) if spec.standardize else np.zeros_like(c)
    y_center = (
        float(np.clip(ranges.ycentre + sy / n, ranges.ylo, ranges.yhi)) if spec.center_y else 0.0
    )
    y_scale = (
        max(ranges.yhi - y_center, y_center - ranges.ylo, abs(ranges.ylo), abs(ranges.yhi))
        if not spec.center_y
        else max(ranges.yhi - y_center, y_center - ranges.ylo)
    )
    y_scale = y_scale if y_scale > 0 else 1.0
    far = np.maximum(np.abs(ranges.lo - mean), np.abs(ranges.hi - mean)) / sd
    x_max = float(np.sqrt(far @ far + (1.0 if spec.intercept else 0.0)))
    x_max = x_max if x_max > 0 else 1.0
    t_center, t_scale = shared
    tr = FittedTransform(
        spec,
        None,
        mean,
        sd,
        y_center,
        y_scale,
        x_max,
        1.0,
        t_center,
        t_scale,
        c.size + int(spec.intercept),
    )

    def mapped(m: RawMoments) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, float]:
        # moments of x' = D (x - mean) [, 1/x_max] and y' = (y - y_center) / y_scale
        a = mean - c  # shift of the centred data
        by = y_center - ranges.ycentre
        sxx = m.sxx - np.outer(a, m.sx) - np.outer(m.sx, a) + m.n * np.outer(a, a)
        sx = m.sx - m.n * a
        sxy = m.sxy - by * m.sx - a * m.sy + m.n * a * by
        sy = m.sy - m.n * by
        syy = m.syy - 2 * by * m.sy + m.n * by * by
        D = 1.0 / (sd * x_max)
        xx = sxx * np.outer(D, D)
        xy = sxy * D / y_scale
        xs = sx * D
        if spec.intercept:
            k = 1.0 / x_max
            xx = np.block([[xx, (xs * k)[:, None]], [(xs * k)[None, :], np.array([[m.n * k * k]])]])
            xy = np.append(xy, sy / y_scale * k)
        return xx, xy, syy / y_scale**2, xs, sy / y_scale

    xx, xy, yy, _, _ = mapped(train)
    train_stats = SuffStats(int(round(n)), xx, xy, yy)
    # test: U = (y_scale / t_scale) x', t = (y - t_center)/t_scale, r = t - o
    uu, uy, yy_t, _, sy_t = mapped(test)
    g = y_scale / t_scale
    o = (y_center - t_center) / t_scale
    # in test units: y' = (y - y_center)/y_scale, so r = t - o = g * y'
    score = ScoreStats(
        int(round(test.n)),
        uu * g * g,
        uy * g * g,
        float(yy_t * g * g),
        float(sy_t * g + test.n * o),
        float(yy_t * g * g + 2 * o * sy_t * g + test.n * o * o),
    )
    return FoldData(fold, tr, train_stats, score)
