"""Bootstrap intervals, paired comparisons and computed verdicts.

The sweep runs every (dataset, variant, algorithm, epsilon) on the same K
cross-validation folds with R noise repeats per fold, so one cell of a
trial table is indexed by (fold, repeat).  This module turns those trials
into

- confidence intervals for the mean and the median test MSE of every cell
  (:func:`bootstrap_intervals`, used by :func:`dpreg.summary.summarise`);
- paired effects: the ratio of a statistic of two cells of the same dataset
  and epsilon (two algorithms, or two variants), with its interval
  (:func:`paired_ratios`);
- verdicts on *claims* stated in the configuration (:func:`evaluate_claims`),
  written to ``results/tables/claims.csv`` and rendered into the results
  README (:func:`render_markdown`).

The resampling design
---------------------
A replicate draws K folds with replacement from the K folds and, for each
drawn fold, R repeats with replacement from that fold's R repeats (two-stage
resampling of nested data, Davison & Hinkley 1997, section 3.8).  Why both
stages:

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
2000 replicates; ``tests/test_claims.py`` repeats the first): noise-dominated
(sd(a) = 0.5, sd(e) = 2) coverage of the mean 0.98 with intervals 1.4x the
width of the exact normal interval; fold-dominated (sd(a) = 1, sd(e) = 0.1)
0.93; equal parts (0.3, 0.3) 0.94.  The plain percentile interval gave
0.96, 0.88 and 0.88, and resampling folds only with expanded percentiles
0.92, 0.93, 0.91 (300 designs each, Monte Carlo sd about 0.013).

Every replicate applies the same (fold, repeat) indices to every cell of a
dataset, so two cells are resampled jointly, paired by (fold, repeat), and a
ratio of their statistics is bootstrapped with its correlation intact.
Failed trials (NaN error) are left out of both statistics of a replicate, as
they are in the tables.

Determinism: the replicate indices of a dataset come from the two streams
``seed_sequence(seed, "bootstrap", dataset, "folds", K)`` and
``seed_sequence(seed, "bootstrap", dataset, "repeats", K, R)`` (names hashed,
:mod:`dpreg.seeding`), drawn replicate by replicate, so they do not depend on
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

import argparse
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.seeding import seed_sequence
from dpreg.tables import (
    CLAIM_COLUMNS,
    CLAIM_DTYPES,
    GROUP_KEYS,
    INTERVAL_COLUMNS,
    conform,
    empty_frame,
    read_claims,
    read_trials,
    write_claims,
    write_text_atomic,
)

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "EXPECTATIONS",
    "STATISTICS",
    "Claim",
    "DesignBootstrap",
    "bootstrap_intervals",
    "evaluate_claims",
    "overall_verdict",
    "paired_ratios",
    "parse_claims",
    "point_verdicts",
    "render_markdown",
    "replace_readme_block",
    "resample_counts",
]

#: Default confidence level of every interval (config key ``bootstrap.level``).
DEFAULT_LEVEL = 0.95
#: Default number of bootstrap replicates (config key ``bootstrap.resamples``).
DEFAULT_RESAMPLES = 2000
#: Default share of points that must support a claim (claim key ``quorum``).
DEFAULT_QUORUM = 0.5

STATISTICS = ("mean", "median")
EXPECTATIONS = ("lower", "higher", "equal")
SOURCES = ("thesis", "ours")

#: Columns a trial table needs for the bootstrap.
BOOTSTRAP_TRIAL_COLUMNS = [*GROUP_KEYS, "fold", "repeat", "mse", "failed"]

README_BEGIN = "<!-- claims:begin (generated by python -m dpreg.claims readme) -->"
README_END = "<!-- claims:end -->"


# --------------------------------------------------------------------------
# the resampling design
# --------------------------------------------------------------------------
def resample_counts(
    folds: int, repeats: int, resamples: int, *, seed: int, dataset: str
) -> np.ndarray:
    """How often each (fold, repeat) enters each bootstrap replicate.

    Parameters
    ----------
    folds, repeats : int
        K and R of the design.
    resamples : int
        Number of replicates B.
    seed : int
        The configuration's root seed.
    dataset : str
        Dataset name (part of the stream key).

    Returns
    -------
    numpy.ndarray
        ``(B, K * R)`` float64 counts, row b summing to K R; column
        ``k * R + r`` is trial (fold k, repeat r).  Replicate b draws K folds
        with replacement, then R repeats with replacement within each drawn
        fold (see the module docstring).
    """
    K, R, B = int(folds), int(repeats), int(resamples)
    if K < 1 or R < 1 or B < 1:
        raise DPRegError(f"bootstrap needs folds, repeats, resamples >= 1, got {K}, {R}, {B}")
    f_rng = np.random.default_rng(seed_sequence(seed, "bootstrap", dataset, "folds", K))
    r_rng = np.random.default_rng(seed_sequence(seed, "bootstrap", dataset, "repeats", K, R))
    fold_pick = f_rng.integers(0, K, size=(B, K))  # row-major: prefix-stable in B
    rep_pick = r_rng.integers(0, R, size=(B, K, R))
    flat = (np.arange(B)[:, None, None] * (K * R) + fold_pick[:, :, None] * R + rep_pick).ravel()
    return np.bincount(flat, minlength=B * K * R).reshape(B, K * R).astype(np.float64)


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise DPRegError(f"bootstrap.level must lie in (0, 1), got {level!r}")
    return float(level)


def _check_resamples(resamples: int) -> int:
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or resamples < 1:
        raise DPRegError(f"bootstrap.resamples must be an integer >= 1, got {resamples!r}")
    return int(resamples)


class DesignBootstrap:
    """The (fold, repeat) design of one dataset's trials and its replicates.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trials of ONE dataset with the columns
        ``dataset, variant, algorithm, epsilon, fold, repeat, mse, failed``.
    seed : int
        Root seed of the configuration.
    resamples : int
        Number of bootstrap replicates B.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per (dataset, variant, algorithm, epsilon), in sorted order.
    values : numpy.ndarray
        ``(G, K R)`` test MSE of each cell; NaN for a failed or missing trial.
    counts : numpy.ndarray
        ``(B, K R)`` replicate counts from :func:`resample_counts`.
    """

    def __init__(self, trials: pd.DataFrame, *, seed: int, resamples: int):
        missing = [c for c in BOOTSTRAP_TRIAL_COLUMNS if c not in trials.columns]
        if missing:
            raise DPRegError(f"trial table lacks column(s) {', '.join(missing)} for the bootstrap")
        names = trials["dataset"].astype(str).unique()
        if len(names) != 1:
            raise DPRegError(f"DesignBootstrap takes one dataset, got {sorted(names)}")
        self.dataset = str(names[0])
        frame = trials[BOOTSTRAP_TRIAL_COLUMNS].copy()
        for col in ("dataset", "variant", "algorithm"):
            frame[col] = frame[col].astype(str)
        frame["epsilon"] = frame["epsilon"].astype(float)
        mse = frame["mse"].to_numpy(dtype=float)
        bad = frame["failed"].to_numpy(dtype=bool) | ~np.isfinite(mse)
        fold_ids, fold_idx = np.unique(frame["fold"].to_numpy(), return_inverse=True)
        rep_ids, rep_idx = np.unique(frame["repeat"].to_numpy(), return_inverse=True)
        K, R = len(fold_ids), len(rep_ids)
        cell_idx = frame.groupby(GROUP_KEYS, sort=True).ngroup().to_numpy()
        self.cells = (
            frame[GROUP_KEYS].drop_duplicates().sort_values(GROUP_KEYS, kind="mergesort")
        ).reset_index(drop=True)
        G = len(self.cells)
        slot = fold_idx * R + rep_idx
        if len(np.unique(cell_idx * (K * R) + slot)) != len(frame):
            raise DPRegError(
                f"dataset {self.dataset!r}: a (variant, algorithm, epsilon, fold, repeat) "
                "occurs more than once in the trials"
            )
        self.values = np.full((G, K * R), np.nan)
        self.values[cell_idx, slot] = np.where(bad, np.nan, mse)
        self.folds, self.repeats = K, R
        self.resamples = _check_resamples(resamples)
        self.counts = resample_counts(K, R, self.resamples, seed=seed, dataset=self.dataset)
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def index_of(self, variant: str, algorithm: str, epsilon: float) -> int | None:
        """Row of a cell in :attr:`cells`, or None when it is not in the trials."""
        hit = np.flatnonzero(
            (self.cells["variant"].to_numpy() == variant)
            & (self.cells["algorithm"].to_numpy() == algorithm)
            & np.isclose(self.cells["epsilon"].to_numpy(), float(epsilon), rtol=1e-12, atol=0)
        )
        return int(hit[0]) if len(hit) else None

    def statistic(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(point estimates ``(G,)``, replicates ``(B, G)``) of ``mean`` or ``median``."""
        if name not in STATISTICS:
            raise DPRegError(f"unknown statistic {name!r}; known: {', '.join(STATISTICS)}")
        if name not in self._cache:
            ok = np.isfinite(self.values)
            if name == "mean":
                est = _masked_mean(self.values, ok)
                num = self.counts @ np.where(ok, self.values, 0.0).T
                den = self.counts @ ok.T.astype(np.float64)
                with np.errstate(invalid="ignore", divide="ignore"):
                    reps = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
            else:
                est = np.array(
                    [
                        np.median(v[o]) if o.any() else np.nan
                        for v, o in zip(self.values, ok, strict=True)
                    ]
                )
                counts_t = np.ascontiguousarray(self.counts.T.astype(np.int32))
                reps = np.empty((self.resamples, len(self.values)))
                for g, (v, o) in enumerate(zip(self.values, ok, strict=True)):
                    reps[:, g] = _weighted_medians(counts_t, v, o)
            self._cache[name] = (est, reps)
        return self._cache[name]


