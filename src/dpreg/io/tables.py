"""The pipeline's output tables: their columns, dtypes and file writers.

Every table the pipeline writes is declared here once:

- the *trial* table (:data:`TRIAL_COLUMNS`), one row per (dataset, variant,
  algorithm, epsilon, partition, fold, repeat), written by the sweep;
- the *summary* table (:data:`SUMMARY_COLUMNS`), one row per (dataset,
  variant, algorithm, epsilon), written by :mod:`dpreg.report.summary`;
- the *claims* table (:data:`CLAIM_COLUMNS`), one row per (claim, dataset,
  epsilon) plus one overall row per claim, written by :mod:`dpreg.inference.evaluation`;
- the privacy-ledger columns (:data:`LEDGER_COLUMNS`) both of the first two
  carry (see :mod:`dpreg.privacy.ledger`).

The writers are deterministic (fixed float format, gzip without timestamp
or file name, sorted JSON keys), so equal content gives equal bytes, and
atomic (:mod:`dpreg.io.atomic`): a failure never leaves a partial file behind
and an existing file is either kept whole or replaced whole.  Summary tables,
claims tables and JSON records are written with their checksum sidecar
(:mod:`dpreg.io.checksum`), which the readers verify.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.io.atomic import write_bytes_atomic, write_text_atomic
from dpreg.io.checksum import verify, write_checked

__all__ = [
    "CLAIM_COLUMNS",
    "CLAIM_DTYPES",
    "GROUP_KEYS",
    "INTERVAL_COLUMNS",
    "LEDGER_COLUMNS",
    "SUMMARY_COLUMNS",
    "SUMMARY_DTYPES",
    "TABLE_FLOAT_FORMAT",
    "TRIAL_COLUMNS",
    "TRIAL_DTYPES",
    "TRIAL_FLOAT_FORMAT",
    "conform",
    "empty_frame",
    "plain",
    "read_claims",
    "read_table",
    "write_bytes_atomic",
    "write_claims",
    "write_json",
    "write_table",
    "write_text_atomic",
]

#: ``printf`` format of floats in trial files: 17 significant digits, so
#: every float64 is written exactly and read back bit for bit.
TRIAL_FLOAT_FORMAT = "%.17g"

#: ``printf`` format of floats in summary and claims tables: 4 significant
#: digits, so tables computed on machines whose floating-point results differ
#: by rounding (measured: relative 4e-10) still agree byte for byte in all
#: but about one number in 1e5.
TABLE_FLOAT_FORMAT = "%.4g"

#: Keys of one summary row (and of one bootstrap group).
GROUP_KEYS = ["dataset", "variant", "algorithm", "epsilon"]

#: Privacy-ledger columns of trial and summary tables, constant within a
#: summary row: the releases with their noise scales, the basic composition
#: and the exact Gaussian-DP accounting (see :mod:`dpreg.privacy.ledger`).
LEDGER_COLUMNS = ["releases", "eps_basic", "delta_basic", "eps_exact", "delta_exact"]

_LEDGER_DTYPES: dict[str, Any] = {
    "releases": str,
    "eps_basic": float,
    "delta_basic": float,
    "eps_exact": float,
    "delta_exact": float,
}

#: Columns of a trial table, in order.
TRIAL_COLUMNS = [
    "dataset",
    "variant",
    "algorithm",
    "epsilon",
    "delta",
    "partition",
    "fold",
    "repeat",
    "mse",
    "r2",
    "coef_err",
    "lam",
    "failed",
    "outside_validity",
    "calibration",
    "seed_key",
    *LEDGER_COLUMNS,
]

TRIAL_DTYPES: dict[str, Any] = {
    "dataset": str,
    "variant": str,
    "algorithm": str,
    "epsilon": float,
    "delta": float,
    "partition": np.int64,
    "fold": np.int64,
    "repeat": np.int64,
    "mse": float,
    "r2": float,
    "coef_err": float,
    "lam": float,
    "failed": bool,
    "outside_validity": bool,
    "calibration": str,
    "seed_key": str,
    **_LEDGER_DTYPES,
}

#: Bootstrap confidence-interval columns of a summary row (lower, upper
#: bound of the mean and of the median test MSE; see :mod:`dpreg.inference.claims`).
INTERVAL_COLUMNS = ["mse_mean_lo", "mse_mean_hi", "mse_median_lo", "mse_median_hi"]

#: Columns of a summary table, in order; the ledger columns follow when the
#: trials carry them.
SUMMARY_COLUMNS = [
    "experiment",
    "dataset",
    "variant",
    "algorithm",
    "epsilon",
    "delta",
    "trials",
    "failed",
    "excluded",
    "mse_mean",
    "mse_sd",
    "mse_median",
    "mse_q25",
    "mse_q75",
    "r2_mean",
    "coef_err_median",
    "coef_err_mean",
    "outside_validity",
    *INTERVAL_COLUMNS,
]

SUMMARY_DTYPES: dict[str, Any] = {
    "experiment": str,
    "dataset": str,
    "variant": str,
    "algorithm": str,
    "epsilon": float,
    "delta": float,
    "trials": np.int64,
    "failed": np.int64,
    "excluded": np.int64,
    "mse_mean": float,
    "mse_sd": float,
    "mse_median": float,
    "mse_q25": float,
    "mse_q75": float,
    "r2_mean": float,
    "coef_err_median": float,
    "coef_err_mean": float,
    "outside_validity": bool,
    **dict.fromkeys(INTERVAL_COLUMNS, float),
    **_LEDGER_DTYPES,
}

#: Columns of ``claims.csv``: one row per (claim, dataset, epsilon) with
#: ``scope == "point"`` (description; epsilon empty for an epsilon-independent
#: comparison) and one per claim with ``scope == "overall"`` (dataset ``all``,
#: epsilon empty: the pooled effect, its adjusted interval at ``level``, the
#: decision in ``verdict``, ``status`` and the registration; see
#: :mod:`dpreg.inference.pooled`).  ``band_low``/``band_high`` of a point row: the
#: simultaneous band at ``level`` over the epsilons of its (claim, dataset)
#: (:mod:`dpreg.inference.bands`); it contains ``ratio_lo``/``ratio_hi`` and equals
#: them for a single point; empty on the overall rows.
CLAIM_COLUMNS = [
    "claim",
    "experiment",
    "source",
    "status",
    "scope",
    "dataset",
    "epsilon",
    "a_algorithm",
    "a_variant",
    "b_algorithm",
    "b_variant",
    "statistic",
    "expect",
    "margin",
    "a_value",
    "b_value",
    "ratio",
    "ratio_lo",
    "ratio_hi",
    "band_low",
    "band_high",
    "level",
    "resamples",
    "verdict",
    "p_value",
    "a_failed",
    "b_failed",
    "datasets",
    "points",
    "supported",
    "contradicted",
    "inconclusive",
    "registered",
    "sha256",
    "statement",
]

CLAIM_DTYPES: dict[str, Any] = {
    "claim": str,
    "experiment": str,
    "source": str,
    "status": str,
    "scope": str,
    "dataset": str,
    "epsilon": float,
    "a_algorithm": str,
    "a_variant": str,
    "b_algorithm": str,
    "b_variant": str,
    "statistic": str,
    "expect": str,
    "margin": float,
    "a_value": float,
    "b_value": float,
    "ratio": float,
    "ratio_lo": float,
    "ratio_hi": float,
    "band_low": float,
    "band_high": float,
    "level": float,
    "resamples": np.int64,
    "verdict": str,
    "p_value": float,
    "a_failed": float,
    "b_failed": float,
    "datasets": np.int64,
    "points": np.int64,
    "supported": np.int64,
    "contradicted": np.int64,
    "inconclusive": np.int64,
    "registered": str,
    "sha256": str,
    "statement": str,
}

_STRING_COLUMNS = sorted(
    {c for d in (TRIAL_DTYPES, SUMMARY_DTYPES, CLAIM_DTYPES) for c, t in d.items() if t is str}
)


def empty_frame(columns: Sequence[str], dtypes: Mapping[str, Any]) -> pd.DataFrame:
    """An empty table with ``columns`` of the declared dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=dtypes[c]) for c in columns})


