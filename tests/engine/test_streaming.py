"""Streaming a prepared table gives the in-memory results, in bounded memory.

``sweep_dataset`` streams a table through ``ParquetSource`` when it exceeds
``memory_budget_mb`` and reads it into memory otherwise; both paths run the
same code on the same fold ids, so every trial must agree to rounding.
``fold_statistics`` must only ever hold one chunk of rows.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpreg.data
import dpreg.engine.sources
from dpreg.engine.sources import sweep_dataset
from dpreg.engine.sweep import assign_folds
from dpreg.io.checksum import write_checksum
from dpreg.preprocess import ArraySource, fold_statistics
from dpreg.preprocess.stats import ScoreStats

N, D_RANDOM = 5000, 6
CHUNK = 700
GRID = {
    "algorithms": ["trivial", "ols", "ridge", "ssp", "adassp", "adassp-analytic"],
    # classical calibrations are flagged from epsilon = 2 on; stay below it
    "epsilons": [0.1, 0.5, 1.5],
    "delta": 1e-6,
    "folds": 5,
    "repeats": 3,
    "seed": 20200601,
}
VARIANTS = {
    "global-maxnorm": {"stats": "global", "scale": "maxnorm"},
    "global-rownorm": {"stats": "global", "scale": "rownorm"},
    "global-rownorm-y-intercept": {"stats": "global", "scale": "rownorm-y", "intercept": True},
    "train-maxnorm": {"stats": "train", "scale": "maxnorm"},
    "train-rownorm": {"stats": "train", "scale": "rownorm", "center_y": False},
    "train-rownorm-y": {"stats": "train", "scale": "rownorm-y"},
    "train-clip-test": {"stats": "train", "scale": "maxnorm", "clip_sigma": 2.0, "clip_test": True},
    "global-clip-intercept": {
        "stats": "global",
        "scale": "maxnorm",
        "clip_sigma": 1.5,
        "intercept": True,
    },
}


def _synthetic(n: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows: 6 skewed/correlated columns and a constant one; noisy linear target."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, D_RANDOM))
    Z[:, 1] = 0.6 * Z[:, 0] + 0.8 * Z[:, 1]
    Z[:, 2] = np.exp(Z[:, 2])  # heavy right tail: clipping bites
    Z[:, 3] = 100.0 + 30.0 * Z[:, 3]
    X = np.column_stack([Z, np.full(n, 3.25)])
    y = Z @ np.array([1.0, -0.5, 0.3, 0.02, 0.0, 2.0]) + rng.standard_normal(n)
    return X, y


def _write_table(path, X: np.ndarray, y: np.ndarray, *, row_group: int = 1000) -> None:
    cols = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    cols["target"] = y  # the target column comes last
    pq.write_table(pa.table(cols), path, row_group_size=row_group)
    write_checksum(path)  # readers of prepared tables verify it


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("streaming") / "table.parquet"
    X, y = _synthetic(N, seed=7)
    _write_table(path, X, y)
    return path


@pytest.mark.parametrize("vname", list(VARIANTS))
def test_streaming_equals_in_memory(table, vname, monkeypatch):
    spec = {vname: VARIANTS[vname]}
    memory = sweep_dataset(table, dataset="synth", variants=spec, memory_budget_mb=None, **GRID)

    seen = {"chunks": 0, "max_rows": 0, "rows": 0}
    real_iter = dpreg.data.iter_prepared

    def iter_prepared(path, *, chunk_rows=65536):
        for X, y in real_iter(path, chunk_rows=chunk_rows):
            seen["chunks"] += 1
            seen["rows"] += X.shape[0]
            seen["max_rows"] = max(seen["max_rows"], X.shape[0])
            yield X, y

    def read_prepared(path):
        raise AssertionError("the streaming path read the whole table")

    monkeypatch.setattr(dpreg.engine.sources, "iter_prepared", iter_prepared)
    monkeypatch.setattr(dpreg.data, "read_prepared", read_prepared)
    streamed = sweep_dataset(
        table,
        dataset="synth",
        variants=spec,
        memory_budget_mb=1e-3,  # far below the table's ~0.3 MB: must stream
        chunk_rows=CHUNK,
        **GRID,
    )

    assert seen["max_rows"] == CHUNK
    assert seen["rows"] >= 2 * N  # several passes over the file
    n_trials = len(GRID["algorithms"]) * len(GRID["epsilons"]) * GRID["folds"] * GRID["repeats"]
    assert len(memory) == len(streamed) == n_trials
    keys = ["algorithm", "epsilon", "fold", "repeat"]
    a = memory.sort_values(keys).reset_index(drop=True)
    b = streamed.sort_values(keys).reset_index(drop=True)
    for col in ["dataset", "variant", *keys, "failed", "seed_key", "releases"]:
        assert (a[col] == b[col]).all(), col
    assert not a["failed"].any()
    for col in ["mse", "lam"]:
        np.testing.assert_allclose(b[col], a[col], rtol=1e-12, atol=0, err_msg=col)
    # R^2 = 1 - SSE/SST crosses 0, where it has no relative precision: compare SSE/SST
    np.testing.assert_allclose(1.0 - b["r2"], 1.0 - a["r2"], rtol=1e-12, atol=0, err_msg="r2")
    # the comparison is not vacuous: private trials differ from each other
    assert a.loc[a["algorithm"] == "adassp", "mse"].nunique() > 1


class _CountingSource:
    """Serves rows in chunks and records the largest chunk and the passes made."""

    def __init__(self, inner):
        self.inner = inner
        self.n, self.d = inner.n, inner.d
        self.max_rows = 0
        self.passes = 0

    def chunks(self):
        self.passes += 1
        for X, y, f in self.inner.chunks():
            self.max_rows = max(self.max_rows, X.shape[0])
            yield X, y, f


class _GeneratedSource:
    """Rows generated chunk by chunk from a seed: the table never exists in memory."""

    def __init__(self, n: int, chunk: int, folds: int):
        self.n, self.d, self.chunk, self.folds = n, D_RANDOM + 1, chunk, folds

    def chunks(self):
        for i, lo in enumerate(range(0, self.n, self.chunk)):
            rows = min(self.chunk, self.n - lo)
            X, y = _synthetic(rows, seed=1000 + i)
            yield X, y, (np.arange(lo, lo + rows) % self.folds).astype(np.int32)


@pytest.mark.parametrize("vname", ["global-rownorm", "train-clip-test", "train-rownorm-y"])
def test_fold_statistics_chunked_equals_whole(vname):
    X, y = _synthetic(N, seed=3)
    fold = assign_folds(N, 5, seed=1, dataset="synth")
    whole = fold_statistics(ArraySource(X, y, fold), VARIANTS[vname], folds=5)
    src = _CountingSource(ArraySource(X, y, fold, chunk_rows=CHUNK))
    chunked = fold_statistics(src, VARIANTS[vname], folds=5)
    assert src.max_rows == CHUNK
    # moments (+ clipped moments) each peek at the first chunk for a shift,
    # then one full pass each; row-norm maxima; statistics: at most 6 calls
    assert 2 <= src.passes <= 6
    for w, c in zip(whole, chunked, strict=True):
        assert w.train.n == c.train.n and w.test.m == c.test.m
        np.testing.assert_allclose(c.train.xtx, w.train.xtx, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c.train.xty, w.train.xty, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c.test.uu, w.test.uu, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c.test.ur, w.test.ur, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "spec",
    [
        VARIANTS["train-maxnorm"],
        VARIANTS["global-maxnorm"],
        {"stats": "train", "scale": "maxnorm", "center_y": False, "intercept": True},
        {"stats": "train", "scale": "maxnorm", "intercept": "thesis"},
    ],
)
def test_maxnorm_statistics_from_moments_equal_the_mapped_rows(spec):
    """The moments route gives the statistics of the explicitly transformed rows."""
    X, y = _synthetic(N, seed=11)
    fold = assign_folds(N, 5, seed=2, dataset="synth")
    src = _CountingSource(ArraySource(X, y, fold, chunk_rows=CHUNK))
    fds = fold_statistics(src, spec, folds=5)
    assert src.passes <= 3  # a peek at the first chunk, the moments, the row norms
    for fd in fds:
        tr = fd.transform
        train, test = fold != fd.fold, fold == fd.fold
        Xm, ym = tr.transform_train(X[train], y[train])  # raises if a row breaks the bound
        # x_max is the exact largest feature norm of the statistics rows (training rows,
        # or every row for global statistics): some row sits on the bound
        rows = train if spec["stats"] == "train" else np.ones(N, dtype=bool)
        assert tr.feature_norms(tr._features(X[rows], clip=True)).max() == pytest.approx(
            tr.x_max, rel=1e-14
        )
        assert fd.train.n == train.sum()
        np.testing.assert_allclose(fd.train.xtx, Xm.T @ Xm, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fd.train.xty, Xm.T @ ym, rtol=1e-10, atol=1e-10)
        assert fd.train.yty == pytest.approx(float(ym @ ym), rel=1e-10)
        ref = ScoreStats.from_arrays(*tr.transform_test(X[test], y[test]))
        assert fd.test.m == ref.m
        for name in ("uu", "ur", "rr", "t_sum", "t_sq"):
            np.testing.assert_allclose(
                getattr(fd.test, name), getattr(ref, name), rtol=1e-10, atol=1e-9, err_msg=name
            )


@pytest.mark.parametrize("vname", ["global-maxnorm", "train-maxnorm", "train-clip-test"])
def test_fold_statistics_memory_independent_of_rows(vname):
    """Peak traced allocation stays at a few chunks while the table is 80x larger."""
    n, chunk = 200_000, 2_500
    table_bytes = n * (D_RANDOM + 2) * 8  # X, y as float64 (12.8 MB)
    src = _CountingSource(_GeneratedSource(n, chunk, folds=5))
    tracemalloc.start()
    try:
        stats = fold_statistics(src, VARIANTS[vname], folds=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert src.max_rows == chunk
    assert sum(fd.test.m for fd in stats) == n
    assert all(fd.train.n == n - fd.test.m for fd in stats)
    assert peak < table_bytes / 4, (
        f"peak {peak / 2**20:.1f} MiB for a {table_bytes / 2**20:.1f} MiB table"
    )
