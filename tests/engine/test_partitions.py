"""Several random K-fold partitions per point (config key ``cv.partitions``).

Partition 0 is the single partition of ``partitions: 1`` -- same folds, same
noise streams, same trials -- and partitions p >= 1 have their own folds and
streams, with fold ids ``p K + k`` unique over partitions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pandas.testing import assert_frame_equal

from dpreg._validation import DPRegError
from dpreg.engine.sources import sweep_dataset
from dpreg.engine.sweep import (
    TRIAL_COLUMNS,
    assign_folds,
    assign_partitions,
    sweep_arrays,
    sweep_source,
)
from dpreg.io.checksum import write_checksum
from dpreg.preprocess import ArraySource, PublicRanges
from dpreg.privacy.mechanisms import ClassicalCalibrationWarning

K, R, DELTA = 3, 4, 1e-6
THESIS = {"stats": "train", "scale": "maxnorm", "center_y": True}
WANG = {"stats": "global", "scale": "rownorm", "center_y": True, "intercept": False}


def toy(n=300, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 3.0, 0.5] + [0.0, 2.0, -1.0]
    y = X @ [0.5, -0.2, 1.0] + 0.3 * rng.normal(size=n) + 2.0
    return X, y


def grid(X, y):
    """Every kind of block: shared statistics, private statistics (their own
    stream per fold), an epsilon-free step (TukeyEM) and an algorithm on rows."""
    lo, hi = X.min(0) - 1.0, X.max(0) + 1.0
    ranges = PublicRanges(lo, hi, float(y.min()) - 1.0, float(y.max()) + 1.0, "test")
    return dict(
        dataset="toy",
        seed=11,
        folds=K,
        variants={
            "wang": WANG,
            "thesis": THESIS,
            "ps": {**THESIS, "private_stats": {"epsilon_share": 0.2}},
        },
        plan={
            "wang": {"trivial": R, "ridge": R, "adassp": R},
            "thesis": {"adassp": R, "tukey-em": 2},
            "ps": {"adassp": R, "ridge": R},
        },
        epsilons=[0.2, 0.5],  # classical calibrations are flagged from epsilon = 1 on
        delta=DELTA,
        ranges=ranges,
    )


@pytest.fixture(scope="module")
def sweeps():
    X, y = toy()
    with warnings.catch_warnings():  # TukeyEM's flagged releases are not what is tested here
        warnings.simplefilter("ignore", ClassicalCalibrationWarning)
        return {P: sweep_arrays(X, y, partitions=P, **grid(X, y)) for P in (1, 3)}


def test_one_partition_is_assign_folds_and_partition_zero_is_that_partition():
    n = 103
    one = assign_partitions(n, K, 1, seed=3, dataset="airfoil")
    np.testing.assert_array_equal(one, assign_folds(n, K, seed=3, dataset="airfoil"))
    assert one.ndim == 1 and one.dtype == np.int32  # the single-partition fold array as before
    many = assign_partitions(n, K, 4, seed=3, dataset="airfoil")
    assert many.shape == (n, 4)
    np.testing.assert_array_equal(many[:, 0], one)
    for p in range(4):
        sizes = np.bincount(many[:, p], minlength=K)
        assert sizes.max() - sizes.min() <= 1 and sizes.sum() == n  # K balanced folds
    # partitions are different cuts of the rows (the chance of two equal ones is nil)
    assert len({many[:, p].tobytes() for p in range(4)}) == 4
    np.testing.assert_array_equal(many, assign_partitions(n, K, 4, seed=3, dataset="airfoil"))
    # a partition does not depend on how many there are
    np.testing.assert_array_equal(
        assign_partitions(n, K, 2, seed=3, dataset="airfoil"), many[:, :2]
    )


@pytest.mark.parametrize("bad", [0, -1, 1001, True, 2.5, "3"])
def test_bad_partitions_are_refused_by_name(bad):
    with pytest.raises(DPRegError, match="cv.partitions"):
        assign_partitions(100, 3, bad, seed=0, dataset="x")


def test_partition_zero_reproduces_the_single_partition_sweep(sweeps):
    one, three = sweeps[1], sweeps[3]
    assert list(three.columns) == TRIAL_COLUMNS
    assert (one["partition"] == 0).all()
    first = three[three["partition"] == 0].reset_index(drop=True)
    # every column, bit for bit: folds, noise, private statistics, TukeyEM's step
    assert_frame_equal(first, one)
    assert set(one["fold"]) == set(range(K))


def test_partitions_number_their_folds_and_streams_apart(sweeps):
    three = sweeps[3]
    assert sorted(three["partition"].unique()) == [0, 1, 2]
    np.testing.assert_array_equal(three["fold"] // K, three["partition"])
    cells = three.groupby(["variant", "algorithm", "epsilon"])
    # P x K x R trials per point (R as planned per algorithm)
    sizes = cells.size()
    assert sizes[("wang", "adassp", 0.5)] == 3 * K * R
    assert sizes[("thesis", "tukey-em", 0.2)] == 3 * K * 2
    # one stream key per (variant, fold, algorithm, epsilon): never shared across partitions
    keys = three.groupby("seed_key")["partition"].nunique()
    assert (keys == 1).all()
    per_unit = three.groupby(["variant", "algorithm", "epsilon", "partition", "fold"])["seed_key"]
    assert (per_unit.nunique() == 1).all()
    assert three["seed_key"].nunique() == per_unit.ngroups
    # the noise differs between partitions (not a copy of partition 0's draws)
    for (v, a), part in three[three["algorithm"] == "adassp"].groupby(["variant", "algorithm"]):
        m = [part.loc[part["partition"] == p, "mse"].to_numpy() for p in range(3)]
        assert not np.array_equal(m[0], m[1]) and not np.array_equal(m[1], m[2]), (v, a)
    # a non-private method's error differs between partitions too: other folds
    ridge = three[(three["algorithm"] == "ridge") & (three["variant"] == "wang")]
    assert ridge.groupby("partition")["mse"].mean().nunique() == 3


def test_partitions_of_the_source_path_equal_the_array_path(sweeps):
    """sweep_source on a source whose chunks carry an (n, P) fold matrix, served in
    small chunks: the same trials as sweep_arrays (the same fold ids, the chunked sums
    agree to rounding)."""
    X, y = toy()
    kw = grid(X, y)
    fold = assign_partitions(len(y), K, 3, seed=kw["seed"], dataset=kw["dataset"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicalCalibrationWarning)
        got = sweep_source(ArraySource(X, y, fold, chunk_rows=37), partitions=3, **kw)
    want = sweeps[3]
    exact = ["dataset", "variant", "algorithm", "epsilon", "partition", "fold", "repeat"]
    assert_frame_equal(got[[*exact, "seed_key", "failed"]], want[[*exact, "seed_key", "failed"]])
    # summation order differs with the chunking: agreement to rounding (1e-9 relative is
    # far above float64 rounding of a few hundred rows, far below any real difference)
    np.testing.assert_allclose(got["mse"], want["mse"], rtol=1e-9)


def test_streamed_table_with_partitions_equals_in_memory(tmp_path):
    X, y = toy(n=900, seed=9)
    path = tmp_path / "t.parquet"
    cols = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    cols["target"] = y
    pq.write_table(pa.table(cols), path, row_group_size=200)
    write_checksum(path)
    kw = dict(
        dataset="t",
        variants={"thesis": THESIS},
        algorithms=["ridge", "adassp"],
        epsilons=[1.0],
        delta=DELTA,
        folds=K,
        repeats=2,
        seed=5,
        partitions=2,
    )
    memory = sweep_dataset(path, memory_budget_mb=None, **kw)
    streamed = sweep_dataset(path, memory_budget_mb=1e-3, chunk_rows=150, **kw)
    assert len(memory) == len(streamed) == 2 * 2 * K * 2
    assert sorted(memory["partition"].unique()) == [0, 1]
    pd.testing.assert_series_equal(memory["seed_key"], streamed["seed_key"])
    np.testing.assert_allclose(streamed["mse"], memory["mse"], rtol=1e-9)