def conform(frame: pd.DataFrame, columns: Sequence[str], dtypes: Mapping[str, Any]) -> pd.DataFrame:
    """``frame[columns]`` cast to the declared dtypes.

    Raises
    ------
    DPRegError
        If a column is missing (the message names it).
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DPRegError(f"table lacks column(s) {', '.join(missing)}")
    return frame[list(columns)].astype({c: dtypes[c] for c in columns})


def _csv(frame: pd.DataFrame, float_format: str) -> str:
    return frame.to_csv(index=False, float_format=float_format, lineterminator="\n")


def _read_csv(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    return pd.read_csv(
        path,
        compression="infer",
        dtype=dict.fromkeys(_STRING_COLUMNS, str),
        usecols=list(columns) if columns is not None else None,
    )


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write a summary table as CSV with :data:`TABLE_FLOAT_FORMAT` and its checksum (atomic)."""
    write_checked(path, _csv(table, TABLE_FLOAT_FORMAT).encode("utf-8"))


def read_table(path: str | Path, *, require_checksum: bool = True) -> pd.DataFrame:
    """Read a summary table written by :func:`write_table` (its checksum verified first).

    ``require_checksum=False`` accepts a table without a sidecar (a committed
    table, which git checks: the command-line readers of ``results/``), never
    one whose sidecar does not match.

    Raises
    ------
    DPRegError
        If the file is missing, damaged or has no checksum (:func:`dpreg.io.checksum.verify`).
    """
    verify(path, "summary table", missing_ok=not require_checksum)
    return _read_csv(path)


