"""Damaged outputs in a real Snakemake run: detected by their checksum sidecars.

A trial file truncated with its modification time kept looks up to date to
Snakemake; the next job that reads it must stop with a message naming the
file and how to rebuild it, and the advice must work.  The run is the tiny
configuration cut to one dataset and two experiments (about 20 s).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_workflow import make_workdir, snakemake, tiny_config

pytestmark = pytest.mark.workflow


def _truncate_keeping_mtime(path: Path) -> None:
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_truncated_trial_file_stops_the_summary_with_a_rebuild_hint(tmp_path):
    cfg = tiny_config()
    cfg["datasets"] = {"concrete": cfg["datasets"]["concrete"]}
    keep = {"adassp-noise", "calibration"}
    cfg["experiments"] = {e: x for e, x in cfg["experiments"].items() if e in keep}
    for exp in cfg["experiments"].values():
        exp["datasets"] = ["concrete"]
        exp.pop("claims", None)
    run = make_workdir(tmp_path, cfg)
    snakemake(run, "--cores", "2")
    results = run / "results"
    trial = results / "trials" / "concrete" / "stats.parquet"
    assert (trial.parent / "stats.parquet.sha256").is_file()
    complete = {
        p.relative_to(run): p.read_bytes()
        for p in results.rglob("*")
        if p.is_file() and "trials" not in p.parts
    }
    _truncate_keeping_mtime(trial)

    # up to date by modification times: Snakemake has nothing to do and nothing is read
    proc = snakemake(run, "--cores", "1")
    assert "Nothing to be done" in proc.stdout + proc.stderr

    # a job that reads the file stops with the message, naming the file and the fix
    proc = snakemake(
        run, "--cores", "1", "--forcerun", "results/tables/calibration.csv", check=False
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    rel = "results/trials/concrete/stats.parquet"
    assert f"trial file '{rel}' is damaged or incomplete" in out, out[-3000:]
    assert f"snakemake --cores 2 --forcerun {rel}" in out
    log = (run / "logs" / "summarise_experiment" / "calibration.log").read_text()
    assert "damaged or incomplete" in log and "Traceback" not in log
    # what Snakemake removed: only the failed job's own outputs (it deletes a job's
    # outputs before starting it); every other result is kept as it was
    removed = {
        Path("results/tables/calibration.csv"),
        Path("results/figures/calibration.png"),
        Path("results/figures/calibration.pdf"),
    }
    for rel_path, data in complete.items():
        if rel_path in removed or rel_path.name.startswith("calibration.csv"):
            continue
        assert (run / rel_path).read_bytes() == data, rel_path
    assert not (run / "results/tables/calibration.csv").exists()

    # the advice works: the file and what reads it are rebuilt, the same bytes as before
    snakemake(run, "--cores", "2", "--forcerun", rel)
    for rel_path, data in complete.items():
        assert (run / rel_path).read_bytes() == data, rel_path
