"""The d = 500, n = 1,000,000 synthetic sweep through the real pipeline.

Copies the workflow into a fresh directory and runs ``python -m snakemake
--cores N --configfile config/synthetic.yaml benchmarks/synthetic-large.yaml``:
the ``synthetic-large`` experiment of config/synthetic.yaml (``gauss-d500-n1m``,
generated from its seed; adassp, adassp-tight, ssp-tight, gaussmix, bas,
ridge, ols, trivial) on the short grid of benchmarks/synthetic-large.yaml.

Output, one JSON line each:

* ``job``: every job's wall seconds, CPU seconds and peak RSS (its
  ``benchmark:`` file);
* ``cell``: per (algorithm, epsilon) of the summary table: median test MSE,
  mean R^2 and median coefficient error ``||theta - theta*||`` (the table must
  have all three: the script stops if one is missing);
* ``summary``: wall seconds, peak job RSS, cores, ``uptime`` before and after.

Run from the repository root::

    python benchmarks/bench_synthetic_large.py --keep /tmp/synth   # ~GBs in that folder
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = "results/tables/synthetic-large.csv"


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="run in (and keep) this directory")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dpreg-synth-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        ignore = shutil.ignore_patterns("__pycache__", ".snakemake", "*.pyc")
        shutil.copy2(ROOT / "Snakefile", work / "Snakefile")
        for name in ("workflow", "config", "resources", "benchmarks"):
            if not (work / name).exists():
                shutil.copytree(ROOT / name, work / name, ignore=ignore)
        before = uptime()
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "--nocolor"]
        cmd += ["--configfile", "config/synthetic.yaml", "benchmarks/synthetic-large.yaml"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(proc.returncode)
        peak = 0.0
        for tsv in sorted((work / "logs" / "benchmarks").rglob("*.tsv")):
            with tsv.open() as fh:
                row = next(csv.DictReader(fh, delimiter="\t"))
            rss = float(row["max_rss"]) if row["max_rss"] not in ("", "-", "NA") else 0.0
            peak = max(peak, rss)
            emit(
                bench="job",
                job=str(tsv.relative_to(work / "logs" / "benchmarks")),
                seconds=round(float(row["s"]), 2),
                cpu_seconds=round(float(row["cpu_time"]), 2),
                max_rss_mb=round(rss, 1),
            )
        with (work / TABLE).open() as fh:
            rows = list(csv.DictReader(fh))
        for col in ("mse_median", "r2_mean", "coef_err_median"):
            if col not in rows[0] or any(r[col] == "" for r in rows if r["algorithm"] != "trivial"):
                raise SystemExit(f"{TABLE} lacks {col}: the synthetic sweep must report it")
        for r in rows:
            emit(
                bench="cell",
                algorithm=r["algorithm"],
                epsilon=float(r["epsilon"]),
                mse_median=float(r["mse_median"]),
                r2_mean=float(r["r2_mean"]) if r["r2_mean"] else None,
                coef_err_median=float(r["coef_err_median"]),
            )
    emit(
        bench="summary",
        n=1_000_000,
        d=500,
        cores=args.cores,
        cpu_count=os.cpu_count(),
        wall_seconds=round(wall, 1),
        peak_job_rss_mb=round(peak, 1),
        uptime_before=before,
        uptime_after=uptime(),
    )


if __name__ == "__main__":
    main()
