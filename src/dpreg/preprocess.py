"""Pre-processing variants (SPEC section 4), fitted per cross-validation fold.

A variant is a frozen :class:`VariantSpec`.  For one fold it is *fitted*
on its statistics rows -- all rows (``stats: global``, Wang 2018) or the
training rows only (``stats: train``, Kalaja 2020 Section 4.2) -- into a
:class:`FittedTransform`, which maps training rows into the unit ball (and
checks that it did) and maps test rows so that predictions land in the
target scale shared by every variant of a dataset.

Steps, in order (Kalaja 2020, Sections 3.3-3.4):

1. clip each raw column from above at ``mean + c sd`` (Eq. 3.8; Honkela et
   al. 2018), training rows always, test rows when ``clip_test`` (Eq. 3.9);
   means and sds of step 4 are recomputed after clipping;
2. centre ``y`` (optional), then ``y <- y / y_max``, ``y_max = max |y|``;
3. standardise ``X`` column-wise (a constant column gets ``sd := 1``);
4. optionally append an intercept column of ones;
5. map to the unit ball: ``rownorm`` (Eq. 3.3, each row divided by its own
   norm), ``rownorm-y`` (Eq. 3.4, ``y_i`` also divided by ``||x_i||`` and
   rescaled by ``y_max2``) or ``maxnorm`` (Eq. 3.5, every row divided by the
   largest training row norm).

Everything is computed in chunked passes over a :class:`RowSource`, so a
table larger than memory is handled by the same code: memory is
``O(chunk x d + K d^2)``.  Statistics used without noise (means, sds,
maxima, thresholds) are the thesis' option 2 and are listed as non-private
releases in the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

import numpy as np

from dpreg._validation import DPRegError, check_choice, check_finite_array
from dpreg.stats import BOUND_RTOL, ScoreStats, SuffStats, check_rows_within_bounds

__all__ = [
    "SCALES",
    "STATS_SOURCES",
    "VARIANT_KEYS",
    "ArraySource",
    "FittedTransform",
    "FoldData",
    "RowSource",
    "VariantSpec",
    "fold_statistics",
    "private_fold_data",
    "private_stat_releases",
    "raw_fold_moments",
]

SCALES = ("rownorm", "rownorm-y", "maxnorm")
STATS_SOURCES = ("global", "train")


@dataclass(frozen=True)
class PrivateStatsSpec:
    """Release the transform statistics privately (thesis option 3).

    ``epsilon_share`` of the total epsilon (and the same share of delta) is
    spent on the column means, sds and y scale; the rest goes to the
    regression algorithm.
    """

    epsilon_share: float = 0.1


@dataclass(frozen=True)
class VariantSpec:
    """One pre-processing variant (config ``variants:`` entry).

    Parameters
    ----------
    stats : {"global", "train"}
        Where means, sds and maxima come from.
    clip_sigma : float or None
        ``c`` of the upper clipping threshold ``mean + c sd``; None: no clipping.
    clip_test : bool
        Also clip test rows with the training thresholds (Eq. 3.9).
    center_y : bool
        Subtract the mean of ``y`` before scaling it.
    standardize : bool
        Standardise the columns of ``X``.
    intercept : bool
        Append a column of ones after standardising.
    scale : {"rownorm", "rownorm-y", "maxnorm"}
        Mapping to the unit ball.
    private_stats : PrivateStatsSpec or None
        Release the transform statistics with noise (see :class:`PrivateStatsSpec`).
    """

    stats: str = "train"
    clip_sigma: float | None = None
    clip_test: bool = False
    center_y: bool = True
    standardize: bool = True
    intercept: bool = False
    scale: str = "maxnorm"
    private_stats: PrivateStatsSpec | None = None

    def __post_init__(self) -> None:
        check_choice(self.stats, "variant key 'stats'", STATS_SOURCES)
        check_choice(self.scale, "variant key 'scale'", SCALES)
        if self.clip_sigma is not None:
            c = self.clip_sigma
            if isinstance(c, bool) or not isinstance(c, int | float) or not (c > 0):
                raise DPRegError(
                    f"variant key 'clip_sigma' must be null or a number > 0, got {c!r}"
                )
        for key in ("clip_test", "center_y", "standardize", "intercept"):
            if not isinstance(getattr(self, key), bool):
                raise DPRegError(f"variant key {key!r} must be true or false")
        if self.private_stats is not None:
            share = self.private_stats.epsilon_share
            if not (isinstance(share, int | float) and 0 < share < 1):
                raise DPRegError(
                    f"variant key 'private_stats.epsilon_share' must lie in (0, 1), got {share!r}"
                )

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any] | VariantSpec, name: str = "variant") -> VariantSpec:
        """Build from a config mapping; unknown keys are named in the error."""
        if isinstance(spec, VariantSpec):
            return spec
        if not isinstance(spec, Mapping):
            raise DPRegError(f"variant {name!r} must be a mapping of options, got {spec!r}")
        unknown = sorted(set(spec) - set(VARIANT_KEYS))
        if unknown:
            raise DPRegError(
                f"variant {name!r}: unknown key(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(VARIANT_KEYS)}"
            )
        kw = dict(spec)
        ps = kw.get("private_stats")
        if ps is not None:
            if not isinstance(ps, Mapping) or set(ps) - {"epsilon_share"}:
                raise DPRegError(
                    f"variant {name!r}: private_stats must be a mapping with key epsilon_share"
                )
            kw["private_stats"] = PrivateStatsSpec(**ps)
        c = kw.get("clip_sigma")
        if isinstance(c, int) and not isinstance(c, bool):
            kw["clip_sigma"] = float(kw["clip_sigma"])
        try:
            return cls(**kw)
        except DPRegError as err:
            raise DPRegError(f"variant {name!r}: {err}") from None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.private_stats is not None:
            out["private_stats"] = {"epsilon_share": self.private_stats.epsilon_share}
        return out


VARIANT_KEYS = tuple(f.name for f in fields(VariantSpec))


# --------------------------------------------------------------------------
# row sources
# --------------------------------------------------------------------------
class RowSource(Protocol):
    """Chunks of ``(X, y, fold)`` rows: ``fold[i]`` in ``0..K-1``."""

    n: int
    d: int

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]: ...


@dataclass
class ArraySource:
    """In-memory rows, served in chunks of ``chunk_rows`` (None: one chunk)."""

    X: np.ndarray
    y: np.ndarray
    fold: np.ndarray
    chunk_rows: int | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        step = self.chunk_rows or max(self.n, 1)
        for lo in range(0, self.n, step):
            yield self.X[lo : lo + step], self.y[lo : lo + step], self.fold[lo : lo + step]


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


def _safe_sd(sd: np.ndarray) -> np.ndarray:
    """Constant columns (sd = 0, or vanishing relative to float precision) get sd := 1."""
    return np.where(sd > 0, sd, 1.0)


def _safe_norm(Z: np.ndarray) -> np.ndarray:
    nrm = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    return np.where(nrm > 0, nrm, 1.0)


# --------------------------------------------------------------------------
# fitted transform
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class FittedTransform:
    """A variant fitted on one fold's statistics rows.

    Attributes hold every statistic taken from the data (listed in the
    ledger as non-private releases): clipping thresholds, column means and
    sds, the y centre and scale, ``x_max`` or ``y_max2``, and the shared
    evaluation scale ``(t_center, t_scale)``.
    """

    spec: VariantSpec
    clip_tau: np.ndarray | None
    x_mean: np.ndarray
    x_sd: np.ndarray
    y_center: float
    y_scale: float
    x_max: float
    y_max2: float
    t_center: float
    t_scale: float
    d_out: int = field(default=0)

    def _features(self, X: np.ndarray, *, clip: bool) -> np.ndarray:
        if clip and self.clip_tau is not None:
            X = np.minimum(X, self.clip_tau)
        Z = (X - self.x_mean) / self.x_sd
        if self.spec.intercept:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
        return Z

    def _map(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mapped rows and the per-row factor turning ``x' theta`` into scaled ``y``."""
        if self.spec.scale == "maxnorm":
            return Z / self.x_max, np.ones(Z.shape[0])
        nrm = _safe_norm(Z)
        Zn = Z / nrm[:, None]
        if self.spec.scale == "rownorm":
            return Zn, np.ones(Z.shape[0])
        return Zn, nrm * self.y_max2  # rownorm-y

    def transform_train(
        self, X: np.ndarray, y: np.ndarray, *, check: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Training rows mapped into the unit ball; raises if a row breaks the bound.

        ``check=False`` only where the rows go straight into
        :meth:`SuffStats.from_arrays`, which runs the same check.
        """
        Z = self._features(X, clip=True)
        Xm, factor = self._map(Z)
        ym = (y - self.y_center) / self.y_scale / factor
        if check:
            check_rows_within_bounds(Xm, ym, bound_x=1.0, bound_y=1.0)
        return Xm, ym

    def transform_test(
        self, X: np.ndarray, y: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Test rows as ``(U, r, t)`` for :class:`~dpreg.stats.ScoreStats`.

        The prediction of ``theta`` in the shared target scale
        ``t = (y - t_center) / t_scale`` is ``o + U theta`` with the constant
        ``o = (y_center - t_center) / t_scale``; ``r = t - o``.
        """
        Z = self._features(X, clip=self.spec.clip_test)
        Xm, factor = self._map(Z)
        U = Xm * (factor * (self.y_scale / self.t_scale))[:, None]
        t = (y - self.t_center) / self.t_scale
        o = (self.y_center - self.t_center) / self.t_scale
        return U, t - o, t

    def predict(self, X: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """Predictions in the original units of ``y`` for raw rows ``X``; ``theta`` (R, d)."""
        Z = self._features(np.asarray(X, dtype=float), clip=self.spec.clip_test)
        Xm, factor = self._map(Z)
        return self.y_center + self.y_scale * (factor[:, None] * (Xm @ np.atleast_2d(theta).T)).T

    def unstandardize(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coefficients in raw units (Kalaja 2020, Eq. 3.7): ``y ~ b0 + x b``.

        Only defined for ``maxnorm`` (the other mappings are not affine in
        ``x``).  With clipping the formula applies to clipped ``x``.
        Returns ``(intercepts (R,), coefficients (R, d_raw))``.
        """
        if self.spec.scale != "maxnorm":
            raise DPRegError(
                f"unstandardised coefficients need scale 'maxnorm'; variant uses {self.spec.scale!r}"
            )
        theta = np.atleast_2d(theta)
        d_raw = self.x_mean.size
        coef = self.y_scale * theta[:, :d_raw] / (self.x_sd * self.x_max)
        b0 = self.y_center - coef @ self.x_mean
        if self.spec.intercept:
            b0 = b0 + self.y_scale * theta[:, d_raw] / self.x_max
        return b0, coef


@dataclass(frozen=True)
class FoldData:
    """Everything a fold's trials need: transform, training and test statistics."""

    fold: int
    transform: FittedTransform
    train: SuffStats
    test: ScoreStats


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

    raw = _moments_pass(source, K, None, configs)
    taus = None
    if spec.clip_sigma is not None:
        taus = [r["mean"] + spec.clip_sigma * r["sd"] for r in raw]
        std_stats = _moments_pass(source, K, taus, configs)
    else:
        std_stats = raw

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
                source.d + int(spec.intercept),
            )
        )

    if spec.scale == "maxnorm":
        return _maxnorm_statistics(source, partial, K, global_stats=spec.stats == "global")
    if spec.scale == "rownorm-y":
        maxima = np.zeros(len(configs))
        for X, y, f in source.chunks():
            for c, sel in enumerate(configs):
                rows = np.isin(f, np.flatnonzero(sel))
                if not rows.any():
                    continue
                tr = partial[c]
                Z = tr._features(X[rows], clip=True)
                yt = (y[rows] - tr.y_center) / tr.y_scale
                val = float(np.abs(yt / _safe_norm(Z)).max())
                maxima[c] = max(maxima[c], val)
        maxima = np.where(maxima > 0, maxima, 1.0)
        partial = [replace(tr, y_max2=float(maxima[c])) for c, tr in enumerate(partial)]

    d_out = partial[0].d_out
    if spec.stats == "global":
        tr = partial[0]
        fold_train = [SuffStats.zeros(d_out) for _ in range(K)]
        fold_test = [ScoreStats.zeros(d_out) for _ in range(K)]
        for X, y, f in source.chunks():
            for k in range(K):
                m = f == k
                if not m.any():
                    continue
                Xm, ym = tr.transform_train(X[m], y[m], check=False)  # checked below
                fold_train[k] = fold_train[k] + SuffStats.from_arrays(Xm, ym)
                fold_test[k] = fold_test[k] + ScoreStats.from_arrays(*tr.transform_test(X[m], y[m]))
        total = fold_train[0]
        for s in fold_train[1:]:
            total = total + s
        return [FoldData(k, tr, total - fold_train[k], fold_test[k]) for k in range(K)]

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


def _maxnorm_statistics(
    source: RowSource, partial: list[FittedTransform], K: int, *, global_stats: bool
) -> list[FoldData]:
    """Fold statistics of a ``maxnorm`` variant in one pass.

    Dividing every row by ``x_max`` scales ``X^T X`` by ``1/x_max^2`` and
    ``X^T y`` by ``1/x_max``, so the statistics of the standardised rows and
    the largest training row norm are gathered together and the scaling is
    applied afterwards.  ``partial`` holds the fitted transforms with
    ``x_max = 1`` (one for global statistics, one per fold otherwise).
    The bound check is exact: after the division the largest training row
    norm is 1 by construction, and ``|y| <= 1`` is checked on every row.
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
                xmax[k] = max(xmax[k], float(np.sqrt(np.einsum("ij,ij->i", Z, Z)).max()))
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

    def scaled(k: int) -> tuple[SuffStats, ScoreStats]:
        x = scales[k]
        tr_k = SuffStats(int(n[k]), zz[k] / x**2, zy[k] / x, float(yy[k]))
        te = test[k]
        return tr_k, ScoreStats(te.m, te.uu / x**2, te.ur / x, te.rr, te.t_sum, te.t_sq)

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
