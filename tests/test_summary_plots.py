"""dpreg.summary and dpreg.plots on synthetic trial tables."""

from __future__ import annotations

import gzip
import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpreg import DPRegError
from dpreg.plots import panel_grid, plot_experiment
from dpreg.summary import (
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


def test_failed_trials_counted_and_excluded():
    frame = pd.DataFrame(
        [
            trial(repeat=0, mse=1.0),
            trial(repeat=1, mse=3.0),
            trial(repeat=2, mse=math.nan, r2=math.nan, failed=True),
            # not flagged, but a non-finite error is a failure too
            trial(repeat=3, mse=math.inf, r2=-math.inf),
        ]
    )
    row = summarise(frame, experiment="e").iloc[0]
    assert row["trials"] == 4
    assert row["failed"] == 2
    assert row["mse_mean"] == pytest.approx(2.0)
    assert row["mse_median"] == pytest.approx(2.0)
    assert row["r2_mean"] == pytest.approx(0.0)


def test_all_failed_row_is_kept_with_nan_statistics():
    frame = pd.DataFrame(
        [trial(repeat=i, mse=math.nan, r2=math.nan, failed=True) for i in range(3)]
        + [trial(epsilon=2.0, mse=1.0)]
    )
    table = summarise(frame, experiment="e")
    assert len(table) == 2
    bad = table[table["epsilon"] == 1.0].iloc[0]
    assert bad["trials"] == 3 and bad["failed"] == 3
    assert np.isnan(
        bad[["mse_mean", "mse_sd", "mse_median", "mse_q25", "mse_q75"]].astype(float)
    ).all()
    single = table[table["epsilon"] == 2.0].iloc[0]
    assert single["mse_mean"] == 1.0 and np.isnan(single["mse_sd"])


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
    num = ["epsilon", "mse_mean", "mse_sd", "mse_q25", "mse_q75", "r2_mean"]
    np.testing.assert_allclose(back[num].to_numpy(float), table[num].to_numpy(float), rtol=1e-13)
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


def test_plot_one_variant_labels_titles_and_markers(tmp_path):
    table = summarise(synthetic_trials(), experiment="e")
    fig = plot_experiment(
        table,
        experiment="e",
        title="My title",
        dataset_info=INFO,
        out_png=tmp_path / "f.png",
        out_pdf=tmp_path / "f.pdf",
        algorithms=["ssp", "adassp", "ridge", "trivial"],
    )
    labels = legend_labels(fig)
    assert labels[:4] == ["ssp", "adassp", "ridge", "trivial"]
    assert "outside classical-Gaussian validity" in labels
    assert "band: interquartile range" in labels
    assert "some trials failed" not in labels
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["d1 (n=1503, d=5)", "d2 (n=1030, d=8)"]
    assert fig.get_suptitle() == "My title"
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    # references have no band: one band per private line only
    assert len(ax.collections) == 2
    # ridge: black dashed; trivial: grey dotted
    by_label = dict(zip(legend_labels(fig), fig.legends[0].legend_handles, strict=True))
    ridge, trivial = by_label["ridge"], by_label["trivial"]
    assert ridge.get_color() == "black" and ridge.get_linestyle() == "--"
    assert trivial.get_color() == "0.5" and trivial.get_linestyle() == ":"


def test_plot_several_variants_labels(tmp_path):
    frame = synthetic_trials(variants=("a", "b"))
    # ridge differs between the variants; trivial does not
    frame.loc[(frame["algorithm"] == "ridge") & (frame["variant"] == "b"), "mse"] *= 1.5
    table = summarise(frame, experiment="e")
    fig = plot_experiment(
        table,
        experiment="e",
        dataset_info=INFO,
        out_png=tmp_path / "f.png",
        out_pdf=tmp_path / "f.pdf",
        variants=["b", "a"],
        algorithms=["adassp", "ssp", "ridge", "trivial"],
    )
    labels = legend_labels(fig)
    assert labels[:7] == [
        "adassp · b",
        "adassp · a",
        "ssp · b",
        "ssp · a",
        "ridge · b",
        "ridge · a",
        "trivial (every variant)",
    ]
    assert fig.get_suptitle() == "e"


def test_plot_marks_failures(tmp_path):
    frame = synthetic_trials(datasets=("d1",))
    hit = (frame["algorithm"] == "ssp") & (frame["epsilon"] == 0.1)
    frame.loc[hit & (frame["repeat"] == 0), ["mse", "r2"]] = math.nan
    frame.loc[hit & (frame["repeat"] == 0), "failed"] = True
    table = summarise(frame, experiment="e")
    fig = plot_experiment(
        table,
        experiment="e",
        dataset_info=INFO,
        out_png=tmp_path / "f.png",
        out_pdf=tmp_path / "f.pdf",
    )
    assert "some trials failed" in legend_labels(fig)
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["d1 (n=1503, d=5)"]


def test_plot_rejects_empty_or_incomplete_tables(tmp_path):
    table = summarise(synthetic_trials(), experiment="e")
    kw = dict(
        experiment="e", dataset_info=INFO, out_png=tmp_path / "f.png", out_pdf=tmp_path / "f.pdf"
    )
    with pytest.raises(DPRegError, match="empty"):
        plot_experiment(table.iloc[:0], **kw)
    with pytest.raises(DPRegError, match="mse_q25"):
        plot_experiment(table.drop(columns=["mse_q25"]), **kw)


@pytest.mark.parametrize(
    ("count", "grid"),
    [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (2, 2)), (5, (2, 3)), (7, (3, 3))],
)
def test_panel_grid(count, grid):
    assert panel_grid(count) == grid
