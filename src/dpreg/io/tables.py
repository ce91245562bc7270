"""The pipeline's output tables: their columns, dtypes and file writers.

Every table the pipeline writes is declared here once:

- the *trial* table (:data:`TRIAL_COLUMNS`), one row per (dataset, variant,
  algorithm, epsilon, fold, repeat), written by the sweep;
- the *summary* table (:data:`SUMMARY_COLUMNS`), one row per (dataset,
  variant, algorithm, epsilon), written by :mod:`dpreg.report.summary`;
- the *claims* table (:data:`CLAIM_COLUMNS`), one row per (claim, dataset,
  epsilon) plus one overall row per claim, written by :mod:`dpreg.inference.evaluation`;
- the privacy-ledger columns (:data:`LEDGER_COLUMNS`) both of the first two
  carry (see :mod:`dpreg.privacy.ledger`).

The writers are deterministic (fixed float format, gzip without timestamp
or file name, sorted JSON keys), so equal content gives equal bytes, and
atomic: the file is written to a temporary sibling and moved into place with
:func:`os.replace`, so a failure never leaves a partial file behind and an
existing file is either kept whole or replaced whole.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError

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
    "read_trials",
    "select_trials",
    "trial_file_columns",
    "write_bytes_atomic",
    "write_claims",
    "write_json",
    "write_table",
    "write_text_atomic",
    "write_trials",
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
    "fold",
    "repeat",
    "mse",
    "r2",
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
    "fold": np.int64,
    "repeat": np.int64,
    "mse": float,
    "r2": float,
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
    "mse_mean",
    "mse_sd",
    "mse_median",
    "mse_q25",
    "mse_q75",
    "r2_mean",
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
    "mse_mean": float,
    "mse_sd": float,
    "mse_median": float,
    "mse_q25": float,
    "mse_q75": float,
    "r2_mean": float,
    "outside_validity": bool,
    **dict.fromkeys(INTERVAL_COLUMNS, float),
    **_LEDGER_DTYPES,
}

#: Columns of ``claims.csv``: one row per (claim, dataset, epsilon) with
#: ``scope == "point"`` and one per claim with ``scope == "overall"``
#: (dataset ``all``, epsilon empty, the counts filled in).
CLAIM_COLUMNS = [
    "claim",
    "experiment",
    "source",
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
    "level",
    "resamples",
    "verdict",
    "points",
    "supported",
    "contradicted",
    "inconclusive",
    "statement",
]

CLAIM_DTYPES: dict[str, Any] = {
    "claim": str,
    "experiment": str,
    "source": str,
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
    "level": float,
    "resamples": np.int64,
    "verdict": str,
    "points": np.int64,
    "supported": np.int64,
    "contradicted": np.int64,
    "inconclusive": np.int64,
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


# --------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------
def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary sibling and :func:`os.replace`.

    On any failure the temporary file is removed and ``path`` is left as it
    was (absent, or the previous complete file).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """UTF-8 text through :func:`write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _csv(frame: pd.DataFrame, float_format: str) -> str:
    return frame.to_csv(index=False, float_format=float_format, lineterminator="\n")


def write_trials(trials: pd.DataFrame, path: str | Path) -> None:
    """Write a trial table, byte-identical for equal input, atomically.

    ``*.parquet`` paths get Parquet (zstd, dictionary-encoded strings, no
    index); other paths gzip-compressed CSV with :data:`TRIAL_FLOAT_FORMAT`
    (exact round trip), missing values as empty fields and a gzip header
    with neither timestamp nor file name.
    """
    if str(path).endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(trials, preserve_index=False)
        table = table.replace_schema_metadata(None)  # no pandas/version blob
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd", use_dictionary=True)
        write_bytes_atomic(path, buf.getvalue())
        return
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        gz.write(_csv(trials, TRIAL_FLOAT_FORMAT).encode("utf-8"))
    write_bytes_atomic(path, raw.getvalue())


def _read_csv(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    return pd.read_csv(
        path,
        compression="infer",
        dtype=dict.fromkeys(_STRING_COLUMNS, str),
        usecols=list(columns) if columns is not None else None,
    )


def _read_one_trials(
    path: str | Path,
    columns: Sequence[str] | None,
    variants: Sequence[str] | None,
    algorithms: Sequence[str] | None,
    repeats: int | Mapping[str, int] | None,
    categorical: Sequence[str] = (),
) -> pd.DataFrame:
    if str(path).endswith(".parquet"):
        return _read_parquet_trials(path, columns, variants, algorithms, repeats, categorical)
    looked = _selection_columns(columns, variants, algorithms, repeats)
    frame = select_trials(
        _read_csv(path, None if columns is None else [*columns, *looked]),
        variants=variants,
        algorithms=algorithms,
        repeats=repeats,
    )
    frame = frame[list(columns)] if looked and columns is not None else frame
    for col in categorical:
        if col in frame.columns:
            frame[col] = _sorted_categorical(pd.Categorical(frame[col].astype(str)))
    return frame


def _sorted_categorical(values: pd.Categorical) -> pd.Categorical:
    """``values`` with only the categories that occur, in sorted (string) order."""
    codes = np.asarray(values.codes)
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(values.categories)))
    names = sorted(str(values.categories[i]) for i in used)
    rank = {name: i for i, name in enumerate(names)}
    # new code of every old one (and -1, a missing value, stays -1)
    recode = np.array([rank.get(str(c), -1) for c in values.categories] + [-1], dtype=np.int64)
    return pd.Categorical.from_codes(recode[codes], categories=names)


def _selection_columns(
    columns: Sequence[str] | None,
    variants: Sequence[str] | None,
    algorithms: Sequence[str] | None,
    repeats: int | Mapping[str, int] | None,
) -> list[str]:
    """Columns a selection looks at that ``columns`` does not ask for (read, then dropped)."""
    if columns is None:
        return []
    return [
        c
        for c, used in (
            ("variant", variants is not None),
            ("algorithm", algorithms is not None or isinstance(repeats, Mapping)),
            ("repeat", repeats is not None),
        )
        if used and c not in columns
    ]


def _name_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """(code of each row, distinct names as str); code -1 for a missing value."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # the codes as they are
        codes, uniques = column.cat.codes.to_numpy(), column.cat.categories
    else:
        codes, uniques = pd.factorize(column)
    return codes, [str(u) for u in uniques]


def select_trials(
    frame: pd.DataFrame,
    *,
    variants: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
    repeats: int | Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """The rows of a trial table that :func:`read_trials` keeps for a selection.

    Returns ``frame`` itself when every row is kept, else the kept rows (in
    their order) with a fresh index.
    """
    keep = np.ones(len(frame), dtype=bool)
    # each test is made once per distinct name (factorised), not once per row
    if variants is not None:
        codes, names = _name_codes(frame["variant"])
        keep &= np.append(np.isin(names, [str(v) for v in variants]), False)[codes]
    if algorithms is not None or isinstance(repeats, Mapping):
        codes, names = _name_codes(frame["algorithm"])
        if algorithms is not None:
            keep &= np.append(np.isin(names, [str(a) for a in algorithms]), False)[codes]
        if isinstance(repeats, Mapping):
            given = {str(a): float(r) for a, r in repeats.items()}
            # algorithms not named keep every repeat
            limit = np.array([given.get(a, np.inf) for a in names] + [np.inf])
            keep &= frame["repeat"].to_numpy() < limit[codes]
    if repeats is not None and not isinstance(repeats, Mapping):
        keep &= (frame["repeat"] < int(repeats)).to_numpy()
    return frame if keep.all() else frame.loc[keep].reset_index(drop=True)


def _dictionary_codes(column: Any) -> tuple[np.ndarray, list[str]]:
    """(indices, dictionary) of a dictionary-encoded Arrow column; index -1 for a null."""
    import pyarrow as pa

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    indices = arr.indices if arr.indices.null_count == 0 else arr.indices.fill_null(-1)
    return indices.to_numpy(zero_copy_only=False), [str(v) for v in arr.dictionary.to_pylist()]


def _read_parquet_trials(
    path: str | Path,
    columns: Sequence[str] | None,
    variants: Sequence[str] | None,
    algorithms: Sequence[str] | None,
    repeats: int | Mapping[str, int] | None,
    categorical: Sequence[str] = (),
) -> pd.DataFrame:
    """The rows of one Parquet trial file that the selection keeps.

    The file is read with :class:`pyarrow.parquet.ParquetFile` (not the
    dataset API, whose import alone costs a few tenths of a second), the
    string columns dictionary-encoded; the selection is evaluated on the
    dictionary indices (one string comparison per distinct value, not per
    row) and applied before the conversion to pandas.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path)
    names = meta.schema.to_arrow_schema().names
    # string columns stay dictionary-encoded while reading (one string per distinct value)
    handle = pq.ParquetFile(
        path, metadata=meta, read_dictionary=[c for c in names if c in _STRING_COLUMNS]
    )
    wanted = names if columns is None else list(columns)
    missing = [c for c in wanted if c not in names]
    if missing:
        raise DPRegError(f"{path}: trial file lacks column(s) {', '.join(missing)}")
    # the columns the selection looks at, read even when not asked for (dropped below)
    looked = _selection_columns(wanted, variants, algorithms, repeats)
    table = handle.read(columns=[*wanted, *looked])
    keep = np.ones(table.num_rows, dtype=bool)
    for name, chosen in (("variant", variants), ("algorithm", algorithms)):
        if chosen is not None:
            codes, dictionary = _dictionary_codes(table.column(name))
            hit = np.append(np.isin(dictionary, [str(v) for v in chosen]), False)
            keep &= hit[codes]
    if repeats is not None:
        rep = table.column("repeat").to_numpy()
        if isinstance(repeats, Mapping):
            codes, dictionary = _dictionary_codes(table.column("algorithm"))
            given = {str(a): float(r) for a, r in repeats.items()}
            # algorithms not named keep every repeat
            limit = np.array([given.get(a, np.inf) for a in dictionary] + [np.inf])
            keep &= rep < limit[codes]
        else:
            keep &= rep < int(repeats)
    if not keep.all():
        table = table.filter(pa.array(keep))
    if looked:
        table = table.select(wanted)
    # dictionary columns decoded by Arrow (cheaper than pandas categoricals cast to str);
    # a column with missing values goes the categorical way, which writes them as "nan";
    # columns asked for as categoricals are built from the dictionary codes
    kept: dict[str, pd.Categorical] = {}
    for i, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type) or table.column(i).null_count:
            continue
        if field.name in categorical:
            codes, dictionary = _dictionary_codes(table.column(i))
            kept[field.name] = pd.Categorical.from_codes(codes, categories=dictionary)
            table = table.set_column(i, field.name, pa.nulls(table.num_rows, pa.int8()))
        else:
            table = table.set_column(i, field.name, table.column(i).cast(pa.large_string()))
    frame = table.to_pandas()
    for col in frame.columns:
        if col in kept:
            frame[col] = _sorted_categorical(kept[col])
        elif isinstance(frame[col].dtype, pd.CategoricalDtype) or col in _STRING_COLUMNS:
            frame[col] = frame[col].astype(str)
            if col in categorical:
                frame[col] = _sorted_categorical(pd.Categorical(frame[col]))
    return frame


def trial_file_columns(path: str | Path) -> list[str]:
    """Column names of a trial file (Parquet schema or CSV header), without reading its rows."""
    if str(path).endswith(".parquet"):
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    return list(pd.read_csv(path, compression="infer", nrows=0).columns)


def read_trials(
    paths: Iterable[str | Path],
    *,
    variants: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
    repeats: int | Mapping[str, int] | None = None,
    columns: Sequence[str] | None = None,
    categorical: Sequence[str] = (),
) -> pd.DataFrame:
    """Read and concatenate trial files (Parquet or CSV.gz, in the given order).

    Parameters
    ----------
    paths : iterable of path
        Trial files written by :func:`write_trials`.
    variants, algorithms : sequence of str, optional
        Keep only these variants / algorithms.
    repeats : int or mapping, optional
        Keep only repeats ``0 .. repeats - 1`` (trials are prefix-stable in
        the repeat count, so this is the table a run with R = ``repeats``
        would have written); a mapping gives R per algorithm (algorithms
        it does not name keep every repeat).
    columns : sequence of str, optional
        Read only these columns.
    categorical : sequence of str, optional
        Name columns to return as :class:`pandas.Categorical` (the names
        that occur, sorted) instead of strings: cheaper to build from a
        Parquet file's dictionary encoding and to select and group on.  Files
        with different names give object columns when concatenated; read
        them one at a time to align their categories.

    Name columns (dataset, variant, algorithm, ...) are read as strings, so a
    dataset called ``1`` stays ``"1"``.
    """
    frames = [
        _read_one_trials(p, columns, variants, algorithms, repeats, categorical) for p in paths
    ]
    if not frames:
        raise DPRegError("no trial files given")
    return pd.concat(frames, ignore_index=True)


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write a summary table as CSV with :data:`TABLE_FLOAT_FORMAT` (atomic)."""
    write_text_atomic(path, _csv(table, TABLE_FLOAT_FORMAT))


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a summary table written by :func:`write_table`."""
    return _read_csv(path)


def write_claims(claims: pd.DataFrame, path: str | Path) -> None:
    """Write ``claims.csv`` (columns :data:`CLAIM_COLUMNS`, atomic)."""
    write_text_atomic(path, _csv(conform(claims, CLAIM_COLUMNS, CLAIM_DTYPES), TABLE_FLOAT_FORMAT))


def read_claims(path: str | Path) -> pd.DataFrame:
    """Read ``claims.csv`` with the declared dtypes (empty strings stay empty)."""
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
    """Write indented JSON with sorted keys and a final newline (atomic)."""
    text = json.dumps(plain(obj), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    write_text_atomic(path, text + "\n")
