"""Private pre-processing of many runs at once (the same numbers as run by run).

:func:`private_fold_data_runs` releases the statistics of R runs of one
training fold in one batch and fits their transforms and fold statistics
together; run ``r`` equals :func:`dpreg.preprocess.private.private_fold_data`
with the ``r``-th generator state (the sweep's private-stats runs use it).
"""

from __future__ import annotations

import numpy as np

from dpreg._validation import DPRegError, check_positive_int
from dpreg.preprocess.private import fold_releases, release_statistics
from dpreg.preprocess.ranges import PublicRanges, RawMoments
from dpreg.preprocess.spec import VariantSpec
from dpreg.preprocess.stats import ScoreStats, SuffStats, check_rows_within_bounds
from dpreg.preprocess.transform import FittedTransform, FoldData
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = ["private_fold_data_runs"]


# --------------------------------------------------------------------------
# many runs at once (same numbers as the runs one by one)
# --------------------------------------------------------------------------
def private_fold_data_runs(
    spec: VariantSpec,
    ranges: PublicRanges,
    train: RawMoments,
    test: RawMoments,
    shared: tuple[float, float],
    releases: list[Release],
    *,
    fold: int,
    rng: np.random.Generator,
    size: int,
) -> list[FoldData]:
    """``size`` runs of :func:`private_fold_data` on one generator, vectorised over the runs.

    Run ``r`` of the result is bit-identical to the ``r``-th of ``size``
    successive :func:`private_fold_data` calls on the same generator, and
    ``rng`` ends in the same state: a run consumes exactly one block of
    ``2 d + 1`` standard normals (:func:`dpreg.privacy.mechanisms.normal_block_noise`,
    ``size=1``), and one call with ``size`` draws the same blocks one after
    another (repeat-major), so the first ``R`` runs do not depend on
    ``size``.  Every elementwise formula of :func:`_fit_from_noisy`,
    :func:`_mapped_moments` and the test-fold mapping is evaluated in the
    same order with a leading run axis; the squared norm behind ``x_max``
    (a reduction) and ``y_scale ** 2`` (Python's ``pow``, not a product)
    are taken run by run as in the single-run code.
    The bound check runs on every run's extreme row before any statistic
    is returned, and every run carries the same ``releases``.

    Parameters
    ----------
    spec, ranges, train, test, shared, releases, fold
        As for :func:`private_fold_data`.
    rng : numpy.random.Generator
        The generator the runs draw from, in turn (keyword-only, SPEC 7).
    size : int
        Number of runs ``R >= 1``.

    Returns
    -------
    list of FoldData
        One per run, each with its own fitted transform, statistics and
        ``released`` values.

    References
    ----------
    Kalaja, E. (2020), Section 3.3.2 (option 3), and Dong, Roth & Su (2019),
    Corollary 3.3, as for :func:`private_stat_releases`.
    """
    rng = as_generator(rng)
    R = check_positive_int(size, "size")
    if spec.private_stats is None or spec.scale != "maxnorm" or spec.clip_sigma is not None:
        raise DPRegError(
            "private_stats needs scale 'maxnorm' and no clipping (the transform must be affine in x)"
        )
    d = train.sx.size
    noisy = (
        fold_releases(spec, train, releases, rng=rng, size=R)  # exact: the control, no noise
        if spec.private_stats.exact
        else release_statistics(train, releases, rng=rng, size=R)
    )
    s1 = noisy["column_sums"]  # (R, d)
    s2 = noisy["column_sums_of_squares"]  # (R, d)
    s0 = noisy["y_sum"]  # (R,)

    mean, sd, yc, ys, x_max = _fit_runs(spec, ranges, train.n, s1, s2, s0)
    c = ranges.centre
    t_center, t_scale = shared
    d_out = d + int(spec.has_intercept)
    transforms = [
        FittedTransform(
            spec,
            None,
            mean[r],
            sd[r],
            float(yc[r]),
            float(ys[r]),
            float(x_max[r]),
            1.0,
            t_center,
            t_scale,
            d_out,
        )
        for r in range(R)
    ]
    # column factors of the maxnorm map: 1 / x_max (the thesis' ones column keeps 1)
    factors = np.repeat((1.0 / x_max)[:, None], d_out, axis=1)
    if spec.intercept_form == "thesis":
        factors[:, -1] = 1.0

    # the bound check (_check_mapped_bounds), every run's extreme row at once
    lo, hi = c + train.xlo, c + train.xhi
    corner = np.where(np.abs(hi - mean) >= np.abs(lo - mean), hi, lo)
    ylo, yhi = ranges.ycentre + train.ylo, ranges.ycentre + train.yhi
    yfar = np.where(np.abs(yhi - yc) >= np.abs(ylo - yc), yhi, ylo)
    Z = (corner - mean) / sd
    if spec.has_intercept:
        Z = np.hstack([Z, np.ones((R, 1))])
    check_rows_within_bounds(
        Z * factors, (yfar - yc) / ys, bound_x=spec.row_bound, bound_y=1.0, what="private-stats"
    )

    xx, xy, yy, _ = _mapped_moments_runs(spec, ranges, train, mean, yc, ys, sd, x_max, factors)
    uu, uy, yy_t, sy_t = _mapped_moments_runs(spec, ranges, test, mean, yc, ys, sd, x_max, factors)
    # test: U = g x', r = t - o = g y' with g = y_scale / t_scale
    g = ys / t_scale
    o = (yc - t_center) / t_scale
    g3 = g[:, None, None]
    uu = uu * g3 * g3
    uy = uy * g[:, None] * g[:, None]
    rr = yy_t * g * g
    t_sum = sy_t * g + test.n * o
    t_sq = yy_t * g * g + 2 * o * sy_t * g + test.n * o * o
    n_train, n_test = int(round(train.n)), int(round(test.n))
    out = []
    for r in range(R):
        train_stats = SuffStats(n_train, xx[r], xy[r], float(yy[r]), spec.row_bound, 1.0)
        score = ScoreStats(n_test, uu[r], uy[r], float(rr[r]), float(t_sum[r]), float(t_sq[r]))
        released = {"column_sums": s1[r], "column_sums_of_squares": s2[r], "y_sum": s0[r]}
        out.append(FoldData(fold, transforms[r], train_stats, score, tuple(releases), released))
    return out


