"""Per-fold fitting of a variant in chunked passes over a :class:`RowSource`.

Memory is ``O(chunk x d + K d^2)``, so a table larger than memory is
handled by the same code as an in-memory one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_finite_array
from dpreg.preprocess.moments import _moments_pass
from dpreg.preprocess.private import _mapped_moments
from dpreg.preprocess.ranges import PublicRanges, RawMoments
from dpreg.preprocess.spec import RowSource, VariantSpec
from dpreg.preprocess.stats import BOUND_RTOL, ScoreStats, SuffStats
from dpreg.preprocess.transform import FittedTransform, FoldData, _safe_norm, _safe_sd

__all__ = ["fold_rows", "fold_statistics"]


def fold_statistics(
    source: RowSource, spec: VariantSpec | Mapping[str, Any], *, folds: int
) -> list[FoldData]:
    """Fit the variant for every fold and gather training and test statistics.

    Passes over ``source``: raw moments (one pass for all folds); clipped
    moments if clipping; row-norm maxima for ``maxnorm`` / ``rownorm-y``;
    then the statistics.  With ``stats: global`` the transform is the same
    for every fold, the statistics are gathered per fold in one pass and the
    training statistics of fold ``k`` are the total minus fold ``k``.
    """
    spec = VariantSpec.from_dict(spec)
    K = int(folds)
    if spec.stats == "global":
        configs = [np.ones(K, dtype=bool)]
    else:
        configs = [np.arange(K) != k for k in range(K)]
    if spec.scale == "maxnorm" and spec.clip_sigma is None:
        return _affine_maxnorm_statistics(source, spec, K, configs)
    partial = _fit_partial(source, spec, K, configs)
    if spec.scale == "maxnorm":
        return _maxnorm_statistics(source, partial, K, global_stats=spec.stats == "global")
    if spec.scale == "rownorm-y":
        maxima = _rownorm_y_maxima(source, partial, configs)
        partial = [replace(tr, y_max2=float(maxima[c])) for c, tr in enumerate(partial)]
    if spec.stats == "global":
        return _global_rownorm_statistics(source, partial[0], K)
    return _train_rownorm_statistics(source, partial, K)


def _fit_partial(
    source: RowSource,
    spec: VariantSpec,
    K: int,
    configs: list[np.ndarray],
    raw: list[dict[str, Any]] | None = None,
) -> list[FittedTransform]:
    """Per config: the transform with clipping, centring and standardisation fitted.

    The unit-ball scale is left at 1 (``x_max = y_max2 = 1``); it is fitted
    by the pass that follows.  ``raw`` holds the per-config moments when a
    pass already gathered them.
    """
    if raw is None:
        raw = _moments_pass(source, K, None, configs)
    taus = None
    std_stats = raw
    if spec.clip_sigma is not None:
        taus = [r["mean"] + spec.clip_sigma * r["sd"] for r in raw]
        std_stats = _moments_pass(source, K, taus, configs)
    partial = []
    for c, r in enumerate(raw):
        y_center = r["ymean"] if spec.center_y else 0.0
        y_scale = max(r["ymax"] - y_center, y_center - r["ymin"])
        t_scale = max(r["ymax"] - r["ymean"], r["ymean"] - r["ymin"])
        if spec.standardize:
            x_mean, x_sd = std_stats[c]["mean"], _safe_sd(std_stats[c]["sd"])
        else:
            x_mean, x_sd = np.zeros(source.d), np.ones(source.d)
        partial.append(
            FittedTransform(
                spec,
                None if taus is None else taus[c],
                x_mean,
                x_sd,
                float(y_center),
                float(y_scale) if y_scale > 0 else 1.0,
                1.0,
                1.0,
                float(r["ymean"]),
                float(t_scale) if t_scale > 0 else 1.0,
                source.d + int(spec.has_intercept),
            )
        )
    return partial


def _rownorm_y_maxima(
    source: RowSource, partial: list[FittedTransform], configs: list[np.ndarray]
) -> np.ndarray:
    """Per config: ``y_max2 = max_i |y_i| / ||x_i||`` over its statistics rows (Eq. 3.4)."""
    maxima = np.zeros(len(configs))
    for X, y, f in source.chunks():
        for c, sel in enumerate(configs):
            rows = np.isin(f, np.flatnonzero(sel))
            if not rows.any():
                continue
            tr = partial[c]
            Z = tr._features(X[rows], clip=True)
            yt = (y[rows] - tr.y_center) / tr.y_scale
            maxima[c] = max(maxima[c], float(np.abs(yt / _safe_norm(Z)).max()))
    return np.where(maxima > 0, maxima, 1.0)


def _global_rownorm_statistics(source: RowSource, tr: FittedTransform, K: int) -> list[FoldData]:
    """One transform for all folds: per-fold sums, training = total minus fold."""
    fold_train = [SuffStats.zeros(tr.d_out) for _ in range(K)]
    fold_test = [ScoreStats.zeros(tr.d_out) for _ in range(K)]
    for X, y, f in source.chunks():
        for k in range(K):
            m = f == k
            if not m.any():
                continue
            Xm, ym = tr.transform_train(X[m], y[m], check=False)  # from_arrays checks
            fold_train[k] = fold_train[k] + SuffStats.from_arrays(Xm, ym)
            fold_test[k] = fold_test[k] + ScoreStats.from_arrays(*tr.transform_test(X[m], y[m]))
    total = fold_train[0]
    for s in fold_train[1:]:
        total = total + s
    return [FoldData(k, tr, total - fold_train[k], fold_test[k]) for k in range(K)]


def _train_rownorm_statistics(
    source: RowSource, partial: list[FittedTransform], K: int
) -> list[FoldData]:
    """One transform per fold, fitted on its training rows."""
    d_out = partial[0].d_out
    train = [SuffStats.zeros(d_out) for _ in range(K)]
    test = [ScoreStats.zeros(d_out) for _ in range(K)]
    for X, y, f in source.chunks():
        for k in range(K):
            tr = partial[k]
            m = f == k
            if (~m).any():
                rows = tr.transform_train(X[~m], y[~m], check=False)  # from_arrays checks
                train[k] = train[k] + SuffStats.from_arrays(*rows)
            if m.any():
                test[k] = test[k] + ScoreStats.from_arrays(*tr.transform_test(X[m], y[m]))
    return [FoldData(k, partial[k], train[k], test[k]) for k in range(K)]


def _gram_pass(source: RowSource, K: int) -> tuple[np.ndarray, float, list[RawMoments]]:
    """Per-fold raw moments of the rows, shifted by the first chunk's means (one pass).

    Returns ``(shift, yshift, moments)``.  Shifting by a value near the
    column means keeps the later conversion to centred moments
    (``sum (x - mean)(x - mean)^T`` from ``sum x x^T``) free of cancellation.
    """
    X0, y0, _ = next(iter(source.chunks()))
    shift = X0.mean(axis=0) if X0.shape[0] else np.zeros(source.d)
    yshift = float(y0.mean()) if y0.shape[0] else 0.0
    moms = [RawMoments.zeros(source.d) for _ in range(K)]
    for X, y, f in source.chunks():
        A = X - shift
        b = y - yshift
        for k in range(K):
            m = f == k
            if m.any():
                moms[k] = moms[k] + RawMoments.of_rows(A[m], b[m])
    for k, m in enumerate(moms):
        if not (np.isfinite(m.sxx).all() and np.isfinite(m.sxy).all() and math.isfinite(m.syy)):
            bad = [j for j in range(source.d) if not np.isfinite(m.sxx[j, j])]
            what = f"feature column {bad[0]} (0-based)" if bad else "the target"
            raise DPRegError(
                f"fold {k}: sums of squares of {what} overflow float64; rescale the data"
            )
    return shift, yshift, moms


def _config_moments(
    moms: list[RawMoments], shift: np.ndarray, yshift: float, sel: np.ndarray
) -> dict[str, Any]:
    """Mean, sd, y mean and y range of the rows of the folds selected by ``sel``.

    The same quantities as :meth:`_Moments.over`, from the raw moments.
    """
    total = RawMoments.zeros(shift.size)
    for k in np.flatnonzero(sel):
        total = total + moms[k]
    n = total.n
    if n < 2:
        raise DPRegError("a statistics fold holds fewer than 2 rows; use fewer folds")
    m1 = total.sx / n
    m2 = np.diag(total.sxx) / n
    var = m2 - m1 * m1
    # below the rounding floor of the shifted sums the column is constant
    var = np.where(var > 1e-12 * m2, var, 0.0) * n / (n - 1)
    return {
        "n": n,
        "mean": shift + m1,
        "sd": np.sqrt(var),
        "ymean": yshift + total.sy / n,
        "ymin": yshift + total.ylo,
        "ymax": yshift + total.yhi,
    }


def _max_feature_norms(
    source: RowSource, partial: list[FittedTransform], *, global_stats: bool
) -> np.ndarray:
    """Per config: the largest feature norm of its training rows under its transform.

    One pass.  With ``w = 1 / sd^2`` a row's squared feature norm under
    transform ``k`` is ``sum_j w_kj (x_j - mean_kj)^2`` (plus 1 for the
    scaled intercept column), a linear function of ``(x_j^2, x_j)``: one
    ``(chunk, 2d) x (2d, K)`` product gives every row's norm under every
    fold's transform, without forming the transformed rows.  The row
    attaining each maximum is then mapped exactly and its norm recomputed,
    so the result is the exact norm of that row (the expanded form only
    chooses the row; ties within rounding do not matter for the bound).
    """
    shift = partial[0].x_mean  # any fixed centre; the first transform's mean
    W = np.empty((2 * source.d, len(partial)))
    const = np.empty(len(partial))
    for c, tr in enumerate(partial):
        w = 1.0 / tr.x_sd**2
        a = tr.x_mean - shift
        W[: source.d, c] = w
        W[source.d :, c] = -2.0 * w * a
        const[c] = float(w @ (a * a)) + (1.0 if tr.spec.intercept_form == "scaled" else 0.0)
    best = np.full(len(partial), -np.inf)
    best_row: list[np.ndarray | None] = [None] * len(partial)
    for X, _, f in source.chunks():
        if X.shape[0] == 0:
            continue
        A = X - shift
        sq = np.hstack([A * A, A]) @ W + const
        if not global_stats:
            sq[np.arange(X.shape[0]), f] = -np.inf  # a fold's own rows are its test rows
        idx = np.argmax(sq, axis=0)
        top = sq[idx, np.arange(len(partial))]
        for j in np.flatnonzero(top > best):
            best[j] = top[j]
            best_row[j] = X[idx[j]].copy()
    out = np.ones(len(partial))
    for c, (tr, row) in enumerate(zip(partial, best_row, strict=True)):
        if row is not None:
            exact = float(tr.feature_norms(tr._features(row[None, :], clip=True))[0])
            out[c] = exact if exact > 0 else 1.0
    return out


def _affine_maxnorm_statistics(
    source: RowSource, spec: VariantSpec, K: int, configs: list[np.ndarray]
) -> list[FoldData]:
    """Fold statistics of ``maxnorm`` without clipping, from per-fold raw moments.

    The map ``x -> D (x - mean)`` (``D`` = one over sd times ``x_max``) and
    ``y -> (y - y_center) / y_scale`` are affine, so a fold's training and
    test statistics follow from the raw moments of its rows
    (``sum x x^T``, ``sum x y``, ...; Kalaja 2020, Sec. 3.2 for the maps).
    Two passes over the rows whatever ``K``: the moments of every fold
    (:func:`_gram_pass`), then every training row's feature norm under its
    fold's transform (:func:`_max_feature_norms`).  Nothing of size
    ``n x d`` is allocated beyond one chunk.

    The largest training feature norm is 1 after the division by
    ``x_max`` (to rounding, well inside :data:`~dpreg.preprocess.stats.BOUND_RTOL`) and
    ``|y| <= 1`` holds by the choice of ``y_scale``; both are checked.
    """
    shift, yshift, moms = _gram_pass(source, K)
    raw = [_config_moments(moms, shift, yshift, sel) for sel in configs]
    partial = _fit_partial(source, spec, K, configs, raw=raw)
    global_stats = spec.stats == "global"
    scales = _max_feature_norms(source, partial, global_stats=global_stats)
    # the moments' centre, as the (degenerate) ranges _mapped_moments reads it from
    centre = PublicRanges(shift, shift, yshift, yshift, "fold statistics")
    total = RawMoments.zeros(source.d)
    for m in moms:
        total = total + m
    out = []
    for k in range(K):
        c = 0 if global_stats else k
        tr = replace(partial[c], x_max=float(scales[c]))
        train_m = total - moms[k]
        n_train = int(round(train_m.n))
        xx, xy, yy, _ = _mapped_moments(tr, centre, train_m)
        # the config's rows bound |y'| (for global statistics: every row)
        ext = max(tr.y_center - raw[c]["ymin"], raw[c]["ymax"] - tr.y_center)
        if ext / tr.y_scale > 1.0 + BOUND_RTOL:
            raise DPRegError(
                f"training rows of fold {k} have |y| up to {ext / tr.y_scale:.17g} > 1 after "
                "scaling; rows must satisfy |y_i| <= 1 before any private release"
            )
        train = SuffStats(n_train, xx, xy, float(yy), spec.row_bound, 1.0)
        out.append(FoldData(k, tr, train, _test_stats(tr, centre, moms[k])))
    return out


def _test_stats(tr: FittedTransform, centre: Any, m: RawMoments) -> ScoreStats:
    """Test-fold :class:`ScoreStats` under ``tr`` from the fold's raw moments.

    As :meth:`FittedTransform.transform_test` with ``maxnorm``: ``U = g x'``
    and ``r = g y'`` with ``g = y_scale / t_scale``, ``t = r + o``,
    ``o = (y_center - t_center) / t_scale``.
    """
    uu, uy, yy, sy = _mapped_moments(tr, centre, m)
    g = tr.y_scale / tr.t_scale
    o = (tr.y_center - tr.t_center) / tr.t_scale
    return ScoreStats(
        int(round(m.n)),
        uu * g * g,
        uy * g * g,
        float(yy * g * g),
        float(sy * g + m.n * o),
        float(yy * g * g + 2 * o * sy * g + m.n * o * o),
    )


def _maxnorm_statistics(
    source: RowSource, partial: list[FittedTransform], K: int, *, global_stats: bool
) -> list[FoldData]:
    """Fold statistics of a ``maxnorm`` variant in one pass.

    Dividing the columns by ``x_max`` (``D = diag(column_factors)``) maps
    ``X^T X`` to ``D X^T X D`` and ``X^T y`` to ``D X^T y``, so the statistics
    of the standardised rows and the largest training row norm are gathered
    together and the scaling is applied afterwards.  ``partial`` holds the
    fitted transforms with ``x_max = 1`` (one for global statistics, one per
    fold otherwise).  The bound check is exact: after the division the
    largest training feature norm is 1 by construction (rows have norm at
    most ``spec.row_bound``, ``sqrt(2)`` with the thesis' intercept), and
    ``|y| <= 1`` is checked on every row.
    """
    d_out = partial[0].d_out
    # per fold (global) or per config (train): unscaled training and test sums
    n = np.zeros(K)
    zz = np.zeros((K, d_out, d_out))
    zy = np.zeros((K, d_out))
    yy = np.zeros(K)
    xmax = np.zeros(K)
    ymax = np.zeros(K)
    test = [ScoreStats.zeros(d_out) for _ in range(K)]
    for X, y, f in source.chunks():
        for k in range(K):
            tr = partial[0] if global_stats else partial[k]
            m = f == k
            rows = m if global_stats else ~m
            if rows.any():
                Z = tr._features(X[rows], clip=True)
                ym = (y[rows] - tr.y_center) / tr.y_scale
                check_finite_array(Z, "standardised rows")
                n[k] += Z.shape[0]
                zz[k] += Z.T @ Z
                zy[k] += Z.T @ ym
                yy[k] += float(ym @ ym)
                xmax[k] = max(xmax[k], float(tr.feature_norms(Z).max()))
                ymax[k] = max(ymax[k], float(np.abs(ym).max()))
            if m.any():
                test[k] = test[k] + ScoreStats.from_arrays(*tr.transform_test(X[m], y[m]))
    if global_stats:
        xm = float(xmax.max()) if xmax.max() > 0 else 1.0
        scales = np.full(K, xm)
        ymax[:] = ymax.max()
    else:
        scales = np.where(xmax > 0, xmax, 1.0)
    for k in range(K):
        if ymax[k] > 1.0 + BOUND_RTOL:
            raise DPRegError(
                f"training rows of fold {k} have |y| up to {ymax[k]:.17g} > 1 after scaling; "
                "rows must satisfy |y_i| <= 1 before any private release"
            )

    bound_x = partial[0].spec.row_bound

    def scaled(k: int) -> tuple[SuffStats, ScoreStats]:
        D = partial[0].column_factors(scales[k])  # 1/x_max per column (Eq. 3.5 / 3.6)
        DD = np.outer(D, D)
        tr_k = SuffStats(int(n[k]), zz[k] * DD, zy[k] * D, float(yy[k]), bound_x, 1.0)
        te = test[k]
        return tr_k, ScoreStats(te.m, te.uu * DD, te.ur * D, te.rr, te.t_sum, te.t_sq)

    out = []
    if global_stats:
        tr = replace(partial[0], x_max=float(scales[0]))
        parts = [scaled(k) for k in range(K)]
        total = parts[0][0]
        for p in parts[1:]:
            total = total + p[0]
        return [FoldData(k, tr, total - parts[k][0], parts[k][1]) for k in range(K)]
    for k in range(K):
        tr = replace(partial[k], x_max=float(scales[k]))
        train_k, test_k = scaled(k)
        out.append(FoldData(k, tr, train_k, test_k))
    return out


def fold_rows(source: RowSource, fd: FoldData) -> tuple[np.ndarray, np.ndarray]:
    """The transformed training rows of one fold (for peers that need rows).

    Reads the rows of ``source`` once; meant for in-memory sources.
    """
    Xs, ys = [], []
    for X, y, f in source.chunks():
        m = f != fd.fold
        if m.any():
            Xm, ym = fd.transform.transform_train(X[m], y[m])
            Xs.append(Xm)
            ys.append(ym)
    return np.vstack(Xs), np.concatenate(ys)
