"""The run directory through Snakemake's command line (dpreg.io.rundir, checked in common.smk).

These are real ``snakemake`` processes on the tiny configuration:

- a second run started while one is active in the same directory;
- a dry run and ``--unlock`` started meanwhile;
- a ``.snakemake`` or ``results`` folder that cannot be written.

Without the check, the second run builds its DAG and plans to rerun the
first run's in-progress jobs (the default profile's ``rerun-incomplete``).
Snakemake's own lock then refuses it, with advice to use ``--unlock``.
A read-only ``.snakemake`` gives a ``PermissionError`` traceback.

Root may write any folder. So when the tests run as root, the child Snakemake
process runs without the capability that allows that (``setpriv`` drops
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its bounding set); folder
permissions then apply to it as to any user.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from test_workflow import (
    make_workdir,
    snakemake,
    snakemake_command,
    start_snakemake,
    tiny_config,
)

from dpreg.io.checksum import verify
from dpreg.io.rundir import RUN_LOCK

pytestmark = pytest.mark.workflow


def _slow_config() -> dict:
    """One dataset and one sweep of several seconds (the first run stays active)."""
    cfg = tiny_config()
    cfg["datasets"] = {"airfoil": cfg["datasets"]["airfoil"]}
    cfg["cv"]["repeats"] = 20000
    cfg["experiments"] = {
        "slow": {"algorithms": ["adassp", "ssp"], "variants": ["maxnorm"], "datasets": "all"}
    }
    return cfg


def _no_traceback(out: str) -> None:
    assert "Traceback" not in out and "PermissionError" not in out, out[-3000:]


def test_a_second_run_is_refused_while_the_first_runs_and_loses_nothing(tmp_path):
    run = make_workdir(tmp_path, _slow_config())
    first = start_snakemake(run, "--cores", "1", output=True)
    sweep_log = run / "logs" / "run_sweep" / "airfoil" / "stats.log"
    trial = run / "results" / "trials" / "airfoil" / "stats.parquet"
    deadline = time.monotonic() + 120
    try:
        while not sweep_log.exists():
            assert first.poll() is None, "the first run ended before its sweep started"
            assert time.monotonic() < deadline, "no sweep job after 120 s"
            time.sleep(0.05)
        holder = json.loads((run / RUN_LOCK).read_text())
        assert holder["pid"] == first.pid

        # the same command again: refused at once, naming the active run, and
        # with no DAG built nothing of the first run is deleted or planned
        second = snakemake(run, "--cores", "1", check=False)
        out = second.stdout + second.stderr
        assert second.returncode != 0
        assert f"another Snakemake run is active in {run}" in out, out[-3000:]
        assert f"pid {first.pid}" in out and "Wait for that run to finish" in out
        assert "Do not use --unlock while it runs" in out
        assert "Building DAG" not in out and "LockException" not in out
        _no_traceback(out)
        # --unlock would let two runs write the same files: refused the same way
        unlock = snakemake(run, "--unlock", check=False)
        assert unlock.returncode != 0
        assert "another Snakemake run is active" in unlock.stdout + unlock.stderr
        # a dry run only looks: a warning, and it goes on
        dry = snakemake(run, "-n", check=False)
        assert dry.returncode == 0, dry.stderr[-3000:]
        assert "dpreg: another Snakemake run is active" in dry.stdout + dry.stderr
        assert first.poll() is None, "the first run ended before the checks were done"
        log, _ = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
        if first.stdout is not None:
            first.stdout.close()
    assert first.returncode == 0, log[-4000:]
    # the first run's in-progress output was not deleted or rerun: it finished
    # and its trial file matches its checksum
    verify(trial, "trial file")
    assert (run / "results" / "tables" / "slow.csv").exists()
    assert log.count("rule run_sweep") == 1
    # once it has ended the lock is free: the same command has nothing to do
    again = snakemake(run, "--cores", "1")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_the_lock_dies_with_its_run(tmp_path):
    """kill -9 frees the run lock (the kernel drops it), so after Snakemake's own
    lock is removed with --unlock the run resumes (README, 'Recovering')."""
    run = make_workdir(tmp_path, _slow_config())
    first = start_snakemake(run, "--cores", "1")
    try:
        deadline = time.monotonic() + 120
        while not (run / "logs" / "run_sweep" / "airfoil" / "stats.log").exists():
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    unlock = snakemake(run, "--unlock", check=False)
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    assert "another Snakemake run" not in unlock.stdout + unlock.stderr


def _without_root_override() -> list[str]:
    """A command prefix under which folder permissions apply (see the module docstring)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.parametrize("folder", [".snakemake", "results"])
def test_a_folder_that_cannot_be_written_gets_one_message(tmp_path, folder):
    run = make_workdir(tmp_path)
    (run / folder).mkdir()
    (run / folder / "kept.txt").write_text("an earlier file")
    os.chmod(run / folder, 0o555)
    try:
        proc = subprocess.run(
            [*_without_root_override(), *snakemake_command(run, "--cores", "1")],
            cwd=run,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        os.chmod(run / folder, 0o755)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"cannot write in {run / folder} (Permission denied)" in out, out[-3000:]
    assert f"chmod -R u+w {run / folder}" in out
    _no_traceback(out)
    assert sorted(p.name for p in (run / folder).iterdir()) == ["kept.txt"]
    assert not (run / "results" / "trials").exists()