def _mapped_moments_runs(
    spec: VariantSpec,
    ranges: PublicRanges,
    m: RawMoments,
    mean: np.ndarray,
    yc: np.ndarray,
    ys: np.ndarray,
    sd: np.ndarray,
    x_max: np.ndarray,
    factors: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_mapped_moments` of one set of raw moments under ``R`` transforms.

    The transforms are given by their arrays with a leading run axis
    (``mean``, ``sd`` ``(R, d)``; ``yc``, ``ys``, ``x_max`` ``(R,)``;
    ``factors`` ``(R, d_out)``); every product and sum is taken in the order
    of the single-run function.  Returns ``(R, d_out, d_out)``,
    ``(R, d_out)``, ``(R,)``, ``(R,)``.
    """
    a = mean - ranges.centre  # (R, d)
    by = yc - ranges.ycentre  # (R,)
    sx0 = m.sx[None, :]
    sxx = (
        m.sxx
        - a[:, :, None] * sx0[:, None, :]
        - sx0[:, :, None] * a[:, None, :]
        + m.n * (a[:, :, None] * a[:, None, :])
    )
    sx = m.sx - m.n * a
    b1 = by[:, None]
    sxy = m.sxy - b1 * m.sx - a * m.sy + m.n * a * b1
    sy = m.sy - m.n * by
    syy = m.syy - 2 * by * m.sy + m.n * by * by
    D = 1.0 / (sd * x_max[:, None])
    xx = sxx * (D[:, :, None] * D[:, None, :])
    xy = sxy * D / ys[:, None]
    if spec.has_intercept:
        R, d = a.shape
        k = factors[:, -1]
        xs = sx * D * k[:, None]
        full = np.empty((R, d + 1, d + 1))
        full[:, :d, :d] = xx
        full[:, :d, d] = xs
        full[:, d, :d] = xs
        full[:, d, d] = m.n * k * k
        xx = full
        xy = np.concatenate([xy, (sy / ys * k)[:, None]], axis=1)
    # y_scale**2 as the single run takes it: Python's float power (C pow), which can differ
    # in the last bit from numpy's ys**2 (a multiplication)
    ys2 = np.array([float(v) ** 2 for v in ys])
    return xx, xy, syy / ys2, sy / ys


def _fit_runs(
    spec: VariantSpec,
    ranges: PublicRanges,
    n: float,
    s1: np.ndarray,
    s2: np.ndarray,
    s0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_fit_from_noisy` for ``R`` runs: ``(mean, sd, y_center, y_scale, x_max)``.

    ``s1``, ``s2`` ``(R, d)`` and ``s0`` ``(R,)`` are the released column
    sums, column sums of squares and y sums.  Same formulas in the same
    order, with a leading run axis; ``x_max``'s squared norm is taken run by
    run (a matrix-vector reduction could sum in another order).
    """
    R, d = s1.shape
    c = ranges.centre
    m1 = s1 / n
    var = np.maximum(s2 / n - m1 * m1, 0.0) * n / max(n - 1, 1)
    width = np.where(ranges.hi > ranges.lo, ranges.hi - ranges.lo, 1.0)
    if spec.standardize:
        sd = np.maximum(np.sqrt(var), 1e-3 * width)
        mean = np.clip(c + m1, ranges.lo, ranges.hi)
    else:
        sd = np.ones((R, d))
        mean = np.zeros((R, d))
    if spec.center_y:
        yc = np.clip(ranges.ycentre + s0 / n, ranges.ylo, ranges.yhi)
        ys = np.maximum(ranges.yhi - yc, yc - ranges.ylo)
    else:
        yc = np.zeros(R)
        ys = np.full(R, max(abs(ranges.ylo), abs(ranges.yhi)))
    ys = np.where(ys > 0, ys, 1.0)
    # the largest standardised feature norm any clipped row can have
    far = np.maximum(np.abs(ranges.lo - mean), np.abs(ranges.hi - mean)) / sd
    extra = 1.0 if spec.intercept_form == "scaled" else 0.0
    x_max = np.sqrt(np.array([f @ f for f in far]) + extra)
    x_max = np.where(x_max > 0, x_max, 1.0)
    return mean, sd, yc, ys, x_max
