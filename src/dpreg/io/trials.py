"""The trial tables: one row per (dataset, variant, algorithm, epsilon, partition, fold, repeat).

Written by the sweep (Parquet, or gzip-compressed CSV for the older
layout), read back with a row selection (:func:`select_trials`,
:func:`read_trials`) by the summaries and the claims.  Their columns and
dtypes are declared in :mod:`dpreg.io.tables` with the other tables'.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.io.checksum import verify, write_checked
from dpreg.io.tables import (
    _STRING_COLUMNS,
    TRIAL_FLOAT_FORMAT,
    _csv,
    _read_csv,
)

__all__ = ["read_trials", "select_trials", "trial_file_columns", "write_trials"]


def write_trials(trials: pd.DataFrame, path: str | Path) -> None:
    """Write a trial table, byte-identical for equal input, atomically.

    ``*.parquet`` paths get Parquet (zstd, dictionary-encoded strings, no
    index); other paths gzip-compressed CSV with :data:`TRIAL_FLOAT_FORMAT`
    (exact round trip), missing values as empty fields and a gzip header
    with neither timestamp nor file name.  The file's SHA-256 goes to its
    sidecar ``<path>.sha256`` (:mod:`dpreg.io.checksum`), which every reader
    verifies.
    """
    if str(path).endswith(".parquet"):
        import pyarrow as pa  # on first use: a costly import most callers skip
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(trials, preserve_index=False)
        table = table.replace_schema_metadata(None)  # no pandas/version blob
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd", use_dictionary=True)
        write_checked(path, buf.getvalue())
        return
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        gz.write(_csv(trials, TRIAL_FLOAT_FORMAT).encode("utf-8"))
    write_checked(path, raw.getvalue())


def _read_one_trials(
    path: str | Path,
    columns: Sequence[str] | None,
    variants: Sequence[str] | None,
    algorithms: Sequence[str] | None,
    repeats: int | Mapping[str, int] | None,
    categorical: Sequence[str] = (),
) -> pd.DataFrame:
    verify(path, "trial file")
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
    """Column names of a trial file (Parquet schema or CSV header), without reading its rows.

    The file's checksum is verified first (:func:`dpreg.io.checksum.verify`).
    """
    verify(path, "trial file")
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

    Raises
    ------
    DPRegError
        If a file is missing, damaged or truncated, or has no checksum sidecar
        (:func:`dpreg.io.checksum.verify`); the message names the file and how
        to rebuild it.
    """
    frames = [
        _read_one_trials(p, columns, variants, algorithms, repeats, categorical) for p in paths
    ]
    if not frames:
        raise DPRegError("no trial files given")
    return pd.concat(frames, ignore_index=True)
