"""Confidence intervals that respect the cross-validation design.

The sweep runs every (dataset, variant, algorithm, epsilon) -- a *cell* -- on the
same P random K-fold partitions with R noise repeats per fold, so a trial is
indexed by (partition, fold, repeat) (config key ``cv.partitions``; P = 1 is
the single partition).  This module resamples that design: intervals for the mean and the
median of every cell and for the ratio of a
statistic of two cells (:func:`dpreg.inference.intervals.bootstrap_intervals`,
:func:`~dpreg.inference.intervals.paired_ratios`).

The resampling design
---------------------
A replicate draws P partitions with replacement from the P partitions; for
each drawn partition, K folds with replacement from that partition's K
folds; and for each drawn fold, R repeats with replacement from that fold's
R repeats (multi-stage resampling of nested data, Davison & Hinkley 1997,
section 3.8).  With P = 1 the first stage is void and the design is the
two-stage (fold, repeat) bootstrap, drawn from the same streams as before
partitions existed (the same replicates, the same tables).

What an interval is conditional on.  With P = 1 it is conditional on the
one K-fold partition of the run: it covers the expected error over that
partition's folds and the noise, not over other ways of cutting the rows.
With P > 1 the partitions are independent random cuts of the same rows, so
resampling them carries the partition-to-partition variation into the
interval: it is conditional on the dataset's rows only (not on a
partition).  Its expanded percentiles (below) then use n = P top-level
units, where P = 1 uses n = K (:attr:`DesignBootstrap.clusters`).

Why the fold and repeat stages:

- The folds are the outer unit.  Trials of one fold share the training and
  test rows, so their errors are correlated; resampling single trials as if
  they were independent would ignore that and give intervals that are too
  narrow.  Resampling folds carries the between-fold variation into the
  interval, i.e. the interval is about the expected error over fold splits
  and noise draws, not only over the noise of this one split.
- Within a fold the repeats are independent noise draws given the data, so
  they are exchangeable and are resampled too; this lets the interval of a
  median or of a heavy-tailed mean reflect the noise distribution and not
  only K fold averages (with K = 10 a fold-only bootstrap has at most 10
  distinct values per resample for a non-private reference).
- Resampling at both stages with replacement counts the within-fold
  variance roughly twice, while the between-fold part is shrunk by
  (K - 1) / K and, with only K = 10 folds, its spread is itself uncertain.
  The second problem is corrected by taking *expanded* percentiles
  (:func:`expanded_alpha`, Hesterberg 2015) with n = K; the first makes the
  intervals err on the wide side where the DP noise dominates, so a claim is
  then rather called inconclusive than supported by chance.

Measured on synthetic designs y = 1 + a_fold + e (K = 10, R = 10, 95%,
2000 replicates; ``tests/inference/test_claims.py`` repeats the first): noise-dominated
(sd(a) = 0.5, sd(e) = 2) coverage of the mean 0.98 with intervals 1.4x the
width of the exact normal interval; fold-dominated (sd(a) = 1, sd(e) = 0.1)
0.93; equal parts (0.3, 0.3) 0.94.  The plain percentile interval gave
0.96, 0.88 and 0.88, and resampling folds only with expanded percentiles
0.92, 0.93, 0.91 (300 designs each, Monte Carlo sd about 0.013; the test's
400 designs of the first kind give 0.995).  With partitions that differ
systematically, y = 1 + b_partition + a_fold + e (P = 5, K = 10, R = 4;
sd 0.5, 0.2, 0.5; 1000 replicates; ``tests/inference/test_partition_coverage.py``),
the three-stage intervals cover the mean over partitions in 0.94 of 300
designs (median 0.95), 1.2x the exact normal width; resampling the 50 folds
as one partition's covers it in 0.53.

Every replicate applies the same (partition, fold, repeat) indices to every cell of a
dataset, so two cells are resampled jointly, paired by (partition, fold, repeat), and a
ratio of their statistics is bootstrapped with its correlation intact.
A failed trial is never left out: it keeps the error the sweep records for
it (what the algorithm outputs when it fails, the trivial predictor
theta = 0; :func:`dpreg.engine.blocks._score`), in the tables, the figures'
bands and the claims alike.  Only a trial whose recorded error is not
finite (the sweep records none) is left out of every statistic.

Determinism: the replicate indices of a dataset come from the two streams
``seed_sequence(seed, "bootstrap", dataset, "folds", K)`` and
``seed_sequence(seed, "bootstrap", dataset, "repeats", K, R)`` (names hashed,
:mod:`dpreg.seeding`), and with P > 1 the partition draws from
``seed_sequence(seed, "bootstrap", dataset, "partitions", P, K, R)``, drawn
replicate by replicate, so they do not depend on
what else is configured, on job order, and the first B replicates stay the
same when the resample count grows.

References
----------
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their
Application*. Cambridge University Press, section 3.8 (multi-stage sampling).
Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*.
Chapman & Hall, chapter 13 (percentile intervals).
Hesterberg, T. C. (2015). What teachers should know about the bootstrap.
*The American Statistician* 69(4), 371-386 (expanded percentile interval).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.inference.design import (
    _design_counts,
    _fold_units,
    _median_layouts,
    _unique_inverse,
    resample_counts,
)
from dpreg.inference.medians import _fold_constant_medians, _replicate_medians
from dpreg.io.tables import GROUP_KEYS

__all__ = [
    "BOOTSTRAP_TRIAL_COLUMNS",
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "STATISTICS",
    "DesignBootstrap",
    "cell_codes",
    "check_level",
    "check_resamples",
    "expanded_alpha",
    "resample_counts",
]

#: Default confidence level of every interval (config key ``bootstrap.level``).
DEFAULT_LEVEL = 0.95
#: Default number of bootstrap replicates (config key ``bootstrap.resamples``).
DEFAULT_RESAMPLES = 2000

STATISTICS = ("mean", "median")

#: Columns a trial table needs for the bootstrap.
BOOTSTRAP_TRIAL_COLUMNS = [*GROUP_KEYS, "partition", "fold", "repeat", "mse", "failed"]


def check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise DPRegError(f"bootstrap.level must lie in (0, 1), got {level!r}")
    return float(level)


def check_resamples(resamples: int) -> int:
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or resamples < 1:
        raise DPRegError(f"bootstrap.resamples must be an integer >= 1, got {resamples!r}")
    return int(resamples)


class DesignBootstrap:
    """The (partition, fold, repeat) design of one dataset's trials and its replicates.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trials of ONE dataset with the columns
        ``dataset, variant, algorithm, epsilon, fold, repeat, mse, failed``
        and ``partition`` (without it, one partition).  Fold ids may be
        unique over partitions (the sweep's ``p K + k``) or restart in each
        partition; each partition must hold the same number K of folds.
    seed : int
        Root seed of the configuration.
    resamples : int
        Number of bootstrap replicates B.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per (dataset, variant, algorithm, epsilon), in sorted order.
    values : numpy.ndarray
        ``(G, P K R)`` test MSE of each cell (a failed trial's is the one
        the sweep records, the trivial predictor's); NaN for a missing trial
        or a non-finite error.
    counts : numpy.ndarray
        ``(B, P K R)`` replicate counts from :func:`resample_counts`.
    failed : numpy.ndarray
        ``(G, P K R)`` True where a trial failed (or its error is not finite).
    partitions, folds, repeats : int
        P, K (per partition) and R of the design.

    A failed trial keeps the error the sweep recorded for it (the trivial
    predictor's, theta = 0): a failure is scored as what the algorithm
    outputs.  Only a non-finite error is left out.
    """

    def __init__(
        self,
        trials: pd.DataFrame,
        *,
        seed: int,
        resamples: int,
        median_cache: dict[tuple, tuple[float, np.ndarray]] | None = None,
    ):
        # without a partition column the trials are one partition
        missing = [
            c for c in BOOTSTRAP_TRIAL_COLUMNS if c not in trials.columns and c != "partition"
        ]
        if missing:
            raise DPRegError(f"trial table lacks column(s) {', '.join(missing)} for the bootstrap")
        names = sorted({str(u) for u in pd.factorize(trials["dataset"])[1]})
        if len(names) != 1:
            raise DPRegError(f"DesignBootstrap takes one dataset, got {sorted(names)}")
        self.dataset = str(names[0])
        mse = trials["mse"].to_numpy(dtype=float)
        failed = trials["failed"].to_numpy(dtype=bool)
        # a failed trial counts with its recorded error (the sweep scores a failed fit
        # as theta = 0, the trivial predictor); only a non-finite error is left out
        bad = ~np.isfinite(mse)
        P, K, fold_idx = _fold_units(trials, self.dataset)
        rep_ids, rep_idx = _unique_inverse(trials["repeat"].to_numpy())
        R = len(rep_ids)
        N = P * K * R
        cell_idx, self.cells = cell_codes(trials)
        G = len(self.cells)
        slot = fold_idx * R + rep_idx
        if len(trials) and np.bincount(cell_idx * N + slot).max() > 1:
            raise DPRegError(
                f"dataset {self.dataset!r}: a (variant, algorithm, epsilon, partition, fold, "
                "repeat) occurs more than once in the trials"
            )
        self.values = np.full((G, N), np.nan)
        self.values[cell_idx, slot] = np.where(bad, np.nan, mse)
        self.failed = np.zeros((G, N), dtype=bool)
        self.failed[cell_idx, slot] = failed | ~np.isfinite(mse)
        self.partitions, self.folds, self.repeats = P, K, R
        self.resamples = check_resamples(resamples)
        # drawn once per design and process, shared read-only by every DesignBootstrap
        self._design = (P, K, R, self.resamples, int(seed), self.dataset)
        self.counts = _design_counts(*self._design)
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._fold_counts: np.ndarray | None = None  # (B, P K) replicate count of each fold
        # medians are computed per cell, on demand (paired ratios need few cells); a cache
        # shared between designs of the same dataset reuses a cell's replicate medians
        self._median_cache = {} if median_cache is None else median_cache
        # the cell keys as numpy arrays once (index_of is called per claim and epsilon)
        self._keys = tuple(
            self.cells[c].to_numpy(dtype=object if c != "epsilon" else float)
            for c in ("variant", "algorithm", "epsilon")
        )

    @property
    def clusters(self) -> int:
        """Top-level units of the design, the n of :func:`expanded_alpha`: P, or K when P = 1."""
        return self.partitions if self.partitions > 1 else self.folds

    def index_of(self, variant: str, algorithm: str, epsilon: float) -> int | None:
        """Row of a cell in :attr:`cells`, or None when it is not in the trials."""
        variants, algorithms, epsilons = self._keys
        hit = np.flatnonzero(
            (variants == variant)
            & (algorithms == algorithm)
            & np.isclose(epsilons, float(epsilon), rtol=1e-12, atol=0)
        )
        return int(hit[0]) if len(hit) else None

    def statistic(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(point estimates ``(G,)``, replicates ``(B, G)``) of ``mean`` or ``median``."""
        if name not in STATISTICS:
            raise DPRegError(f"unknown statistic {name!r}; known: {', '.join(STATISTICS)}")
        if name == "median":
            return self.cell_statistic(name, np.arange(len(self.cells)))
        if name not in self._cache:
            ok = np.isfinite(self.values)
            est = _masked_mean(self.values, ok)
            num = self.counts @ np.where(ok, self.values, 0.0).T
            den = self.counts @ ok.T.astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
            self._cache[name] = (est, reps)
        return self._cache[name]

    def cell_statistic(
        self, name: str, rows: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(point estimates, replicates ``(B, len(rows))``) of some cells only.

        Equal to the columns ``rows`` of :meth:`statistic`; the median of a
        cell is computed the first time it is asked for (and kept in the
        design's median cache, keyed by the design and the cell's trial
        values), the mean of every cell at once.
        """
        index = np.asarray(rows, dtype=np.intp)
        if name != "median":
            est, reps = self.statistic(name)
            return est[index], reps[:, index]
        keys = [(*self._design, self.values[g].tobytes()) for g in index]
        todo = list(
            dict.fromkeys(
                int(g) for g, key in zip(index, keys, strict=True) if key not in self._median_cache
            )
        )
        if todo:
            values = self.values[todo]
            ok = np.isfinite(values)
            # cells whose trials are equal within each fold (a non-private method):
            # their replicate medians follow from the fold totals of the counts
            units = self.partitions * self.folds
            by_fold = values.reshape(len(todo), units, self.repeats)
            flat = ok.all(axis=1) & (by_fold == by_fold[:, :, :1]).all(axis=(1, 2))
            medians = np.empty((self.resamples, len(todo)))
            if flat.any():
                if self._fold_counts is None:
                    self._fold_counts = self.counts.reshape(
                        self.resamples, units, self.repeats
                    ).sum(axis=2)
                medians[:, flat] = _fold_constant_medians(by_fold[flat, :, 0], self._fold_counts)
            if not flat.all():
                medians[:, ~flat] = _replicate_medians(
                    values[~flat], ok[~flat], *_median_layouts(*self._design)
                )
            for j, g in enumerate(todo):
                v = values[j][ok[j]]
                point = float(np.median(v)) if len(v) else np.nan
                key = (*self._design, self.values[g].tobytes())
                self._median_cache[key] = (point, medians[:, j])
        found = [self._median_cache[key] for key in keys]
        points = np.array([e for e, _ in found], dtype=float)
        if not found:
            return points, np.empty((self.resamples, 0))
        return points, np.stack([r for _, r in found], axis=1)


def _sorted_codes(column: pd.Series, *, numeric: bool = False) -> tuple[np.ndarray, list[Any]]:
    """Codes of a key column in the sorted order of its values (as str, or as float).

    The column is factorised as it is (categorical columns by their codes,
    without converting every row to a string) and the distinct values are
    sorted as Python sorts them, which for strings is the code-point order
    pandas sorts string group keys in.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):  # the codes as they are
        codes, uniques = column.cat.codes.to_numpy(), column.cat.categories
    else:
        codes, uniques = pd.factorize(column)
    if (codes < 0).any():
        raise DPRegError(f"trial column {column.name!r} has missing values")
    keys: list[Any] = [float(u) for u in uniques] if numeric else [str(u) for u in uniques]
    distinct = sorted(set(keys))
    rank = {k: i for i, k in enumerate(distinct)}
    return np.array([rank[k] for k in keys], dtype=np.int64)[codes], distinct


def cell_codes(trials: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Cell of each trial and the cells (one row per (dataset, variant, algorithm,
    epsilon), sorted by the keys as ``groupby(sort=True)`` orders them).

    Each key is coded in sorted order and the codes are combined into one
    integer per trial, so the cells and their order come from one
    :func:`numpy.unique` instead of a multi-key group-by.
    """
    combined = np.zeros(len(trials), dtype=np.int64)
    uniques = []
    for col in GROUP_KEYS:
        code, unique = _sorted_codes(trials[col], numeric=col == "epsilon")
        combined = combined * len(unique) + code
        uniques.append(unique)
    cell_keys, cell_idx = _unique_inverse(combined)
    columns = {}
    for col, unique in zip(reversed(GROUP_KEYS), reversed(uniques), strict=True):
        columns[col] = [unique[i] for i in cell_keys % len(unique)]
        cell_keys = cell_keys // len(unique)
    cells = pd.DataFrame(
        {
            col: pd.Series(columns[col], dtype=float if col == "epsilon" else str)
            for col in GROUP_KEYS
        }
    )
    return cell_idx.reshape(-1), cells


def _masked_mean(values: np.ndarray, ok: np.ndarray) -> np.ndarray:
    n = ok.sum(axis=1)
    total = np.where(ok, values, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


#: :func:`expanded_alpha` of common designs (level, folds), as computed with
#: scipy.special below, written exactly (hexadecimal): scipy.special's import
#: costs about 0.2 s, which a summary job then does not pay.  A test checks
#: every entry against the computation.
_EXPANDED_ALPHA: dict[tuple[float, int], float] = {
    (0.9, 3): float.fromhex("0x1.6d81ef933881dp-12"),
    (0.9, 5): float.fromhex("0x1.18fc18db8ba97p-6"),
    (0.9, 10): float.fromhex("0x1.b4d8f203df2f1p-5"),
    (0.95, 3): float.fromhex("0x1.258622683bb3ap-23"),
    (0.95, 5): float.fromhex("0x1.f4393556e5fc2p-10"),
    (0.95, 10): float.fromhex("0x1.182ff57c20011p-6"),
    (0.99, 3): float.fromhex("0x1.64e20bdd74eaap-111"),
    (0.99, 5): float.fromhex("0x1.1b652f5efbc66p-22"),
    (0.99, 10): float.fromhex("0x1.41969df95f28cp-11"),
}


@functools.lru_cache(maxsize=4096)  # the claims' p-values bisect on alpha
def expanded_alpha(level: float, clusters: int) -> float:
    """Two-sided tail mass of Hesterberg's expanded percentile interval.

    With n top-level units the plain percentile interval is too narrow (the
    bootstrap variance of a mean is (n - 1)/n of the sample variance, and
    the normal quantile ignores that the spread is estimated from n units).
    The expanded interval takes the percentiles at
    ``alpha' / 2 = Phi(-sqrt(n / (n - 1)) * t_{n-1, 1 - alpha/2})``
    (Hesterberg 2015); for n = 10 and 95% these are the 0.85%
    and 99.15% percentiles.  ``clusters < 2`` returns the plain alpha.

    References
    ----------
    Hesterberg, T. C. (2015). What teachers should know about the bootstrap:
    resampling in the undergraduate statistics curriculum. *The American
    Statistician* 69(4), 371-386.
    """
    alpha = 1.0 - level
    if clusters < 2:
        return alpha
    known = _EXPANDED_ALPHA.get((level, int(clusters)))
    if known is not None:
        return known
    # scipy.special instead of scipy.stats (whose import alone takes most of a second):
    # t_{n-1, 1 - alpha/2} = -stdtrit(n - 1, alpha/2) and Phi(-x) = ndtr(-x), the same
    # functions scipy.stats evaluates for t.isf and norm.sf
    from scipy.special import ndtr, stdtrit  # on first use: importing dpreg skips scipy

    n = float(clusters)
    t_quantile = -float(stdtrit(n - 1.0, alpha / 2.0))
    return float(2.0 * ndtr(-math.sqrt(n / (n - 1.0)) * t_quantile))


def _percentile_interval(
    reps: np.ndarray, level: float, clusters: int
) -> tuple[np.ndarray, np.ndarray]:
    """Expanded percentile interval of replicates ``(B, G)`` (NaN where none is finite).

    The percentiles of each column are :func:`numpy.nanquantile`'s; columns
    without a missing replicate are computed together by
    :func:`numpy.quantile` (the same interpolation on the same order
    statistics, so the same numbers).
    """
    alpha = expanded_alpha(level, clusters)
    q = [alpha / 2, 1 - alpha / 2]
    lo = np.full(reps.shape[1], np.nan)
    hi = np.full(reps.shape[1], np.nan)
    cols = np.isfinite(reps).any(axis=0)
    whole = cols & ~np.isnan(reps).any(axis=0)
    for chosen, quantile in ((whole, np.quantile), (cols & ~whole, np.nanquantile)):
        if chosen.any():
            bounds = quantile(reps[:, chosen], q, axis=0)
            lo[chosen], hi[chosen] = bounds[0], bounds[1]
    return lo, hi
