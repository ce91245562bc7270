"""dpreg.report.summary and dpreg.report.figures on synthetic trial tables."""

from __future__ import annotations

import gzip
import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpreg import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.io.checksum import write_checksum
from dpreg.report.figures import SCALE_LABEL, plot_experiment
from dpreg.report.lines import panel_grid
from dpreg.report.summary import (
    INTERVAL_COLUMNS,
    TABLE_COLUMNS,
    config_hash,
    provenance,
    read_table,
    read_trials,
    summarise,
    write_json,
    write_table,
    write_trials,
)


def trial(**kw):
    row = {
        "dataset": "d1",
        "variant": "v",
        "algorithm": "adassp",
        "epsilon": 1.0,
        "delta": 1e-6,
        "fold": 0,
        "repeat": 0,
        "mse": 1.0,
        "r2": 0.0,
        "lam": math.nan,
        "failed": False,
        "outside_validity": False,
        "calibration": "classical",
        "seed_key": "k",
    }
    row.update(kw)
    return row


def synthetic_trials(datasets=("d1", "d2"), variants=("v",), seed=0):
    """Trials of adassp (noisy), ssp (noisy, flagged for eps >= 2), ridge, trivial."""
    rng = np.random.default_rng(seed)
    rows = []
    for ds in datasets:
        for v in variants:
            for alg, level in (("adassp", 0.05), ("ssp", 0.5), ("ridge", 0.01), ("trivial", 0.1)):
                for eps in (0.1, 1.0, 10.0):
                    for r in range(6):
                        private = alg in ("adassp", "ssp")
                        mse = (
                            level / math.sqrt(eps) * math.exp(rng.normal(0, 0.3))
                            if private
                            else level
                        )
                        rows.append(
                            trial(
                                dataset=ds,
                                variant=v,
                                algorithm=alg,
                                epsilon=eps,
                                fold=r % 3,
                                repeat=r // 3,
                                mse=mse,
                                r2=1 - mse / 0.1,
                                outside_validity=alg == "ssp" and eps >= 2,
                            )
                        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# summarise
# --------------------------------------------------------------------------
def test_statistics_hand_checked():
    mses = [1.0, 2.0, 4.0, 8.0]
    frame = pd.DataFrame([trial(repeat=i, mse=m, r2=0.1 * i) for i, m in enumerate(mses)])
    row = summarise(frame, experiment="e").iloc[0]
    assert row["trials"] == 4 and row["failed"] == 0
    assert row["mse_mean"] == pytest.approx(3.75)
    # sample sd: deviations -2.75, -1.75, 0.25, 4.25 -> squares sum 28.75, / 3
    assert row["mse_sd"] == pytest.approx(math.sqrt(28.75 / 3))
    assert row["mse_median"] == pytest.approx(3.0)
    # linear interpolation: q25 at position 0.75 -> 1 + 0.75 * (2 - 1)
    assert row["mse_q25"] == pytest.approx(1.75)
    # q75 at position 2.25 -> 4 + 0.25 * (8 - 4)
    assert row["mse_q75"] == pytest.approx(5.0)
    assert row["r2_mean"] == pytest.approx(0.15)
    assert row["experiment"] == "e"
    assert list(summarise(frame, experiment="e").columns) == TABLE_COLUMNS


def test_failed_trials_are_scored_with_their_recorded_error():
    """A failed trial keeps the error the sweep recorded for it (the trivial
    predictor's); only a non-finite error is left out, counted in ``excluded``."""
    frame = pd.DataFrame(
        [
            trial(repeat=0, mse=1.0, r2=0.5),
            trial(repeat=1, mse=3.0, r2=0.1),
            # failed: scored as theta = 0, the sweep's trivial-predictor error
            trial(repeat=2, mse=5.0, r2=-0.2, failed=True),
            # a non-finite error: the one kind of trial left out
            trial(repeat=3, mse=math.inf, r2=-math.inf),
        ]
    )
    row = summarise(frame, experiment="e").iloc[0]
    assert row["trials"] == 4
    assert row["failed"] == 1
    assert row["excluded"] == 1
    assert row["mse_mean"] == pytest.approx(3.0)
    assert row["mse_median"] == pytest.approx(3.0)
    assert row["r2_mean"] == pytest.approx(0.4 / 3)


def test_failed_trials_enter_the_median_and_its_interval():
    """mse_median of a row with failures is numpy's median over ALL its trials,
    failed ones at their (trivial-predictor) error; the intervals cover it and
    move with the failed trials' error."""
    rng = np.random.default_rng(11)
    K, R = 5, 8
    mse = rng.lognormal(mean=-3.0, sigma=0.4, size=(K, R))
    trivial = np.full((K, 1), 1.0)  # the trivial predictor's error, far above the rest
    failed = rng.random((K, R)) < 0.3
    assert 0 < failed.sum() < K * R
    recorded = np.where(failed, trivial, mse)
    f, r = np.indices((K, R)).reshape(2, -1)
    frame = pd.DataFrame(
        [
            trial(fold=int(ff), repeat=int(rr), mse=float(m), failed=bool(x))
            for ff, rr, m, x in zip(f, r, recorded.ravel(), failed.ravel(), strict=True)
        ]
    )
    row = summarise(frame, experiment="e", resamples=300).iloc[0]
    assert row["failed"] == failed.sum() and row["excluded"] == 0
    assert row["mse_median"] == np.median(recorded)
    assert row["mse_mean"] == pytest.approx(recorded.mean(), rel=1e-12)
    # leaving the failed trials out would give a different (lower) median
    assert np.median(mse[~failed]) < np.median(recorded)
    assert row["mse_median_lo"] <= row["mse_median"] <= row["mse_median_hi"]
    assert row["mse_mean_lo"] <= row["mse_mean"] <= row["mse_mean_hi"]
    # every replicate mean includes failed trials at error 1.0: the interval lies
    # above the mean of the trials that passed
    assert row["mse_mean_lo"] > mse[~failed].mean()


def test_all_excluded_row_is_kept_with_nan_statistics():
    frame = pd.DataFrame(
        [trial(repeat=i, mse=math.nan, r2=math.nan, failed=True) for i in range(3)]
        + [trial(epsilon=2.0, mse=1.0)]
        + [trial(epsilon=3.0, repeat=i, mse=2.0 + i, failed=True) for i in range(3)]
    )
    table = summarise(frame, experiment="e")
    assert len(table) == 3
    bad = table[table["epsilon"] == 1.0].iloc[0]
    assert bad["trials"] == bad["failed"] == bad["excluded"] == 3
    assert np.isnan(
        bad[["mse_mean", "mse_sd", "mse_median", "mse_q25", "mse_q75"]].astype(float)
    ).all()
    single = table[table["epsilon"] == 2.0].iloc[0]
    assert single["mse_mean"] == 1.0 and np.isnan(single["mse_sd"])
    # every trial failed, but each has its recorded error: statistics over all three
    scored = table[table["epsilon"] == 3.0].iloc[0]
    assert scored["failed"] == 3 and scored["excluded"] == 0
    assert scored["mse_median"] == 3.0 and scored["mse_mean"] == 3.0


def test_one_row_per_group_sorted_and_independent_of_input_order():
    frame = synthetic_trials()
    table = summarise(frame, experiment="e")
    assert len(table) == 2 * 4 * 3
    assert not table.duplicated(["dataset", "variant", "algorithm", "epsilon"]).any()
    keys = list(
        zip(table["dataset"], table["variant"], table["algorithm"], table["epsilon"], strict=True)
    )
    assert keys == sorted(keys)
    shuffled = frame.sample(frac=1.0, random_state=1).reset_index(drop=True)
    pd.testing.assert_frame_equal(summarise(shuffled, experiment="e"), table)


def test_outside_validity_is_any():
    frame = pd.DataFrame([trial(repeat=0), trial(repeat=1, outside_validity=True)])
    assert bool(summarise(frame, experiment="e")["outside_validity"].iloc[0]) is True


def test_missing_column_is_named():
    frame = pd.DataFrame([trial()]).drop(columns=["mse"])
    with pytest.raises(DPRegError, match="mse"):
        summarise(frame, experiment="e")


def test_mixed_deltas_rejected():
    frame = pd.DataFrame([trial(repeat=0), trial(repeat=1, delta=1e-5)])
    with pytest.raises(DPRegError, match="delta"):
        summarise(frame, experiment="e")


def test_bad_boolean_column_is_named():
    frame = pd.DataFrame([trial(failed="maybe")])
    with pytest.raises(DPRegError, match="failed"):
        summarise(frame, experiment="e")


def test_empty_trials_give_empty_table():
    table = summarise(pd.DataFrame([trial()]).iloc[:0], experiment="e")
    assert table.empty and list(table.columns) == TABLE_COLUMNS


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------
def test_trial_file_round_trip_is_exact_and_deterministic(tmp_path):
    frame = synthetic_trials()
    frame.loc[0, ["mse", "r2"]] = math.nan
    frame.loc[0, "failed"] = True
    a, b = tmp_path / "a.csv.gz", tmp_path / "b.csv.gz"
    write_trials(frame, a)
    write_trials(frame.copy(), b)
    assert a.read_bytes() == b.read_bytes()
    # gzip header: no timestamp, no file name
    header = a.read_bytes()[:10]
    assert header[4:8] == b"\x00\x00\x00\x00"
    assert not header[3] & 0x08
    back = read_trials([a])
    for col in ("epsilon", "delta", "mse", "r2", "lam"):
        np.testing.assert_array_equal(back[col].to_numpy(float), frame[col].to_numpy(float))
    assert back["failed"].dtype == bool
    assert list(back["dataset"]) == list(frame["dataset"])
    with gzip.open(a, "rt") as fh:
        assert fh.readline().strip().split(",") == list(frame.columns)


def test_table_round_trip(tmp_path):
    table = summarise(synthetic_trials(), experiment="e")
    path = tmp_path / "t.csv"
    write_table(table, path)
    back = read_table(path)
    assert list(back.columns) == TABLE_COLUMNS
    num = ["epsilon", "mse_mean", "mse_sd", "mse_q25", "mse_q75", "r2_mean", *INTERVAL_COLUMNS]
    # 4 significant digits (TABLE_FLOAT_FORMAT): relative error <= 5e-4
    np.testing.assert_allclose(back[num].to_numpy(float), table[num].to_numpy(float), rtol=5e-4)
    assert (back["trials"] == table["trials"]).all()
    assert (back["outside_validity"] == table["outside_validity"]).all()


def test_config_hash_ignores_key_order():
    a = {"seed": 1, "cv": {"folds": 3, "repeats": 2}, "epsilons": [0.1, 1]}
    b = {"epsilons": [0.1, 1], "cv": {"repeats": 2, "folds": 3}, "seed": 1}
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash({**a, "seed": 2})


def test_provenance_is_deterministic(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("a\n1\n")
    write_checksum(table)  # provenance records only tables whose checksum matches
    metas = {"d1": {"n": 10, "d": 2, "sha256": "ab" * 32, "source": "mirror", "detail": "x"}}
    cfg = {"seed": 1, "datasets": {"d1": {}}}
    paths = []
    for i in range(2):
        rec = provenance(config=cfg, metas=metas, tables={"e": table})
        paths.append(tmp_path / f"p{i}.json")
        write_json(rec, paths[-1])
    assert paths[0].read_bytes() == paths[1].read_bytes()
    rec = json.loads(paths[0].read_text())
    assert rec["config_sha256"] == config_hash(cfg)
    assert rec["datasets"]["d1"] == {"n": 10, "d": 2, "sha256": "ab" * 32, "source": "mirror"}
    assert rec["tables"]["e"] == hashlib.sha256(b"a\n1\n").hexdigest()
    assert rec["packages"]["numpy"] == np.__version__
    assert "time" not in paths[0].read_text().lower()


# --------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------
INFO = {"d1": (1503, 5), "d2": (1030, 8)}


def legend_labels(fig):
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_plot_files_created_and_deterministic(tmp_path):
    table = summarise(synthetic_trials(), experiment="e")
    digests = []
    for i in range(2):
        png, pdf = tmp_path / f"f{i}.png", tmp_path / f"f{i}.pdf"
        plot_experiment(
            table, experiment="e", title="T", dataset_info=INFO, out_png=png, out_pdf=pdf
        )
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert pdf.read_bytes()[:5] == b"%PDF-"
        assert b"CreationDate" not in pdf.read_bytes()
        digests.append((png.read_bytes(), pdf.read_bytes()))
    assert digests[0] == digests[1]


def label(name):
    return ALGORITHMS[name].label


def draw(table, tmp_path, **kw):
    kw.setdefault("experiment", "e")
    kw.setdefault("dataset_info", INFO)
    return plot_experiment(table, out_png=tmp_path / "f.png", out_pdf=tmp_path / "f.pdf", **kw)


def test_plot_one_variant_labels_titles_and_markers(tmp_path):
    table = summarise(synthetic_trials(), experiment="e")
    fig = draw(
        table, tmp_path, title="My title", algorithms=["ssp", "adassp", "ridge", "trivial"], cap=100
    )
    labels = legend_labels(fig)
    assert labels[:4] == [label("ssp"), label("adassp"), label("ridge"), label("trivial")]
    assert "outside the calibration's validity" in labels
    assert "band: interquartile range" in labels
    assert "bars: bootstrap CI of the median" in labels
    assert "some trials failed" not in labels
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["d1 (n=1503, d=5)", "d2 (n=1030, d=8)"]
    assert fig.get_suptitle() == "My title"
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_ylabel() == f"median {SCALE_LABEL}"
    # references have no band: one band per private line only
    assert len([c for c in ax.collections if type(c).__name__ == "FillBetweenPolyCollection"]) == 2
    # colours and styles from the registry
    by_label = dict(zip(legend_labels(fig), fig.legends[0].legend_handles, strict=True))
    for name in ("ridge", "trivial", "adassp", "ssp"):
        style = ALGORITHMS[name].style
        assert by_label[label(name)].get_color() == style.color
        assert by_label[label(name)].get_linestyle() == style.linestyle
    # the median is plotted
    line = next(
        x
        for x in ax.lines
        if x.get_label()
        and x.get_color() == ALGORITHMS["adassp"].style.color
        and len(x.get_xdata()) == 3
    )
    rows = table[(table["dataset"] == "d1") & (table["algorithm"] == "adassp")]
    np.testing.assert_allclose(line.get_ydata(), rows["mse_median"])


def test_validity_markers_follow_the_table_column(tmp_path):
    frame = synthetic_trials(datasets=("d1",))
    table = summarise(frame, experiment="e")
    fig = draw(table, tmp_path, cap=None)
    ax = fig.axes[0]
    circles = [x for x in ax.lines if x.get_marker() == "o" and x.get_linestyle() == "None"]
    marked = sorted(float(e) for c in circles for e in c.get_xdata())
    flagged = table.loc[table["outside_validity"], "epsilon"]
    assert len(marked) == len(flagged) and marked == pytest.approx(sorted(flagged), rel=0.1)
    table["outside_validity"] = False
    fig = draw(table, tmp_path, cap=None)
    assert "outside the calibration's validity" not in legend_labels(fig)


def test_plot_mean_when_asked(tmp_path):
    table = summarise(synthetic_trials(datasets=("d1",)), experiment="e")
    fig = draw(table, tmp_path, statistic="mean", level=0.95)
    assert fig.axes[0].get_ylabel() == f"mean {SCALE_LABEL}"
    assert "bars: 95% bootstrap CI of the mean" in legend_labels(fig)
    ys = [y for x in fig.axes[0].lines for y in np.asarray(x.get_ydata(), float)]
    rows = table[table["algorithm"] == "adassp"]
    for value in rows["mse_mean"]:
        assert np.isclose(ys, value, rtol=1e-12).any()
    with pytest.raises(DPRegError, match="statistic"):
        draw(table, tmp_path, statistic="mode")


def test_off_scale_points_become_edge_markers_with_a_count(tmp_path):
    frame = synthetic_trials(datasets=("d1", "d2"))
    # ssp explodes on d1 at the two smallest epsilons: 1e4 x the trivial error
    boom = (frame["dataset"] == "d1") & (frame["algorithm"] == "ssp") & (frame["epsilon"] < 5)
    frame.loc[boom, "mse"] = 1e3
    # and stays below 10x trivial (0.1) on d2
    frame.loc[(frame["dataset"] == "d2") & (frame["algorithm"] == "ssp"), "mse"] *= 0.2
    table = summarise(frame, experiment="e")
    fig = draw(table, tmp_path, cap=10.0)
    ax1, ax2 = fig.axes[0], fig.axes[1]
    trivial = table.loc[
        (table["dataset"] == "d1") & (table["algorithm"] == "trivial"), "mse_median"
    ]
    top = 10.0 * trivial.max()
    assert ax1.get_ylim()[1] == pytest.approx(top)
    assert ax1.get_title().endswith("▲ 2 off scale")
    assert "off scale" not in ax2.get_title()
    edge = [x for x in ax1.lines if x.get_marker() == "^"]
    assert len(edge) == 1 and list(edge[0].get_ydata()) == pytest.approx([top, top])
    assert not edge[0].get_clip_on()
    assert "▲ off scale (> 10× trivial)" in legend_labels(fig)
    # the other lines keep a readable range: the axis spans less than 3 decades
    lo, hi = ax1.get_ylim()
    assert hi / lo < 1e3
    # without a cap everything is drawn to scale
    fig = draw(table, tmp_path, cap=None)
    assert fig.axes[0].get_ylim()[1] > 1e3
    assert not [x for x in fig.axes[0].lines if x.get_marker() == "^"]


def test_plot_several_variants_labels(tmp_path):
    frame = synthetic_trials(variants=("a", "b"))
    # ridge differs between the variants; trivial does not
    frame.loc[(frame["algorithm"] == "ridge") & (frame["variant"] == "b"), "mse"] *= 1.5
    table = summarise(frame, experiment="e")
    fig = draw(
        table, tmp_path, variants=["b", "a"], algorithms=["adassp", "ssp", "ridge", "trivial"]
    )
    labels = legend_labels(fig)
    assert labels[:7] == [
        f"{label('adassp')} · b",
        f"{label('adassp')} · a",
        f"{label('ssp')} · b",
        f"{label('ssp')} · a",
        f"{label('ridge')} · b",
        f"{label('ridge')} · a",
        f"{label('trivial')} (every variant)",
    ]
    handles = dict(zip(labels, fig.legends[0].legend_handles, strict=True))
    # per-variant curves keep the registry's colour, line style and marker; the
    # marker fill tells the variants apart (readable in greyscale)
    for name in ("ridge", "adassp", "ssp"):
        hb, ha = handles[f"{label(name)} · b"], handles[f"{label(name)} · a"]
        style = ALGORITHMS[name].style
        for h in (hb, ha):
            assert h.get_linestyle() == style.linestyle and h.get_marker() == style.marker
        assert hb.get_color() == ha.get_color()
        assert hb.get_fillstyle() != ha.get_fillstyle()
    assert fig.get_suptitle() == "e"


def test_one_algorithm_across_variants_gets_distinct_colours(tmp_path):
    frame = synthetic_trials(datasets=("d1",), variants=("a", "b", "c"))
    frame = frame[frame["algorithm"].isin(["adassp", "trivial"])]
    fig = draw(summarise(frame, experiment="e"), tmp_path)
    handles = dict(zip(legend_labels(fig), fig.legends[0].legend_handles, strict=True))
    colours = {str(handles[f"{label('adassp')} · {v}"].get_color()) for v in "abc"}
    assert len(colours) == 3


def test_per_variant_references_take_the_variant_colour(tmp_path):
    frame = synthetic_trials(datasets=("d1",), variants=("a", "b"))
    frame = frame[frame["algorithm"].isin(["adassp", "ridge"])].copy()
    frame.loc[(frame["algorithm"] == "ridge") & (frame["variant"] == "b"), "mse"] *= 1.5
    fig = draw(summarise(frame, experiment="e"), tmp_path)
    handles = dict(zip(legend_labels(fig), fig.legends[0].legend_handles, strict=True))
    for v in "ab":
        ridge = handles[f"{label('ridge')} · {v}"]
        assert ridge.get_color() == handles[f"{label('adassp')} · {v}"].get_color()
        assert ridge.get_linestyle() == ALGORITHMS["ridge"].style.linestyle


def test_peers_title_names_diffprivlib(tmp_path):
    frame = synthetic_trials(datasets=("d1",))
    peer = frame[frame["algorithm"] == "adassp"].assign(algorithm="diffprivlib")
    table = summarise(pd.concat([frame, peer]), experiment="e")
    fig = draw(table, tmp_path, title="AdaSSP vs the functional mechanism")
    assert fig.get_suptitle() == "AdaSSP vs the functional mechanism (and diffprivlib)"
    assert "diffprivlib LinearRegression" in legend_labels(fig)
    fig = draw(table[table["algorithm"] != "diffprivlib"], tmp_path, title="AdaSSP vs X")
    assert fig.get_suptitle() == "AdaSSP vs X"


def test_plot_marks_failures(tmp_path):
    frame = synthetic_trials(datasets=("d1",))
    hit = (frame["algorithm"] == "ssp") & (frame["epsilon"] == 0.1)
    frame.loc[hit & (frame["repeat"] == 0), ["mse", "r2"]] = math.nan
    frame.loc[hit & (frame["repeat"] == 0), "failed"] = True
    table = summarise(frame, experiment="e")
    fig = draw(table, tmp_path)
    assert "some trials failed" in legend_labels(fig)
    assert [ax.get_title()[:16] for ax in fig.axes if ax.get_visible()] == ["d1 (n=1503, d=5)"]
    crosses = [x for x in fig.axes[0].lines if x.get_marker() == "x"]
    assert [float(e) for c in crosses for e in c.get_xdata()] == pytest.approx([0.1], rel=0.1)


def test_points_without_a_finite_error_sit_at_the_panel_foot(tmp_path):
    """No value to plot: the cross is drawn inside the panel's foot, never outside it."""
    frame = synthetic_trials(datasets=("d1",))
    hit = (frame["algorithm"] == "ssp") & (frame["epsilon"] == 0.1)
    frame.loc[hit, ["mse", "r2"]] = math.nan
    frame.loc[hit, "failed"] = True
    fig = draw(summarise(frame, experiment="e"), tmp_path)
    assert "× at the panel's foot: no trial with a finite error" in legend_labels(fig)
    ax = fig.axes[0]
    crosses = [x for x in ax.lines if x.get_marker() == "x"]
    assert len(crosses) == 1
    x, y = crosses[0].get_xydata()[0]
    assert x == pytest.approx(0.1, rel=0.1)  # lines are dodged a little along ε
    # axes coordinates: inside the panel, just above its bottom edge
    display = crosses[0].get_transform().transform((x, y))
    ax_y = ax.transAxes.inverted().transform(display)[1]
    assert 0.0 < ax_y < 0.1


def test_plot_rejects_empty_or_incomplete_tables(tmp_path):
    table = summarise(synthetic_trials(), experiment="e")
    kw = dict(
        experiment="e", dataset_info=INFO, out_png=tmp_path / "f.png", out_pdf=tmp_path / "f.pdf"
    )
    with pytest.raises(DPRegError, match="empty"):
        plot_experiment(table.iloc[:0], **kw)
    with pytest.raises(DPRegError, match="mse_q25"):
        plot_experiment(table.drop(columns=["mse_q25"]), **kw)
    with pytest.raises(DPRegError, match="mse_median"):
        plot_experiment(table.drop(columns=["mse_median"]), **kw)


@pytest.mark.parametrize(
    ("count", "grid"),
    [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (2, 2)), (5, (2, 3)), (7, (3, 3))],
)
def test_panel_grid(count, grid):
    assert panel_grid(count) == grid


# --------------------------------------------------------------------------
# one module owns the tables; atomic writers
# --------------------------------------------------------------------------
def test_trial_columns_come_from_tables():
    from dpreg.engine import sweep
    from dpreg.io import tables

    assert sweep.TRIAL_COLUMNS is tables.TRIAL_COLUMNS
    assert set(tables.TRIAL_COLUMNS) == set(tables.TRIAL_DTYPES)
    assert set(tables.SUMMARY_COLUMNS) <= set(tables.SUMMARY_DTYPES)
    assert set(tables.CLAIM_COLUMNS) == set(tables.CLAIM_DTYPES)
    assert TABLE_COLUMNS == tables.SUMMARY_COLUMNS


@pytest.mark.parametrize("writer", ["table", "trials", "trials-parquet", "json"])
def test_atomic_writers_leave_nothing_on_failure(tmp_path, monkeypatch, writer):
    import os

    from dpreg.io import tables, trials

    table = summarise(synthetic_trials(datasets=("d1",)), experiment="e")
    name, write = {
        "table": ("t.csv", lambda p: tables.write_table(table, p)),
        "trials": ("t.csv.gz", lambda p: trials.write_trials(synthetic_trials(), p)),
        "trials-parquet": ("t.parquet", lambda p: trials.write_trials(synthetic_trials(), p)),
        "json": ("t.json", lambda p: tables.write_json({"a": 1}, p)),
    }[writer]
    path = tmp_path / name
    path.write_bytes(b"old complete file")

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write(path)
    assert path.read_bytes() == b"old complete file"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    monkeypatch.undo()
    write(path)
    assert path.read_bytes() != b"old complete file"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, f"{name}.sha256"]


