"""Private pre-processing (thesis option 3): the transform's statistics released with noise.

Kalaja (2020), Section 3.3.2, notes that the means, sds and maxima of the
pre-processing could be released privately "by splitting the privacy
budget" (Theorem 2.7, composition).  This module does so for the ``maxnorm``
mapping, whose transform is affine in ``x``:

1. Every column (and ``y``) has a *public* range ``[lo, hi]`` declared in
   the config (``public_ranges:``, per dataset and column, with the source
   of the assumption).  Ranges are never read from the data: rows outside
   their range are clipped to it before any statistic is taken, so the
   sensitivities below hold for every row.
2. Three Gaussian releases (:func:`private_stat_releases`) -- the column
   sums and column sums of squares of ``x - c`` and the sum of ``y - c_y``
   (``c`` the centre of the ranges) -- spend the variant's
   ``epsilon_share`` of ``(epsilon, delta)``, composed in Gaussian DP.
3. Means, sds and the y centre are post-processing of those releases;
   ``y_scale`` and ``x_max`` are derived from the ranges, so every mapped
   training row lies in the ball of radius ``spec.row_bound`` -- which is
   also checked (:func:`private_fold_data`) on the extreme values of the
   clipped rows before any statistic goes to an algorithm.
4. The regression algorithm gets the remaining ``(1 - share)`` of the budget
   (:func:`algorithm_budget`); the ledger composes all releases.

The control ``private_stats: {exact: true}`` (:class:`~dpreg.preprocess.spec.PrivateStatsSpec`)
runs the same path with the exact sums of the clipped training rows in place
of the noisy ones (:func:`exact_statistics`): the same public ranges, clipping,
``y_scale`` and ``x_max``, no statistics release (an empty list, so the
ledger is the algorithm's alone, at the whole budget), and statistics that are
not private (:func:`dpreg.preprocess.spec.nonprivate_statistics` lists them).

References
----------
Kalaja, E. (2020). Adaptive algorithm in differential privacy: comparative
analysis of pre-processing methods. MSc thesis, Univ. Helsinki, Sections 3.3.2
(option 3) and 2 (Theorem 2.7, composition).
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B,
Corollary 3.3 (composition of Gaussian releases).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from dpreg._validation import DPRegError, check_positive_int
from dpreg.preprocess.ranges import PublicRanges, RawMoments
from dpreg.preprocess.spec import VariantSpec
from dpreg.preprocess.stats import ScoreStats, SuffStats, check_rows_within_bounds
from dpreg.preprocess.transform import FittedTransform, FoldData
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = [
    "STAT_RELEASES",
    "algorithm_budget",
    "exact_statistics",
    "fold_releases",
    "private_fold_data",
    "private_stat_releases",
    "release_statistics",
]

#: The private pre-processing releases, in the order of their noise block.
STAT_RELEASES = ("column_sums", "column_sums_of_squares", "y_sum")
_STAT_KINDS = ("vector", "vector", "scalar")


# --------------------------------------------------------------------------
# the releases
# --------------------------------------------------------------------------
def private_stat_releases(
    ranges: PublicRanges, *, epsilon: float, delta: float, d: int | None = None
) -> list[Release]:
    """The three Gaussian releases of private pre-processing, composed exactly in GDP.

    Under add/remove of one clipped row (``|x_j - c_j| <= r_j``,
    ``|y - c_y| <= r_y``) the L2 sensitivities are ``||r||`` for
    ``sum (x - c)``, ``||r^2||`` for ``sum (x - c)^2`` (each entry lies in
    ``[0, r_j^2]``) and ``r_y`` for ``sum (y - c_y)``.  With
    ``mu = gdp_mu(epsilon, delta)`` each release gets ``mu / sqrt(3)``, so the
    three compose to exactly ``(epsilon, delta)`` (Dong, Roth & Su 2019,
    Corollary 3.3); the nominal share of each is reported as
    ``(epsilon/3, delta/3)``.  A zero budget (``epsilon == delta == 0``, the
    share of ``private_stats: {exact: true}``) gives no release.  ``d`` is accepted for symmetry with the
    algorithms' release functions and not used.

    References
    ----------
    Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
    """
    if epsilon == 0 and delta == 0:
        return []  # a zero share (public ranges, exact statistics): nothing is released
    r = ranges.radius
    sens = [float(np.linalg.norm(r)), float(np.linalg.norm(r * r)), float(ranges.yradius)]
    mu = mech.gdp_mu(epsilon=epsilon, delta=delta)
    out = []
    for name, s in zip(STAT_RELEASES, sens, strict=True):
        s = max(s, 1e-300)  # a zero-width range: any positive sensitivity is an upper bound
        out.append(
            mech.gaussian_release(
                name,
                sensitivity=s,
                sigma=s * math.sqrt(3.0) / mu,
                epsilon=epsilon / 3,
                delta=delta / 3,
                calibration="gdp",
                valid=True,
            )
        )
    return out


def algorithm_budget(spec: VariantSpec, *, epsilon: float, delta: float) -> tuple[float, float]:
    """The ``(epsilon, delta)`` left for the regression after the statistics' share."""
    if spec.private_stats is None:
        return float(epsilon), float(delta)
    share = spec.private_stats.epsilon_share
    return (1.0 - share) * float(epsilon), (1.0 - share) * float(delta)


