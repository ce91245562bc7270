"""End to end: the pipeline against the per-fold numpy loop a researcher would write.

The work is the ``adassp-noise`` experiment of the default configuration on
its four datasets (airfoil, concrete, bike, elevators): the ``wang`` variant,
the algorithms adassp-wang, adassp, ridge and trivial, ten values of epsilon,
10 folds x ``--repeats`` noise repeats (100: 1,000 trials per point).

Three timings, one JSON line each:

* ``loop``: a plain numpy script.  It prepares the four tables with
  :func:`dpreg.data.prepare_dataset` (the pipeline's preparation), maps the
  rows as the ``wang`` variant does, and per fold computes ``X^T X``,
  ``X^T y`` and the smallest eigenvalue once; then for every (epsilon,
  algorithm, repeat) it draws the noise, solves, predicts the test rows and
  records MSE and R^2 (ridge and trivial are fitted and scored once per fold
  and repeated).  It ends with the same summary table (mean, median of MSE per
  dataset, algorithm and epsilon) written to CSV.  Noise scales come from
  dpreg's release lists, so the loop does the same arithmetic per trial.
* ``pipeline``: ``python -m snakemake --cores N`` in a fresh copy of the
  repository's workflow whose configuration holds only this experiment at
  ``--repeats`` repeats, from no results to its table, figure and provenance
  (wall clock of the whole command, Snakemake start-up included).
* ``engine``: the same trials through :func:`dpreg.engine.sources.sweep_dataset` in
  this process (no Snakemake, no files), for reference.
* ``snakemake_floor``: ``python -m snakemake --cores 1`` on a one-rule
  workflow whose only job is ``touch`` -- the least any Snakemake pipeline
  can take on this machine, whatever its jobs do.

``summary`` prints ``loop / pipeline`` (target >= 10), ``loop / engine`` and
``loop / snakemake_floor``, the largest ratio a Snakemake pipeline could reach.
BLAS runs on one thread in the loop and the engine (set before numpy is
imported); the pipeline's jobs are single-threaded as well.

Run from the repository root::

    python benchmarks/bench_end_to_end.py                  # R = 100, 2 cores
    python benchmarks/bench_end_to_end.py --repeats 10 --skip-pipeline
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one BLAS thread, set before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "adassp-noise"


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def load_config() -> dict:
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


# --------------------------------------------------------------------------
# the obvious loop
# --------------------------------------------------------------------------
def _scales(name: str, eps: float, delta: float, d: int, rho: float) -> list[float]:
    """Noise scales of one run of ``name`` (dpreg's release list, in its order)."""
    from dpreg.algorithms import get_algorithm

    rel = get_algorithm(name).releases(epsilon=eps, delta=delta, d=d, rho=rho)
    return [float(r.scale) for r in rel]


def _wang_map(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``wang`` variant: global standardisation, rows to norm 1, y centred into [-1, 1]."""
    sd = X.std(axis=0, ddof=1)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    nrm = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    Z /= np.where(nrm > 0, nrm, 1.0)[:, None]
    yc = y - y.mean()
    scale = np.abs(yc).max()
    return Z, yc / (scale if scale > 0 else 1.0)


def obvious_loop(tables: dict[str, tuple[np.ndarray, np.ndarray]], cfg: dict, R: int):
    """Per fold: statistics once; per trial: draw, solve, score.  Returns trial rows."""
    from dpreg.engine.sweep import assign_folds

    K = cfg["cv"]["folds"]
    delta, rho, c = cfg["delta"], cfg["rho"], cfg["xtx_offset"]
    eps_grid = [float(e) for e in cfg["epsilons"]]
    # AdaSSP (Wang 2018, Algorithm 2): lambda_min shift factor of each version
    shift = {
        "adassp-wang": np.sqrt(np.log(6.0 / delta)),
        "adassp": np.sqrt(2.0 * np.log(3.75 / delta)),
    }
    rows = []
    for ds, (X, y) in tables.items():
        d = X.shape[1]
        Z, t = _wang_map(X, y)
        fold = assign_folds(X.shape[0], K, seed=cfg["seed"], dataset=ds)
        rng = np.random.default_rng([cfg["seed"], len(rows)])
        lam_factor = np.sqrt(d * np.log(2.0 * d * d / rho))
        scales = {(a, e): _scales(a, e, delta, d, rho) for a in shift for e in eps_grid}
        eye = np.eye(d)
        for k in range(K):
            te = fold == k
            Xtr, ytr, Xte, yte = Z[~te], t[~te], Z[te], t[te]
            XtX = Xtr.T @ Xtr
            Xty = Xtr.T @ ytr
            A = XtX + c * eye
            lmin = np.linalg.eigvalsh(A)[0]
            sst = float(((yte - yte.mean()) ** 2).sum())

            def score(theta, Xte=Xte, yte=yte, sst=sst):
                res = Xte @ theta - yte
                sse = float(res @ res)
                return sse / yte.size, 1.0 - sse / sst

            for name, theta in (
                ("ridge", np.linalg.solve(XtX + eye, Xty)),
                ("trivial", np.zeros(d)),
            ):
                mse, r2 = score(theta)
                for eps in eps_grid:
                    rows += [(ds, name, eps, k, r, mse, r2) for r in range(R)]
            for eps in eps_grid:
                for name in shift:
                    s_l, s_A, s_b = scales[name, eps]
                    for r in range(R):
                        lt = max(lmin + s_l * rng.standard_normal() - shift[name] * s_l, 0.0)
                        lam = max(0.0, lam_factor * s_l - lt)
                        G = rng.standard_normal((d, d))
                        E = np.triu(G) + np.triu(G, 1).T
                        b = Xty + s_b * rng.standard_normal(d)
                        try:
                            theta = np.linalg.solve(A + s_A * E + lam * eye, b)
                            mse, r2 = score(theta)
                        except np.linalg.LinAlgError:
                            mse = r2 = np.nan
                        rows.append((ds, name, eps, k, r, mse, r2))
    return rows


def run_loop(cfg: dict, R: int, workdir: Path) -> tuple[float, dict]:
    import pandas as pd
    from bench_sweep import load_dataset  # the same preparation as the engine benchmark

    t0 = time.perf_counter()
    exp = cfg["experiments"][EXPERIMENT]
    names = list(cfg["datasets"]) if exp["datasets"] == "all" else exp["datasets"]
    tables = {ds: load_dataset(ds, workdir) for ds in names}
    t_prep = time.perf_counter() - t0
    rows = obvious_loop(tables, cfg, R)
    t_loop = time.perf_counter() - t0 - t_prep
    trials = pd.DataFrame(
        rows, columns=["dataset", "algorithm", "epsilon", "fold", "repeat", "mse", "r2"]
    )
    table = trials.groupby(["dataset", "algorithm", "epsilon"])["mse"].agg(["mean", "median"])
    table.to_csv(workdir / "loop-table.csv")
    total = time.perf_counter() - t0
    return total, {"prepare_s": round(t_prep, 3), "trials_s": round(t_loop, 3), "trials": len(rows)}


# --------------------------------------------------------------------------
# the pipeline and the engine
# --------------------------------------------------------------------------
def experiment_config(cfg: dict, R: int) -> dict:
    out = dict(cfg)
    out["cv"] = {**cfg["cv"], "repeats": R}
    out["experiments"] = {EXPERIMENT: cfg["experiments"][EXPERIMENT]}
    return out


def run_pipeline(cfg: dict, R: int, cores: int, workdir: Path) -> tuple[float, dict]:
    ignore = shutil.ignore_patterns("__pycache__", ".snakemake", "*.pyc")
    shutil.copy2(ROOT / "Snakefile", workdir / "Snakefile")
    for name in ("workflow", "resources"):
        shutil.copytree(ROOT / name, workdir / name, ignore=ignore)
    (workdir / "config").mkdir()
    (workdir / "config" / "config.yaml").write_text(
        yaml.safe_dump(experiment_config(cfg, R), sort_keys=False)
    )
    env = dict(os.environ)
    env.pop("SNAKEMAKE_PROFILE", None)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--quiet", "all"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return wall, {"cores": cores}


def run_snakemake_floor(workdir: Path) -> float:
    """Wall time of Snakemake running a one-rule workflow that only touches a file."""
    (workdir / "Snakefile").write_text(
        'rule all:\n    output: "done.txt"\n    shell: "touch {output}"\n'
    )
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"]
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not (workdir / "done.txt").exists():
        raise SystemExit(f"the one-rule snakemake run failed:\n{proc.stderr[-2000:]}")
    return wall


def run_engine(cfg: dict, R: int, workdir: Path) -> tuple[float, int]:
    from dpreg.engine.sources import sweep_dataset

    exp = cfg["experiments"][EXPERIMENT]
    names = list(cfg["datasets"]) if exp["datasets"] == "all" else exp["datasets"]
    n = 0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # classical-calibration flags are not errors here
        for ds in names:
            frame = sweep_dataset(
                workdir / f"{ds}.parquet",
                dataset=ds,
                variants={v: cfg["variants"][v] for v in exp["variants"]},
                algorithms=exp["algorithms"],
                epsilons=cfg["epsilons"],
                delta=cfg["delta"],
                folds=cfg["cv"]["folds"],
                repeats=R,
                seed=cfg["seed"],
                rho=cfg["rho"],
                xtx_offset=cfg["xtx_offset"],
            )
            n += len(frame)
    return time.perf_counter() - t0, n


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--skip-pipeline", action="store_true")
    args = ap.parse_args(argv)
    cfg = load_config()
    R = args.repeats
    emit(
        bench="environment",
        python=platform.python_version(),
        numpy=np.__version__,
        machine=platform.machine(),
        cpu_count=os.cpu_count(),
        load_average=os.getloadavg()[0],
        repeats=R,
    )
    with tempfile.TemporaryDirectory(prefix="dpreg-e2e-") as tmp:
        loop_dir = Path(tmp) / "loop"
        loop_dir.mkdir()
        t_loop, info = run_loop(cfg, R, loop_dir)
        emit(bench="loop", seconds=round(t_loop, 3), **info)
        t_eng, n = run_engine(cfg, R, loop_dir)
        emit(bench="engine", seconds=round(t_eng, 3), trials=n)
        floor_dir = Path(tmp) / "floor"
        floor_dir.mkdir()
        t_floor = run_snakemake_floor(floor_dir)
        emit(bench="snakemake_floor", seconds=round(t_floor, 3))
        rec = {
            "bench": "summary",
            "loop_over_engine": round(t_loop / t_eng, 1),
            "loop_over_snakemake_floor": round(t_loop / t_floor, 2),
        }
        if not args.skip_pipeline:
            pipe_dir = Path(tmp) / "pipeline"
            pipe_dir.mkdir()
            t_pipe, pinfo = run_pipeline(cfg, R, args.cores, pipe_dir)
            emit(bench="pipeline", seconds=round(t_pipe, 3), **pinfo)
            rec.update(
                loop_over_pipeline=round(t_loop / t_pipe, 2),
                target_loop_over_pipeline=10,
                met=t_loop / t_pipe >= 10,
            )
        emit(**rec)


if __name__ == "__main__":
    main()