def test_parquet_trials_round_trip_and_selection(tmp_path):
    from dpreg.io.trials import read_trials, write_trials

    frame = synthetic_trials(variants=("a", "b"))
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_trials(frame, a)
    write_trials(frame.copy(), b)
    assert a.read_bytes() == b.read_bytes()
    back = read_trials([a])
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert back["dataset"].map(type).eq(str).all()
    sel = read_trials([a], variants=["b"], algorithms=["ssp", "ridge"], repeats=1)
    assert set(sel["variant"]) == {"b"} and set(sel["algorithm"]) == {"ssp", "ridge"}
    assert (sel["repeat"] < 1).all()
    per_alg = read_trials([a], repeats={"ssp": 1})
    assert (per_alg.loc[per_alg["algorithm"] == "ssp", "repeat"] < 1).all()
    assert per_alg.loc[per_alg["algorithm"] == "adassp", "repeat"].max() == 1


def test_summary_intervals_bracket_the_statistics():
    table = summarise(synthetic_trials(), experiment="e", seed=3, resamples=300)
    private = table[table["algorithm"].isin(["adassp", "ssp"])]
    for stat in ("mean", "median"):
        assert (private[f"mse_{stat}_lo"] <= private[f"mse_{stat}"]).all()
        assert (private[f"mse_{stat}"] <= private[f"mse_{stat}_hi"]).all()
        assert (private[f"mse_{stat}_hi"] > private[f"mse_{stat}_lo"]).all()
    again = summarise(synthetic_trials(), experiment="e", seed=3, resamples=300)
    pd.testing.assert_frame_equal(table, again)
    other = summarise(synthetic_trials(), experiment="e", seed=4, resamples=300)
    assert not np.allclose(other["mse_mean_lo"], table["mse_mean_lo"], equal_nan=True)
