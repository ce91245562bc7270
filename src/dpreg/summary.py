"""Aggregate per-trial results and write the pipeline's tables.

A *trial* is one (dataset, variant, algorithm, epsilon, fold, repeat) of the
sweep (:func:`dpreg.sweep.sweep_dataset`).  :func:`summarise` reduces the
trials of an experiment to one row per (dataset, variant, algorithm, epsilon)
with the statistics the thesis and Wang (2018) report: the mean test MSE
(what their figures plot), its standard deviation, median and quartiles, the
mean R², and the number of failed trials.

Failed trials (a singular or failed solve, or a non-finite error) are
counted in ``failed`` and excluded from every statistic; they are never
dropped silently.  When every trial of a row failed its statistics are NaN.

The writers in this module produce byte-identical files for identical
inputs (fixed float format, gzip without a timestamp, sorted JSON keys), so
a rerun of the pipeline can be compared file by file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import platform
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError

__all__ = [
    "GROUP_KEYS",
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

#: Keys of one summary row.
GROUP_KEYS = ["dataset", "variant", "algorithm", "epsilon"]

#: Columns of a summary table, in order.
TABLE_COLUMNS = [
    "experiment",
    "dataset",
    "variant",
    "algorithm",
    "epsilon",
    "delta",
    "trials",
    "failed",
    "mse_mean",
    "mse_sd",
    "mse_median",
    "mse_q25",
    "mse_q75",
    "r2_mean",
    "outside_validity",
]

#: Trial columns :func:`summarise` needs.
REQUIRED_TRIAL_COLUMNS = [
    "dataset",
    "variant",
    "algorithm",
    "epsilon",
    "delta",
    "mse",
    "r2",
    "failed",
    "outside_validity",
]

#: ``printf`` format of floats in trial files: 17 significant digits, so
#: every float64 is written exactly and read back bit for bit.
TRIAL_FLOAT_FORMAT = "%.17g"

#: ``printf`` format of floats in summary tables (relative precision 1e-13).
TABLE_FLOAT_FORMAT = "%.14g"

#: Packages whose versions are recorded in the provenance.
PROVENANCE_PACKAGES = (
    "dpreg",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "matplotlib",
    "snakemake",
    "ucimlrepo",
    "diffprivlib",
    "scikit-learn",
)


# --------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------
def summarise(trials: pd.DataFrame, *, experiment: str) -> pd.DataFrame:
    """One row per (dataset, variant, algorithm, epsilon) of a trial table.

    Parameters
    ----------
    trials : pandas.DataFrame
        Per-trial results with at least the columns ``dataset, variant,
        algorithm, epsilon, delta, mse, r2, failed, outside_validity``
        (the output of :func:`dpreg.sweep.sweep_dataset`).
    experiment : str
        Experiment id written into the ``experiment`` column.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`TABLE_COLUMNS`, sorted by dataset, variant, algorithm
        and epsilon.  ``trials`` counts every trial of the row, ``failed``
        those flagged failed or with a non-finite MSE; the statistics
        ``mse_*`` and ``r2_mean`` use the remaining trials only.  ``mse_sd``
        is the sample standard deviation (ddof = 1, NaN for one trial);
        quantiles interpolate linearly (numpy's default, Hyndman & Fan
        type 7).  ``outside_validity`` is true when any trial of the row used
        a classical calibration outside its proven range (SPEC section 5).

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
        return pd.DataFrame({c: pd.Series(dtype=_TABLE_DTYPES[c]) for c in TABLE_COLUMNS})

    frame = trials[REQUIRED_TRIAL_COLUMNS].copy()
    for col in ("dataset", "variant", "algorithm"):
        frame[col] = frame[col].astype(str)
    for col in ("epsilon", "delta", "mse", "r2"):
        frame[col] = pd.to_numeric(frame[col], errors="raise").astype(float)
    frame["failed"] = _as_bool(frame["failed"], "failed") | ~np.isfinite(frame["mse"])
    frame["outside_validity"] = _as_bool(frame["outside_validity"], "outside_validity")

    grouped = frame.groupby(GROUP_KEYS, sort=True)
    deltas = grouped["delta"].nunique(dropna=False)
    if (deltas > 1).any():
        bad = deltas[deltas > 1].index[0]
        raise DPRegError(f"trials of {dict(zip(GROUP_KEYS, bad, strict=True))} mix several deltas")

    out = pd.DataFrame(
        {
            "delta": grouped["delta"].first(),
            "trials": grouped.size().astype(np.int64),
            "failed": grouped["failed"].sum().astype(np.int64),
        }
    )
    ok = frame.loc[~frame["failed"]]
    mse = ok.groupby(GROUP_KEYS, sort=True)["mse"]
    stats = pd.DataFrame(
        {
            "mse_mean": mse.mean(),
            "mse_sd": mse.std(ddof=1),
            "mse_median": mse.median(),
            "mse_q25": mse.quantile(0.25, interpolation="linear"),
            "mse_q75": mse.quantile(0.75, interpolation="linear"),
            "r2_mean": ok.groupby(GROUP_KEYS, sort=True)["r2"].mean(),
        }
    )
    out = out.join(stats, how="left")
    out["outside_validity"] = grouped["outside_validity"].any().astype(bool)
    ledger = [c for c in LEDGER_COLUMNS if c in trials.columns]
    if ledger:
        led = trials[[*GROUP_KEYS, *ledger]].copy()
        for col in ("dataset", "variant", "algorithm"):
            led[col] = led[col].astype(str)
        led["epsilon"] = pd.to_numeric(led["epsilon"]).astype(float)
        out = out.join(led.groupby(GROUP_KEYS, sort=True)[ledger].first(), how="left")
    out = out.reset_index()
    out.insert(0, "experiment", experiment)
    out = out.sort_values(GROUP_KEYS, kind="mergesort").reset_index(drop=True)
    cols = TABLE_COLUMNS + [c for c in LEDGER_COLUMNS if c in out.columns]
    return out[cols].astype({c: _TABLE_DTYPES[c] for c in cols})


