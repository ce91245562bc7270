"""Aggregate per-trial results and write the pipeline's tables.

A *trial* is one (dataset, variant, algorithm, epsilon, partition, fold, repeat) of the
sweep (:func:`dpreg.engine.sources.sweep_dataset`).  :func:`summarise` reduces the
trials of an experiment to one row per (dataset, variant, algorithm, epsilon)
with the statistics the thesis and Wang (2018) report: the mean test MSE
(what their figures plot), its standard deviation, median and quartiles, the
mean R², the number of failed trials and of excluded ones.

No failed trial is dropped.  A failed trial (TukeyEM's ⊥, a singular or
non-finite solve) is scored as what the algorithm outputs when it fails,
the trivial predictor theta = 0: the sweep records that predictor's MSE,
R² and coefficient error ``||0 - theta*||`` for it
(:func:`dpreg.engine.blocks._score`), and every statistic and interval
counts it with them.  ``failed`` counts these trials beside ``trials`` (the
failure rate is ``failed / trials``).  Only a trial whose recorded MSE is
not finite (the sweep records none) is left out of every statistic,
counted in ``excluded``; when every trial of a row is excluded its
statistics are NaN.

Every row also carries bootstrap confidence intervals for the mean and the
median (:func:`dpreg.inference.intervals.bootstrap_intervals`: partitions, folds within
them and repeats within folds resampled, deterministic from the configuration's seed).

Column lists, dtypes and the (deterministic, atomic) writers live in
:mod:`dpreg.io.tables`; they are re-exported here for existing callers.  The
provenance record lives in :mod:`dpreg.report.provenance`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.inference.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, cell_codes
from dpreg.inference.intervals import bootstrap_intervals
from dpreg.io.tables import (
    GROUP_KEYS,
    INTERVAL_COLUMNS,
    LEDGER_COLUMNS,
    SUMMARY_COLUMNS,
    SUMMARY_DTYPES,
    TABLE_FLOAT_FORMAT,
    TRIAL_COLUMNS,
    TRIAL_FLOAT_FORMAT,
    empty_frame,
    read_table,
    write_json,
    write_table,
)
from dpreg.io.trials import read_trials, write_trials
from dpreg.report.provenance import (
    PROVENANCE_PACKAGES,
    canonical_json,
    config_hash,
    package_versions,
    provenance,
)

__all__ = [
    "DEFAULT_SEED",
    "GROUP_KEYS",
    "INTERVAL_COLUMNS",
    "LEDGER_COLUMNS",
    "PROVENANCE_PACKAGES",
    "SUMMARY_TRIAL_COLUMNS",
    "TABLE_COLUMNS",
    "TRIAL_FLOAT_FORMAT",
    "TABLE_FLOAT_FORMAT",
    "canonical_json",
    "package_versions",
    "config_hash",
    "provenance",
    "read_table",
    "read_trials",
    "summarise",
    "write_json",
    "write_table",
    "write_trials",
]

#: Columns of a summary table, in order (ledger columns follow when present).
TABLE_COLUMNS = SUMMARY_COLUMNS

#: Trial columns :func:`summarise` needs.
REQUIRED_TRIAL_COLUMNS = [
    c
    for c in TRIAL_COLUMNS
    if c not in ("lam", "calibration", "seed_key", "coef_err", "partition", *LEDGER_COLUMNS)
]

#: Trial columns a summary reads: the required ones, the partition (optional:
#: one partition without it), the coefficient error (optional: NaN without
#: it) and the privacy ledger.
SUMMARY_TRIAL_COLUMNS = [*REQUIRED_TRIAL_COLUMNS, "partition", "coef_err", *LEDGER_COLUMNS]

#: Root seed used when none is given (the default configuration's).
DEFAULT_SEED = 20200601


# --------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------
def summarise(
    trials: pd.DataFrame,
    *,
    experiment: str,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    median_cache: dict | None = None,
) -> pd.DataFrame:
    """One row per (dataset, variant, algorithm, epsilon) of a trial table.

    Parameters
    ----------
    trials : pandas.DataFrame
        Per-trial results with at least the columns ``dataset, variant,
        algorithm, epsilon, delta, mse, r2, failed, outside_validity``
        (the output of :func:`dpreg.engine.sources.sweep_dataset`).
    experiment : str
        Experiment id written into the ``experiment`` column.
    seed : int
        Root seed of the configuration; the bootstrap replicates derive from
        it (:func:`dpreg.inference.bootstrap.resample_counts`).
    level : float
        Confidence level of the intervals (config ``bootstrap.level``).
    resamples : int
        Bootstrap replicates (config ``bootstrap.resamples``).
    median_cache : dict, optional
        Replicate medians by design and cell, filled here; passed on to later
        bootstraps of the same trials (a ratio figure's bands,
        :func:`dpreg.inference.bands.curve_bands`) they are not recomputed.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`TABLE_COLUMNS`, sorted by dataset, variant, algorithm
        and epsilon.  ``trials`` counts every trial of the row, ``failed``
        those flagged failed (scored with the error the sweep recorded for
        them, the trivial predictor's), ``excluded`` those whose MSE is not
        finite; the statistics ``mse_*``, ``r2_mean`` and ``coef_err_*``
        (and the intervals) use every trial but the excluded ones;
        ``coef_err_median``/``coef_err_mean`` summarise the trial column
        ``coef_err`` (a known answer's ``||theta - theta*||``, NaN without one).  ``mse_sd``
        is the sample standard deviation (ddof = 1, NaN for one trial);
        quantiles interpolate linearly (numpy's default, Hyndman & Fan
        type 7).  ``outside_validity`` is true when any trial of the row used
        a calibration outside its proven range (as the trial table records
        it).  ``mse_mean_lo/hi`` and ``mse_median_lo/hi`` are the bootstrap
        intervals of :func:`dpreg.inference.intervals.bootstrap_intervals`.

    Raises
    ------
    DPRegError
        If a required column is missing, or a row mixes several deltas.
    """
    if not isinstance(experiment, str) or not experiment:
        raise DPRegError(f"experiment must be a non-empty string, got {experiment!r}")
    missing = [c for c in REQUIRED_TRIAL_COLUMNS if c not in trials.columns]
    if missing:
        raise DPRegError(
            f"trial table lacks column(s) {', '.join(missing)}; "
            f"needed: {', '.join(REQUIRED_TRIAL_COLUMNS)}"
        )
    if trials.empty:
        return empty_frame(TABLE_COLUMNS, SUMMARY_DTYPES)

    frame = trials[
        [*REQUIRED_TRIAL_COLUMNS, *(["partition"] if "partition" in trials.columns else [])]
    ].copy()
    frame["coef_err"] = (
        pd.to_numeric(trials["coef_err"], errors="raise").astype(float).to_numpy()
        if "coef_err" in trials.columns
        else np.nan
    )
    for col in ("dataset", "variant", "algorithm"):
        frame[col] = frame[col].astype(str)
    for col in ("epsilon", "delta", "mse", "r2"):
        frame[col] = pd.to_numeric(frame[col], errors="raise").astype(float)
    frame["failed"] = _as_bool(frame["failed"], "failed")
    frame["excluded"] = ~np.isfinite(frame["mse"].to_numpy())
    frame["outside_validity"] = _as_bool(frame["outside_validity"], "outside_validity")

    # one integer per cell, in the sorted key order: every group-by below groups on it
    # (the same rows in the same order per group as grouping on the four keys)
    cell, cells = cell_codes(frame)
    keys = pd.MultiIndex.from_frame(cells)
    grouped = frame.groupby(cell, sort=True)
    deltas = grouped["delta"].nunique(dropna=False)
    if (deltas > 1).any():
        bad = cells.iloc[int(deltas.index[np.flatnonzero(deltas.to_numpy() > 1)[0]])]
        raise DPRegError(f"trials of {dict(bad.items())} mix several deltas")

    out = pd.DataFrame(
        {
            "delta": grouped["delta"].first(),
            "trials": grouped.size().astype(np.int64),
            "failed": grouped["failed"].sum().astype(np.int64),
            "excluded": grouped["excluded"].sum().astype(np.int64),
        }
    )
    # a failed trial counts with its recorded (trivial predictor's) error; only a
    # non-finite error is left out
    good = ~frame["excluded"].to_numpy()
    ok = frame.loc[good]
    by_cell = ok.groupby(cell[good], sort=True)
    mse = by_cell["mse"]
    stats = pd.DataFrame(
        {
            "mse_mean": mse.mean(),
            "mse_sd": mse.std(ddof=1),
            "mse_median": mse.median(),
            "mse_q25": mse.quantile(0.25, interpolation="linear"),
            "mse_q75": mse.quantile(0.75, interpolation="linear"),
            "r2_mean": by_cell["r2"].mean(),
            "coef_err_median": by_cell["coef_err"].median(),
            "coef_err_mean": by_cell["coef_err"].mean(),
        }
    )
    out = out.join(stats, how="left")
    out["outside_validity"] = grouped["outside_validity"].any().astype(bool)
    ledger = [c for c in LEDGER_COLUMNS if c in trials.columns]
    if ledger:
        led = trials[ledger].reset_index(drop=True)
        out = out.join(led.groupby(cell, sort=True).first(), how="left")
    out.index = keys[out.index.to_numpy()]
    intervals = bootstrap_intervals(
        frame, seed=seed, level=level, resamples=resamples, median_cache=median_cache
    )
    out = out.join(intervals.set_index(GROUP_KEYS)[INTERVAL_COLUMNS], how="left")
    out = out.reset_index()
    out.insert(0, "experiment", experiment)
    out = out.sort_values(GROUP_KEYS, kind="mergesort").reset_index(drop=True)
    cols = TABLE_COLUMNS + [c for c in LEDGER_COLUMNS if c in out.columns]
    return out[cols].astype({c: SUMMARY_DTYPES[c] for c in cols})


def _as_bool(col: pd.Series, name: str) -> pd.Series:
    """A boolean column, accepting bools, 0/1 and the strings True/False."""
    if col.dtype == bool:
        return col
    mapping = {True: True, False: False, "True": True, "False": False, "true": True, "false": False}
    mapped = col.map(mapping)
    if mapped.isna().any():
        bad = sorted({repr(v) for v, m in zip(col, mapped, strict=True) if pd.isna(m)})[:3]
        raise DPRegError(f"trial column {name!r} must be boolean, found {', '.join(bad)}")
    return mapped.astype(bool)
