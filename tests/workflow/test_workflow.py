"""The Snakemake workflow, run through its command line on the tiny CI config.

Each run works in a temporary copy laid out like the repository's `.test/`
folder (`<tmp>/run/config/config.yaml` with `mirror: ../resources/mirror`),
so nothing is written into the repository.

The tables of the tiny run are committed under `.test/expected/`; after an
intended change of the numbers, refresh them with

    DPREG_UPDATE_EXPECTED=1 python -m pytest tests/workflow/test_workflow.py
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
TEST_CONFIG = REPO / ".test" / "config" / "config.yaml"
EXPECTED = REPO / ".test" / "expected"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"

#: every test here starts Snakemake (slow): deselect with -m "not workflow"
pytestmark = pytest.mark.workflow

#: files a run must reproduce byte for byte (figures included: same machine)
COMPARED = ("results/tables", "results/trials", "results/figures", "results/provenance.json")


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """`python -m snakemake` on the repository's Snakefile in `workdir`, with `args`."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir)]
    return [*cmd, *args]


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: float = 300):
    """Run `python -m snakemake` on the repository's Snakefile in `workdir`."""
    proc = subprocess.run(
        snakemake_command(workdir, *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=workdir,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def start_snakemake(
    workdir: Path, *args: str, output: bool = False, own_group: bool = True
) -> subprocess.Popen:
    """Start `python -m snakemake` in `workdir` in the background.

    ``output``: its stdout and stderr together as text on ``proc.stdout`` (else
    discarded); ``own_group``: in a process group of its own, so a test can signal
    or kill the run and its jobs with ``os.killpg(proc.pid, ...)``.
    """
    return subprocess.Popen(
        snakemake_command(workdir, *args),
        cwd=workdir,
        stdout=subprocess.PIPE if output else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if output else subprocess.DEVNULL,
        text=output,
        start_new_session=own_group,
    )


def make_workdir(root: Path, config: dict | None = None) -> Path:
    """`<root>/run` holding config/config.yaml, with `<root>/resources` -> the mirror."""
    root.mkdir(parents=True, exist_ok=True)
    link = root / "resources"
    if not link.exists():
        link.symlink_to(REPO / "resources", target_is_directory=True)
    run = root / "run"
    (run / "config").mkdir(parents=True, exist_ok=True)
    if config is None:
        shutil.copy(TEST_CONFIG, run / "config" / "config.yaml")
    else:
        (run / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for name in ("claims.yaml", "claims.lock"):  # the claims and their registration record
        shutil.copy(TEST_CONFIG.parent / name, run / "config" / name)
    return run


def tiny_config() -> dict:
    return yaml.safe_load(TEST_CONFIG.read_text())


def result_files(run: Path) -> dict[str, bytes]:
    out = {}
    for name in COMPARED:
        path = run / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            out[str(f.relative_to(run))] = f.read_bytes()
    return out


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """The tiny pipeline run with one and with two cores (both at once)."""
    runs, procs = {}, {}
    for cores in ("1", "2"):
        run = make_workdir(tmp_path_factory.mktemp(f"cores{cores}"))
        procs[cores] = start_snakemake(run, "--cores", cores, output=True, own_group=False)
        runs[cores] = run
    for cores, proc in procs.items():
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"--cores {cores} failed:\n{out[-6000:]}"
    return runs


# --------------------------------------------------------------------------
# full runs
# --------------------------------------------------------------------------
def test_outputs_follow_the_contract(tiny_runs):
    run = tiny_runs["2"]
    config = tiny_config()
    folds, repeats = config["cv"]["folds"], config["cv"]["repeats"]
    pairs: dict[str, set] = {}  # dataset -> (variant, algorithm) pairs the run needs
    for exp, spec in config["experiments"].items():
        for ext in ("png", "pdf"):
            assert (run / "results" / "figures" / f"{exp}.{ext}").stat().st_size > 0
        table = pd.read_csv(run / "results" / "tables" / f"{exp}.csv")
        datasets = list(config["datasets"]) if spec["datasets"] == "all" else spec["datasets"]
        assert set(table["dataset"]) == set(datasets)
        assert set(table["algorithm"]) == set(spec["algorithms"])
        assert set(table["variant"]) == set(spec["variants"])
        assert set(table["epsilon"]) == set(config["epsilons"])
        assert (table["trials"] == folds * repeats).all()
        for ds in datasets:
            pairs.setdefault(ds, set()).update(
                (v, a) for v in spec["variants"] for a in spec["algorithms"]
            )
    # per dataset one "stats" file plus one per row-based algorithm; each (variant,
    # algorithm) swept once, shared by the experiments that use it
    files = {(p.parent.name, p.stem) for p in (run / "results" / "trials").rglob("*.parquet")}
    assert files == {(ds, shard_of(a)) for ds, needed in pairs.items() for _, a in needed}
    for ds, needed in pairs.items():
        trials = pd.concat(
            [
                pd.read_parquet(run / "results" / "trials" / ds / f"{s}.parquet")
                for d, s in files
                if d == ds
            ]
        )
        assert set(zip(trials["variant"], trials["algorithm"], strict=True)) == needed
        assert len(trials) == len(needed) * len(config["epsilons"]) * folds * repeats
        assert (run / "logs" / "run_sweep" / ds / "stats.log").exists()
    prov = (run / "results" / "provenance.json").read_text()
    assert "config_sha256" in prov and "sha256" in prov


def test_results_do_not_depend_on_cores(tiny_runs):
    one, two = result_files(tiny_runs["1"]), result_files(tiny_runs["2"])
    assert sorted(one) == sorted(two)
    differ = [name for name in one if one[name] != two[name]]
    assert not differ, f"differ between --cores 1 and --cores 2: {differ}"


def test_tables_match_expected(tiny_runs):
    tables = sorted((tiny_runs["2"] / "results" / "tables").glob("*.csv"))
    assert tables
    if os.environ.get("DPREG_UPDATE_EXPECTED"):
        EXPECTED.mkdir(parents=True, exist_ok=True)
        for old in EXPECTED.glob("*.csv"):
            old.unlink()
        for t in tables:
            shutil.copy(t, EXPECTED / t.name)
    assert sorted(p.name for p in EXPECTED.glob("*.csv")) == [t.name for t in tables]
    for path in tables:
        got, want = pd.read_csv(path), pd.read_csv(EXPECTED / path.name)
        assert list(got.columns) == list(want.columns), path.name
        assert len(got) == len(want), path.name
        for col in want.columns:
            if pd.api.types.is_float_dtype(want[col]):
                np.testing.assert_allclose(
                    got[col].to_numpy(float),
                    want[col].to_numpy(float),
                    rtol=1e-9,
                    atol=0.0,
                    equal_nan=True,
                    err_msg=f"{path.name}: column {col}",
                )
            else:
                assert got[col].tolist() == want[col].tolist(), f"{path.name}: column {col}"


def started_jobs(run: Path) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job of a run, in the order Snakemake started them."""
    log = max((run / ".snakemake" / "log").glob("*.snakemake.log"))
    jobs: list[tuple[str, str]] = []
    for line in log.read_text().splitlines():
        m = re.match(r"^(?:local)?rule (\w+):$", line)
        if m:
            jobs.append((m.group(1), ""))
        m = re.match(r"^\s+wildcards: (.*)$", line)
        if m and jobs and not jobs[-1][1]:
            jobs[-1] = (jobs[-1][0], m.group(1))
    return jobs


def test_one_core_runs_jobs_in_priority_order(tiny_runs):
    """On one core the `priority:` directives alone fix the order (common.smk: PRIORITY).

    Preparations, then the sweeps ("stats" shards first, larger datasets
    first), then write_claims, then one summary per experiment, then provenance,
    then the results browser (which links to it).
    """
    jobs = started_jobs(tiny_runs["1"])
    rules = [rule for rule, _ in jobs if rule != "all"]
    config = tiny_config()
    n_sweeps = len(list((tiny_runs["1"] / "results" / "trials").rglob("*.parquet")))
    assert rules == (
        ["prepare_dataset"] * len(config["datasets"])
        + ["run_sweep"] * n_sweeps
        + ["write_claims", *["summarise_experiment"] * len(config["experiments"])]
        + ["write_provenance", "build_browser"]
    ), rules
    sweeps = [dict(kv.split("=") for kv in wc.split(", ")) for r, wc in jobs if r == "run_sweep"]
    shards = [s["shard"] for s in sweeps]
    assert "rows" in shards and shards == sorted(shards, key=lambda s: s != "stats"), shards
    mirror = REPO / "resources" / "mirror"
    for shard in set(shards):
        sizes = [
            (mirror / s["dataset"] / "data.csv").stat().st_size
            for s in sweeps
            if s["shard"] == shard
        ]
        assert sizes == sorted(sizes, reverse=True), (shard, sweeps)


def test_second_run_has_nothing_to_do(tiny_runs):
    run = tiny_runs["2"]
    before = result_files(run)
    proc = snakemake(run, "--cores", "1")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    assert result_files(run) == before


def _interrupt_mid_sweep(run: Path, sig: int) -> subprocess.Popen:
    """Start the tiny run with one core, send ``sig`` to its process group as soon
    as a sweep output exists, and wait for it to end."""
    proc = start_snakemake(run, "--cores", "1")
    trials = run / "results" / "trials"
    deadline = time.monotonic() + 120
    try:
        while not any(trials.rglob("*.parquet")):
            assert proc.poll() is None, "the run ended before a sweep output appeared"
            assert time.monotonic() < deadline, "no sweep output after 120 s"
            time.sleep(0.02)
        os.killpg(proc.pid, sig)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert not (run / "results" / "provenance.json").exists()
    return proc


def test_killed_run_resumes_with_rerun_incomplete(tiny_runs, tmp_path):
    run = make_workdir(tmp_path)
    _interrupt_mid_sweep(run, signal.SIGKILL)
    # a killed run leaves its lock behind; then rerun what was cut short
    snakemake(run, "--unlock")
    snakemake(run, "--cores", "2", "--rerun-incomplete")
    assert result_files(run) == result_files(tiny_runs["2"])


def test_ctrl_c_then_the_same_command_finishes_the_run(tiny_runs, tmp_path):
    """README: after Ctrl-C the same command finishes the run (the default profile
    reruns the jobs that were cut short), with the outputs of an uninterrupted run."""
    run = make_workdir(tmp_path)
    proc = _interrupt_mid_sweep(run, signal.SIGINT)  # what Ctrl-C sends to the process group
    assert proc.returncode != 0
    snakemake(run, "--cores", "2")  # the same command, no recovery flags
    assert result_files(run) == result_files(tiny_runs["2"])


def _children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_job_stops_when_snakemake_is_killed(tmp_path):
    """kill -9 of Snakemake alone: its running sweep job exits without writing its output."""
    cfg = tiny_config()
    cfg["datasets"] = {"airfoil": cfg["datasets"]["airfoil"]}
    cfg["cv"]["repeats"] = 20000  # a sweep of several seconds
    cfg["experiments"] = {
        "slow": {"algorithms": ["adassp", "ssp"], "variants": ["maxnorm"], "datasets": "all"}
    }
    run = make_workdir(tmp_path, cfg)
    proc = start_snakemake(run, "--cores", "1")
    log = run / "logs" / "run_sweep" / "airfoil" / "stats.log"
    deadline = time.monotonic() + 120
    try:
        while not log.exists():
            assert proc.poll() is None, "the run ended before the sweep started"
            assert time.monotonic() < deadline, "no sweep job after 120 s"
            time.sleep(0.02)
        jobs = _children(proc.pid)
        assert jobs, "the sweep job is not a child of Snakemake"
        proc.kill()  # Snakemake only, not its process group
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(_alive(j) for j in jobs):
            assert time.monotonic() < deadline, "the job outlived Snakemake by 20 s"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not (run / "results" / "trials" / "airfoil" / "stats.parquet").exists()
    text = log.read_text()
    assert "is gone; stopping without writing outputs" in text
    assert "snakemake --unlock && snakemake --cores 2 --rerun-incomplete" in text


def test_rules_list_one_line_docstrings(tmp_path):
    proc = snakemake(make_workdir(tmp_path), "--list-rules")
    lines = [ln for ln in proc.stdout.splitlines() if ln and not ln.startswith(" ")]
    rules = dict(re.findall(r"^(\w+) \((.+)\)$", proc.stdout, flags=re.M))
    assert {"all", "prepare_dataset", "run_sweep", "summarise_experiment"} <= set(rules), lines
    assert len(rules) == len(lines), lines
    assert all(len(doc) > 20 for doc in rules.values())


def test_workflow_files_are_snakefmt_clean():
    files = [SNAKEFILE, *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    exe = shutil.which("snakefmt")
    assert exe, "snakefmt is part of the test extra: pip install -e '.[test]'"
    proc = subprocess.run(
        [exe, "--check", *map(str, files)], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_experiments_share_trials_and_set_their_own_repeats(tmp_path):
    """Two experiments on one (variant, algorithm): swept once; `repeats` per experiment."""
    cfg = tiny_config()
    cfg["datasets"] = {"concrete": cfg["datasets"]["concrete"]}
    cfg["experiments"] = {
        "full": {"algorithms": ["adassp", "trivial"], "variants": ["wang"]},
        "fewer": {"algorithms": ["adassp", "ssp"], "variants": ["wang"], "repeats": {"ssp": 1}},
        "more": {"algorithms": ["adassp"], "variants": ["wang"], "repeats": 3},
    }
    run = make_workdir(tmp_path, cfg)
    snakemake(run, "--cores", "2", *(f"results/tables/{e}.csv" for e in cfg["experiments"]))
    folds = cfg["cv"]["folds"]
    trials = pd.read_parquet(run / "results" / "trials" / "concrete" / "stats.parquet")
    count = trials.groupby(["variant", "algorithm"]).size().to_dict()
    n_eps = len(cfg["epsilons"])
    assert count == {
        ("wang", "adassp"): n_eps * folds * 3,  # the largest R any experiment asks for
        ("wang", "trivial"): n_eps * folds * 2,
        ("wang", "ssp"): n_eps * folds * 1,
    }
    tables = {e: pd.read_csv(run / "results" / "tables" / f"{e}.csv") for e in cfg["experiments"]}
    per_alg = {e: t.groupby("algorithm")["trials"].unique().to_dict() for e, t in tables.items()}
    assert per_alg["full"] == {"adassp": [folds * 2], "trivial": [folds * 2]}
    assert per_alg["fewer"] == {"adassp": [folds * 2], "ssp": [folds * 1]}
    assert per_alg["more"] == {"adassp": [folds * 3]}
    # the shared trials are the same numbers in both tables
    a = tables["full"].query("algorithm == 'adassp'")["mse_mean"].to_numpy()
    b = tables["fewer"].query("algorithm == 'adassp'")["mse_mean"].to_numpy()
    np.testing.assert_array_equal(a, b)


def test_run_key_builds_only_the_named_experiments(tmp_path):
    cfg = tiny_config()
    cfg["run"] = ["clipping"]
    run = make_workdir(tmp_path, cfg)
    proc = snakemake(run, "-n", "--cores", "1")
    out = proc.stdout + proc.stderr
    assert "results/tables/clipping.csv" in out
    assert "results/provenance-clipping.json" in out
    # a run set sweeps its own plan into its own trial folder
    assert "results/trials-clipping/airfoil/stats.parquet" in out
    assert "adassp-noise" not in out and "results/provenance.json" not in out


def test_report_renders_captions(tiny_runs, tmp_path):
    report = tmp_path / "report.html"
    snakemake(tiny_runs["2"], "--report", str(report))
    text = report.read_text(encoding="utf-8")
    assert "Summary table of experiment" in text
    assert "test MSE, in the shared scale" in text and "over 3 folds" in text


# --------------------------------------------------------------------------
# lint, dry runs, profiles
# --------------------------------------------------------------------------
def default_workdir(tmp_path: Path) -> Path:
    """A work directory with the default config/config.yaml and the mirror."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    (tmp_path / "resources").symlink_to(REPO / "resources", target_is_directory=True)
    return tmp_path


def test_lint_is_clean(tmp_path):
    proc = snakemake(default_workdir(tmp_path), "--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def shard_of(algorithm: str) -> str:
    """The trial file of an algorithm: "rows" when it fits on rows (or is a peer), else "stats"."""
    from dpreg.algorithms import ALGORITHMS

    return "rows" if ALGORITHMS[algorithm].needs_rows else "stats"


def expected_shards(config: dict) -> set[str]:
    """Shards of a config whose experiments all use every dataset."""
    return {shard_of(a) for exp in config["experiments"].values() for a in exp["algorithms"]}


def test_dry_run_of_default_config_with_default_profile(tmp_path):
    # profiles/default beside the Snakefile is read by every run, without a flag
    proc = snakemake(default_workdir(tmp_path), "-n")
    out = proc.stdout + proc.stderr
    assert f"Using workflow specific profile {REPO / 'profiles' / 'default'}" in out
    profile = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    assert profile["rerun-incomplete"] is True  # the same command finishes an interrupted run
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    n_exp, n_ds = len(config["experiments"]), len(config["datasets"])
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    # one sweep per (dataset, shard): "stats" plus each row-based algorithm or peer
    assert int(counts["run_sweep"]) == n_ds * len(expected_shards(config))
    assert int(counts["prepare_dataset"]) == n_ds
    # one job per experiment writes its table and its figure
    assert int(counts["summarise_experiment"]) == n_exp
    assert "aggregate_experiment" not in counts and "plot_experiment" not in counts
    assert int(counts["write_provenance"]) == 1


def test_dry_run_with_slurm_profile(tmp_path):
    profile = REPO / "workflow" / "profiles" / "slurm"
    proc = snakemake(default_workdir(tmp_path), "-n", "--profile", str(profile))
    assert "run_sweep" in proc.stdout + proc.stderr


def test_added_datasets_flow_into_their_figure(tmp_path):
    """The config/README.md examples: wine-red from the mirror, a local CSV by path."""
    cfg = tiny_config()
    cfg["datasets"]["wine-red"] = {"uci_id": 186}
    cfg["datasets"]["houses"] = {"path": "data/houses.csv", "target": "price"}
    cfg["experiments"]["added"] = {
        "algorithms": ["adassp", "trivial"],
        "variants": ["maxnorm"],
        "datasets": ["wine-red", "houses"],
    }
    run = make_workdir(tmp_path, cfg)
    (run / "data").mkdir()
    rows = "\n".join(f"{i},{i % 7},{2 * i + 1}" for i in range(40))
    (run / "data" / "houses.csv").write_text("rooms,age,price\n" + rows + "\n")
    proc = snakemake(run, "-n", "--cores", "1", "--until", "prepare_dataset")
    out = proc.stdout + proc.stderr
    assert "data/houses.csv" in out
    assert "resources/mirror/wine-red/data.csv" in out
    # and, with no code change, all the way into the experiment's figure and table
    snakemake(run, "--cores", "2", "results/figures/added.png", "results/tables/added.csv")
    assert (run / "results" / "figures" / "added.png").stat().st_size > 10_000
    table = pd.read_csv(run / "results" / "tables" / "added.csv")
    assert set(table["dataset"]) == {"wine-red", "houses"}
    assert (table["trials"] == 3 * 2).all()  # tiny config: 3 folds x 2 repeats
    assert table["mse_mean"].notna().all()


# --------------------------------------------------------------------------
# configuration errors
# --------------------------------------------------------------------------
def _typo_top(cfg):
    cfg["sede"] = cfg.pop("seed")


def _typo_nested(cfg):
    cfg["cv"]["repeat"] = cfg["cv"].pop("repeats")


def _typo_variant_key(cfg):
    cfg["variants"]["maxnorm"]["scael"] = "maxnorm"


def _typo_dataset_key(cfg):
    cfg["datasets"]["airfoil"]["traget"] = "y"


def _typo_experiment_key(cfg):
    cfg["experiments"]["clipping"]["dataset"] = "all"


def _unknown_variant(cfg):
    cfg["experiments"]["clipping"]["variants"].append("clip9")


def _unknown_dataset(cfg):
    cfg["experiments"]["calibration"]["datasets"] = ["concrete", "airfoyl"]


def _unknown_algorithm(cfg):
    cfg["experiments"]["clipping"]["algorithms"].append("adasp")


def _foreign_repeats(cfg):
    cfg["experiments"]["clipping"]["repeats"] = {"ssp": 1}


def _unknown_run(cfg):
    cfg["run"] = ["clipin"]


def _bad_delta(cfg):
    cfg["delta"] = 1.5


def _bad_epsilon(cfg):
    cfg["epsilons"] = [0.1, 0.0]


def _bad_scale(cfg):
    cfg["variants"]["maxnorm"]["scale"] = "unitball"


def _bad_transform(cfg):
    cfg["datasets"]["airfoil"]["target_transform"] = "sqrt"


@pytest.mark.parametrize(
    ("edit", "needles"),
    [
        (_typo_top, ["unknown key 'sede' (did you mean 'seed'?)"]),
        (_typo_variant_key, ["config: variants: maxnorm: unknown key 'scael'", "allowed keys"]),
        (_unknown_variant, ["clip9", "wang, maxnorm, clip2"]),
        (_unknown_dataset, ["airfoyl", "airfoil, concrete"]),
        (_unknown_algorithm, ["unknown algorithm 'adasp'", "adassp"]),
        (_foreign_repeats, ["repeats names 'ssp'", "not one of its algorithms"]),
        (_unknown_run, ["config: run names unknown experiment 'clipin'", "clipping"]),
    ],
)
def test_config_errors_stop_the_workflow(tmp_path, edit, needles):
    """Through the command line: a non-zero exit, a message naming the key, no output."""
    cfg = tiny_config()
    edit(cfg)
    run = make_workdir(tmp_path, cfg)
    proc = snakemake(run, "-n", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for needle in needles:
        assert needle in out, out[-3000:]
    assert not (run / "results").exists()


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (_typo_top, "sede"),
        (_typo_nested, "repeat"),
        (_typo_variant_key, "scael"),
        (_typo_dataset_key, "traget"),
        (_typo_experiment_key, "dataset"),
        (_bad_delta, "1.5"),
        (_bad_epsilon, "0.0"),
        (_bad_scale, "unitball"),
        (_bad_transform, "sqrt"),
    ],
)
def test_schema_rejects_with_a_message_naming_the_value(edit, needle):
    """The schema alone, through the validator the workflow calls."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    cfg = tiny_config()
    edit(cfg)
    with pytest.raises(WorkflowError) as info:
        validate(cfg, str(SCHEMA))
    assert needle in str(info.value.args[1] if len(info.value.args) > 1 else info.value)


def test_schema_fills_defaults():
    from snakemake.utils import validate

    cfg = {
        "datasets": {"airfoil": {"uci_id": 291}},
        "variants": {"v": {}},
        "experiments": {"e": {"algorithms": ["adassp"], "variants": ["v"]}},
    }
    validate(cfg, str(SCHEMA))
    assert cfg["seed"] == 20200601 and cfg["delta"] == 1e-6 and cfg["rho"] == 0.05
    assert cfg["cv"] == {"partitions": 1, "folds": 10, "repeats": 100}
    assert cfg["epsilons"] == [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10]
    assert cfg["mirror"] == "resources/mirror" and cfg["memory_budget_mb"] is None
    assert cfg["variants"]["v"] == {
        "stats": "train",
        "clip_sigma": None,
        "clip_test": False,
        "center_y": True,
        "standardize": True,
        "intercept": False,
        "scale": "maxnorm",
    }
    assert cfg["experiments"]["e"]["datasets"] == "all"


def test_default_and_tiny_configs_are_valid():
    from snakemake.utils import validate

    for path in (REPO / "config" / "config.yaml", TEST_CONFIG):
        validate(yaml.safe_load(path.read_text()), str(SCHEMA))


# --------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------
def test_schema_dataset_keys_are_the_data_module_keys():
    from dpreg.data import DATASET_KEYS

    schema = yaml.safe_load(SCHEMA.read_text())
    assert set(schema["$defs"]["dataset"]["properties"]) == set(DATASET_KEYS)


def test_schema_variant_keys_are_the_preprocess_keys():
    from dpreg.preprocess import VARIANT_KEYS

    schema = yaml.safe_load(SCHEMA.read_text())
    assert set(schema["$defs"]["variant"]["properties"]) == set(VARIANT_KEYS)


def test_default_config_uses_the_default_recipes():
    from dpreg.data import DEFAULT_DATASETS

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for name, entry in config["datasets"].items():
        assert entry == DEFAULT_DATASETS[name], name


def test_bad_data_fails_with_one_line_and_no_output(tmp_path):
    """A text column in a user's CSV: one clear console line, no traceback, nothing written."""
    cfg = tiny_config()
    cfg["datasets"] = {"mine": {"path": "data/mine.csv", "target": "y"}}
    for exp in cfg["experiments"].values():
        exp["datasets"] = "all"
    run = make_workdir(tmp_path, cfg)
    (run / "data").mkdir()
    rows = "\n".join(f"{i},x{i % 3},{i}" for i in range(30))
    (run / "data" / "mine.csv").write_text("a,b,y\n" + rows + "\n")
    proc = snakemake(run, "--cores", "1", "results/prepared/mine.json", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "ERROR dataset 'mine': feature column 'b' is not numeric" in out
    log = (run / "logs" / "prepare_dataset" / "mine.log").read_text()
    assert "Traceback" not in log and "feature column 'b'" in log
    assert not list((run / "results").rglob("mine.*"))