_TABLE_DTYPES: dict[str, Any] = {
    "experiment": str,
    "dataset": str,
    "variant": str,
    "algorithm": str,
    "epsilon": float,
    "delta": float,
    "trials": np.int64,
    "failed": np.int64,
    "mse_mean": float,
    "mse_sd": float,
    "mse_median": float,
    "mse_q25": float,
    "mse_q75": float,
    "r2_mean": float,
    "outside_validity": bool,
    "releases": str,
    "eps_basic": float,
    "delta_basic": float,
    "eps_exact": float,
    "delta_exact": float,
}

#: Privacy-ledger columns carried from the trials into the table when present
#: (constant within a row): the releases with their noise scales, the basic
#: composition and the exact Gaussian-DP accounting (see :mod:`dpreg.ledger`).
LEDGER_COLUMNS = ["releases", "eps_basic", "delta_basic", "eps_exact", "delta_exact"]


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


# --------------------------------------------------------------------------
# deterministic files
# --------------------------------------------------------------------------
def write_trials(trials: pd.DataFrame, path: str | Path) -> None:
    """Write a trial table as gzip-compressed CSV, byte-identical for equal input.

    Floats are written with :data:`TRIAL_FLOAT_FORMAT` (exact round trip),
    missing values as empty fields, and the gzip header carries neither a
    timestamp nor a file name.
    """
    text = trials.to_csv(index=False, float_format=TRIAL_FLOAT_FORMAT, lineterminator="\n")
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        gz.write(text.encode("utf-8"))
    Path(path).write_bytes(raw.getvalue())


def read_trials(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Read and concatenate trial files (in the given order)."""
    frames = [pd.read_csv(p, compression="infer", keep_default_na=True) for p in paths]
    if not frames:
        raise DPRegError("no trial files given")
    return pd.concat(frames, ignore_index=True)


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write a summary table as CSV with :data:`TABLE_FLOAT_FORMAT`."""
    text = table.to_csv(index=False, float_format=TABLE_FLOAT_FORMAT, lineterminator="\n")
    Path(path).write_text(text, encoding="utf-8")


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a summary table written by :func:`write_table`."""
    return pd.read_csv(
        path, dtype={"experiment": str, "dataset": str, "variant": str, "algorithm": str}
    )


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the same text for equal content."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a validated configuration."""
    return hashlib.sha256(canonical_json(_plain(config)).encode("utf-8")).hexdigest()


def write_json(obj: Any, path: str | Path) -> None:
    """Write indented JSON with sorted keys and a final newline."""
    text = json.dumps(_plain(obj), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def _plain(obj: Any) -> Any:
    """Convert mappings, sequences and numpy scalars to plain JSON types."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, str | bytes):
        return obj if isinstance(obj, str) else obj.decode("utf-8")
    if isinstance(obj, Sequence | np.ndarray | set | frozenset):
        items = sorted(obj) if isinstance(obj, set | frozenset) else obj
        return [_plain(v) for v in items]
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        value = float(obj)
        if not math.isfinite(value):
            raise DPRegError(f"cannot write the non-finite number {value!r} as JSON")
        return value
    return obj


# --------------------------------------------------------------------------
# provenance
# --------------------------------------------------------------------------
def package_versions(packages: Iterable[str] = PROVENANCE_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when it is not installed)."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance(
    *,
    config: Mapping[str, Any],
    metas: Mapping[str, Mapping[str, Any]],
    tables: Mapping[str, str | Path] | None = None,
    packages: Iterable[str] = PROVENANCE_PACKAGES,
) -> dict[str, Any]:
    """What a run depended on, without timestamps (reruns give identical bytes).

    Parameters
    ----------
    config : mapping
        The validated configuration (defaults filled in).
    metas : mapping
        Dataset name -> the JSON sidecar written by
        :func:`dpreg.data.prepare_dataset` (n, d, sha256, source, ...).
    tables : mapping, optional
        Experiment id -> summary table path; their SHA-256 is recorded.
    packages : iterable of str
        Distributions whose versions are recorded.

    Returns
    -------
    dict
        ``config_sha256``, ``config``, ``dpreg_version``, ``python``,
        ``packages``, ``datasets`` (name -> n, d, sha256, source, target,
        features) and ``tables`` (id -> sha256).
    """
    import dpreg

    datasets = {}
    for name, meta in sorted(metas.items()):
        datasets[name] = {
            key: meta[key]
            for key in ("n", "d", "sha256", "source", "target", "target_transform", "features")
            if key in meta
        }
    table_sums = {}
    for name, path in sorted((tables or {}).items()):
        table_sums[name] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return {
        "config_sha256": config_hash(config),
        "config": _plain(config),
        "dpreg_version": dpreg.__version__,
        "python": platform.python_version(),
        "packages": package_versions(packages),
        "datasets": datasets,
        "tables": table_sums,
    }
