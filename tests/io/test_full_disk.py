"""A disk that fills up mid-write: every writer stops with one message and keeps nothing partial.

The writes fail for real, in the kernel: each writer runs in a child process
whose file-size limit (``RLIMIT_FSIZE``, what ``ulimit -f`` sets; SIGXFSZ
ignored) is 4 KiB, so a write past 4 KiB fails with ``EFBIG`` exactly where
a full disk fails with ``ENOSPC`` (any user may lower its own limit, so this
runs unprivileged in CI).  Every payload below is well over 4 KiB and every
checksum sidecar well under it, so the data write itself is what fails.
A full file system (``ENOSPC``) and an exhausted quota (``EDQUOT``) take the
same path in :func:`dpreg.io.atomic.atomic_path`; the in-process test below
covers the ENOSPC wording.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpreg import DPRegError
from dpreg.io.atomic import atomic_path, no_space_error, write_bytes_atomic

#: the child's file-size limit; payloads are >= 20 KiB, sidecars < 100 bytes
LIMIT = 4096

CHILD = r"""
import json, resource, signal, sys, traceback
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib
matplotlib.use("Agg")
from matplotlib.figure import Figure

from dpreg import DPRegError
from dpreg.data import prepare_dataset
from dpreg.io.atomic import write_bytes_atomic
from dpreg.io.checksum import write_checked
from dpreg.io.tables import write_json, write_table
from dpreg.io.trials import write_trials
from dpreg.report.cdplot import save_cd_figure
from dpreg.report.figures import _save
from dpreg.report.leaderboard import leaderboard

root = Path(sys.argv[1])
rng = np.random.default_rng(0)
frame = pd.DataFrame({"a": rng.normal(size=3000), "b": rng.normal(size=3000)})


def figure():
    fig = Figure()
    fig.subplots().plot(rng.normal(size=20000))
    return fig


def board():
    rows = [
        {"dataset": f"d{i}", "variant": "v", "algorithm": a, "epsilon": 1.0,
         "mse_median": rng.uniform() + k}
        for i in range(8) for k, a in enumerate(["adassp", "a2", "a3"])
    ]
    return leaderboard(pd.DataFrame(rows))


WRITERS = {
    "atomic bytes": lambda d: write_bytes_atomic(d / "out.bin", b"x" * 20000),
    "checked bytes": lambda d: write_checked(d / "out.bin", b"x" * 20000),
    "trial parquet": lambda d: write_trials(frame, d / "trials.parquet"),
    "trial csv.gz": lambda d: write_trials(frame, d / "trials.csv.gz"),
    "summary table": lambda d: write_table(frame, d / "table.csv"),
    "provenance json": lambda d: write_json({"x": frame["a"].tolist()}, d / "provenance.json"),
    "prepared table": lambda d: prepare_dataset(
        "syn",
        {"synthetic": {"design": "gaussian", "n": 2000, "d": 4, "noise": 0.1, "seed": 7}},
        mirror_dir=None, out_table=d / "syn.parquet", out_meta=d / "syn.json",
    ),
    "figure": lambda d: _save(figure(), d / "fig.png", d / "fig.pdf", 150),
    "cd figure": lambda d: save_cd_figure(board(), d / "cd.png"),
}

