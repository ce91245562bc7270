"""Sweeps of large prepared tables: wall time and peak memory.

Synthetic prepared Parquet tables (float64 features, target last, row
groups of 65,536 rows) are written into a temporary directory and swept
with :func:`dpreg.engine.sources.sweep_dataset`: 10 folds x 10 repeats x 10 epsilons
x 3 algorithms (adassp, ssp, ridge), variant ``{stats: train, scale:
maxnorm}`` (training-fold statistics: every fold has its own transform).
Cases (``--case``):

* ``1m``: 1,000,000 x 11 read into memory; target: peak RSS above the
  post-import baseline at most 2x the table (float64, features + target);
* ``10m``: 10,000,000 x 11 streamed in chunks (``memory_budget_mb`` 64);
* ``houseelectric``: 2,000,000 x 11 streamed; ``song``: 515,345 x 90 streamed;
* ``d200``, ``d500``: 20,000 rows x 200 / 500 features in memory, where the
  d^2 noise draws and d^3 solves dominate.

Every step runs in a fresh subprocess, so peaks are per case: ``VmHWM``
from ``/proc/self/status`` (high-water RSS of this process image) and
``ru_maxrss`` (which Linux carries over ``execve`` from the parent; the
parent here stays small so both agree).  One JSON line per measurement:

* ``write``: generating and writing the table;
* ``read``: one streaming pass over the table (the I/O floor);
* ``sweep``: the streamed sweep (target: houseelectric < 60 s with peak RSS
  < 1.5 GB; song < 90 s).

Run from the repository root::

    python benchmarks/bench_scale.py                  # both cases
    python benchmarks/bench_scale.py --case song --profile
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    # name: (rows, features, streamed, wall-time target in seconds or None)
    "1m": (1_000_000, 11, False, None),
    "10m": (10_000_000, 11, True, None),
    "houseelectric": (2_000_000, 11, True, 60.0),
    "song": (515_345, 90, True, 90.0),
    "d200": (20_000, 200, False, None),
    "d500": (20_000, 500, False, None),
}
DEFAULT_CASES = ["1m", "10m", "d200", "d500"]
RSS_TARGET_MB = {"houseelectric": 1536.0}
#: peak RSS above the baseline, as a multiple of the table's float64 size
PEAK_RATIO_TARGET = {"1m": 2.0}
ROW_GROUP = 65_536
GRID = {
    "variants": {"train-maxnorm": {"stats": "train", "scale": "maxnorm"}},
    "algorithms": ["adassp", "ssp", "ridge"],
    "epsilons": [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
    "delta": 1e-6,
    "folds": 10,
    "repeats": 10,
    "seed": 20200601,
}


def _peaks() -> dict[str, float]:
    import resource

    out = {"ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmHWM:", "VmRSS:")):
                key = line.split(":")[0]
                out[f"{key}_mb"] = int(line.split()[1]) / 1024
    return out


# --------------------------------------------------------------------------
# child steps
# --------------------------------------------------------------------------
def child_write(path: str, n: int, d: int) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    rng = np.random.default_rng([n, d])
    beta = rng.standard_normal(d) / np.sqrt(d)
    mix = np.eye(d) + 0.3 * rng.standard_normal((d, d)) / np.sqrt(d)
    names = [f"x{j}" for j in range(d)] + ["target"]
    schema = pa.schema([(c, pa.float64()) for c in names])
    with pq.ParquetWriter(path, schema) as writer:
        for lo in range(0, n, ROW_GROUP):
            m = min(ROW_GROUP, n - lo)
            X = rng.standard_normal((m, d)) @ mix
            X[:, 0] = np.exp(X[:, 0])  # one skewed column, as in real tables
            y = X @ beta + 0.5 * rng.standard_normal(m)
            cols = [pa.array(X[:, j]) for j in range(d)] + [pa.array(y)]
            writer.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=ROW_GROUP)
    return {"seconds": round(time.perf_counter() - t0, 2), "bytes": os.path.getsize(path)}


def child_read(path: str, chunk_rows: int) -> dict:
    from dpreg.data import iter_prepared, prepared_shape

    n, d = prepared_shape(path)
    t0 = time.perf_counter()
    rows = 0
    for X, _ in iter_prepared(path, chunk_rows=chunk_rows):
        rows += X.shape[0]
    assert rows == n
    return {"seconds": round(time.perf_counter() - t0, 2), "n": n, "d": d}


def child_sweep(path: str, budget_mb: float | None, chunk_rows: int, profile: str | None) -> dict:
    import warnings

    from dpreg.data import prepared_shape
    from dpreg.engine.sources import sweep_dataset, table_size_mb
    from dpreg.privacy.mechanisms import ClassicalCalibrationWarning

    n, d = prepared_shape(path)
    baseline = _peaks()

    def run():
        with warnings.catch_warnings():
            # classical calibrations at epsilon >= 2 are flagged in the table
            warnings.simplefilter("ignore", ClassicalCalibrationWarning)
            return sweep_dataset(
                path, dataset="synthetic", memory_budget_mb=budget_mb, chunk_rows=chunk_rows, **GRID
            )

    t0 = time.perf_counter()
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        frame = prof.runcall(run)
        seconds = time.perf_counter() - t0
        prof.dump_stats(profile)
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime")
        top = [
            {
                "function": f"{Path(fn).name}:{line}({name})",
                "tottime": round(tt, 2),
                "cumtime": round(ct, 2),
                "calls": nc,
            }
            for (fn, line, name), (_, nc, tt, ct, _) in sorted(
                stats.stats.items(), key=lambda kv: -kv[1][2]
            )[:15]
        ]
    else:
        frame = run()
        seconds = time.perf_counter() - t0
        top = None
    out = {
        "seconds": round(seconds, 2),
        "n": n,
        "d": d,
        "table_mb": round(table_size_mb(n, d), 1),
        "streamed": budget_mb is not None and table_size_mb(n, d) > budget_mb,
        "trials": len(frame),
        "failed": int(frame["failed"].sum()),
        "baseline_rss_mb": round(baseline["VmRSS_mb"], 1),
    }
    if top:
        out["profile_top_tottime"] = top
    return out


# --------------------------------------------------------------------------
# parent (imports nothing heavy, so children start small)
# --------------------------------------------------------------------------
def _run_child(step: str, *args: str) -> dict:
    cmd = [sys.executable, __file__, "--child", step, *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{step} failed:\n{proc.stderr}")
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["process_wall_seconds"] = round(wall, 2)
    return rec


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=[*CASES, "all", "default"], default="default")
    ap.add_argument("--memory-budget-mb", type=float, default=64.0)
    ap.add_argument("--chunk-rows", type=int, default=65_536)
    ap.add_argument("--threads", default="1", help="BLAS threads in the children")
    ap.add_argument("--workdir", type=Path, default=None, help="keep tables here")
    ap.add_argument("--profile", action="store_true", help="cProfile the sweep")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        step, *rest = args.child
        if step == "write":
            rec = child_write(rest[0], int(rest[1]), int(rest[2]))
        elif step == "read":
            rec = child_read(rest[0], int(rest[1]))
        else:
            budget = None if rest[1] == "none" else float(rest[1])
            rec = child_sweep(rest[0], budget, int(rest[2]), rest[3] or None)
        rec.update({k: round(v, 1) for k, v in _peaks().items()})
        if step == "sweep":
            above = rec["VmHWM_mb"] - rec["baseline_rss_mb"]
            rec["peak_above_baseline_mb"] = round(above, 1)
            rec["peak_over_table"] = round(above / rec["table_mb"], 2)
        print(json.dumps(rec), flush=True)
        return

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = args.threads
    names = {"all": list(CASES), "default": DEFAULT_CASES}.get(args.case, [args.case])
    with tempfile.TemporaryDirectory(prefix="dpreg-scale-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in names:
            n, d, streamed, target = CASES[name]
            budget = str(args.memory_budget_mb) if streamed else "none"
            path = work / f"{name}.parquet"
            if not path.exists():
                rec = _run_child("write", str(path), str(n), str(d))
                emit(bench="write", case=name, rows=n, features=d, **rec)
            rec = _run_child("read", str(path), str(args.chunk_rows))
            emit(bench="read", case=name, chunk_rows=args.chunk_rows, **rec)
            prof = str(work / f"{name}.prof") if args.profile else ""
            rec = _run_child("sweep", str(path), budget, str(args.chunk_rows), prof)
            rss_target = RSS_TARGET_MB.get(name)
            ratio_target = PEAK_RATIO_TARGET.get(name)
            emit(
                bench="sweep",
                case=name,
                memory_budget_mb=None if budget == "none" else args.memory_budget_mb,
                chunk_rows=args.chunk_rows,
                threads=args.threads,
                target_seconds=target,
                met_time=None if target is None else rec["seconds"] < target,
                target_peak_rss_mb=rss_target,
                met_rss=None if rss_target is None else rec["VmHWM_mb"] < rss_target,
                target_peak_over_table=ratio_target,
                met_peak_ratio=None
                if ratio_target is None
                else rec["peak_over_table"] <= ratio_target,
                **rec,
            )
            if not args.workdir:
                path.unlink()  # the 10m table is ~0.9 GB


if __name__ == "__main__":
    main()
