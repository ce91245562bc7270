"""Cost of several K-fold partitions per point: one dataset's sweep at P x R.

The default config's sweep of one dataset (every shard: ``stats`` and
``rows``, every (variant, algorithm) any experiment runs on it) is timed with
``cv: {partitions: P, repeats: R}`` for each ``--design P:R`` given (default
5:20, the config's, against 1:100, the single partition with the same 1,000
trials per point).  Fold statistics are computed P times as often; noise
draws and solves are the same in number, except for experiments whose own
``repeats:`` (slow algorithms) are per fold and partition, hence P times as
many trials.  Prints one JSON line per (design, shard) and the load average.

Run from the repository root on a prepared table (the pipeline's
``results/prepared/<dataset>.parquet``)::

    python benchmarks/bench_partitions.py --table results/prepared/bike.parquet
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core, set before numpy is imported

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _config() -> dict:
    from snakemake.utils import validate

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))  # defaults
    return cfg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--table", required=True, help="prepared Parquet table of the dataset")
    p.add_argument("--dataset", default=None, help="dataset name (default: the table's stem)")
    p.add_argument("--design", action="append", default=None, help="P:R (repeatable)")
    p.add_argument("--best-of", type=int, default=1)
    p.add_argument(
        "--split-experiment-repeats",
        action="store_true",
        help="divide each experiment's own repeats by P (rounded up): the same trials per point",
    )
    args = p.parse_args()
    from dpreg.engine.plan import Plan
    from dpreg.engine.sources import sweep_dataset

    dataset = args.dataset or Path(args.table).stem
    base = _config()
    for design in args.design or ["5:20", "1:100"]:
        P, R = (int(v) for v in design.split(":"))
        cfg = copy.deepcopy(base)
        cfg["cv"].update(partitions=P, repeats=R)
        if args.split_experiment_repeats:
            for exp in cfg["experiments"].values():
                given = exp.get("repeats")
                if isinstance(given, int):
                    exp["repeats"] = -(-given // P)
                elif isinstance(given, dict):
                    exp["repeats"] = {a: -(-r // P) for a, r in given.items()}
        plan = Plan.from_config(cfg)
        total = 0.0
        for shard in ("stats", "rows"):
            kwargs = plan.sweep_kwargs(dataset, shard)
            if not kwargs["plan"]:
                continue
            best = float("inf")
            for _ in range(args.best_of):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    trials = sweep_dataset(args.table, **kwargs)
                best = min(best, time.perf_counter() - t0)
            total += best
            print(
                json.dumps(
                    {
                        "dataset": dataset,
                        "partitions": P,
                        "repeats": R,
                        "shard": shard,
                        "trials": len(trials),
                        "seconds": round(best, 2),
                    }
                ),
                flush=True,
            )
        print(json.dumps({"dataset": dataset, "partitions": P, "repeats": R, "total": total}))
    print(json.dumps({"loadavg": os.getloadavg(), "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
