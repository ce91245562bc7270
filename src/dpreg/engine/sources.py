"""Row streams of prepared tables, and the sweep of one prepared table.

:class:`ParquetSource` streams a prepared Parquet table in chunks (the
in-memory :class:`~dpreg.preprocess.ArraySource` is its counterpart);
:func:`sweep_dataset` (what the workflow's sweep jobs call) reads a table
whole or streams it, by its size against the memory budget, and runs
:func:`dpreg.engine.sweep.sweep_source` on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import (
    DPRegError,
)
from dpreg.data import iter_prepared, prepared_shape
from dpreg.engine.sweep import CHUNK_ROWS, assign_partitions, sweep_source
from dpreg.preprocess import (
    ArraySource,
    PublicRanges,
    RowSource,
    VariantSpec,
)

__all__ = ["ParquetSource", "sweep_dataset", "table_size_mb"]


class ParquetSource:
    """Streams a prepared Parquet table in chunks (never the whole table in memory)."""

    def __init__(self, path: str | Path, fold: np.ndarray, *, chunk_rows: int = 65536):
        self.path = Path(path)
        self.n, self.d = prepared_shape(self.path)
        self.fold = fold
        self.chunk_rows = int(chunk_rows)

    def chunks(self):
        lo = 0
        for X, y in iter_prepared(self.path, chunk_rows=self.chunk_rows):
            hi = lo + X.shape[0]
            yield X, y, self.fold[lo:hi]
            lo = hi


def sweep_dataset(
    table_path: str | Path,
    *,
    dataset: str,
    variants: Mapping[str, Mapping[str, Any] | VariantSpec],
    epsilons: Sequence[float],
    delta: float,
    folds: int,
    seed: int,
    algorithms: Sequence[str] = (),
    repeats: int | None = None,
    plan: Mapping[str, Mapping[str, int]] | None = None,
    rho: float = 0.05,
    xtx_offset: float = 1.0,
    algorithm_params: Mapping[str, Mapping[str, Any]] | None = None,
    public_ranges: Mapping[str, Any] | None = None,
    memory_budget_mb: float | None = None,
    chunk_rows: int = CHUNK_ROWS,
    theta_star: Sequence[float] | None = None,
    partitions: int = 1,
) -> pd.DataFrame:
    """Sweep a prepared table (see :mod:`dpreg.data`); arguments as :func:`sweep_source`.

    Tables whose float64 size exceeds ``memory_budget_mb`` are streamed in
    chunks of ``chunk_rows``; smaller ones are read once into memory.  Both
    paths run the same code on the same fold ids, so their results agree
    to rounding (summation order).  ``public_ranges`` is the dataset's entry
    of the config key ``public_ranges`` (``{"source": ..., "columns": {...}}``),
    read only by private-stats variants.  ``partitions`` is ``cv.partitions``
    (streamed chunks carry one fold id per partition).  ``theta_star`` is the known answer
    of a synthetic dataset (its sidecar's ``theta_star``; trial column ``coef_err``).
    """
    n, d = prepared_shape(table_path)
    # one fold id per row and partition (n x P small integers; 1-D for one partition)
    fold = assign_partitions(n, folds, partitions, seed=seed, dataset=dataset)
    size_mb = table_size_mb(n, d)
    source: RowSource
    if memory_budget_mb is not None and size_mb > memory_budget_mb:
        source = ParquetSource(table_path, fold, chunk_rows=chunk_rows)
    else:
        X, y = _read_rows(table_path, n, d, chunk_rows=chunk_rows)
        # served in chunks too, so per-pass temporaries stay chunk-sized
        source = ArraySource(X, y, fold, chunk_rows=chunk_rows)
    ranges = None
    if any(
        VariantSpec.from_dict(variants[v], v).private_stats is not None
        for v in (plan if plan is not None else variants)
    ):
        import pyarrow.parquet as pq

        names = pq.read_schema(table_path).names  # features in order, target last
        features, target = names[:-1], names[-1]
        ranges = PublicRanges.from_config(
            public_ranges, dataset=dataset, features=features, target=target
        )
    return sweep_source(
        source,
        dataset=dataset,
        variants=variants,
        algorithms=algorithms,
        repeats=repeats,
        plan=plan,
        epsilons=epsilons,
        delta=delta,
        folds=folds,
        seed=seed,
        rho=rho,
        xtx_offset=xtx_offset,
        algorithm_params=algorithm_params,
        ranges=ranges,
        theta_star=theta_star,
        partitions=partitions,
    )


def _read_rows(
    table_path: str | Path, n: int, d: int, *, chunk_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """A prepared table read into preallocated ``X``, ``y``, one chunk at a time.

    Peak memory is the table itself plus one chunk (reading the whole
    Parquet table first and then copying it out would hold it twice).
    """
    import pyarrow as pa  # on first use: a costly import most callers skip

    X = np.empty((n, d))
    y = np.empty(n)
    lo = 0
    pool = pa.default_memory_pool()
    for Xc, yc in iter_prepared(table_path, chunk_rows=chunk_rows):
        X[lo : lo + Xc.shape[0]] = Xc
        y[lo : lo + Xc.shape[0]] = yc
        lo += Xc.shape[0]
        pool.release_unused()  # decoded row groups are not kept cached by the allocator
    if lo != n:
        raise DPRegError(f"prepared table {str(table_path)!r} holds {lo} rows, its footer says {n}")
    return X, y


def table_size_mb(n: int, d: int) -> float:
    """Float64 size of an ``n x (d + 1)`` table in MiB."""
    return n * (d + 1) * 8 / 2**20 if n and d else 0.0