report = {}
for name, write in WRITERS.items():
    folder = root / name.replace(" ", "_")
    folder.mkdir()
    (folder / "previous.txt").write_text("a complete file from an earlier run")
    if name == "atomic bytes":
        (folder / "out.bin").write_bytes(b"previous complete file")
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, hard))  # the soft limit only
    try:
        write(folder)
        report[name] = {"error": None}
    except BaseException as exc:
        report[name] = {"error": type(exc).__name__, "user_error": isinstance(exc, DPRegError),
                        "message": str(exc), "traceback": traceback.format_exc()}
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def full_disk_report(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("full")
    code = (
        f"import signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\nLIMIT = {LIMIT}\n" + CHILD
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root, json.loads(proc.stdout.strip().splitlines()[-1])


WRITTEN = {  # writer -> the destination named in its message (relative to its folder)
    "atomic bytes": "out.bin",
    "checked bytes": "out.bin",
    "trial parquet": "trials.parquet",
    "trial csv.gz": "trials.csv.gz",
    "summary table": "table.csv",
    "provenance json": "provenance.json",
    "prepared table": "syn.parquet",
    "figure": "fig.png",
    "cd figure": "cd.png",
}


@pytest.mark.parametrize("writer", list(WRITTEN))
def test_a_full_disk_gives_one_message_naming_the_file(full_disk_report, writer):
    root, report = full_disk_report
    result = report[writer]
    assert result["error"] == "DPRegError", result.get("traceback", result)
    folder = root / writer.replace(" ", "_")
    message = result["message"]
    assert f"cannot write {folder / WRITTEN[writer]}: no space left" in message
    assert "nothing partial was kept" in message and "run the same command again" in message


@pytest.mark.parametrize("writer", list(WRITTEN))
def test_a_full_disk_leaves_nothing_that_looks_complete(full_disk_report, writer):
    root, _ = full_disk_report
    folder = root / writer.replace(" ", "_")
    left = sorted(p.name for p in folder.iterdir())
    if writer == "atomic bytes":  # the previous complete file is kept as it was
        assert (folder / "out.bin").read_bytes() == b"previous complete file"
        assert left == ["out.bin", "previous.txt"]
    else:  # no output, no sidecar, no temporary file; earlier files untouched
        assert left == ["previous.txt"]
    assert (folder / "previous.txt").read_text() == "a complete file from an earlier run"


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "no space left on device"),
        (errno.EDQUOT, "no space left: disk quota exceeded"),
        (errno.EFBIG, "no space left: file larger than the process's file-size limit"),
    ],
)
def test_each_kind_of_full_disk_is_named(tmp_path, code, words):
    path = tmp_path / "out.bin"
    path.write_bytes(b"previous complete file")
    with pytest.raises(DPRegError) as exc, atomic_path(path) as tmp:
        tmp.write_bytes(b"half")
        raise OSError(code, "from the kernel")
    assert str(exc.value) == str(no_space_error(path, OSError(code, "x")))
    assert f"cannot write {path}: {words}" in str(exc.value)
    assert exc.value.__cause__ is None and exc.value.__suppress_context__  # no chained traceback
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    assert path.read_bytes() == b"previous complete file"


def test_other_write_errors_pass_through_unchanged(tmp_path):
    """Only a lack of space is reworded; e.g. a permission error keeps its own type."""
    with pytest.raises(PermissionError), atomic_path(tmp_path / "out.bin"):
        raise PermissionError(errno.EACCES, "Permission denied")
    assert list(tmp_path.iterdir()) == []


def test_no_inode_for_the_temporary_file_is_a_full_disk(tmp_path, monkeypatch):
    import tempfile

    def no_inode(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", no_inode)
    with pytest.raises(DPRegError, match=r"cannot write .*out.bin: no space left on device"):
        write_bytes_atomic(tmp_path / "out.bin", b"x")


JOB = r"""
import sys
from dpreg.joblog import log_to_file
from dpreg import DPRegError
log_to_file(sys.argv[1])
raise DPRegError(sys.argv[2])
"""


@pytest.mark.parametrize("log", ["/dev/full", "ok"])
def test_a_job_error_reaches_the_console_when_its_log_cannot_be_written(tmp_path, log):
    """On a full disk the job's log file (on the same disk) cannot be written
    either: the one-line error goes to the console first, with no excepthook
    failure. /dev/full fails every write with ENOSPC, as a full disk does."""
    path = log if log == "/dev/full" else str(tmp_path / "job.log")
    message = "cannot write results/x.parquet: no space left on device"
    proc = subprocess.run(
        [sys.executable, "-c", JOB, path, message], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0  # 1, or 120 when the log cannot be flushed at exit either
    assert proc.stderr == f"ERROR {message}\n"  # one line, no excepthook failure
    if log == "ok":
        assert Path(path).read_text().endswith(f"ERROR {message}\n")


def test_a_write_killed_outright_leaves_a_temporary_the_next_write_removes(tmp_path):
    """kill -9 runs no cleanup: its temporary file stays until the same file is
    written again (the rerun), which removes it; other files' temporaries are kept."""
    import tempfile

    path = tmp_path / "stats.parquet"
    left = []
    for name in ("stats.parquet", "stats.parquet.sha256", "other.csv"):  # killed writes
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=tmp_path)
        os.close(fd)
        left.append(Path(tmp).name)
    write_bytes_atomic(path, b"complete")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["stats.parquet", *left[1:]])
