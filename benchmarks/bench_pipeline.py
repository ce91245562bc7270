"""Where the wall time of a pipeline run goes.

Copies the workflow (Snakefile, workflow/, config/, resources/, and
.test/config/ for ``--test``) into a fresh temporary directory, runs
``python -m snakemake --cores N`` there, and time-stamps every line
Snakemake prints as it arrives (its job start lines ``rule X:`` / ``jobid:``
and ``Finished jobid: N (Rule: X)`` are written when the event happens).
These are the per-job wall times; every rule also has a ``benchmark:``
file, whose ``cpu_time`` column gives the CPU seconds per rule.

Output, one JSON line each:

* ``job``: every job (rule, wildcards, start, end, seconds), with ``--jobs``;
* ``rule``: per rule: jobs, job-seconds (sum), median and max job seconds;
* ``breakdown``: the wall time split into ``startup`` (launch to the first
  job: imports, config validation, DAG), one share per rule (every instant
  is divided equally among the jobs running then, so the shares add up to
  the wall time), ``idle`` (between jobs: nothing running, i.e. scheduling
  and job-launch gaps) and ``shutdown`` (last job to exit);
* ``summary``: wall seconds, job count, cores, the phases grouped as
  scheduling (startup + idle + shutdown), prepare, sweeps, summaries (one
  job per experiment: its table and figure), claims, provenance.

Run from the repository root::

    python benchmarks/bench_pipeline.py                # default config, 2 cores
    python benchmarks/bench_pipeline.py --test --jobs  # the tiny .test config
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = re.compile(r"^(local)?rule (\S+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)")
PHASES = {
    "prepare": ["prepare_dataset"],
    "sweeps": ["run_sweep"],
    "summaries": ["summarise_experiment"],
    "claims": ["write_claims"],
    "provenance": ["write_provenance"],
}


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def copy_workflow(dest: Path, *, test: bool) -> None:
    ignore = shutil.ignore_patterns("__pycache__", ".snakemake", "*.pyc")
    shutil.copy2(ROOT / "Snakefile", dest / "Snakefile")
    for name in ("workflow", "config", "resources"):
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    if test:
        shutil.copytree(ROOT / ".test" / "config", dest / ".test" / "config", ignore=ignore)


def run(workdir: Path, args: argparse.Namespace) -> tuple[float, list[tuple[float, str]], int]:
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "--nocolor"]
    if args.test:
        cmd += ["--directory", ".test"]
    cmd += args.extra
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("SNAKEMAKE_PROFILE", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.perf_counter() - t0, line.rstrip("\n")))
    rc = proc.wait()
    return time.perf_counter() - t0, lines, rc


def parse_jobs(lines: list[tuple[float, str]]) -> list[dict]:
    jobs: dict[int, dict] = {}
    pending = None  # (time, rule) of a start line awaiting its jobid
    current = None
    for t, line in lines:
        m = START.match(line)
        if m:
            pending = (t, m.group(2))
            continue
        m = JOBID.match(line)
        if m and pending is not None:
            jid = int(m.group(1))
            jobs[jid] = {"jobid": jid, "rule": pending[1], "start": pending[0], "wildcards": ""}
            current, pending = jid, None
            continue
        m = WILDCARDS.match(line)
        if m and current is not None and not jobs[current]["wildcards"]:
            jobs[current]["wildcards"] = m.group(1)
            continue
        m = FINISHED.match(line)
        if m:
            jid = int(m.group(1))
            if jid in jobs:
                jobs[jid]["end"] = t
    out = []
    for job in jobs.values():
        if "end" in job:
            job["seconds"] = job["end"] - job["start"]
            out.append(job)
    return sorted(out, key=lambda j: j["start"])


def breakdown(jobs: list[dict], wall: float) -> dict[str, float]:
    """Split [0, wall] among startup, rules (equal shares of overlaps), idle, shutdown."""
    real = [j for j in jobs if j["rule"] != "all"]
    if not real:
        return {"startup": wall}
    first = min(j["start"] for j in real)
    last = max(j["end"] for j in real)
    shares = {"startup": first, "idle": 0.0, "shutdown": wall - last}
    cuts = sorted({first, last, *(j["start"] for j in real), *(j["end"] for j in real)})
    for a, b in zip(cuts, cuts[1:], strict=False):
        running = [j["rule"] for j in real if j["start"] < b and j["end"] > a]
        if not running:
            shares["idle"] += b - a
            continue
        for rule in running:
            shares[rule] = shares.get(rule, 0.0) + (b - a) / len(running)
    return shares


def cpu_seconds(workdir: Path) -> dict[str, float]:
    """CPU seconds per rule from the jobs' ``benchmark:`` files (``cpu_time`` column).

    Unlike wall time this barely depends on what else runs on the machine:
    on an otherwise idle machine with N cores the jobs need at least
    ``sum / N`` seconds of wall time.
    """
    out: dict[str, float] = {}
    root = workdir / "logs" / "benchmarks"
    for tsv in root.rglob("*.tsv"):
        rule = tsv.relative_to(root).parts[0].removesuffix(".tsv")
        rule = re.sub(r"-.*$", "", rule)  # write_claims-<run set>.tsv
        header, *rows = tsv.read_text().splitlines()
        col = header.split("\t").index("cpu_time")
        out[rule] = out.get(rule, 0.0) + sum(float(r.split("\t")[col]) for r in rows)
    return out


def emit_rules(jobs: list[dict], cpu: dict[str, float]) -> None:
    """One ``rule`` line per rule: jobs, job-seconds (sum), median and max job seconds,
    and its CPU seconds from the jobs' ``benchmark:`` files (``cpu``)."""
    rules: dict[str, list[float]] = {}
    for j in jobs:
        rules.setdefault(j["rule"], []).append(j["seconds"])
    for rule, secs in rules.items():
        emit(
            bench="rule",
            rule=rule,
            jobs=len(secs),
            job_seconds=round(sum(secs), 2),
            median_seconds=round(statistics.median(secs), 2),
            max_seconds=round(max(secs), 2),
            cpu_seconds=round(cpu.get(rule, 0.0), 2),
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--test", action="store_true", help="run the tiny .test configuration")
    ap.add_argument("--jobs", action="store_true", help="also print one line per job")
    ap.add_argument("--keep", type=Path, default=None, help="run in (and keep) this directory")
    ap.add_argument("extra", nargs="*", help="more snakemake arguments (after --)")
    args = ap.parse_args(argv)
    if not (ROOT / "Snakefile").exists():
        raise SystemExit("no Snakefile in the repository yet")

    with tempfile.TemporaryDirectory(prefix="dpreg-pipeline-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        copy_workflow(workdir, test=args.test)
        load_before = os.getloadavg()[0]  # what else the machine ran when the run started
        wall, lines, rc = run(workdir, args)
        if rc != 0:
            tail = "\n".join(line for _, line in lines[-40:])
            raise SystemExit(f"snakemake failed (exit {rc}):\n{tail}")
        jobs = parse_jobs(lines)
        cpu = cpu_seconds(workdir / (".test" if args.test else "."))

    if args.jobs:
        for j in jobs:
            emit(
                bench="job",
                rule=j["rule"],
                wildcards=j["wildcards"],
                start=round(j["start"], 2),
                end=round(j["end"], 2),
                seconds=round(j["seconds"], 2),
            )
    emit_rules(jobs, cpu)
    shares = breakdown(jobs, wall)
    emit(bench="breakdown", **{k: round(v, 2) for k, v in shares.items()})
    phases = {
        "scheduling": shares.get("startup", 0) + shares.get("idle", 0) + shares.get("shutdown", 0)
    }
    for phase, members in PHASES.items():
        phases[phase] = sum(shares.get(r, 0.0) for r in members)
    other = wall - sum(phases.values())
    emit(
        bench="summary",
        config=".test/config/config.yaml" if args.test else "config/config.yaml",
        cores=args.cores,
        wall_seconds=round(wall, 2),
        load_average_1min_start=round(load_before, 2),
        load_average_1min=round(os.getloadavg()[0], 2),
        job_cpu_seconds=round(sum(cpu.values()), 2),
        jobs=len([j for j in jobs if j["rule"] != "all"]),
        **{f"{k}_seconds": round(v, 2) for k, v in phases.items()},
        other_seconds=round(other, 2),
    )


if __name__ == "__main__":
    main()
