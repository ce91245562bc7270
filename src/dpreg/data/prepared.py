"""Prepared tables: atomic Parquet + JSON output, reading and streaming.

A prepared table holds the feature columns in order and the target column
last, all float64, in row groups of :data:`ROW_GROUP_ROWS` rows so that it can
be streamed with :func:`iter_prepared`; a JSON sidecar records the provenance.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpreg._validation import DPRegError
from dpreg._version import __version__
from dpreg.data.entries import validate_entry
from dpreg.data.recipe import apply_recipe
from dpreg.data.sources import fetch_raw
from dpreg.data.synthetic import synthetic_chunks
from dpreg.io.atomic import atomic_path
from dpreg.io.checksum import sidecar, verify, write_checked, write_checksum

__all__ = [
    "ROW_GROUP_ROWS",
    "iter_prepared",
    "prepare_dataset",
    "prepared_shape",
    "read_prepared",
    "read_prepared_meta",
]

#: Rows per Parquet row group of a prepared table (the streaming unit).
ROW_GROUP_ROWS = 65536


def _remove(paths: list[Path]) -> None:
    for p in paths:
        for q in (p, sidecar(p)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(q)


def prepare_dataset(
    name: str,
    entry: Mapping[str, Any] | None,
    *,
    mirror_dir: str | os.PathLike | None,
    out_table: str | os.PathLike,
    out_meta: str | os.PathLike,
    cache_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Fetch a dataset, apply its recipe and write the table and its sidecar.

    The Parquet table holds the feature columns in order and the target
    column last, all float64, in row groups of :data:`ROW_GROUP_ROWS`.  The
    JSON sidecar holds ``dataset, source, detail, sha256, n, d, features,
    target, target_transform, description, report, dpreg_version``; a
    ``synthetic`` dataset's also ``synthetic`` (its settings) and
    ``theta_star`` (the true coefficients in the table's coordinates).  Both are
    written atomically (:mod:`dpreg.io.atomic`), each with its checksum
    sidecar ``<file>.sha256`` (:mod:`dpreg.io.checksum`), which the readers
    verify.  On any error neither output exists afterwards: an earlier run's
    outputs are removed too, as Snakemake does before it reruns this job, so
    a prepared table never disagrees with the entry that asked for it.

    Parameters
    ----------
    name, entry, mirror_dir, cache_dir
        As for :func:`~dpreg.data.fetch_raw`.
    out_table, out_meta : path-like
        Destination of the Parquet table and of the JSON sidecar.

    Returns
    -------
    dict
        The sidecar's content.
    """
    outs = [Path(out_table), Path(out_meta)]
    try:
        e = validate_entry(name, entry)
        if e["synthetic"] is not None:
            meta = _write_synthetic(name, e, outs[0])
            write_checked(outs[1], (json.dumps(meta, indent=1) + "\n").encode("utf-8"))
            return meta
        raw = fetch_raw(name, e, mirror_dir=mirror_dir, cache_dir=cache_dir)
        prepared = apply_recipe(raw, e)
        X, y = prepared.features, prepared.target
        meta = {
            "dataset": name,
            "source": raw.source,
            "detail": raw.detail,
            "sha256": raw.sha256,
            "n": int(X.shape[0]),
            "d": int(X.shape[1]),
            "features": list(X.columns),
            "target": str(y.name),
            "target_transform": e["target_transform"],
            "description": e["description"],
            "report": prepared.report,
            "dpreg_version": __version__,
        }
        table = pa.table(
            {**{c: X[c].to_numpy(np.float64) for c in X.columns}, y.name: y.to_numpy(np.float64)}
        )
        with atomic_path(outs[0]) as tmp:
            pq.write_table(table, tmp, row_group_size=ROW_GROUP_ROWS)
        write_checksum(outs[0])
        write_checked(outs[1], (json.dumps(meta, indent=1) + "\n").encode("utf-8"))
        return meta
    except BaseException:
        _remove(outs)
        raise