def release_statistics(
    train: RawMoments,
    releases: Sequence[Release],
    *,
    rng: np.random.Generator,
    size: int | None = None,
) -> dict[str, np.ndarray]:
    """The noisy column sums, column sums of squares and y sum of one or ``size`` runs.

    The noise is one block of standard normals per run drawn by
    :func:`dpreg.privacy.mechanisms.normal_block_noise` with the releases' scales,
    run-major, so ``size`` runs equal ``size`` calls of one run on the same
    generator.  Returns release name -> released value (with a leading run
    axis when ``size`` is given).  This is the only place the statistics
    are released: the single-run and the batched paths both call it.
    """
    rng = as_generator(rng)
    names = [r.name for r in releases]
    if tuple(names) != STAT_RELEASES:
        raise DPRegError(f"private statistics releases must be {STAT_RELEASES}, got {names}")
    d = train.sx.size
    R = 1 if size is None else check_positive_int(size, "size")
    noise = mech.normal_block_noise(_STAT_KINDS, [r.scale for r in releases], d, rng=rng, size=R)
    exact = (train.sx, np.diag(train.sxx), np.array(train.sy))
    out = {nm: v + z for nm, v, z in zip(STAT_RELEASES, exact, noise, strict=True)}
    return {nm: v[0] for nm, v in out.items()} if size is None else out


def exact_statistics(train: RawMoments, *, size: int | None = None) -> dict[str, np.ndarray]:
    """The exact column sums, column sums of squares and y sum (``private_stats.exact``).

    The values :func:`release_statistics` would add noise to -- of the training
    rows clipped to the public ranges, centred at the ranges' centres -- without
    noise and without drawing from any generator; with ``size``, repeated along a
    leading run axis.  Not private.
    """
    exact = {
        "column_sums": np.asarray(train.sx, dtype=float),
        "column_sums_of_squares": np.diag(train.sxx).astype(float),
        "y_sum": np.asarray(float(train.sy)),
    }
    if size is None:
        return exact
    R = check_positive_int(size, "size")
    return {nm: np.repeat(v[None, ...], R, axis=0) for nm, v in exact.items()}


def fold_releases(
    spec: VariantSpec,
    train: RawMoments,
    releases: Sequence[Release],
    *,
    rng: np.random.Generator,
    size: int | None = None,
) -> dict[str, np.ndarray]:
    """The statistics a private-stats run fits its transform from: noisy, or exact.

    :func:`exact_statistics` for ``private_stats: {exact: true}`` (which must
    come with no releases), else :func:`release_statistics`.
    """
    if spec.private_stats is not None and spec.private_stats.exact:
        if releases:
            raise DPRegError(
                "private_stats exact: true takes the statistics without noise, "
                f"but {len(releases)} release(s) were given for them"
            )
        return exact_statistics(train, size=size)
    return release_statistics(train, releases, rng=rng, size=size)


# --------------------------------------------------------------------------
# the transform and the fold statistics from the noisy releases
# --------------------------------------------------------------------------
def _fit_from_noisy(
    spec: VariantSpec,
    ranges: PublicRanges,
    n: float,
    noisy: Mapping[str, np.ndarray],
    shared: tuple[float, float],
) -> FittedTransform:
    """Means, sds, y centre from the noisy releases; ``y_scale`` and ``x_max`` from the ranges."""
    c = ranges.centre
    m1 = noisy["column_sums"] / n
    var = np.maximum(noisy["column_sums_of_squares"] / n - m1 * m1, 0.0) * n / max(n - 1, 1)
    width = np.where(ranges.hi > ranges.lo, ranges.hi - ranges.lo, 1.0)
    sd = np.maximum(np.sqrt(var), 1e-3 * width) if spec.standardize else np.ones_like(c)
    mean = np.clip(c + m1, ranges.lo, ranges.hi) if spec.standardize else np.zeros_like(c)
    if spec.center_y:
        y_center = float(
            np.clip(ranges.ycentre + float(noisy["y_sum"]) / n, ranges.ylo, ranges.yhi)
        )
        y_scale = max(ranges.yhi - y_center, y_center - ranges.ylo)
    else:
        y_center = 0.0
        y_scale = max(abs(ranges.ylo), abs(ranges.yhi))
    y_scale = y_scale if y_scale > 0 else 1.0
    # the largest standardised feature norm any clipped row can have
    far = np.maximum(np.abs(ranges.lo - mean), np.abs(ranges.hi - mean)) / sd
    extra = 1.0 if spec.intercept_form == "scaled" else 0.0
    x_max = float(np.sqrt(far @ far + extra))
    x_max = x_max if x_max > 0 else 1.0
    t_center, t_scale = shared
    return FittedTransform(
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
        c.size + int(spec.has_intercept),
    )


