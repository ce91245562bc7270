"""A 2,000,000-row dataset added by YAML, through the real pipeline.

Writes a synthetic table shaped like houseelectric (2,000,000 x 11 features
plus a target) as a CSV, adds it to a fresh copy of the workflow with a
``path:`` entry -- no code change -- and runs ``python -m snakemake --cores 2``
for one experiment (adassp, ssp, ridge on maxnorm with training-fold
statistics; 10 folds x 10 repeats x Wang's 10 epsilons).  The config sets
``memory_budget_mb`` below the table's size, so the sweep streams it.

Prints one JSON line per job (from Snakemake's ``benchmark:`` files: wall
seconds and peak RSS) and a summary line.  Targets (issue: scale): prepared
and swept in under 60 s with peak RSS under 1.5 GB.

Run from the repository root::

    python benchmarks/bench_big_dataset.py [--rows 2000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]


def write_csv(path: Path, rows: int, d: int = 11, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=d)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"x{j}" for j in range(d)] + ["y"])
        for lo in range(0, rows, 200_000):
            n = min(200_000, rows - lo)
            X = rng.gamma(2.0, 1.0, size=(n, d))
            y = X @ beta + rng.normal(size=n)
            np.savetxt(fh, np.column_stack([X, y]), delimiter=",", fmt="%.6g")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--budget-mb", type=float, default=64.0)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="dpreg-big-"))
    work.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", "resources"):
        src = REPO / name
        dst = work / name
        if not dst.exists():
            (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    (work / "data").mkdir(exist_ok=True)
    csv_path = work / "data" / "big.csv"
    t0 = time.perf_counter()
    write_csv(csv_path, args.rows)
    t_csv = time.perf_counter() - t0

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["datasets"] = {"big": {"path": "data/big.csv", "target": "y"}}
    cfg["variants"] = {"maxnorm": {"stats": "train", "scale": "maxnorm"}}
    cfg["experiments"] = {
        "scale": {
            "algorithms": ["adassp", "ssp", "ridge"],
            "variants": ["maxnorm"],
            "datasets": "all",
        }
    }
    cfg["memory_budget_mb"] = args.budget_mb
    (work / "config").mkdir(exist_ok=True)
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "2",
            "--nocolor",
            "results/tables/scale.csv",
        ],
        cwd=work,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(proc.returncode)

    peak = 0.0
    job_seconds = 0.0
    for tsv in sorted((work / "logs" / "benchmarks").rglob("*.tsv")):
        with tsv.open() as fh:
            row = next(csv.DictReader(fh, delimiter="\t"))
        rss = float(row["max_rss"]) if row["max_rss"] not in ("", "-", "NA") else float("nan")
        job_seconds += float(row["s"])
        peak = max(peak, rss)
        print(
            json.dumps(
                {
                    "bench": "big_dataset_job",
                    "job": str(tsv.relative_to(work / "logs")),
                    "seconds": round(float(row["s"]), 2),
                    "max_rss_mb": round(rss, 1),
                }
            )
        )
    meta = json.loads((work / "results" / "prepared" / "big.json").read_text())
    print(
        json.dumps(
            {
                "bench": "big_dataset",
                "rows": meta["n"],
                "d": meta["d"],
                "csv_write_seconds": round(t_csv, 1),
                "pipeline_wall_seconds": round(wall, 1),
                "prepare_plus_sweep_job_seconds": round(job_seconds, 1),
                "peak_job_rss_mb": round(peak, 1),
                "memory_budget_mb": args.budget_mb,
                "target_seconds": 60,
                "target_rss_mb": 1536,
                "met": bool(job_seconds < 60 and peak < 1536),
            }
        )
    )
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
