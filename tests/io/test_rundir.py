"""The run directory's checks (dpreg.io.rundir) in-process; the workflow tests run them in Snakemake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from dpreg import DPRegError
from dpreg.io import rundir
from dpreg.io.rundir import RUN_LOCK, check_writable, claim_run_directory, invocation_looks_only

SNAKEMAKE = "/venv/bin/snakemake"


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Work in tmp_path, holding no lock, and drop any lock taken by the test at its end."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rundir, "_HELD", [])
    yield tmp_path
    for handle in rundir._HELD:
        handle.close()


@pytest.mark.parametrize(
    ("argv", "looks"),
    [
        ([SNAKEMAKE, "--cores", "2"], False),
        ([SNAKEMAKE, "--unlock"], False),
        ([SNAKEMAKE, "--touch", "--cores", "1"], False),
        (["/x/site-packages/snakemake/__main__.py", "-s", "Snakefile", "-c1"], False),
        ([SNAKEMAKE, "-n"], True),
        ([SNAKEMAKE, "-np", "--cores", "2"], True),
        ([SNAKEMAKE, "-pn"], True),
        ([SNAKEMAKE, "--dry-run"], True),
        ([SNAKEMAKE, "--lint"], True),
        ([SNAKEMAKE, "--report=report.html"], True),
        ([SNAKEMAKE, "--summary"], True),
        (["/x/site-packages/snakemake/__main__.py", "--list-rules"], True),
        (["/venv/bin/pytest", "tests"], True),  # the Snakemake API from another program
        ([], True),
    ],
)
def test_which_commands_only_look(argv, looks):
    assert invocation_looks_only(argv) is looks


def test_a_run_takes_the_lock_and_records_itself(in_tmp):
    assert claim_run_directory(["results", "logs"], [SNAKEMAKE, "--cores", "2"])
    record = json.loads((in_tmp / RUN_LOCK).read_text())
    assert record["pid"] == os.getpid()
    assert record["command"] == "snakemake --cores 2"
    assert (in_tmp / "results").is_dir() and (in_tmp / "logs").is_dir()
    assert not [p for p in (in_tmp / "results").iterdir()]  # the write probe is removed


def test_a_look_takes_no_lock_and_writes_nothing(in_tmp):
    assert not claim_run_directory(["results"], [SNAKEMAKE, "-n"])
    assert list(in_tmp.iterdir()) == []
    (in_tmp / ".snakemake").mkdir()  # after a run: still no lock taken
    assert not claim_run_directory(["results"], [SNAKEMAKE, "-n"])
    assert [p.name for p in in_tmp.iterdir()] == [".snakemake"]


def test_a_dry_run_is_refused_an_existing_snakemake_folder_it_cannot_write(in_tmp, monkeypatch):
    (in_tmp / ".snakemake").mkdir()

    def denied(folder):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(rundir, "_probe", denied)
    with pytest.raises(DPRegError, match=r"cannot write in .*\.snakemake \(Permission denied\)"):
        claim_run_directory(["results"], [SNAKEMAKE, "-n"])


HOLDER = r"""
import fcntl, json, os, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
handle.write(json.dumps({"pid": os.getpid(), "host": "h", "started": "then",
                         "command": "snakemake --cores 2"}))
handle.flush()
print("held", flush=True)
time.sleep(60)
"""


@pytest.fixture
def other_run(in_tmp):
    """Another process holding the run lock of tmp_path."""
    (in_tmp / ".snakemake").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(in_tmp / RUN_LOCK)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()


def test_a_second_run_is_refused_naming_the_first(in_tmp, other_run):
    with pytest.raises(DPRegError) as exc:
        claim_run_directory(["results"], [SNAKEMAKE, "--cores", "2"])
    msg = str(exc.value)
    assert f"another Snakemake run is active in {in_tmp} (pid {other_run.pid} on h" in msg
    assert f"kill {other_run.pid}" in msg and "Do not use --unlock while it runs" in msg
    assert not (in_tmp / "results").exists()  # refused before it writes anything


def test_a_look_beside_a_run_is_warned_and_goes_on(in_tmp, other_run):
    warnings: list[str] = []
    assert not claim_run_directory(["results"], [SNAKEMAKE, "-n"], warn=warnings.append)
    assert len(warnings) == 1 and f"pid {other_run.pid}" in warnings[0]


def test_the_lock_is_free_once_the_other_run_has_ended(in_tmp, other_run):
    other_run.kill()  # as kill -9: the kernel drops its lock
    other_run.wait(timeout=30)
    time.sleep(0.05)
    assert claim_run_directory(["results"], [SNAKEMAKE, "--cores", "2"])
    assert json.loads((in_tmp / RUN_LOCK).read_text())["pid"] == os.getpid()


def test_a_folder_that_cannot_be_written_is_named(in_tmp, monkeypatch):
    """Root may write a folder of mode 0555, so the refusal is simulated at the
    probe (the workflow test makes a real read-only folder)."""
    real = rundir._probe

    def probe(folder):
        if folder.name == "results":
            raise PermissionError(13, "Permission denied")
        real(folder)

    monkeypatch.setattr(rundir, "_probe", probe)
    with pytest.raises(DPRegError) as exc:
        check_writable([".snakemake", "results"])
    msg = str(exc.value)
    assert f"cannot write in {in_tmp / 'results'} (Permission denied)" in msg
    assert f"chmod -R u+w {in_tmp / 'results'}" in msg


def test_readme_troubleshooting_quotes_the_messages(in_tmp, other_run, monkeypatch):
    """Each message README's Troubleshooting section quotes is the one the code gives."""
    import errno
    import re
    from pathlib import Path

    from dpreg.io.atomic import no_space_error

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    quoted = re.findall(r"\*\*`([^`]*)`", section)
    with pytest.raises(DPRegError) as busy:
        claim_run_directory(["results"], [SNAKEMAKE, "--cores", "2"])

    def denied_probe(folder):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(rundir, "_probe", denied_probe)
    with pytest.raises(DPRegError) as denied:
        check_writable(["results"])
    full = no_space_error("out.csv", OSError(errno.ENOSPC, "x"))
    ours = {
        "another Snakemake run is active in DIR (pid …)": str(busy.value),
        "cannot write in DIR (Permission denied)": str(denied.value),
        "cannot write FILE: no space left on device": str(full),
    }
    assert set(ours) <= set(quoted)
    for text, message in ours.items():
        pattern = re.escape(text).replace("DIR", r"\S+").replace("FILE", r"\S+")
        pattern = pattern.replace(re.escape("…"), ".*")
        assert re.search(pattern, message), (text, message)
    assert "dpreg config check" in section and RUN_LOCK.as_posix() in section


def test_a_full_disk_is_refused_before_the_run_starts(in_tmp, monkeypatch):
    """0 or 24 KiB free: Snakemake would fail writing its own job scripts first."""
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(1 << 30, (1 << 30) - 24576, 24576))
    with pytest.raises(DPRegError) as exc:
        check_writable(["results"])
    assert f"cannot write in {in_tmp / 'results'}: no space left on device (24 KiB free;" in str(
        exc.value
    )
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(1 << 30, 0, rundir.MIN_FREE_BYTES))
    check_writable(["results"])  # exactly the minimum is enough