def write_claims(claims: pd.DataFrame, path: str | Path) -> None:
    """Write ``claims.csv`` (columns :data:`CLAIM_COLUMNS`) and its checksum (atomic)."""
    text = _csv(conform(claims, CLAIM_COLUMNS, CLAIM_DTYPES), TABLE_FLOAT_FORMAT)
    write_checked(path, text.encode("utf-8"))


def read_claims(path: str | Path, *, require_checksum: bool = True) -> pd.DataFrame:
    """Read ``claims.csv`` with the declared dtypes (empty strings stay empty).

    Its checksum is verified first (:func:`dpreg.io.checksum.verify`);
    ``require_checksum=False`` accepts a table without a sidecar (a committed
    table, which git checks), never one whose sidecar does not match.
    """
    verify(path, "claims table", missing_ok=not require_checksum)
    frame = pd.read_csv(
        path, dtype=dict.fromkeys(_STRING_COLUMNS, str), keep_default_na=False, na_values=[""]
    )
    for col, kind in CLAIM_DTYPES.items():
        if kind is str and col in frame:
            frame[col] = frame[col].fillna("").astype(str)
    return frame


# --------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------
def plain(obj: Any) -> Any:
    """Convert mappings, sequences and numpy scalars to plain JSON types.

    Raises
    ------
    DPRegError
        For a non-finite float (JSON has none).
    """
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, str | bytes):
        return obj if isinstance(obj, str) else obj.decode("utf-8")
    if isinstance(obj, Sequence | np.ndarray | set | frozenset):
        items = sorted(obj) if isinstance(obj, set | frozenset) else obj
        return [plain(v) for v in items]
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


def write_json(obj: Any, path: str | Path) -> None:
    """Write indented JSON with sorted keys and a final newline and its checksum (atomic)."""
    text = json.dumps(plain(obj), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    write_checked(path, (text + "\n").encode("utf-8"))
