"""The summaries' faster paths give exactly the numbers of the direct computations.

Each test compares a shortcut of dpreg.inference.bootstrap, dpreg.inference.medians, dpreg.report.summary,
dpreg.io.tables or dpreg.inference.claims with the plain computation it replaces (multi-key group-bys,
numpy.unique, one numpy.nanquantile per column, scipy.special, one read per
experiment), with exact equality: the pipeline's tables must not change by a
single byte.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpreg.inference.bootstrap as bs
import dpreg.inference.intervals as iv
import dpreg.inference.medians as md
from dpreg import DPRegError
from dpreg.inference.bootstrap import DesignBootstrap, cell_codes
from dpreg.inference.evaluation import evaluate_claims
from dpreg.inference.intervals import PairedDesigns, paired_ratios
from dpreg.io.tables import GROUP_KEYS, INTERVAL_COLUMNS
from dpreg.io.trials import read_trials, select_trials, write_trials
from dpreg.report.summary import summarise


def cell_trials(seed=0, *, names=("v", "w"), datasets=("d1", "d2"), K=4, R=7, P=1):
    """Trials of every (dataset, variant, algorithm, epsilon) on a P x K x R design
    (fold ids p K + k, as the sweep numbers them), with ties, failed trials at their
    fold's trivial-predictor error (as the sweep records them), a few non-finite
    errors (left out), one cell with every error non-finite, one whose every trial
    failed, and an algorithm with fewer repeats."""
    rng = np.random.default_rng(seed)
    rows = []
    for ds in datasets:
        for v in names:
            for alg, reps in (("b", R), ("a", R), ("few", 2)):
                for eps in (10.0, 0.5, 1.0):
                    mse = rng.lognormal(sigma=1.5, size=(P * K, reps))
                    if alg == "a":
                        mse = np.round(mse, 1)  # ties
                    # the trivial predictor's error: one per fold
                    trivial = 3.0 * rng.lognormal(sigma=0.5, size=(P * K, 1))
                    failed = rng.random((P * K, reps)) < 0.1
                    bad = rng.random((P * K, reps)) < 0.03  # non-finite: left out
                    if (ds, v, alg, eps) == (datasets[0], names[0], "b", 1.0):
                        bad[:] = True
                    if (ds, v, alg, eps) == (datasets[0], names[-1], "b", 1.0):
                        failed[:], bad[:] = True, False
                    mse = np.where(bad, np.nan, np.where(failed, trivial, mse))
                    failed |= bad
                    f, r = np.indices((P * K, reps)).reshape(2, -1)
                    rows.append(
                        pd.DataFrame(
                            {
                                "dataset": ds,
                                "variant": v,
                                "algorithm": alg,
                                "epsilon": eps,
                                "delta": 1e-6,
                                "partition": f // K,
                                "fold": f,
                                "repeat": r,
                                "mse": mse.ravel(),
                                "r2": 1 - mse.ravel() / 10,
                                "lam": math.nan,
                                "failed": failed.ravel(),
                                "outside_validity": (eps == 10.0) & (alg == "a"),
                                "calibration": "classical",
                                "seed_key": "k",
                            }
                        )
                    )
    frame = pd.concat(rows, ignore_index=True)
    return frame.sample(frac=1, random_state=seed).reset_index(drop=True)  # any row order


# --------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------
def test_expanded_alpha_table_equals_the_scipy_computation(monkeypatch):
    table = dict(bs._EXPANDED_ALPHA)
    assert (0.95, 10) in table  # the default configuration's design
    monkeypatch.setattr(bs, "_EXPANDED_ALPHA", {})
    for (level, clusters), value in table.items():
        assert bs.expanded_alpha(level, clusters) == value, (level, clusters)


@pytest.mark.parametrize("names", [("v", "w"), ("Zeta", "alpha", "éclair", "Ärger", "10", "9")])
def test_cell_codes_follow_the_sorted_group_by(names):
    trials = cell_trials(names=names)
    cell, cells = cell_codes(trials)
    grouped = trials.groupby(GROUP_KEYS, sort=True)
    np.testing.assert_array_equal(cell, grouped.ngroup().to_numpy())
    expected = grouped.size().index.to_frame(index=False)
    pd.testing.assert_frame_equal(cells, expected, check_dtype=False)
    # categorical names (categories in an unsorted order) give the same cells
    cat = trials.assign(
        variant=pd.Categorical(trials["variant"], categories=list(reversed(names))),
        algorithm=pd.Categorical(trials["algorithm"], categories=["few", "b", "a"]),
    )
    cell_cat, cells_cat = cell_codes(cat)
    np.testing.assert_array_equal(cell_cat, cell)
    pd.testing.assert_frame_equal(cells_cat, cells)


def test_unique_inverse_equals_numpy_unique():
    rng = np.random.default_rng(2)
    for x in (
        rng.integers(0, 10, 500),
        rng.integers(0, 10**12, 50),  # too sparse for counting: numpy.unique itself
        np.array([7, 7, 3]),
        np.array([-2, 5, 5]),
        np.array([0]),
    ):
        ids, inverse = np.unique(x, return_inverse=True)
        got_ids, got_inverse = bs._unique_inverse(x)
        np.testing.assert_array_equal(got_ids, ids)
        np.testing.assert_array_equal(got_inverse, inverse)
        assert got_ids.dtype == ids.dtype


def test_by_repeat_count_equals_the_group_by_split():
    trials = cell_trials(seed=3)
    keys = [trials[c].astype(str) if c != "epsilon" else trials[c] for c in GROUP_KEYS]
    reps = trials.groupby(keys, sort=False)["repeat"].transform("max").astype(np.int64) + 1
    expected = [part for _, part in trials.groupby([trials["dataset"], reps.to_numpy()], sort=True)]
    got = [part for _, part in iv._by_repeat_count(trials)]
    assert len(got) == len(expected) == 4  # two datasets x (7 repeats, 2 repeats)
    for a, b in zip(got, expected, strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_percentile_interval_equals_nanquantile_per_column():
    rng = np.random.default_rng(4)
    reps = rng.lognormal(size=(500, 6))
    reps[:40, 1] = np.nan  # some replicates undefined
    reps[:, 2] = np.nan  # none defined
    reps[3, 3] = np.inf
    reps[:, 4] = np.round(reps[:, 4], 1)  # ties
    lo, hi = bs._percentile_interval(reps, 0.95, 10)
    alpha = bs.expanded_alpha(0.95, 10)
    for g in range(reps.shape[1]):
        if not np.isfinite(reps[:, g]).any():
            assert np.isnan(lo[g]) and np.isnan(hi[g])
            continue
        want = np.nanquantile(reps[:, g], [alpha / 2, 1 - alpha / 2])
        assert (lo[g], hi[g]) == (want[0], want[1]), g


@pytest.mark.parametrize("P", [1, 5])
def test_medians_of_some_cells_equal_those_of_all_cells(P):
    trials = cell_trials(seed=5, datasets=("d1",), P=P)
    full = DesignBootstrap(trials, seed=1, resamples=300)
    est, reps = full.statistic("median")
    cache: dict = {}
    lazy = DesignBootstrap(trials, seed=1, resamples=300, median_cache=cache)
    rows = [5, 0, 5, 11]
    e, r = lazy.cell_statistic("median", rows)
    np.testing.assert_array_equal(e, est[rows])
    np.testing.assert_array_equal(r, reps[:, rows])
    assert len(cache) == 3
    # a second design holding some of the same cells reuses their medians
    fewer = trials[trials["variant"] == "v"]
    other = DesignBootstrap(fewer, seed=1, resamples=300, median_cache=cache)
    e2, r2 = other.statistic("median")
    e_ref, r_ref = DesignBootstrap(fewer, seed=1, resamples=300).statistic("median")
    np.testing.assert_array_equal(e2, e_ref)
    np.testing.assert_array_equal(r2, r_ref)
    # the mean of a few cells is the matching columns of the mean of all
    m, mr = lazy.cell_statistic("mean", rows)
    m_all, mr_all = full.statistic("mean")
    np.testing.assert_array_equal(m, m_all[rows])
    np.testing.assert_array_equal(mr, mr_all[:, rows])


@pytest.mark.parametrize("band", [2, 9])
@pytest.mark.parametrize("N", [1, 2, 9, 48, 49, 200, 600])
def test_replicate_medians_equal_the_full_scan(N, band, monkeypatch):
    """The block search against the definition: the first sorted position whose
    running count exceeds (n - 1) // 2 and n // 2, for designs smaller and
    larger than one block and than the band of blocks searched for every
    replicate (a narrow band sends many replicates to the search over every
    block; fold-constant values, as a non-private method gives, put the middle
    of many replicates far from the sample's)."""
    monkeypatch.setattr(md, "_MEDIAN_BAND", band)
    rng = np.random.default_rng(N)
    B = 120
    K = 6 if N % 6 == 0 else 1
    counts = bs.resample_counts(K, N // K, B, seed=N, dataset="d")
    values = np.round(rng.lognormal(size=(6, N)), 1)
    values[1, rng.random(N) < 0.5] = np.nan
    values[2] = np.nan
    values[3, 1:] = np.nan
    values[5] = np.repeat(rng.lognormal(size=K), N // K)  # constant within each fold
    ok = np.isfinite(values)
    padded = np.zeros((B, N + 1), dtype=np.int16)
    padded[:, :N] = counts
    got = md._replicate_medians(
        values, ok, counts.astype(np.float32), padded.ravel(), np.arange(B) * (N + 1)
    )
    for g in range(values.shape[0]):
        order = np.argsort(np.where(ok[g], values[g], np.inf), kind="stable")[: ok[g].sum()]
        for b in range(B):
            running = np.cumsum(counts[b, order])
            total = running[-1] if len(running) else 0
            if total == 0:
                assert np.isnan(got[b, g])
                continue
            lo = np.argmax(running > (total - 1) // 2)
            hi = np.argmax(running > total // 2)
            assert got[b, g] == 0.5 * (values[g, order[lo]] + values[g, order[hi]])


@pytest.mark.parametrize("P", [1, 5])
def test_paired_designs_equal_paired_ratios(P):
    trials = cell_trials(seed=6, datasets=("d1",), P=P)
    cells = [("v", "a"), ("v", "b"), ("w", "a"), ("v", "few")]
    designs = PairedDesigns(trials, cells, seed=2, resamples=200)
    for a, b, stat in (
        (("v", "a"), ("v", "b"), "median"),
        (("w", "a"), ("v", "a"), "mean"),
        (("v", "few"), ("v", "a"), "median"),
    ):
        got = designs.ratios(a, b, [0.5, 1.0, 10.0], statistic=stat)
        want = paired_ratios(trials, a, b, [0.5, 1.0, 10.0], statistic=stat, seed=2, resamples=200)
        pd.testing.assert_frame_equal(got, want)
    absent = PairedDesigns(trials, [("v", "a"), ("v", "nothing")], seed=2, resamples=200)
    assert absent.ratios(("v", "a"), ("v", "nothing"), [1.0], statistic="mean").empty
    with pytest.raises(DPRegError, match=r"\('w', 'b'\) was not named"):
        designs.ratios(("v", "a"), ("w", "b"), [1.0], statistic="mean")


# --------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------
@pytest.mark.parametrize("P", [1, 5])
def test_summary_statistics_equal_the_multi_key_group_by(P):
    trials = cell_trials(seed=7, P=P)
    table = summarise(trials, experiment="e", seed=3, resamples=200)
    # failed trials count with their recorded error; non-finite errors are left out
    finite = np.isfinite(trials["mse"].to_numpy())
    frame = trials.assign(excluded=~finite)
    grouped = frame.groupby(GROUP_KEYS, sort=True)
    ok = frame[finite].groupby(GROUP_KEYS, sort=True)
    want = pd.DataFrame(
        {
            "delta": grouped["delta"].first(),
            "trials": grouped.size(),
            "failed": grouped["failed"].sum(),
            "excluded": grouped["excluded"].sum(),
            "mse_mean": ok["mse"].mean(),
            "mse_sd": ok["mse"].std(ddof=1),
            "mse_median": ok["mse"].median(),
            "mse_q25": ok["mse"].quantile(0.25),
            "mse_q75": ok["mse"].quantile(0.75),
            "r2_mean": ok["r2"].mean(),
            "outside_validity": grouped["outside_validity"].any(),
        }
    ).reset_index()
    assert len(table) == len(want) == 36
    for col in want.columns:
        np.testing.assert_array_equal(table[col].to_numpy(), want[col].to_numpy(), err_msg=col)
    # the one cell whose errors are all non-finite (d1, v, b, epsilon 1) has no statistics
    empty = table[table["mse_mean"].isna()]
    assert empty[["dataset", "variant", "algorithm", "epsilon"]].values.tolist() == [
        ["d1", "v", "b", 1.0]
    ]
    assert empty["excluded"].tolist() == empty["trials"].tolist() == [28 * P]
    assert empty[INTERVAL_COLUMNS].isna().all(axis=None)
    # the cell whose trials all failed (d1, w, b, epsilon 1) is scored at the trivial
    # errors: its statistics are numpy's over them, and its intervals are finite
    every = table[
        (table["dataset"] == "d1")
        & (table["variant"] == "w")
        & (table["algorithm"] == "b")
        & (table["epsilon"] == 1.0)
    ].iloc[0]
    cell = trials[
        (trials["dataset"] == "d1")
        & (trials["variant"] == "w")
        & (trials["algorithm"] == "b")
        & (trials["epsilon"] == 1.0)
    ]
    assert cell["failed"].all() and every["failed"] == every["trials"] == 28 * P
    assert every["excluded"] == 0
    assert every["mse_median"] == np.median(cell["mse"].to_numpy())
    assert np.isfinite(every[INTERVAL_COLUMNS].to_numpy(dtype=float)).all()
    # a row with some failures: its intervals come from every finite trial
    assert (table["failed"] > 0).sum() > (table["failed"] == table["trials"]).sum()


# --------------------------------------------------------------------------
# trial files
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "selection",
    [
        {},
        {"variants": ["w"]},
        {"algorithms": ["few", "a"], "repeats": 1},
        {"variants": ["v", "nothing"], "repeats": {"a": 3, "few": 1}},
        {"repeats": {"b": 2}, "columns": ["dataset", "epsilon", "mse"]},  # selection columns unread
    ],
)
def test_parquet_selection_equals_the_csv_selection(tmp_path, selection):
    trials = cell_trials(seed=8)
    write_trials(trials, tmp_path / "t.parquet")
    write_trials(trials, tmp_path / "t.csv.gz")
    got = read_trials([tmp_path / "t.parquet"], **selection)
    want = read_trials([tmp_path / "t.csv.gz"], **selection)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # and select_trials on the whole table picks the same rows
    columns = selection.get("columns")
    rest = {k: v for k, v in selection.items() if k != "columns"}
    whole = select_trials(read_trials([tmp_path / "t.parquet"]), **rest)
    pd.testing.assert_frame_equal(whole[columns or whole.columns].reset_index(drop=True), got)


@pytest.mark.parametrize("P", [1, 5])
def test_claims_from_shared_files_equal_claims_from_each_experiments_trials(tmp_path, P):
    trials = cell_trials(seed=9, K=10, R=8, P=P)
    paths = []
    for ds in ("d1", "d2"):
        paths.append(tmp_path / f"{ds}.parquet")
        write_trials(trials[trials["dataset"] == ds], paths[-1])
    claims = {
        "one": [
            {"id": "a-b", "a": {"algorithm": "a"}, "b": {"algorithm": "b"}, "expect": "lower"},
            {
                "id": "few-a",
                "a": {"algorithm": "few"},
                "b": {"algorithm": "a"},
                "statistic": "mean",
                "expect": "equal",
                "margin": 0.5,
            },
        ],
        "two": [
            {
                "id": "w-v",
                "a": {"algorithm": "a", "variant": "w"},
                "b": {"variant": "v"},
                "expect": "higher",
            }
        ],
    }
    experiments = {
        "one": {"variants": ["v"], "algorithms": ["a", "b", "few"], "claims": claims["one"]},
        "two": {"variants": ["v", "w"], "algorithms": ["a"], "claims": claims["two"]},
    }
    cfg = {"seed": 5, "bootstrap": {"resamples": 300}, "experiments": experiments}
    select = {"one": {"repeats": {"a": 6, "b": 8, "few": 2}}, "two": {"repeats": 5}}
    got = evaluate_claims(cfg, {"one": paths, "two": paths}, select=select)
    each = {
        exp: read_trials(paths, **select[exp], variants=spec["variants"])
        for exp, spec in experiments.items()
    }
    want = evaluate_claims(cfg, trials=each)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert set(got["claim"]) == {"a-b", "few-a", "w-v"} and len(got) == 3 * (1 + 2 * 3)


def test_categorical_names_equal_the_string_names(tmp_path):
    trials = cell_trials(seed=10)
    write_trials(trials, tmp_path / "t.parquet")
    write_trials(trials, tmp_path / "t.csv.gz")
    names = ("dataset", "variant", "algorithm")
    plain = read_trials([tmp_path / "t.parquet"], variants=["w"], repeats={"a": 2})
    for path in (tmp_path / "t.parquet", tmp_path / "t.csv.gz"):
        cat = read_trials([path], variants=["w"], repeats={"a": 2}, categorical=names)
        for col in names:
            assert isinstance(cat[col].dtype, pd.CategoricalDtype)
            cats = list(cat[col].cat.categories)
            assert cats == sorted(set(plain[col]))  # only the names that occur, sorted
        pd.testing.assert_frame_equal(cat.astype({c: str for c in names}), plain)


# --------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------
def test_figures_saved_in_one_draw_equal_those_saved_with_the_placeholder_engine(
    tmp_path, monkeypatch
):
    """_save drops the layout engine after the layout pass; the files must be the
    bytes matplotlib writes when the frozen layout keeps a placeholder engine (which
    makes savefig draw every file twice)."""
    import dpreg.report.figures as plots

    table = summarise(cell_trials(seed=11), experiment="e", resamples=50)
    kw = {
        "experiment": "e",
        "title": "T",
        "dataset_info": {"d1": (100, 3), "d2": (200, 4)},
        "variants": ["v", "w"],
        "note": "a note; and another",
    }
    plots.plot_experiment(table, out_png=tmp_path / "a.png", out_pdf=tmp_path / "a.pdf", **kw)

    def placeholder_save(fig, out_png, out_pdf, dpi):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
        assert fig.get_layout_engine() is not None
        fig.savefig(out_png, dpi=dpi, metadata={"Software": None})
        fig.savefig(out_pdf, metadata={"CreationDate": None, "ModDate": None, "Producer": None})

    monkeypatch.setattr(plots, "_save", placeholder_save)
    plots.plot_experiment(table, out_png=tmp_path / "b.png", out_pdf=tmp_path / "b.pdf", **kw)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


@pytest.mark.parametrize("P, K, R", [(1, 5, 7), (1, 4, 6), (1, 6, 1), (5, 4, 3), (5, 3, 1)])
def test_medians_of_fold_constant_cells_equal_the_general_search(P, K, R):
    """Cells equal within each fold (ridge, trivial) take the fold-total shortcut;
    it must give the general search's numbers, also when folds share a value
    (with K even, a running total can equal the upper middle's rank), and with
    several partitions (fold ids p K + k), and with failed trials at their fold's
    trivial-predictor error (a cell where every trial failed is fold-constant too)."""
    rng = np.random.default_rng(12)
    F = P * K
    f, r = np.indices((F, R)).reshape(2, -1)
    trivial = np.repeat(rng.lognormal(size=F), R)
    some = rng.random(F * R) < 0.3
    cells = {
        "distinct": np.repeat(rng.lognormal(size=F), R),
        "shared": np.repeat(np.resize([2.0, 1.0, 2.0, 3.0, 1.0, 2.0], F), R),  # equal values
        "one": np.full(F * R, 4.0),
        "noisy": np.repeat(rng.lognormal(size=F), R) * rng.lognormal(sigma=0.1, size=F * R),
        "all-failed": trivial,
        "some-failed": np.where(some, trivial, rng.lognormal(size=F * R)),
    }
    failed = {"all-failed": np.ones(F * R, bool), "some-failed": some}
    trials = pd.concat(
        pd.DataFrame(
            {
                "dataset": "d",
                "variant": "v",
                "algorithm": name,
                "epsilon": 1.0,
                "partition": f // K,
                "fold": f,
                "repeat": r,
                "mse": mse,
                "failed": failed.get(name, False),
            }
        )
        for name, mse in cells.items()
    )
    boot = DesignBootstrap(trials, seed=4, resamples=400)
    est, reps = boot.statistic("median")
    general = md._replicate_medians(
        boot.values, np.isfinite(boot.values), *bs._median_layouts(*boot._design)
    )
    np.testing.assert_array_equal(reps, general)
    assert boot.failed.any()
    for g, name in enumerate(boot.cells["algorithm"]):
        np.testing.assert_array_equal(boot.values[g], cells[name])  # failed ones kept
        for b in range(0, 400, 37):
            sample = np.repeat(cells[name], boot.counts[b].astype(int))
            assert reps[b, g] == pytest.approx(np.median(sample), rel=1e-12)
    assert boot._fold_counts is not None  # the shortcut was taken


@pytest.mark.parametrize("within", [False, True])
def test_medians_and_means_of_a_partitioned_design_equal_explicit_resamples(within):
    """P = 5: every replicate's mean and median (the fast paths: matrix product,
    two-level search) equal numpy's on the resample built from the counts, with
    fold ids unique over partitions or restarting in each partition (the same
    design either way)."""
    P, K, R, B = 5, 4, 3, 150
    trials = cell_trials(seed=13, datasets=("d1",), K=K, R=R, P=P)
    if within:
        trials = trials.assign(fold=trials["fold"] % K)
    boot = DesignBootstrap(trials, seed=5, resamples=B)
    assert (boot.partitions, boot.folds, boot.repeats, boot.clusters) == (P, K, R, P)
    est, med = boot.statistic("median")
    _, mean = boot.statistic("mean")
    counts = bs.resample_counts(K, R, B, seed=5, dataset="d1", partitions=P)
    np.testing.assert_array_equal(boot.counts, counts)
    # each cell's trial errors laid out independently of the design: failed trials at
    # their recorded error, non-finite ones left out
    slot = (trials["fold"].to_numpy() % K + K * trials["partition"].to_numpy()) * R + trials[
        "repeat"
    ].to_numpy()
    assert trials["failed"].any() and np.isfinite(trials.loc[trials["failed"], "mse"]).any()
    for g, cell in enumerate(boot.cells.itertuples(index=False)):
        hit = (
            (trials["variant"] == cell.variant)
            & (trials["algorithm"] == cell.algorithm)
            & (trials["epsilon"] == cell.epsilon)
        ).to_numpy()
        values = np.full(P * K * R, np.nan)
        values[slot[hit]] = trials["mse"].to_numpy()[hit]
        ok = np.isfinite(values)
        for b in range(0, B, 7):
            sample = np.repeat(values[ok], counts[b][ok].astype(int))
            if not len(sample):
                assert np.isnan(med[b, g]) and np.isnan(mean[b, g])
                continue
            assert med[b, g] == np.median(sample)
            assert mean[b, g] == pytest.approx(sample.mean(), rel=1e-12)
