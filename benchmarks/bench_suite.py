"""Wall time of Wang's whole suite with every method (config/wang-suite.yaml).

Runs ``python -m snakemake --cores N --configfile config/wang-suite.yaml`` in a
fresh copy of the workflow (as :mod:`bench_pipeline` does, whose job parser
and breakdown it uses): the ``run:`` experiments of that file, i.e. the suite
of Wang's methods and ``wang-frontier`` (the modern and frontier methods) at
their declared repeats, from the mirror's raw files to the leaderboard.
Whatever seed the file declares is used.

Output, one JSON line each:

* ``machine``: cores (``os.cpu_count()``), ``uptime`` before the run;
* ``hotspot``: the ``--top`` longest jobs (rule, wildcards, seconds);
* ``rule``: per rule: jobs, job-seconds, median and max job seconds, CPU seconds;
* ``summary``: wall seconds, the 1-minute load average at the start and the
  end, the jobs' CPU seconds (their ``benchmark:`` files: barely affected
  by other load), and ``uptime`` after the run.

With ``--methods DATASET ...`` it runs no pipeline: it times each algorithm
of the suite's experiments alone on those prepared tables (``--prepared``,
e.g. a kept run's ``results/prepared``), in process, at the experiment's
repeats and the suite's folds and epsilons, and prints one ``method`` line
each with its CPU seconds (``time.process_time``: what the method costs, not
what the machine's other load makes it wait).

Run from the repository root::

    python benchmarks/bench_suite.py                       # 2 cores
    python benchmarks/bench_suite.py --keep /tmp/suite     # keep the run (its leaderboard)
    python benchmarks/bench_suite.py --methods protein pol --prepared /tmp/suite/results/prepared
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_pipeline as bp  # noqa: E402

CONFIG = "config/wang-suite.yaml"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def time_methods(datasets: list[str], prepared: Path) -> None:
    """CPU seconds of every algorithm of the suite's run experiments, alone, per dataset."""
    import time
    import warnings

    import yaml

    from dpreg.engine.sources import sweep_dataset

    cfg = yaml.safe_load((bp.ROOT / CONFIG).read_text())
    done: set[str] = set()
    for exp in cfg["run"]:
        spec = cfg["experiments"][exp]
        reps = spec.get("repeats", {})
        for alg in spec["algorithms"]:
            if alg in done:
                continue
            done.add(alg)
            R = reps.get(alg, cfg["cv"]["repeats"]) if isinstance(reps, dict) else int(reps)
            for ds in datasets:
                t0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the calibration warnings of the sweep
                    sweep_dataset(
                        prepared / f"{ds}.parquet",
                        dataset=ds,
                        variants=cfg["variants"],
                        epsilons=cfg["epsilons"],
                        delta=cfg["delta"],
                        folds=cfg["cv"]["folds"],
                        seed=cfg["seed"],
                        algorithms=[alg],
                        repeats=R,
                    )
                cpu = time.process_time() - t0
                bp.emit(
                    bench="method",
                    experiment=exp,
                    algorithm=alg,
                    dataset=ds,
                    repeats=R,
                    cpu_seconds=round(cpu, 2),
                )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--top", type=int, default=15, help="longest jobs to print")
    ap.add_argument("--keep", type=Path, default=None, help="run in (and keep) this directory")
    ap.add_argument("--methods", nargs="+", help="time each method alone on these datasets")
    ap.add_argument("--prepared", type=Path, default=Path("results/prepared"))
    ap.add_argument("extra", nargs="*", help="more snakemake arguments (after --)")
    args = ap.parse_args(argv)
    if args.methods:
        bp.emit(bench="machine", cores=os.cpu_count(), uptime_before=uptime())
        time_methods(args.methods, args.prepared)
        return
    args.test = False
    args.extra = ["--configfile", CONFIG, *args.extra]
    bp.emit(bench="machine", cores=os.cpu_count(), uptime_before=uptime())
    with tempfile.TemporaryDirectory(prefix="dpreg-suite-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        bp.copy_workflow(workdir, test=False)
        load_before = os.getloadavg()[0]
        wall, lines, rc = bp.run(workdir, args)
        if rc != 0:
            tail = "\n".join(line for _, line in lines[-40:])
            raise SystemExit(f"snakemake failed (exit {rc}):\n{tail}")
        jobs = bp.parse_jobs(lines)
        cpu = bp.cpu_seconds(workdir)
    for j in sorted(jobs, key=lambda j: -j["seconds"])[: args.top]:
        bp.emit(
            bench="hotspot",
            rule=j["rule"],
            wildcards=j["wildcards"],
            seconds=round(j["seconds"], 2),
        )
    bp.emit_rules(jobs, cpu)
    bp.emit(
        bench="summary",
        config=CONFIG,
        cores=args.cores,
        wall_seconds=round(wall, 2),
        load_average_1min_start=round(load_before, 2),
        load_average_1min=round(os.getloadavg()[0], 2),
        job_cpu_seconds=round(sum(cpu.values()), 2),
        jobs=len([j for j in jobs if j["rule"] != "all"]),
        uptime_after=uptime(),
    )


if __name__ == "__main__":
    main()
