"""The run planner (dpreg.engine.plan) on small hand-made configs, without Snakemake."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.engine.plan import PRIORITY, SWEEP_PRIORITY_BASE, Plan, cv_design, shard_of

REPO = Path(__file__).resolve().parents[2]


def make_config(**experiments: dict[str, Any]) -> dict[str, Any]:
    """A validated-looking config: three datasets, two variants, the given experiments."""
    return {
        "seed": 7,
        "delta": 1e-6,
        "rho": 0.05,
        "xtx_offset": 1.0,
        "epsilons": [0.1, 1.0],
        "cv": {"folds": 3, "repeats": 2},
        "mirror": "no-mirror-here",
        "memory_budget_mb": 512,
        "datasets": {"a": {"uci_id": 1}, "b": {"uci_id": 2}, "c": {"uci_id": 3}},
        "variants": {"v1": {"scale": "maxnorm"}, "v2": {"scale": "rownorm"}},
        "experiments": experiments
        or {"e1": {"algorithms": ["adassp", "trivial"], "variants": ["v1"], "datasets": "all"}},
    }


def exp(algorithms, variants=("v1",), datasets="all", **extra) -> dict[str, Any]:
    ds = datasets if datasets == "all" else list(datasets)
    return {"algorithms": list(algorithms), "variants": list(variants), "datasets": ds, **extra}


def _diffprivlib_installed(monkeypatch, installed: bool) -> None:
    """The diffprivlib entry, its package reported as installed or not (its ``requires``)."""
    entry = ALGORITHMS["diffprivlib"]
    needs = ("numpy",) if installed else ("dpreg_no_such_package",)
    monkeypatch.setitem(ALGORITHMS, "diffprivlib", dataclasses.replace(entry, requires=needs))


@pytest.fixture
def no_diffprivlib(monkeypatch):
    """diffprivlib reported as not installed."""
    _diffprivlib_installed(monkeypatch, False)


@pytest.fixture
def with_diffprivlib(monkeypatch):
    """diffprivlib reported as installed (whether it is or not)."""
    _diffprivlib_installed(monkeypatch, True)


# --------------------------------------------------------------------------
# the plan is built once, from a copy
# --------------------------------------------------------------------------
def test_input_config_is_left_unchanged(no_diffprivlib):
    cfg = make_config(e1=exp(["adassp", "diffprivlib"], repeats={"diffprivlib": 1}))
    before = copy.deepcopy(cfg)
    plan = Plan.from_config(cfg)
    assert cfg == before
    assert plan.config is not cfg
    assert plan.algorithms("e1") == ["adassp"]  # dropped in the plan's copy only
    assert cfg["experiments"]["e1"]["algorithms"] == ["adassp", "diffprivlib"]


def test_plan_is_frozen_and_plans_do_not_share_state(no_diffprivlib):
    skipping = Plan.from_config(make_config(e1=exp(["adassp", "diffprivlib"])))
    other = Plan.from_config(make_config(e1=exp(["adassp"])))
    with pytest.raises(dataclasses.FrozenInstanceError):
        skipping.experiments = ("x",)  # type: ignore[misc]
    assert skipping.skipped == {"e1": {"diffprivlib": "pip install 'dpreg[peers]'"}}
    assert other.skipped == {}
    assert other.figure_notes("e1") == []


def test_shipped_configs_plan_without_changes():
    for path in (REPO / ".test" / "config" / "config.yaml", REPO / "config" / "config.yaml"):
        cfg = yaml.safe_load(path.read_text())
        before = copy.deepcopy(cfg)
        plan = Plan.from_config(cfg)
        assert cfg == before
        assert plan.experiments == tuple(cfg["experiments"])


# --------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------
def test_run_key_selects_and_orders_the_experiments():
    cfg = make_config(e1=exp(["adassp"]), e2=exp(["ridge"]), e3=exp(["trivial"]))
    assert Plan.from_config(cfg).experiments == ("e1", "e2", "e3")
    cfg["run"] = ["e3", "e1"]
    assert Plan.from_config(cfg).experiments == ("e3", "e1")
    cfg["run"] = []
    assert Plan.from_config(cfg).experiments == ("e1", "e2", "e3")


def test_experiment_and_used_datasets_keep_config_order():
    cfg = make_config(
        e1=exp(["adassp"], datasets=["c", "a"]),
        e2=exp(["ridge"], datasets="all"),
        e3=exp(["trivial"], datasets=["c"]),
    )
    cfg["datasets"] = {name: cfg["datasets"][name] for name in ("c", "a", "b")}
    plan = Plan.from_config(cfg)
    assert plan.datasets == ["c", "a", "b"]
    assert plan.experiment_datasets("e1") == ["c", "a"]  # as the experiment lists them
    assert plan.experiment_datasets("e2") == ["c", "a", "b"]
    assert plan.used_datasets() == ["c", "a", "b"]
    cfg["run"] = ["e3", "e1"]
    assert Plan.from_config(cfg).used_datasets() == ["c", "a"]  # config order, b unused


def test_claim_experiments_are_the_run_experiments_with_claims():
    claims = [{"id": "x", "a": {"algorithm": "ridge"}, "b": {"algorithm": "trivial"}}]
    cfg = make_config(
        e1=exp(["ridge", "trivial"], claims=claims),
        e2=exp(["adassp"]),
        e3=exp(["ridge", "trivial"], claims=claims),
    )
    assert Plan.from_config(cfg).claim_experiments() == ["e1", "e3"]
    cfg["run"] = ["e2", "e3"]
    assert Plan.from_config(cfg).claim_experiments() == ["e3"]


# --------------------------------------------------------------------------
# shards and sweep plans
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("algorithm", "shard"),
    [("adassp", "stats"), ("ssp", "stats"), ("trivial", "stats"), ("tukey-em", "rows")]
    + [("dp-gd", "rows"), ("diffprivlib", "rows")],
)
def test_shard_of(algorithm, shard):
    assert shard_of(algorithm) == shard


def test_shard_of_an_unknown_algorithm_names_it():
    with pytest.raises(DPRegError, match="adasp"):
        shard_of("adasp")


def test_dataset_shards_in_first_use_order_and_run_shards_sorted():
    cfg = make_config(
        e1=exp(["tukey-em", "adassp"], datasets=["a"]),
        e2=exp(["adassp"], datasets=["b"]),
    )
    plan = Plan.from_config(cfg)
    assert plan.dataset_shards("a") == ["rows", "stats"]
    assert plan.dataset_shards("b") == ["stats"]
    assert plan.dataset_shards("c") == []
    assert plan.shards == ["rows", "stats"]
    cfg["run"] = ["e2"]
    assert Plan.from_config(cfg).shards == ["stats"]


def test_sweep_plan_sweeps_each_pair_once_with_the_most_repeats():
    cfg = make_config(
        e1=exp(["adassp", "tukey-em"], variants=["v1"], repeats={"tukey-em": 5}),
        e2=exp(["adassp", "ridge"], variants=["v1", "v2"], datasets=["b"], repeats=4),
        e3=exp(["tukey-em"], variants=["v1", "v2"], datasets=["a"], repeats=1),
    )
    plan = Plan.from_config(cfg)
    assert plan.sweep_plan("a", "stats") == {"v1": {"adassp": 2}}
    # (v1, tukey-em) on a: 5 repeats for e1, 1 for e3 -> swept once, with 5
    assert plan.sweep_plan("a", "rows") == {"v1": {"tukey-em": 5}, "v2": {"tukey-em": 1}}
    assert plan.sweep_plan("b", "stats") == {
        "v1": {"adassp": 4, "ridge": 4},
        "v2": {"adassp": 4, "ridge": 4},
    }
    assert plan.sweep_plan("b", "rows") == {"v1": {"tukey-em": 5}}
    cfg["run"] = ["e1"]
    assert Plan.from_config(cfg).sweep_plan("b", "stats") == {"v1": {"adassp": 2}}


# --------------------------------------------------------------------------
# repeats
# --------------------------------------------------------------------------
def test_repeats_precedence():
    cfg = make_config(
        default=exp(["adassp", "ridge"]),
        number=exp(["adassp", "ridge"], repeats=7),
        mapping=exp(["adassp", "ridge", "tukey-em"], repeats={"tukey-em": 1, "ridge": 9}),
    )
    plan = Plan.from_config(cfg)
    assert plan.repeats("default") == {"adassp": 2, "ridge": 2}  # cv.repeats
    assert plan.repeats("number") == {"adassp": 7, "ridge": 7}  # the experiment's number
    # per algorithm where named, cv.repeats (not some other experiment's) elsewhere
    assert plan.repeats("mapping") == {"adassp": 2, "ridge": 9, "tukey-em": 1}
    assert list(plan.repeats("mapping")) == ["adassp", "ridge", "tukey-em"]  # algorithm order


def test_repeats_naming_a_foreign_algorithm_stops_the_plan():
    cfg = make_config(e1=exp(["adassp", "ridge"], repeats={"ssp": 1}), e2=exp(["trivial"]))
    with pytest.raises(DPRegError) as info:
        Plan.from_config(cfg)
    assert str(info.value) == (
        "config: experiments: e1: repeats names 'ssp', which is not one of its algorithms "
        "(adassp, ridge)"
    )
    cfg["run"] = ["e2"]  # checked for the experiments of the run only
    plan = Plan.from_config(cfg)
    with pytest.raises(DPRegError, match="repeats names 'ssp'"):
        plan.repeats("e1")


def test_repeats_may_name_a_skipped_optional_algorithm(no_diffprivlib):
    cfg = make_config(e1=exp(["adassp", "diffprivlib"], repeats={"diffprivlib": 1, "adassp": 3}))
    assert Plan.from_config(cfg).repeats("e1") == {"adassp": 3}


# --------------------------------------------------------------------------
# optional algorithms
# --------------------------------------------------------------------------
def test_missing_optional_algorithm_is_skipped_with_a_note(no_diffprivlib):
    cfg = make_config(
        e1=exp(["adassp", "diffprivlib", "ridge"]),
        e2=exp(["trivial"]),
    )
    plan = Plan.from_config(cfg)
    assert plan.algorithms("e1") == ["adassp", "ridge"]
    assert plan.skipped == {"e1": {"diffprivlib": "pip install 'dpreg[peers]'"}}
    assert plan.warnings() == [
        "config: experiments: e1: algorithm 'diffprivlib' is not installed and is skipped "
        "(install it with: pip install 'dpreg[peers]')"
    ]
    assert plan.shards == ["stats"]  # no "rows" job for a peer that does not run
    note = plan.plot_kwargs("e1")["note"]
    assert note == "diffprivlib not installed (pip install 'dpreg[peers]')"
    assert plan.plot_kwargs("e2")["note"] is None
    assert plan.trial_selection("e1")["algorithms"] == ["adassp", "ridge"]
    # provenance records the experiments as they ran
    assert plan.run_config()["experiments"]["e1"]["algorithms"] == ["adassp", "ridge"]


def test_installed_optional_algorithm_runs_with_the_chaotic_note(with_diffprivlib):
    cfg = make_config(e1=exp(["adassp", "diffprivlib"]))
    plan = Plan.from_config(cfg)
    assert ALGORITHMS["diffprivlib"].note == "numerically chaotic fits, differ across machines"
    assert plan.algorithms("e1") == ["adassp", "diffprivlib"]
    assert plan.skipped == {} and plan.warnings() == []
    assert plan.shards == ["rows", "stats"]
    assert plan.sweep_plan("a", "rows") == {"v1": {"diffprivlib": 2}}
    assert plan.plot_kwargs("e1")["note"] == (
        "diffprivlib: numerically chaotic fits, differ across machines"
    )


def test_experiment_with_only_missing_optional_algorithms_stops(no_diffprivlib):
    cfg = make_config(e1=exp(["adassp"]), peers=exp(["diffprivlib"]))
    with pytest.raises(DPRegError) as info:
        Plan.from_config(cfg)
    assert str(info.value) == "config: experiments: peers: none of its algorithms is available"


# --------------------------------------------------------------------------
# unknown names
# --------------------------------------------------------------------------
def _unknown_variant(cfg):
    cfg["experiments"]["e1"]["variants"].append("v9")


def _unknown_dataset(cfg):
    cfg["experiments"]["e1"]["datasets"] = ["a", "bee"]


def _unknown_algorithm(cfg):
    cfg["experiments"]["e1"]["algorithms"].append("adasp")


def _unknown_run(cfg):
    cfg["run"] = ["e1", "e7"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _unknown_variant,
            "config: experiments: e1 names unknown variant 'v9'; known variants: v1, v2",
        ),
        (
            _unknown_dataset,
            "config: experiments: e1 names unknown dataset 'bee'; known datasets: a, b, c",
        ),
        (_unknown_run, "config: run names unknown experiment 'e7'; known experiments: e1"),
    ],
)
def test_unknown_names_stop_with_a_message_naming_them(edit, message):
    cfg = make_config()
    edit(cfg)
    with pytest.raises(DPRegError) as info:
        Plan.from_config(cfg)
    assert str(info.value) == message


@pytest.mark.parametrize("installed", [True, False])
def test_unknown_algorithm_lists_every_known_name(monkeypatch, installed):
    _diffprivlib_installed(monkeypatch, installed)
    cfg = make_config()
    _unknown_algorithm(cfg)
    with pytest.raises(DPRegError) as info:
        Plan.from_config(cfg)
    message = str(info.value)
    assert message.startswith(
        "config: experiments: e1 names unknown algorithm 'adasp'; known algorithms: "
    )
    known = message.split("known algorithms: ")[1].split(", ")
    assert known == sorted(known)
    assert {"adassp", "tukey-em", "diffprivlib"} <= set(known)  # peers listed, installed or not


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------
def test_output_paths_with_and_without_run_key():
    claims = [{"id": "x", "a": {"algorithm": "ridge"}, "b": {"algorithm": "trivial"}}]
    cfg = make_config(e1=exp(["ridge", "trivial"], claims=claims), e2=exp(["adassp"]))
    plan = Plan.from_config(cfg)
    assert plan.run_suffix == ""
    assert plan.trials_dir == "results/trials"
    assert plan.all_outputs() == [
        "results/figures/e1.png",
        "results/figures/e1.pdf",
        "results/tables/e1.csv",
        "results/figures/e2.png",
        "results/figures/e2.pdf",
        "results/tables/e2.csv",
        "results/tables/claims.csv",
        "results/provenance.json",
    ]
    cfg["run"] = ["e2", "e1"]
    plan = Plan.from_config(cfg)
    assert plan.run_suffix == "-e2+e1"
    assert plan.trials_dir == "results/trials-e2+e1"
    assert plan.claims_path == "results/tables/claims-e2+e1.csv"
    assert plan.provenance_path == "results/provenance-e2+e1.json"
    cfg["run"] = ["e2"]
    outputs = Plan.from_config(cfg).all_outputs()  # no claims in the run: no claims file
    assert outputs == [
        "results/figures/e2.png",
        "results/figures/e2.pdf",
        "results/tables/e2.csv",
        "results/provenance-e2.json",
    ]


def test_trial_files_of_experiments_and_claims():
    claims = [{"id": "x", "a": {"algorithm": "ridge"}, "b": {"algorithm": "trivial"}}]
    cfg = make_config(
        e1=exp(["tukey-em", "ridge", "trivial"], datasets=["b", "a"], claims=claims),
        e2=exp(["ridge", "trivial"], datasets=["a", "c"], claims=claims),
    )
    plan = Plan.from_config(cfg)
    assert plan.trial_files("e1") == [
        "results/trials/b/rows.parquet",
        "results/trials/b/stats.parquet",
        "results/trials/a/rows.parquet",
        "results/trials/a/stats.parquet",
    ]
    assert plan.claim_trials() == [*plan.trial_files("e1"), "results/trials/c/stats.parquet"]
    assert plan.claims_files() == {"e1": plan.trial_files("e1"), "e2": plan.trial_files("e2")}
    assert plan.claims_select() == {
        "e1": {"repeats": {"tukey-em": 2, "ridge": 2, "trivial": 2}},
        "e2": {"repeats": {"ridge": 2, "trivial": 2}},
    }


def test_dataset_source_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("b", "r", "n"):
        (tmp_path / "mirror" / name).mkdir(parents=True)
    for name in ("mirror/b/data.csv", "mirror/b/metadata.json", "mirror/SHA256SUMS", "x.csv"):
        (tmp_path / name).write_text("1\n")
    (tmp_path / "mirror/r/data.csv").write_text("1\n")
    (tmp_path / "mirror/n/data.csv").write_text("1\n")  # no metadata.json
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "data.csv").write_text("1\n")
    cfg = make_config()
    cfg["mirror"] = "mirror"
    cfg["datasets"] = {
        "a": {"uci_id": 1},  # not mirrored: a download
        "b": {"uci_id": 2},  # mirrored
        "r": {"uci_id": 2, "refresh": True},  # mirrored, but downloaded again
        "n": {"uci_id": 3},
        "f": {"path": "x.csv"},
        "g": {"path": "folder"},
        "m": {"path": "missing.csv"},
    }
    plan = Plan.from_config(cfg)
    assert plan.dataset_source_files("a") == []
    assert plan.dataset_source_files("b") == [
        str(Path("mirror/b/data.csv")),
        str(Path("mirror/b/metadata.json")),
        str(Path("mirror/SHA256SUMS")),
    ]
    assert plan.dataset_source_files("r") == []
    assert plan.dataset_source_files("n") == [
        str(Path("mirror/n/data.csv")),
        str(Path("mirror/SHA256SUMS")),
    ]
    assert plan.dataset_source_files("f") == ["x.csv"]
    assert plan.dataset_source_files("g") == [str(Path("folder/data.csv"))]
    assert plan.dataset_source_files("m") == ["missing.csv"]  # a missing input Snakemake reports


# --------------------------------------------------------------------------
# params
# --------------------------------------------------------------------------
def test_sweep_kwargs_hold_only_what_the_shard_runs():
    cfg = make_config(
        e1=exp(["adassp", "tukey-em"], variants=["v2"]),
        e2=exp(["ridge"], variants=["v1"], datasets=["b"]),
    )
    cfg["algorithm_params"] = {"tukey-em": {"m": 3}, "ridge": {"lam": 1.0}}
    cfg["public_ranges"] = {"a": {"columns": {"x": [0, 1]}}}
    plan = Plan.from_config(cfg)
    kwargs = plan.sweep_kwargs("a", "rows")
    assert kwargs == {
        "dataset": "a",
        "variants": {"v2": {"scale": "rownorm"}},
        "plan": {"v2": {"tukey-em": 2}},
        "epsilons": [0.1, 1.0],
        "delta": 1e-6,
        "folds": 3,
        "partitions": 1,
        "seed": 7,
        "rho": 0.05,
        "xtx_offset": 1.0,
        "memory_budget_mb": 512,
        "algorithm_params": {"tukey-em": {"m": 3}},
        "public_ranges": {"columns": {"x": [0, 1]}},
    }
    kwargs = plan.sweep_kwargs("b", "stats")
    assert kwargs["variants"] == {"v2": {"scale": "rownorm"}, "v1": {"scale": "maxnorm"}}
    assert kwargs["algorithm_params"] == {"ridge": {"lam": 1.0}}
    assert kwargs["public_ranges"] is None


def test_plot_kwargs_and_notes(no_diffprivlib):
    cfg = make_config(
        e1=exp(
            ["adassp", "tukey-em", "diffprivlib", "ridge"],
            variants=["v2", "v1"],
            datasets=["c", "a"],
            repeats={"tukey-em": 5, "ridge": 1},
            title="Title",
            statistic="mean",
            plot_cap=3,
        ),
        e2=exp(["adassp"]),
    )
    cfg["bootstrap"] = {"level": 0.9}
    plan = Plan.from_config(cfg)
    assert plan.plot_kwargs("e1") == {
        "experiment": "e1",
        "title": "Title",
        "variants": ["v2", "v1"],
        "algorithms": ["adassp", "tukey-em", "ridge"],
        "datasets": ["c", "a"],
        "note": "diffprivlib not installed (pip install 'dpreg[peers]'); "
        "repeats per fold: tukey-em 5, ridge 1 (others 2)",
        "statistic": "mean",
        "level": 0.9,
        "cap": 3,
    }
    defaults = plan.plot_kwargs("e2")
    assert (defaults["title"], defaults["statistic"], defaults["cap"]) == ("e2", "median", 10)

    del cfg["bootstrap"]
    assert Plan.from_config(cfg).plot_kwargs("e2")["level"] == 0.95
    assert plan.bootstrap_params() == {"seed": 7, "bootstrap": {"level": 0.9}}


# --------------------------------------------------------------------------
# priorities and resources
# --------------------------------------------------------------------------
def _sized_datasets(tmp_path: Path, sizes: dict[str, int]) -> dict[str, Any]:
    datasets: dict[str, Any] = {}
    for name, size in sizes.items():
        (tmp_path / f"{name}.csv").write_text("x" * size)
        datasets[name] = {"path": f"{name}.csv"}
    return datasets


def test_priorities_order_the_jobs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = make_config(e1=exp(["adassp", "tukey-em"]))
    cfg["datasets"] = _sized_datasets(tmp_path, {"small": 10, "large": 1000, "mid": 100})
    cfg["datasets"]["download"] = {"uci_id": 9}  # no local file: size 0
    plan = Plan.from_config(cfg)
    assert plan.sweep_ranks == {"download": 0, "small": 1, "mid": 2, "large": 3}
    prio = {(ds, s): plan.sweep_priority(ds, s) for ds in plan.datasets for s in ("stats", "rows")}
    # stats shards before rows shards, larger datasets first within a shard
    order = sorted(prio, key=prio.__getitem__, reverse=True)
    assert order == [
        ("large", "stats"),
        ("mid", "stats"),
        ("small", "stats"),
        ("download", "stats"),
        ("large", "rows"),
        ("mid", "rows"),
        ("small", "rows"),
        ("download", "rows"),
    ]
    # between the summaries and the dataset preparations
    assert min(prio.values()) == SWEEP_PRIORITY_BASE
    assert max(prio.values()) < SWEEP_PRIORITY_BASE + 2 * len(plan.datasets)
    assert PRIORITY["prepare_dataset"] > max(prio.values())
    assert min(prio.values()) > PRIORITY["write_claims"] > PRIORITY["summarise_experiment"]


def test_sweep_ranks_cover_the_run_datasets_and_are_read_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = make_config(
        e1=exp(["adassp"], datasets=["big", "tiny"]), e2=exp(["ridge"], datasets=["x"])
    )
    cfg["datasets"] = _sized_datasets(tmp_path, {"big": 500, "tiny": 5, "x": 50})
    cfg["run"] = ["e1"]
    plan = Plan.from_config(cfg)
    assert plan.sweep_ranks == {"tiny": 0, "big": 1}
    assert plan.sweep_priority("big", "stats") == SWEEP_PRIORITY_BASE + 2 + 1
    assert plan.sweep_priority("x", "stats") == SWEEP_PRIORITY_BASE + 2  # not in the run
    (tmp_path / "tiny.csv").write_text("x" * 5000)  # grows after the first look
    assert plan.sweep_ranks == {"tiny": 0, "big": 1}
    assert Plan.from_config(cfg).sweep_ranks == {"big": 0, "tiny": 1}  # a new plan looks again


def test_memory_grows_with_the_attempt():
    cfg = make_config()
    assert [Plan.from_config(cfg).sweep_mem_mb(a) for a in (1, 2, 3)] == [1536, 3072, 4608]
    cfg["memory_budget_mb"] = None
    assert Plan.from_config(cfg).sweep_mem_mb() == 2048 + 1024
    cfg["memory_budget_mb"] = 10**6
    assert Plan.from_config(cfg).sweep_mem_mb(2) == (65536 + 1024) * 2


def test_runtime_grows_with_trials_and_attempt():
    cfg = make_config(e1=exp(["adassp", "ridge"], variants=["v1", "v2"]))
    plan = Plan.from_config(cfg)
    assert [plan.sweep_runtime("a", "stats", a) for a in (1, 2)] == [30, 60]
    assert plan.sweep_runtime("a", "rows") == 30  # no trials
    # 2 variants x 2 algorithms x 2500 repeats x 2 epsilons x 3 folds = 60,000 trials
    cfg["experiments"]["e1"]["repeats"] = 2500
    plan = Plan.from_config(cfg)
    assert plan.sweep_runtime("a", "stats") == 30 + 60_000 // 20_000
    assert plan.sweep_runtime("a", "stats", 3) == (30 + 3) * 3
    # five partitions: five times the trials (300,000)
    cfg["cv"]["partitions"] = 5
    assert Plan.from_config(cfg).sweep_runtime("a", "stats") == 30 + 300_000 // 20_000


def test_partitions_reach_the_sweep_and_the_notes():
    """cv.partitions goes to every sweep job (default 1) and, above 1, into the
    figure's note in the one wording of cv_design (the caption's too)."""
    cfg = make_config(e1=exp(["adassp", "tukey-em"], repeats={"tukey-em": 1}))
    plan = Plan.from_config(cfg)
    assert plan.sweep_kwargs("a", "stats")["partitions"] == 1
    assert cv_design(cfg["cv"]) == "3 folds"
    assert plan.figure_notes("e1") == ["repeats per fold: tukey-em 1 (others 2)"]
    cfg["cv"]["partitions"] = 5
    plan = Plan.from_config(cfg)
    assert plan.sweep_kwargs("a", "rows")["partitions"] == 5
    assert cv_design(cfg["cv"]) == "5 partitions × 3 folds"
    assert plan.figure_notes("e1") == [
        "trials per point: 5 partitions × 3 folds × 2 repeats",
        "repeats per fold: tukey-em 1 (others 2)",
    ]


# --------------------------------------------------------------------------
# nothing accepted in silence: parameters and claims that would do nothing
# --------------------------------------------------------------------------
def test_algorithm_params_for_an_unknown_algorithm_stop_the_plan():
    cfg = make_config()
    cfg["algorithm_params"] = {"tukey-emm": {"m": 400}}
    with pytest.raises(DPRegError) as err:
        Plan.from_config(cfg)
    msg = str(err.value)
    assert "algorithm_params names unknown algorithm 'tukey-emm'" in msg
    assert "did you mean 'tukey-em'?" in msg


def test_algorithm_params_for_a_known_algorithm_are_accepted():
    cfg = make_config()
    cfg["algorithm_params"] = {"tukey-em": {"m": 400}}
    Plan.from_config(cfg)


def test_a_claim_naming_a_dataset_its_experiment_does_not_run_stops_the_plan():
    claim = {"id": "c1", "a": {"algorithm": "adassp"}, "b": {"algorithm": "trivial"}}
    cfg = make_config(
        e1=exp(["adassp", "trivial"], datasets=["a", "b"], claims=[{**claim, "datasets": ["c"]}])
    )
    with pytest.raises(DPRegError, match=r"claims: c1 names dataset 'c', which experiment 'e1'"):
        Plan.from_config(cfg)


def test_a_claim_whose_epsilon_range_holds_no_grid_point_stops_the_plan():
    claim = {"id": "c2", "a": {"algorithm": "adassp"}, "epsilons": [2, 5]}
    cfg = make_config(e1=exp(["adassp", "trivial"], claims=[claim]))  # grid: 0.1, 1
    with pytest.raises(DPRegError, match=r"claims: c2: epsilons \[2, 5\] hold no epsilon"):
        Plan.from_config(cfg)


def test_a_claim_within_its_experiment_is_accepted():
    claim = {"id": "c3", "a": {"algorithm": "adassp"}, "datasets": ["a"], "epsilons": [1, 1]}
    Plan.from_config(make_config(e1=exp(["adassp", "trivial"], claims=[claim])))


def test_a_variant_with_exact_statistics_is_noted_as_not_private(no_diffprivlib):
    cfg = make_config(e1=exp(["adassp"], variants=["v1", "pr"]))
    cfg["variants"]["pr"] = {"scale": "maxnorm", "private_stats": {"exact": True}}
    note = Plan.from_config(cfg).plot_kwargs("e1")["note"]
    assert note == "pr: public ranges with exact statistics (not private)"