def _write_synthetic(name: str, e: Mapping[str, Any], out_table: Path) -> dict[str, Any]:
    """Generate a ``synthetic`` dataset (:mod:`dpreg.data.synthetic`) into ``out_table``.

    Written one chunk per row group, so a large table (n = 1e6, d = 500) is
    never whole in memory.  The sidecar records ``theta_star`` and the
    generator's settings; ``sha256`` is the table file's.
    """
    spec = e["synthetic"]
    theta, chunks = synthetic_chunks(name, spec)
    features = [f"x{j + 1}" for j in range(spec["d"])]
    schema = pa.schema([(c, pa.float64()) for c in [*features, "y"]])
    with atomic_path(out_table) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for X, y in chunks:
            cols = [X[:, j] for j in range(X.shape[1])] + [y]
            writer.write_table(pa.table(cols, schema=schema), row_group_size=ROW_GROUP_ROWS)
    sha = write_checksum(out_table)
    about = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "theta" and v is not None)
    return {
        "dataset": name,
        "source": "synthetic",
        "detail": f"synthetic {about}",
        "sha256": sha,
        "n": spec["n"],
        "d": spec["d"],
        "features": features,
        "target": "y",
        "target_transform": "none",
        "description": e["description"],
        # the recipe's report (dpreg.data.recipe), with nothing applied
        "report": {
            "rows_raw": spec["n"],
            "cells_set": 0,
            "recoded": {},
            "dropped": {},
            "date_parts": {},
            "rows_dropped_na": 0,
            "na_filled": {},
            "constant": [],
        },
        "synthetic": dict(spec),
        "theta_star": [float(t) for t in theta],
        "dpreg_version": __version__,
    }


def read_prepared_meta(meta_path: str | os.PathLike) -> dict[str, Any]:
    """The JSON sidecar of a prepared table, its checksum verified first.

    Raises
    ------
    DPRegError
        If the file is missing, damaged or has no checksum
        (:func:`dpreg.io.checksum.verify`), or is not a JSON object.
    """
    verify(meta_path, "prepared dataset record")
    try:
        meta = json.loads(Path(meta_path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DPRegError(f"prepared dataset record {str(meta_path)!r} is not JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise DPRegError(f"prepared dataset record {str(meta_path)!r} is not a JSON object")
    return meta


def _open_prepared(table_path: str | os.PathLike, *, pre_buffer: bool = True) -> pq.ParquetFile:
    verify(table_path, "prepared table")  # hashed once per process while unchanged
    try:
        pf = pq.ParquetFile(table_path, pre_buffer=pre_buffer)
    except (OSError, pa.ArrowException) as exc:
        raise DPRegError(f"cannot read prepared table {str(table_path)!r}: {exc}") from None
    if pf.metadata.num_columns < 2:
        raise DPRegError(
            f"prepared table {str(table_path)!r} needs feature columns and a target column last"
        )
    return pf


def read_prepared(
    table_path: str | os.PathLike,
) -> tuple[np.ndarray, np.ndarray, list[str], str]:
    """Read a prepared table into memory.

    Returns
    -------
    X : numpy.ndarray, shape (n, d), float64
    y : numpy.ndarray, shape (n,), float64
    features : list of str
    target : str
    """
    table = _open_prepared(table_path).read()
    names = table.column_names
    X = np.empty((table.num_rows, len(names) - 1), dtype=np.float64)
    for j in range(len(names) - 1):
        X[:, j] = table.column(j).to_numpy()
    y = np.asarray(table.column(len(names) - 1).to_numpy(), dtype=np.float64)
    return X, y, names[:-1], names[-1]


def prepared_shape(table_path: str | os.PathLike) -> tuple[int, int]:
    """``(n, d)`` of a prepared table from its Parquet footer, without reading data."""
    md = _open_prepared(table_path).metadata
    return int(md.num_rows), int(md.num_columns) - 1


def iter_prepared(
    table_path: str | os.PathLike, *, chunk_rows: int = 65536
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Stream a prepared table as ``(X_chunk, y_chunk)`` float64 pairs.

    At most ``chunk_rows`` rows (plus one Parquet row group being decoded)
    are in memory at a time; the chunks, concatenated, are the table's rows
    in order.
    """
    if (
        isinstance(chunk_rows, bool)
        or not isinstance(chunk_rows, int | np.integer)
        or chunk_rows < 1
    ):
        raise DPRegError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
    pf = _open_prepared(table_path, pre_buffer=False)
    d = pf.metadata.num_columns - 1
    # one row group at a time, single-threaded: bounded memory while streaming
    batches = (
        batch
        for i in range(pf.num_row_groups)
        for batch in pf.iter_batches(batch_size=chunk_rows, row_groups=[i], use_threads=False)
    )
    for batch in batches:
        X = np.empty((batch.num_rows, d), dtype=np.float64)
        for j in range(d):
            X[:, j] = batch.column(j).to_numpy()
        yield X, np.asarray(batch.column(d).to_numpy(), dtype=np.float64)