def _check_mapped_bounds(tr: FittedTransform, ranges: PublicRanges, train: RawMoments) -> None:
    """The bound check of the statistics path, on the extremes of the clipped rows.

    The row made of each column's farthest value from the fitted mean has
    the largest mapped norm any training row can have, and the farthest
    ``y`` the largest ``|y'|``; both go through
    :func:`~dpreg.preprocess.stats.check_rows_within_bounds`.
    """
    c, yc = ranges.centre, ranges.ycentre
    lo, hi = c + train.xlo, c + train.xhi
    corner = np.where(np.abs(hi - tr.x_mean) >= np.abs(lo - tr.x_mean), hi, lo)
    ylo, yhi = yc + train.ylo, yc + train.yhi
    yfar = yhi if abs(yhi - tr.y_center) >= abs(ylo - tr.y_center) else ylo
    Xm, ym = tr.transform_train(corner[None, :], np.array([yfar]), check=False)
    check_rows_within_bounds(Xm, ym, bound_x=tr.spec.row_bound, bound_y=1.0, what="private-stats")


def _mapped_moments(
    tr: FittedTransform, ranges: PublicRanges, m: RawMoments
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(X'^T X', X'^T y', y'^T y', sum y')`` of the mapped rows from their raw moments.

    ``x' = D (x - mean)`` with ``D = 1 / (sd x_max)`` (plus the ones column
    times its factor), ``y' = (y - y_center) / y_scale``.
    """
    c = ranges.centre
    a = tr.x_mean - c  # shift of the centred data
    by = tr.y_center - ranges.ycentre
    sxx = m.sxx - np.outer(a, m.sx) - np.outer(m.sx, a) + m.n * np.outer(a, a)
    sx = m.sx - m.n * a
    sxy = m.sxy - by * m.sx - a * m.sy + m.n * a * by
    sy = m.sy - m.n * by
    syy = m.syy - 2 * by * m.sy + m.n * by * by
    D = 1.0 / (tr.x_sd * tr.x_max)
    xx = sxx * np.outer(D, D)
    xy = sxy * D / tr.y_scale
    if tr.spec.has_intercept:
        k = tr.column_factors()[-1]
        xs = sx * D * k
        xx = np.block([[xx, xs[:, None]], [xs[None, :], np.array([[m.n * k * k]])]])
        xy = np.append(xy, sy / tr.y_scale * k)
    return xx, xy, syy / tr.y_scale**2, sy / tr.y_scale


def private_fold_data(
    spec: VariantSpec,
    ranges: PublicRanges,
    train: RawMoments,
    test: RawMoments,
    shared: tuple[float, float],
    releases: list[Release],
    *,
    fold: int,
    rng: np.random.Generator,
) -> FoldData:
    """One run's fold statistics of a private-stats variant, fitted from *noisy* moments.

    The statistics are released (:func:`release_statistics`), the transform
    is fitted from the released values and the public ranges, the bound
    check runs on the extremes of the clipped training rows, and the
    training and test statistics are mapped from the raw moments.  The
    returned :class:`FoldData` carries the pre-processing ``releases`` (for
    the ledger) and the ``released`` values (for the end-to-end audit).
    """
    rng = as_generator(rng)
    if spec.private_stats is None or spec.scale != "maxnorm" or spec.clip_sigma is not None:
        raise DPRegError(
            "private_stats needs scale 'maxnorm' and no clipping (the transform must be affine in x)"
        )
    noisy = fold_releases(spec, train, releases, rng=rng)
    tr = _fit_from_noisy(spec, ranges, train.n, noisy, shared)
    _check_mapped_bounds(tr, ranges, train)
    xx, xy, yy, _ = _mapped_moments(tr, ranges, train)
    train_stats = SuffStats(int(round(train.n)), xx, xy, yy, spec.row_bound, 1.0)
    # test: U = g x', r = t - o = g y' with g = y_scale / t_scale
    uu, uy, yy_t, sy_t = _mapped_moments(tr, ranges, test)
    t_center, t_scale = shared
    g = tr.y_scale / t_scale
    o = (tr.y_center - t_center) / t_scale
    score = ScoreStats(
        int(round(test.n)),
        uu * g * g,
        uy * g * g,
        float(yy_t * g * g),
        float(sy_t * g + test.n * o),
        float(yy_t * g * g + 2 * o * sy_t * g + test.n * o * o),
    )
    fd = FoldData(fold, tr, train_stats, score)
    return replace(fd, releases=tuple(releases), released=noisy)
