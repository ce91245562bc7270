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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_positive_int
from dpreg.preprocess.spec import RowSource, VariantSpec
from dpreg.preprocess.stats import ScoreStats, SuffStats, check_rows_within_bounds
from dpreg.preprocess.transform import FittedTransform, FoldData
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = [
    "PublicRanges",
    "RawMoments",
    "STAT_RELEASES",
    "algorithm_budget",
    "private_fold_data",
    "private_fold_data_runs",
    "private_stat_releases",
    "raw_fold_moments",
    "release_statistics",
]

#: The private pre-processing releases, in the order of their noise block.
STAT_RELEASES = ("column_sums", "column_sums_of_squares", "y_sum")
_STAT_KINDS = ("vector", "vector", "scalar")


# --------------------------------------------------------------------------
# public ranges: declared in the config, never taken from the data
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class PublicRanges:
    """Per-column ranges ``[lo, hi]`` of ``X`` and ``[ylo, yhi]`` of ``y`` treated as public.

    Private pre-processing needs a priori ranges to bound its
    sensitivities.  They are domain knowledge declared in the config
    (:meth:`from_config`), listed in the ledger with their ``source``.
    """

    lo: np.ndarray
    hi: np.ndarray
    ylo: float
    yhi: float
    source: str = ""

    def __post_init__(self) -> None:
        lo = np.asarray(self.lo, dtype=float)
        hi = np.asarray(self.hi, dtype=float)
        if lo.shape != hi.shape or lo.ndim != 1:
            raise DPRegError("public ranges: lo and hi must be vectors of the same length")
        ok = np.isfinite(lo) & np.isfinite(hi) & (lo <= hi)
        if not ok.all() or not (math.isfinite(self.ylo) and math.isfinite(self.yhi)):
            raise DPRegError("public ranges must be finite with lo <= hi")
        if self.ylo > self.yhi:
            raise DPRegError(f"public range of y must have lo <= hi, got [{self.ylo}, {self.yhi}]")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def centre(self) -> np.ndarray:
        return (self.lo + self.hi) / 2

    @property
    def ycentre(self) -> float:
        return (self.ylo + self.yhi) / 2

    @property
    def radius(self) -> np.ndarray:
        """Half-widths ``r = (hi - lo) / 2``: ``|x_j - c_j| <= r_j`` for a clipped row."""
        return (self.hi - self.lo) / 2

    @property
    def yradius(self) -> float:
        return (self.yhi - self.ylo) / 2

    def clip(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows clipped to the declared ranges (done before any statistic is taken)."""
        return np.clip(X, self.lo, self.hi), np.clip(y, self.ylo, self.yhi)

    @classmethod
    def from_config(
        cls,
        declared: Mapping[str, Any] | None,
        *,
        dataset: str,
        features: Sequence[str],
        target: str,
    ) -> PublicRanges:
        """Ranges of one dataset from its config entry ``public_ranges.<dataset>``.

        ``declared`` is ``{"source": text, "columns": {name: [lo, hi], ...}}``
        naming every feature of the prepared table and its target.  Missing
        or unknown columns, a missing source and ``lo > hi`` are refused with
        a message naming the dataset and the columns.
        """
        where = f"public_ranges.{dataset}"
        names = [*features, target]
        source, cols = _declared_entry(declared, where=where, dataset=dataset, names=names)
        pairs = [_range_pair(cols[c], f"{where}.columns.{c}") for c in names]
        lo = np.array([p[0] for p in pairs[:-1]])
        hi = np.array([p[1] for p in pairs[:-1]])
        return cls(lo, hi, pairs[-1][0], pairs[-1][1], source)


def _declared_entry(
    declared: Mapping[str, Any] | None, *, where: str, dataset: str, names: list[str]
) -> tuple[str, Mapping[str, Any]]:
    """The checked ``(source, columns)`` of one dataset's ``public_ranges`` entry."""
    if declared is None:
        raise DPRegError(
            f"dataset {dataset!r}: private_stats needs public ranges declared under "
            f"{where}.columns (never taken from the data); missing columns: {', '.join(names)}"
        )
    if not isinstance(declared, Mapping) or set(declared) - {"source", "columns"}:
        raise DPRegError(f"{where} must be a mapping with keys 'source' and 'columns'")
    source = declared.get("source")
    if not isinstance(source, str) or not source.strip():
        raise DPRegError(f"{where}.source must say where the ranges come from (a text)")
    cols = declared.get("columns")
    if not isinstance(cols, Mapping):
        raise DPRegError(f"{where}.columns must map column names to [lo, hi]")
    missing = [c for c in names if c not in cols]
    if missing:
        raise DPRegError(
            f"dataset {dataset!r}: {where}.columns has no range for column(s) "
            f"{', '.join(missing)}; private_stats needs every column's range"
        )
    unknown = sorted(set(cols) - set(names))
    if unknown:
        raise DPRegError(
            f"{where}.columns: unknown column(s) {', '.join(map(str, unknown))}; "
            f"the prepared table has {', '.join(names)}"
        )
    return source.strip(), cols


def _range_pair(v: object, where: str) -> tuple[float, float]:
    ok = (
        isinstance(v, Sequence)
        and not isinstance(v, str)
        and len(v) == 2
        and all(isinstance(t, int | float) and not isinstance(t, bool) for t in v)
    )
    if not ok or not (math.isfinite(v[0]) and math.isfinite(v[1]) and v[0] <= v[1]):  # type: ignore[index]
        raise DPRegError(f"{where} must be [lo, hi] with finite numbers lo <= hi, got {v!r}")
    return float(v[0]), float(v[1])  # type: ignore[index]


# --------------------------------------------------------------------------
# raw moments of the clipped rows
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class RawMoments:
    """Raw moments of clipped rows shifted by the public centre ``c`` of their ranges.

    ``sx = sum (x - c)``, ``sxx = sum (x - c)(x - c)^T``, ``sxy``, ``sy``, ``syy``
    (``y`` shifted by ``c_y``).  Additive, so a training fold is the total
    minus its test fold.  ``xlo``/``xhi``/``ylo``/``yhi`` are per-column
    extremes of the clipped rows, used only by the bound check (a
    difference keeps the extremes of its left operand, a superset of the
    rows, which keeps the check valid).
    """

    n: float
    sx: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray
    sy: float
    syy: float
    xlo: np.ndarray
    xhi: np.ndarray
    ylo: float
    yhi: float

    @classmethod
    def zeros(cls, d: int) -> RawMoments:
        inf = np.full(d, np.inf)
        return cls(
            0.0, np.zeros(d), np.zeros((d, d)), np.zeros(d), 0.0, 0.0, inf, -inf, np.inf, -np.inf
        )

    @classmethod
    def of_rows(cls, A: np.ndarray, b: np.ndarray) -> RawMoments:
        """Moments of centred clipped rows ``A = x - c``, ``b = y - c_y``."""
        return cls(
            float(A.shape[0]),
            A.sum(0),
            A.T @ A,
            A.T @ b,
            float(b.sum()),
            float(b @ b),
            A.min(0),
            A.max(0),
            float(b.min()),
            float(b.max()),
        )

    def __sub__(self, o: RawMoments) -> RawMoments:
        return RawMoments(
            self.n - o.n,
            self.sx - o.sx,
            self.sxx - o.sxx,
            self.sxy - o.sxy,
            self.sy - o.sy,
            self.syy - o.syy,
            self.xlo,
            self.xhi,
            self.ylo,
            self.yhi,
        )

    def __add__(self, o: RawMoments) -> RawMoments:
        return RawMoments(
            self.n + o.n,
            self.sx + o.sx,
            self.sxx + o.sxx,
            self.sxy + o.sxy,
            self.sy + o.sy,
            self.syy + o.syy,
            np.minimum(self.xlo, o.xlo),
            np.maximum(self.xhi, o.xhi),
            min(self.ylo, o.ylo),
            max(self.yhi, o.yhi),
        )


def raw_fold_moments(
    source: RowSource, folds: int, *, ranges: PublicRanges | None = None
) -> tuple[PublicRanges, list[RawMoments]]:
    """Per-fold raw moments of the rows clipped to the declared public ranges (one pass).

    ``ranges`` must come from the config (:meth:`PublicRanges.from_config`);
    nothing about the ranges is read from the data.  Returns ``(ranges,
    moments)``.
    """
    if ranges is None:
        raise DPRegError(
            "private pre-processing needs declared public ranges (config key public_ranges); "
            "they are never taken from the data"
        )
    if ranges.lo.size != source.d:
        raise DPRegError(
            f"public ranges cover {ranges.lo.size} feature columns, the data has {source.d}"
        )
    mom = [RawMoments.zeros(source.d) for _ in range(folds)]
    for X, y, f in source.chunks():
        Xc, yc = ranges.clip(X, y)
        A = Xc - ranges.centre
        b = yc - ranges.ycentre
        for k in range(folds):
            m = f == k
            if m.any():
                mom[k] = mom[k] + RawMoments.of_rows(A[m], b[m])
    return ranges, mom


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
    ``(epsilon/3, delta/3)``.  ``d`` is accepted for symmetry with the
    algorithms' release functions and not used.

    References
    ----------
    Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
    """
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
    noisy = release_statistics(train, releases, rng=rng)
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
    noisy = release_statistics(train, releases, rng=rng, size=R)
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