def _masked_mean(values: np.ndarray, ok: np.ndarray) -> np.ndarray:
    n = ok.sum(axis=1)
    total = np.where(ok, values, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _weighted_medians(counts_t: np.ndarray, values: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Median of each replicate of one cell: the multiset ``values[j]`` x ``counts_t[j, b]``.

    ``counts_t`` is the transposed ``(K R, B)`` integer count matrix (rows are
    gathered in sorted-value order, which is fast in this layout).  numpy's
    convention for an even count is kept (mean of the two middle values), so
    a replicate with every count 1 gives ``np.median(values)``.
    """
    B = counts_t.shape[1]
    if not ok.any():
        return np.full(B, np.nan)
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(values[idx], kind="stable")]
    sorted_vals = values[order]
    cum = np.cumsum(counts_t[order], axis=0, dtype=np.int32)
    total = cum[-1]
    lo = (cum > ((total - 1) // 2)[None, :]).argmax(axis=0)
    hi = (cum > (total // 2)[None, :]).argmax(axis=0)
    out = 0.5 * (sorted_vals[lo] + sorted_vals[hi])
    return np.where(total > 0, out, np.nan)


def expanded_alpha(level: float, clusters: int) -> float:
    """Two-sided tail mass of Hesterberg's expanded percentile interval.

    With n top-level units the plain percentile interval is too narrow (the
    bootstrap variance of a mean is (n - 1)/n of the sample variance, and
    the normal quantile ignores that the spread is estimated from n units).
    The expanded interval takes the percentiles at
    ``alpha' / 2 = Phi(-sqrt(n / (n - 1)) * t_{n-1, 1 - alpha/2})``
    (Hesterberg 2015, section 4.2); for n = 10 and 95% these are the 0.85%
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
    from scipy import stats

    n = float(clusters)
    return float(2.0 * stats.norm.sf(math.sqrt(n / (n - 1.0)) * stats.t.isf(alpha / 2.0, n - 1.0)))


def _percentile_interval(
    reps: np.ndarray, level: float, clusters: int
) -> tuple[np.ndarray, np.ndarray]:
    """Expanded percentile interval of replicates ``(B, G)`` (NaN where none is finite)."""
    alpha = expanded_alpha(level, clusters)
    finite = np.isfinite(reps)
    lo = np.full(reps.shape[1], np.nan)
    hi = np.full(reps.shape[1], np.nan)
    cols = finite.any(axis=0)
    if cols.any():
        q = np.nanquantile(reps[:, cols], [alpha / 2, 1 - alpha / 2], axis=0)
        lo[cols], hi[cols] = q[0], q[1]
    return lo, hi


# --------------------------------------------------------------------------
# intervals of every cell
# --------------------------------------------------------------------------
def bootstrap_intervals(
    trials: pd.DataFrame,
    *,
    seed: int,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
) -> pd.DataFrame:
    """Confidence intervals for the mean and median test MSE of every cell.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trial table (any number of datasets) with the columns
        ``dataset, variant, algorithm, epsilon, fold, repeat, mse, failed``.
    seed : int
        Root seed of the configuration (the replicates derive from it).
    level : float
        Confidence level in (0, 1).
    resamples : int
        Bootstrap replicates per dataset.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, variant, algorithm, epsilon`` and
        :data:`dpreg.tables.INTERVAL_COLUMNS`, sorted by the keys.  An
        interval is NaN when every trial of the cell failed.
    """
    level = _check_level(level)
    resamples = _check_resamples(resamples)
    parts = []
    for _, part in _by_repeat_count(trials):
        boot = DesignBootstrap(part, seed=seed, resamples=resamples)
        out = boot.cells.copy()
        for stat in STATISTICS:
            _, reps = boot.statistic(stat)
            out[f"mse_{stat}_lo"], out[f"mse_{stat}_hi"] = _percentile_interval(
                reps, level, boot.folds
            )
        parts.append(out)
    if not parts:
        return pd.DataFrame(columns=[*GROUP_KEYS, *INTERVAL_COLUMNS])
    out = pd.concat(parts, ignore_index=True).sort_values(GROUP_KEYS, kind="mergesort")
    return out[[*GROUP_KEYS, *INTERVAL_COLUMNS]].reset_index(drop=True)


def _by_repeat_count(trials: pd.DataFrame):
    """Trials split by (dataset, number of repeats of the cell).

    An experiment may run some algorithms with more noise repeats than
    others; each design is bootstrapped with its own (K, R).
    """
    keys = [trials[c].astype(str) if c != "epsilon" else trials[c] for c in GROUP_KEYS]
    reps = trials.groupby(keys, sort=False)["repeat"].transform("max").astype(np.int64) + 1
    yield from trials.groupby([trials["dataset"].astype(str), reps.to_numpy()], sort=True)


def paired_ratios(
    trials: pd.DataFrame,
    a: tuple[str, str],
    b: tuple[str, str],
    epsilons: Sequence[float],
    *,
    statistic: str,
    seed: int,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
) -> pd.DataFrame:
    """Ratio stat(a) / stat(b) per epsilon, bootstrapped with (fold, repeat) pairing.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trials of ONE dataset holding both cells.
    a, b : (variant, algorithm)
        The two cells compared.
    epsilons : sequence of float
        Epsilons to compare (those missing for either cell are skipped).
    statistic : {"mean", "median"}
    seed, level, resamples
        As for :func:`bootstrap_intervals`.

    Returns
    -------
    pandas.DataFrame
        ``epsilon, a_value, b_value, ratio, ratio_lo, ratio_hi``; the
        interval is the expanded percentile interval of the replicate
        ratios.  Both cells are restricted to the repeats they share, and
        every replicate resamples the same (fold, repeat) pairs of both.
    """
    cols = ["epsilon", "a_value", "b_value", "ratio", "ratio_lo", "ratio_hi"]
    var = trials["variant"].astype(str)
    alg = trials["algorithm"].astype(str)
    in_a = (var == a[0]) & (alg == a[1])
    in_b = (var == b[0]) & (alg == b[1])
    if not in_a.any() or not in_b.any():
        return pd.DataFrame(columns=cols)
    shared = min(trials.loc[in_a, "repeat"].max(), trials.loc[in_b, "repeat"].max()) + 1
    part = trials.loc[(in_a | in_b) & (trials["repeat"] < shared)]
    boot = DesignBootstrap(part, seed=seed, resamples=resamples)
    est, reps = boot.statistic(statistic)
    rows = []
    for eps in epsilons:
        ia = boot.index_of(a[0], a[1], eps)
        ib = boot.index_of(b[0], b[1], eps)
        if ia is None or ib is None:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio_reps = reps[:, ia] / reps[:, ib]
            ratio = est[ia] / est[ib]
        ratio_reps = np.where(np.isfinite(ratio_reps), ratio_reps, np.nan)
        lo, hi = _percentile_interval(ratio_reps[:, None], level, boot.folds)
        rows.append(
            {
                "epsilon": float(eps),
                "a_value": float(est[ia]),
                "b_value": float(est[ib]),
                "ratio": float(ratio) if np.isfinite(ratio) else math.nan,
                "ratio_lo": float(lo[0]),
                "ratio_hi": float(hi[0]),
            }
        )
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------
# verdicts
# --------------------------------------------------------------------------
def point_verdicts(
    lo: np.ndarray, hi: np.ndarray, *, expect: str, margin: float = 0.0
) -> np.ndarray:
    """Verdict of each (dataset, epsilon) point from the interval of its ratio a/b.

    Parameters
    ----------
    lo, hi : array_like
        Interval of the ratio stat(a) / stat(b).
    expect : {"lower", "higher", "equal"}
        What the claim says of a relative to b.
    margin : float
        Relative margin m >= 0.  ``lower``/``higher`` need the interval to
        lie below 1/(1+m) / above 1+m to support (m = 0: simply below /
        above 1); ``equal`` needs it inside [1/(1+m), 1+m].

    Returns
    -------
    numpy.ndarray of str
        ``supported`` when the whole interval lies in the claimed region,
        ``contradicted`` when the whole interval lies in the opposite region
        (for ``lower``: at or above 1, i.e. a is not lower; for ``equal``:
        entirely outside [1/(1+m), 1+m]), else ``inconclusive`` (also when
        the interval is undefined).
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    if expect not in EXPECTATIONS:
        raise DPRegError(f"unknown expect {expect!r}; known: {', '.join(EXPECTATIONS)}")
    if not (isinstance(margin, int | float) and math.isfinite(margin) and margin >= 0):
        raise DPRegError(f"margin must be a finite number >= 0, got {margin!r}")
    up, down = 1.0 + margin, 1.0 / (1.0 + margin)
    if expect == "lower":
        support, contra = hi < down, lo >= 1.0
    elif expect == "higher":
        support, contra = lo > up, hi <= 1.0
    else:
        support, contra = (lo >= down) & (hi <= up), (lo > up) | (hi < down)
    out = np.full(lo.shape, "inconclusive", dtype=object)
    defined = np.isfinite(lo) & np.isfinite(hi)
    out[defined & support] = "supported"
    out[defined & contra & ~support] = "contradicted"
    return out


def overall_verdict(verdicts: Iterable[str], *, quorum: float = DEFAULT_QUORUM) -> str:
    """One verdict for a claim from the verdicts of its points.

    ``supported`` when no point contradicts and at least ``quorum`` of the
    points support; ``contradicted`` when some point contradicts and at least
    as many contradict as support; ``inconclusive`` otherwise (too few
    decided points, or mixed evidence with more points for than against).
    A claim with no point is ``inconclusive``.
    """
    v = list(verdicts)
    if not v:
        return "inconclusive"
    n_sup, n_con = v.count("supported"), v.count("contradicted")
    if n_con == 0 and n_sup >= quorum * len(v):
        return "supported"
    if n_con > 0 and n_con >= n_sup:
        return "contradicted"
    return "inconclusive"


# --------------------------------------------------------------------------
# claims as data
# --------------------------------------------------------------------------
_CLAIM_KEYS = {
    "id",
    "source",
    "statement",
    "a",
    "b",
    "statistic",
    "expect",
    "margin",
    "epsilons",
    "datasets",
    "quorum",
}


@dataclass(frozen=True)
class Claim:
    """One comparison an experiment states (see config/README.md, "claims").

    ``a`` and ``b`` are (variant, algorithm); the effect is
    stat(a) / stat(b) over the datasets and the closed epsilon range.
    """

    id: str
    experiment: str
    source: str
    statement: str
    a: tuple[str, str]
    b: tuple[str, str]
    statistic: str
    expect: str
    margin: float
    eps_range: tuple[float, float]
    datasets: tuple[str, ...] | None
    quorum: float


def _side(spec: Any, where: str, exp: Mapping[str, Any], default: tuple[str, str] | None):
    if not isinstance(spec, Mapping) or not set(spec) <= {"algorithm", "variant"}:
        raise DPRegError(f"{where} must be a mapping with keys algorithm, variant; got {spec!r}")
    variants = list(exp.get("variants", []))
    algorithms = list(exp.get("algorithms", []))
    variant = spec.get("variant") or (default[0] if default else None)
    algorithm = spec.get("algorithm") or (default[1] if default else None)
    if variant is None and len(variants) == 1:
        variant = variants[0]
    if variant is None or algorithm is None:
        raise DPRegError(f"{where} needs 'algorithm' and (with several variants) 'variant'")
    if variant not in variants:
        raise DPRegError(
            f"{where}: variant {variant!r} is not in the experiment; known: {', '.join(variants)}"
        )
    if algorithm not in algorithms:
        raise DPRegError(
            f"{where}: algorithm {algorithm!r} is not in the experiment; "
            f"known: {', '.join(algorithms)}"
        )
    return str(variant), str(algorithm)


def _claim_id(spec: Any, where: str, seen: set[str]) -> str:
    if not isinstance(spec, Mapping):
        raise DPRegError(f"{where} must be a mapping, got {spec!r}")
    unknown = sorted(set(spec) - _CLAIM_KEYS)
    if unknown:
        raise DPRegError(
            f"{where}: unknown key(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(_CLAIM_KEYS))}"
        )
    cid = spec.get("id")
    if not isinstance(cid, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", cid):
        raise DPRegError(f"{where}: id must be a name (letters, digits, _ . + -), got {cid!r}")
    if cid in seen:
        raise DPRegError(f"{where}: duplicate claim id {cid!r}")
    seen.add(cid)
    return cid


def _number(spec: Mapping[str, Any], key: str, default: float, where: str, ok, allowed: str):
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not ok(value):
        raise DPRegError(f"{where}: {key} must be {allowed}, got {value!r}")
    return float(value)


def _claim_scope(spec: Mapping[str, Any], where: str):
    """(epsilon range, datasets or None) of a claim."""
    eps = spec.get("epsilons", [0.0, math.inf])
    if (
        not isinstance(eps, Sequence)
        or len(eps) != 2
        or not all(isinstance(e, int | float) and not isinstance(e, bool) for e in eps)
        or eps[0] > eps[1]
    ):
        raise DPRegError(f"{where}: epsilons must be [low, high] with low <= high, got {eps!r}")
    ds = spec.get("datasets", "all")
    if ds != "all" and not (isinstance(ds, Sequence) and all(isinstance(x, str) for x in ds)):
        raise DPRegError(f"{where}: datasets must be 'all' or a list of names, got {ds!r}")
    return (float(eps[0]), float(eps[1])), (None if ds == "all" else tuple(ds))


def parse_claims(experiment: str, exp: Mapping[str, Any]) -> list[Claim]:
    """The claims of one experiment's config entry, checked.

    Raises
    ------
    DPRegError
        Naming the experiment, the claim and the key for an unknown key, a
        side that is not in the experiment, or a value out of range.
    """
    out = []
    seen: set[str] = set()
    for i, spec in enumerate(exp.get("claims") or []):
        cid = _claim_id(spec, f"experiments: {experiment}: claims[{i}]", seen)
        where = f"experiments: {experiment}: claims: {cid}"
        a = _side(spec.get("a"), f"{where}: a", exp, None)
        b = _side(spec.get("b", {}), f"{where}: b", exp, a)
        if a == b:
            raise DPRegError(f"{where}: a and b are the same (variant, algorithm) {a}")
        values = {"statistic": "median", "source": "ours", **spec}
        for key, allowed in (
            ("statistic", STATISTICS),
            ("expect", EXPECTATIONS),
            ("source", SOURCES),
        ):
            if values.get(key) not in allowed:
                raise DPRegError(
                    f"{where}: {key} must be one of {', '.join(allowed)}, got {values.get(key)!r}"
                )
        margin = _number(spec, "margin", 0.0, where, lambda m: 0 <= m < 10, "a number in [0, 10)")
        quorum = _number(spec, "quorum", DEFAULT_QUORUM, where, lambda q: 0 < q <= 1, "in (0, 1]")
        eps_range, datasets = _claim_scope(spec, where)
        out.append(
            Claim(
                id=cid,
                experiment=experiment,
                source=str(values["source"]),
                statement=str(spec.get("statement", "")),
                a=a,
                b=b,
                statistic=str(values["statistic"]),
                expect=str(values["expect"]),
                margin=margin,
                eps_range=eps_range,
                datasets=datasets,
                quorum=quorum,
            )
        )
    return out


def bootstrap_settings(config: Mapping[str, Any]) -> tuple[int, float, int]:
    """(seed, level, resamples) of a configuration, defaults filled in."""
    boot = config.get("bootstrap") or {}
    return (
        int(config.get("seed", 20200601)),
        _check_level(boot.get("level", DEFAULT_LEVEL)),
        _check_resamples(boot.get("resamples", DEFAULT_RESAMPLES)),
    )


def claim_points(
    claims: Sequence[Claim],
    trials: pd.DataFrame,
    *,
    seed: int,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
) -> pd.DataFrame:
    """Point rows of ``claims.csv`` for the claims on one dataset's trials."""
    rows = []
    dataset = str(trials["dataset"].iloc[0])
    eps_all = sorted(set(trials["epsilon"].astype(float)))
    for c in claims:
        if c.datasets is not None and dataset not in c.datasets:
            continue
        eps = [e for e in eps_all if c.eps_range[0] <= e <= c.eps_range[1]]
        ratios = paired_ratios(
            trials,
            c.a,
            c.b,
            eps,
            statistic=c.statistic,
            seed=seed,
            level=level,
            resamples=resamples,
        )
        verdicts = point_verdicts(
            ratios["ratio_lo"].to_numpy(float),
            ratios["ratio_hi"].to_numpy(float),
            expect=c.expect,
            margin=c.margin,
        )
        for rec, verdict in zip(ratios.to_dict("records"), verdicts, strict=True):
            rows.append(
                {
                    **_claim_fields(c),
                    **rec,
                    "scope": "point",
                    "dataset": dataset,
                    "level": level,
                    "resamples": resamples,
                    "verdict": verdict,
                }
            )
    return pd.DataFrame(rows)


def _claim_fields(c: Claim) -> dict[str, Any]:
    return {
        "claim": c.id,
        "experiment": c.experiment,
        "source": c.source,
        "a_variant": c.a[0],
        "a_algorithm": c.a[1],
        "b_variant": c.b[0],
        "b_algorithm": c.b[1],
        "statistic": c.statistic,
        "expect": c.expect,
        "margin": c.margin,
        "statement": c.statement,
    }


def finish_claims(
    claims: Sequence[Claim], points: pd.DataFrame, *, level: float, resamples: int
) -> pd.DataFrame:
    """Add one overall row per claim to the point rows and order the table.

    Point rows are sorted by (claim order, dataset, epsilon); each claim's
    overall row (``scope == "overall"``, dataset ``all``) comes first and
    carries the counts and :func:`overall_verdict`.
    """
    out = []
    for c in claims:
        pts = points[points["claim"] == c.id] if len(points) else points
        pts = pts.sort_values(["dataset", "epsilon"], kind="mergesort") if len(pts) else pts
        verdicts = list(pts["verdict"]) if len(pts) else []
        summary = {
            **_claim_fields(c),
            "scope": "overall",
            "dataset": "all",
            "epsilon": math.nan,
            "a_value": math.nan,
            "b_value": math.nan,
            "ratio": float(np.nanmedian(pts["ratio"]))
            if len(pts) and pts["ratio"].notna().any()
            else math.nan,
            "ratio_lo": float(pts["ratio"].min()) if len(pts) else math.nan,
            "ratio_hi": float(pts["ratio"].max()) if len(pts) else math.nan,
            "level": level,
            "resamples": resamples,
            "verdict": overall_verdict(verdicts, quorum=c.quorum),
            "points": len(verdicts),
            "supported": verdicts.count("supported"),
            "contradicted": verdicts.count("contradicted"),
            "inconclusive": verdicts.count("inconclusive"),
        }
        out.append(pd.DataFrame([summary]))
        if len(pts):
            pts = pts.copy()
            for col in ("points", "supported", "contradicted", "inconclusive"):
                pts[col] = 0
            out.append(pts)
    if not out:
        return empty_frame(CLAIM_COLUMNS, CLAIM_DTYPES)
    frame = pd.concat(out, ignore_index=True)
    return conform(frame, CLAIM_COLUMNS, CLAIM_DTYPES)


def evaluate_claims(
    config: Mapping[str, Any],
    trial_files: Mapping[str, Sequence[str | Path]] | None = None,
    *,
    trials: Mapping[str, pd.DataFrame] | None = None,
    select: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Evaluate every claim of a configuration (the ``claims.csv`` table).

    Parameters
    ----------
    config : mapping
        The configuration (``seed``, optional ``bootstrap``, ``experiments``
        with their ``claims``).
    trial_files : mapping, optional
        Experiment id -> its trial files; only the columns and cells the
        claims compare are read.
    trials : mapping, optional
        Experiment id -> trial table (instead of files).
    select : mapping, optional
        Experiment id -> ``{"repeats": R}`` (an int, or algorithm -> int):
        only the first R repeats of each cell are used, as in the
        experiment's own table.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`dpreg.tables.CLAIM_COLUMNS`.  The overall row's
        ``ratio`` is the median point ratio and ``ratio_lo``/``ratio_hi`` the
        smallest and largest point ratio (not an interval).

    Notes
    -----
    The overall verdict rule (:func:`overall_verdict`) and the point rule
    (:func:`point_verdicts`) are written down in config/README.md.
    """
    seed, level, resamples = bootstrap_settings(config)
    all_claims: list[Claim] = []
    points = []
    for exp_id, exp in config["experiments"].items():
        claims = parse_claims(exp_id, exp)
        if not claims:
            continue
        all_claims.extend(claims)
        for part in _dataset_parts(exp_id, claims, trial_files, trials, select):
            points.append(claim_points(claims, part, seed=seed, level=level, resamples=resamples))
    pts = (
        pd.concat([p for p in points if len(p)], ignore_index=True)
        if any(len(p) for p in points)
        else pd.DataFrame(columns=CLAIM_COLUMNS)
    )
    return finish_claims(all_claims, pts, level=level, resamples=resamples)


def _dataset_parts(exp_id, claims, trial_files, trials, select):
    """Trials of the cells an experiment's claims compare, one dataset at a time."""
    variants = sorted({v for c in claims for v in (c.a[0], c.b[0])})
    algorithms = sorted({a for c in claims for a in (c.a[1], c.b[1])})
    if trials is not None and exp_id in trials:
        frame = trials[exp_id]
        frame = frame[
            frame["variant"].astype(str).isin(variants)
            & frame["algorithm"].astype(str).isin(algorithms)
        ]
    elif trial_files is not None and exp_id in trial_files:
        frame = read_trials(
            trial_files[exp_id],
            variants=variants,
            algorithms=algorithms,
            repeats=(select or {}).get(exp_id, {}).get("repeats"),
            columns=BOOTSTRAP_TRIAL_COLUMNS,
        )
    else:
        raise DPRegError(f"experiment {exp_id!r} states claims but no trials were given for it")
    for _, part in frame.groupby(frame["dataset"].astype(str), sort=True):
        yield part


# --------------------------------------------------------------------------
# markdown for results/README.md
# --------------------------------------------------------------------------
def _num(x: float) -> str:
    """A ratio as the README prints it: 3 significant digits."""
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.3g}"


def _side_text(variant: str, algorithm: str, other: tuple[str, str]) -> str:
    return f"`{algorithm}`" if variant == other[0] else f"`{algorithm}` · `{variant}`"


def render_markdown(claims: pd.DataFrame) -> str:
    """Markdown of every claim and its computed verdict, grouped by experiment.

    For each experiment a table lists each claim (source thesis / ours, the
    comparison, statistic, epsilon range covered, expected direction), the
    overall verdict with the point counts, and the median and range of the
    point ratios; below it, the points that contradict a claim are listed with
    their interval.  Every number comes from ``claims`` (the text is what
    :func:`replace_readme_block` inserts between the README markers).
    """
    if claims.empty:
        return "_No experiment states claims._\n"
    lines: list[str] = []
    overall = claims[claims["scope"] == "overall"]
    points = claims[claims["scope"] == "point"]
    level = float(overall["level"].iloc[0])
    resamples = int(overall["resamples"].iloc[0])
    lines.append(
        f"Verdicts computed from `tables/claims.csv` ({level:.0%} paired bootstrap intervals, "
        f"{resamples} replicates; rule in config/README.md). Ratio = statistic of the first "
        'named over the second; "thesis" marks the thesis\' claims (ours where the thesis '
        'text is not available: our reading), "ours" this project\'s.'
    )
    for exp_id in dict.fromkeys(overall["experiment"]):
        lines += ["", f"### `{exp_id}`", ""]
        lines.append(
            "| claim | source | comparison | stat | ε | expect | verdict | s / c / i of n | ratio median (range) |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        exp_rows = overall[overall["experiment"] == exp_id]
        for row in exp_rows.itertuples(index=False):
            pts = points[points["claim"] == row.claim]
            a = _side_text(row.a_variant, row.a_algorithm, (row.b_variant, row.b_algorithm))
            b = _side_text(row.b_variant, row.b_algorithm, (row.a_variant, row.a_algorithm))
            if row.a_variant == row.b_variant:
                a = f"{a} vs {b} (`{row.a_variant}`)"
            else:
                a = f"{a} vs {b}"
            eps = f"{_num(pts['epsilon'].min())}–{_num(pts['epsilon'].max())}" if len(pts) else "–"
            expect = row.expect if row.margin == 0 else f"{row.expect} (±{row.margin:g})"
            lines.append(
                f"| {row.claim} | {row.source} | {a} | {row.statistic} | {eps} | {expect} | "
                f"**{row.verdict}** | {row.supported} / {row.contradicted} / {row.inconclusive}"
                f" of {row.points} | {_num(row.ratio)} ({_num(row.ratio_lo)}–{_num(row.ratio_hi)}) |"
            )
        lines.append("")
        for row in exp_rows.itertuples(index=False):
            if row.statement:
                lines.append(f"- {row.claim}: {row.statement}")
            bad = points[(points["claim"] == row.claim) & (points["verdict"] == "contradicted")]
            if len(bad):
                where = "; ".join(
                    f"{p.dataset} ε={_num(p.epsilon)}: {_num(p.ratio)} [{_num(p.ratio_lo)}, {_num(p.ratio_hi)}]"
                    for p in bad.itertuples(index=False)
                )
                lines.append(f"  Contradicted at: {where}.")
    return "\n".join(lines) + "\n"


def replace_readme_block(readme: str, block: str) -> str:
    """``readme`` with the text between the claims markers replaced by ``block``.

    The markers are added at the end when the README has none.
    """
    body = f"{README_BEGIN}\n{block.rstrip()}\n{README_END}"
    if README_BEGIN in readme and README_END in readme:
        head, rest = readme.split(README_BEGIN, 1)
        _, tail = rest.split(README_END, 1)
        return head + body + tail
    return readme.rstrip("\n") + "\n\n## Claims and computed verdicts\n\n" + body + "\n"


def readme_block(readme: str) -> str | None:
    """The generated block of a README (between the markers), or None."""
    if README_BEGIN not in readme or README_END not in readme:
        return None
    return readme.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip("\n")


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
def _load_config(path: str | Path) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh)
    if not isinstance(cfg, dict) or "experiments" not in cfg:
        raise DPRegError(f"{path}: not a dpreg configuration (no 'experiments' key)")
    return cfg


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dpreg.claims {evaluate,readme}`` (see config/README.md)."""
    parser = argparse.ArgumentParser(
        prog="python -m dpreg.claims", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="trial files -> claims.csv")
    ev.add_argument("--config", default="config/config.yaml")
    ev.add_argument(
        "--trials", default="results/trials", help="folder <experiment>/<dataset>.csv.gz"
    )
    ev.add_argument("--out", default="results/tables/claims.csv")
    rd = sub.add_parser("readme", help="claims.csv -> the verdict block of results/README.md")
    rd.add_argument("--claims", default="results/tables/claims.csv")
    rd.add_argument("--readme", default="results/README.md")
    args = parser.parse_args(argv)
    try:
        if args.command == "evaluate":
            cfg = _load_config(args.config)
            files = {}
            for exp in cfg["experiments"]:
                found = sorted(Path(args.trials, exp).glob("*.csv.gz")) + sorted(
                    Path(args.trials, exp).glob("*.parquet")
                )
                if found:
                    files[exp] = found
                elif parse_claims(exp, cfg["experiments"][exp]):
                    print(
                        f"note: no trial files under {args.trials}/{exp}/; its claims are left out",
                        file=sys.stderr,
                    )
            cfg = {
                **cfg,
                "experiments": {e: x for e, x in cfg["experiments"].items() if e in files},
            }
            write_claims(evaluate_claims(cfg, files), args.out)
        else:
            block = render_markdown(read_claims(args.claims))
            path = Path(args.readme)
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            write_text_atomic(path, replace_readme_block(text, block))
    except DPRegError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
