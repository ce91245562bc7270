"""Cluster mode: the .test pipeline through snakemake-executor-plugin-cluster-generic.

A tiny submit script stands in for a batch scheduler: it starts every job
script it is given as a detached background process and prints its PID as
the job id.  Without a status command the plugin watches the
``*.jobfinished`` / ``*.jobfailed`` markers the job script touches, so no
scheduler is needed.  The sweep jobs (the only rule that is not a
``localrule``) must go through the script, and the trial files and summary
tables must equal a local ``--cores 2`` run byte for byte.

Both runs work on fresh copies of the repository (Snakefile, workflow/,
config/, resources/, .test/config/) with ``--directory .test``, and run at
the same time to keep the test short.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TEST_CONFIG = REPO / ".test" / "config" / "config.yaml"

pytest.importorskip("snakemake_executor_plugin_cluster_generic")
pytestmark = [
    pytest.mark.workflow,
    pytest.mark.skipif(
        not (REPO / "Snakefile").exists() or not TEST_CONFIG.exists(),
        reason="the workflow (Snakefile, .test/config/config.yaml) is not there",
    ),
]

SUBMIT = """\
#!/usr/bin/env bash
# Stand-in for a batch scheduler's submit command: the plugin calls
#   submit.sh <jobscript>
# and reads the job id from the first line printed.
set -euo pipefail
jobscript="$1"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/cluster-logs"
name="$(basename "$jobscript" .sh)"
nohup bash "$jobscript" > "$here/cluster-logs/$name.log" 2>&1 < /dev/null &
echo "$! $name" >> "$here/submissions.txt"
echo "$!"
"""
TIMEOUT = 600


def _copy_repo(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", ".snakemake", "*.pyc")
    dest.mkdir(parents=True)
    shutil.copy2(REPO / "Snakefile", dest / "Snakefile")
    for name in ("workflow", "config", "resources"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    shutil.copytree(REPO / ".test" / "config", dest / ".test" / "config", ignore=ignore)
    return dest


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SNAKEMAKE_PROFILE", None)  # no user profile
    return env


def _targets(cfg: dict) -> list[str]:
    return [f"results/tables/{exp}.csv" for exp in cfg["experiments"]]


def _n_sweeps(cfg: dict) -> int:
    """Sweep jobs of a config: one per (dataset, shard) some experiment needs.

    A shard is "stats" (every algorithm working from sufficient statistics)
    or "rows" (the algorithms that fit on rows, ``needs_rows``, and peers).
    """
    from dpreg.algorithms import ALGORITHMS

    pairs = set()
    for exp in cfg["experiments"].values():
        datasets = list(cfg["datasets"]) if exp["datasets"] == "all" else exp["datasets"]
        for alg in exp["algorithms"]:
            shard = "rows" if ALGORITHMS[alg].needs_rows else "stats"
            pairs.update((ds, shard) for ds in datasets)
    return len(pairs)


def _outputs(root: Path) -> dict[str, bytes]:
    results = root / ".test" / "results"
    files = [*results.glob("tables/*.csv"), *results.glob("trials/**/*")]
    return {str(p.relative_to(results)): p.read_bytes() for p in sorted(files) if p.is_file()}


def test_cluster_generic_equals_local(tmp_path):
    cfg = yaml.safe_load(TEST_CONFIG.read_text())
    targets = _targets(cfg)
    local = _copy_repo(tmp_path / "local")
    cluster = _copy_repo(tmp_path / "cluster")
    submit = tmp_path / "submit.sh"
    submit.write_text(SUBMIT)
    submit.chmod(0o755)

    base = [sys.executable, "-m", "snakemake", "--directory", ".test", "--nocolor"]
    cmd_local = [*base, "--cores", "2", *targets]
    cmd_cluster = [
        *base,
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        f"bash {submit}",
        "--jobs",
        "5",
        "--local-cores",
        "1",
        "--seconds-between-status-checks",
        "1",
        "--latency-wait",
        "10",
        *targets,
    ]
    procs = {}
    for name, cmd, cwd in (("local", cmd_local, local), ("cluster", cmd_cluster, cluster)):
        procs[name] = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    logs = {}
    for name, proc in procs.items():
        try:
            logs[name], _ = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for p in procs.values():
                p.kill()
            raise
    for name, proc in procs.items():
        assert proc.returncode == 0, f"{name} run failed:\n{logs[name][-4000:]}"

    # every sweep went through the submit script, each as its own process
    n_sweeps = _n_sweeps(cfg)
    submissions = (tmp_path / "submissions.txt").read_text().split("\n")
    jobs = [line.split() for line in submissions if line.strip()]
    assert len(jobs) == n_sweeps, jobs
    assert all(name.startswith("snakejob.run_sweep.") for _, name in jobs), jobs
    pids = {int(pid) for pid, _ in jobs}
    assert len(pids) == n_sweeps and procs["cluster"].pid not in pids
    assert logs["cluster"].count("with external jobid") == n_sweeps
    assert "with external jobid" not in logs["local"]
    for _, name in jobs:
        job_log = (tmp_path / "cluster-logs" / f"{name}.log").read_text()
        assert "1 of 1 steps (100%) done" in job_log, job_log[-2000:]

    # the results are identical, byte for byte
    out_local, out_cluster = _outputs(local), _outputs(cluster)
    expected = {f"tables/{exp}.csv" for exp in cfg["experiments"]}
    assert expected <= set(out_local)
    trial_files = [k for k in out_local if k.startswith("trials/") and k.endswith(".parquet")]
    assert len(trial_files) == n_sweeps
    assert all(f"{k}.sha256" in out_local for k in trial_files)  # each with its checksum
    assert sorted(out_cluster) == sorted(out_local)
    differ = [k for k in out_local if out_local[k] != out_cluster[k]]
    assert not differ, f"cluster and local outputs differ: {differ}"
