"""The privately tuned entries against their untuned counterparts: time and price.

On one training fold of a prepared dataset (default bike: 90% of the rows,
standardised and scaled into the unit ball, ``|y| <= 1``), at ``epsilon = 1``,
``delta = 1e-6``, for each pair (``adassp-tuned``/``adassp-tight``,
``dp-gd-tuned``/``dp-gd-tight``, ``bas-tuned``/``bas``, ``dpk-bas-tuned``/``dpk-bas``,
``tukey-em-tuned``/``tukey-em``):

* ``release_ms``: the release list (the tuned entries calibrate the whole
  private selection; the sweep computes it once per fold and epsilon);
* ``fit_ms``: one repeat of the fit (``size = R`` in one call, divided by R);
* ``noise_ratio``: the price of tuning -- the noise of the tuned entry's
  candidate with the counterpart's hyperparameters over the counterpart's
  (``tukey-em-tuned``: its ``m = n/2d`` candidate's PTR Laplace scale over
  ``tukey-em``'s).

The fits run as the sweep runs them: with a shared seed for the entries with an
epsilon-free step (TukeyEM's partition, DPKendall's tie-breaking).

Run from the repository root after ``snakemake prepare`` (a scratch seed; never
the confirmatory one)::

    python benchmarks/bench_tuning.py [--dataset bike] [--repeats 10]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpreg.algorithms.registry import get_algorithm
from dpreg.algorithms.tuning import GRIDS
from dpreg.algorithms.tuning_tukey import CANDIDATES
from dpreg.preprocess.stats import SuffStats

PAIRS = [
    ("adassp-tuned", "adassp-tight", ({}, 0.05)),
    ("dp-gd-tuned", "dp-gd-tight", ({"T": 3, "eta": 0.25, "clip": 1.0}, None)),
    ("bas-tuned", "bas", ({"T": 100, "eta": "1"}, None)),
    ("dpk-bas-tuned", "dpk-bas", ({"k": 5}, None)),
]
EPSILON, DELTA, SEED = 1.0, 1e-6, 4242


def _fold(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    table = pd.read_parquet(Path("results/prepared") / f"{dataset}.parquet").to_numpy(float)
    X, y = table[:, :-1], table[:, -1]
    X = (X - X.mean(0)) / X.std(0).clip(1e-12)
    X /= np.linalg.norm(X, axis=1).max()
    y = y - y.mean()
    y /= np.abs(y).max()
    n = int(0.9 * len(y))
    return X[:n], y[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="bike")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    X, y = _fold(args.dataset)
    stats = SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0)
    for tuned, plain, cand in [*PAIRS, ("tukey-em-tuned", "tukey-em", None)]:
        j = CANDIDATES.index(plain) + 1 if cand is None else GRIDS[tuned].index(cand) + 1
        row = {"dataset": args.dataset, "n": len(y), "d": X.shape[1], "load": os.getloadavg()[0]}
        for name in (tuned, plain):
            alg = get_algorithm(name)
            t0 = time.perf_counter()
            rel = alg.releases_for(stats, epsilon=EPSILON, delta=DELTA)
            row[f"{name}:release_ms"] = 1e3 * (time.perf_counter() - t0)
            kw = {"epsilon": EPSILON, "delta": DELTA, "rng": SEED, "rows": (X, y)}
            shared = np.random.SeedSequence(SEED) if alg.epsilon_free_step else None
            alg.fit(stats, size=1, shared_seed=shared, **kw)  # warm
            t0 = time.perf_counter()
            alg.fit(stats, size=args.repeats, shared_seed=shared, **kw)
            row[f"{name}:fit_ms"] = 1e3 * (time.perf_counter() - t0) / args.repeats
            if name == tuned:
                mine = next(r for r in rel if r.name.startswith(f"c{j}/"))
            else:
                row["noise_ratio"] = mine.scale / rel[0].scale
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
