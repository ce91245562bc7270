"""Throughput of the sweep engine against the fastest numpy formulation.

One (dataset, variant) of bike or elevators (prepared from the offline mirror
with the default config's recipe): 10 folds x ``--repeats`` repeats (100) x
10 epsilons x 8 algorithms (trivial, ols, ridge, ssp-wang, ssp, adassp-wang,
adassp, adassp-analytic).  Prints one JSON line per measurement:

* ``dpreg``: wall seconds (best of ``--best-of``) of
  :func:`dpreg.engine.sweep.sweep_arrays`, the tidy trial table with its ledger
  columns included, and trials/second;
* ``batched``: the fastest formulation written here for the same trials
  (fold statistics once, every fold x algorithm x epsilon x repeat noise
  drawn in one call, one stacked ``np.linalg.solve``, scores as quadratic
  forms in the test-fold statistics), trials/second;
* ``naive`` (with ``--naive``): Wang's per-trial loop (``X^T X`` of the
  training fold recomputed for every trial);
* ``summary``: dpreg / batched.

Run from the repository root::

    python benchmarks/bench_sweep.py                          # bike and elevators
    python benchmarks/bench_sweep.py --dataset bike --variant wang --best-of 5
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core, set before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpreg.algorithms import get_algorithm  # noqa: E402
from dpreg.engine.sweep import assign_folds, sweep_arrays  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = [
    "trivial",
    "ols",
    "ridge",
    "ssp-wang",
    "ssp",
    "adassp-wang",
    "adassp",
    "adassp-analytic",
]
PRIVATE = ["ssp-wang", "ssp", "adassp-wang", "adassp", "adassp-analytic"]
EPSILONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
VARIANTS = {
    "train-maxnorm": {"stats": "train", "scale": "maxnorm"},
    "wang": {"stats": "global", "scale": "rownorm"},
}
DELTA = 1e-6
RHO = 0.05
OFFSET = 1.0  # xtx_offset: A = X^T X + I
SEED = 20200601
# AdaSSP shift factors (see dpreg.algorithms): Wang's sqrt(ln(6/delta)) for
# adassp-wang and adassp-analytic, Kalaja's sqrt(2 ln(3.75/delta)) for adassp.
SHIFT = {
    "adassp-wang": math.sqrt(math.log(6.0 / DELTA)),
    "adassp-analytic": math.sqrt(math.log(6.0 / DELTA)),
    "adassp": math.sqrt(2.0 * math.log(3.75 / DELTA)),
}


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def load_dataset(name: str, workdir: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a dataset of the default config, prepared from the mirror."""
    import yaml

    from dpreg.data import prepare_dataset, read_prepared

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    table = workdir / f"{name}.parquet"
    prepare_dataset(
        name,
        cfg["datasets"][name],
        mirror_dir=ROOT / cfg["mirror"],
        out_table=table,
        out_meta=workdir / f"{name}.json",
    )
    X, y, _, _ = read_prepared(table)
    return X, y


# --------------------------------------------------------------------------
# shared preprocessing of the reference implementations (same maps as dpreg)
# --------------------------------------------------------------------------
def _moments(X: np.ndarray, y: np.ndarray):
    mean = X.mean(axis=0)
    sd = X.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, 1.0)
    ymean = float(y.mean())
    yscale = max(float(y.max()) - ymean, ymean - float(y.min()))
    return mean, sd, ymean, yscale if yscale > 0 else 1.0


def _rownorm(Z: np.ndarray) -> np.ndarray:
    nrm = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    return Z / np.where(nrm > 0, nrm, 1.0)[:, None]


def prepare_folds(X, y, fold, K, variant):
    """Per fold: (X_train, y_train, X_test, t_test) mapped as the variant says.

    ``t_test`` is the target in the scale every variant scores in (for these
    two variants the training scale itself, since ``y`` is centred).
    """
    out = []
    if variant["stats"] == "global":
        mean, sd, ymean, yscale = _moments(X, y)
        Xm = (X - mean) / sd
        Xm = _rownorm(Xm) if variant["scale"] == "rownorm" else Xm / _maxnorm(Xm)
        ym = (y - ymean) / yscale
        for k in range(K):
            te = fold == k
            out.append((Xm[~te], ym[~te], Xm[te], ym[te]))
        return out
    for k in range(K):
        te = fold == k
        mean, sd, ymean, yscale = _moments(X[~te], y[~te])
        Ztr = (X[~te] - mean) / sd
        Zte = (X[te] - mean) / sd
        if variant["scale"] == "maxnorm":
            xmax = _maxnorm(Ztr)
            Ztr, Zte = Ztr / xmax, Zte / xmax
        else:
            Ztr, Zte = _rownorm(Ztr), _rownorm(Zte)
        out.append((Ztr, (y[~te] - ymean) / yscale, Zte, (y[te] - ymean) / yscale))
    return out


def _maxnorm(Z: np.ndarray) -> float:
    m = float(np.sqrt(np.einsum("ij,ij->i", Z, Z)).max())
    return m if m > 0 else 1.0


def noise_scales(d: int) -> dict[tuple[str, float], list[float]]:
    """Noise sigmas of every (private algorithm, epsilon), from dpreg's release lists."""
    out = {}
    for name in PRIVATE:
        alg = get_algorithm(name)
        for eps in EPSILONS:
            rel = alg.releases(epsilon=eps, delta=DELTA, d=d, rho=RHO)
            out[name, eps] = [r.scale for r in rel]
    return out


def _matrix_noise(name: str, G: np.ndarray) -> np.ndarray:
    """Unit-scale matrix noise of ``name`` from i.i.d. N(0,1) ``G`` (..., d, d)."""
    if name == "ssp-wang":
        return G
    if name == "adassp-wang":
        return 0.5 * (G + np.swapaxes(G, -1, -2))
    up = np.triu(G)
    return up + np.swapaxes(np.triu(G, 1), -1, -2)


# --------------------------------------------------------------------------
# (b) straightforward per-trial implementation
# --------------------------------------------------------------------------
def naive_sweep(X, y, fold, K, R, variant, *, folds_to_run=None, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prepared = prepare_folds(X, y, fold, K, variant)
    d = X.shape[1]
    scales = noise_scales(d)
    eye = np.eye(d)
    lam_factor = math.sqrt(d * math.log(2.0 * d * d / RHO))
    rows = []
    for k in folds_to_run if folds_to_run is not None else range(K):
        Xtr, ytr, Xte, tte = prepared[k]
        sst = float(((tte - tte.mean()) ** 2).sum())
        for name in ALGORITHMS:
            for eps in EPSILONS:
                for r in range(R):
                    XtX = Xtr.T @ Xtr
                    Xty = Xtr.T @ ytr
                    lam = np.nan
                    if name == "trivial":
                        theta = np.zeros(d)
                    elif name == "ols":
                        theta = np.linalg.lstsq(XtX, Xty, rcond=None)[0]
                    elif name == "ridge":
                        theta = np.linalg.solve(XtX + eye, Xty)
                        lam = 1.0
                    else:
                        s = scales[name, eps]
                        A = XtX + OFFSET * eye
                        if name.startswith("adassp"):
                            s_l, s_A, s_b = s
                            lmin = float(np.linalg.eigvalsh(A)[0])
                            lt = max(lmin + s_l * rng.standard_normal() - SHIFT[name] * s_l, 0.0)
                            lam = max(0.0, lam_factor * s_l - lt)
                            A = A + lam * eye
                        else:
                            s_A, s_b = s
                        E = _matrix_noise(name, rng.standard_normal((d, d)))
                        theta = np.linalg.solve(A + s_A * E, Xty + s_b * rng.standard_normal(d))
                    res = tte - Xte @ theta
                    sse = float(res @ res)
                    rows.append((name, eps, k, r, sse / tte.size, 1.0 - sse / sst, lam))
    return pd.DataFrame(
        rows, columns=["algorithm", "epsilon", "fold", "repeat", "mse", "r2", "lam"]
    )


# --------------------------------------------------------------------------
# (c) fastest batched formulation
# --------------------------------------------------------------------------
def batched_sweep(X, y, fold, K, R, variant, *, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    E = len(EPSILONS)
    T = E * R
    P = len(PRIVATE)
    # fold statistics
    XtX = np.empty((K, d, d))
    Xty = np.empty((K, d))
    uu = np.empty((K, d, d))
    ur = np.empty((K, d))
    rr = np.empty(K)
    sst = np.empty(K)
    m = np.empty(K)
    for k, (Xtr, ytr, Xte, tte) in enumerate(prepare_folds(X, y, fold, K, variant)):
        XtX[k] = Xtr.T @ Xtr
        Xty[k] = Xtr.T @ ytr
        uu[k] = Xte.T @ Xte
        ur[k] = Xte.T @ tte
        rr[k] = tte @ tte
        m[k] = tte.size
        sst[k] = rr[k] - tte.sum() ** 2 / tte.size
    eye = np.eye(d)
    A0 = XtX + OFFSET * eye
    lmin = np.linalg.eigvalsh(A0)[:, 0]
    # noise scales, laid out (P, T) epsilon-major like the trial index
    scales = noise_scales(d)
    sA = np.empty((P, T))
    sb = np.empty((P, T))
    sl = np.zeros((P, T))
    for p, name in enumerate(PRIVATE):
        for e, eps in enumerate(EPSILONS):
            s = scales[name, eps]
            sl[p, e * R : (e + 1) * R] = s[0] if len(s) == 3 else 0.0
            sA[p, e * R : (e + 1) * R] = s[-2]
            sb[p, e * R : (e + 1) * R] = s[-1]
    # all noise in one call: matrix, vector and lambda draws of every trial
    Z = rng.standard_normal((P, K, T, d * d + d + 1))
    G = Z[..., : d * d].reshape(P, K, T, d, d)
    A = np.empty((P, K, T, d, d))
    lam = np.full((P, K, T), np.nan)
    for p, name in enumerate(PRIVATE):
        A[p] = A0[:, None] + sA[p][None, :, None, None] * _matrix_noise(name, G[p])
        if name.startswith("adassp"):
            lt = np.maximum(lmin[:, None] + sl[p] * Z[p, :, :, -1] - SHIFT[name] * sl[p], 0.0)
            lam[p] = np.maximum(0.0, math.sqrt(d * math.log(2.0 * d * d / RHO)) * sl[p] - lt)
            A[p] += lam[p][..., None, None] * eye
    b = Xty[None, :, None, :] + sb[:, None, :, None] * Z[..., d * d : d * d + d]
    try:
        theta_p = np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:  # pragma: no cover - singular noisy matrix
        theta_p = np.full(b.shape, np.nan)
        for idx in np.ndindex(*b.shape[:-1]):
            try:
                theta_p[idx] = np.linalg.solve(A[idx], b[idx])
            except np.linalg.LinAlgError:
                pass
    # non-private: one solve per fold, repeated over the trials
    theta_np = np.empty((3, K, T, d))
    theta_np[0] = 0.0
    theta_np[1] = np.stack([np.linalg.lstsq(XtX[k], Xty[k], rcond=None)[0] for k in range(K)])[
        :, None
    ]
    theta_np[2] = np.linalg.solve(XtX + eye, Xty[..., None])[..., 0][:, None]
    theta = np.concatenate([theta_np, theta_p])  # (8, K, T, d) in ALGORITHMS order
    lam_all = np.concatenate(
        [np.full((1, K, T), np.nan), np.full((1, K, T), np.nan), np.ones((1, K, T)), lam]
    )
    quad = np.einsum("akti,kij,aktj->akt", theta, uu, theta)
    sse = np.maximum(rr[None, :, None] - 2.0 * np.einsum("akti,ki->akt", theta, ur) + quad, 0.0)
    n_alg = len(ALGORITHMS)
    return pd.DataFrame(
        {
            "algorithm": np.repeat(ALGORITHMS, K * T),
            "epsilon": np.tile(np.repeat(EPSILONS, R), n_alg * K),
            "fold": np.tile(np.repeat(np.arange(K), T), n_alg),
            "repeat": np.tile(np.arange(R), n_alg * K * E),
            "mse": (sse / m[None, :, None]).ravel(),
            "r2": (1.0 - sse / sst[None, :, None]).ravel(),
            "lam": lam_all.ravel(),
            "failed": ~np.isfinite(sse).ravel(),
        }
    )


# --------------------------------------------------------------------------
def run_dpreg(X, y, K, R, variant, dataset) -> pd.DataFrame:
    with warnings.catch_warnings():
        # classical calibrations at epsilon >= 2 are flagged, not an error here
        warnings.simplefilter("ignore")
        return sweep_arrays(
            X,
            y,
            dataset=dataset,
            seed=SEED,
            folds=K,
            variants={"v": variant},
            algorithms=ALGORITHMS,
            epsilons=EPSILONS,
            delta=DELTA,
            repeats=R,
            rho=RHO,
            xtx_offset=OFFSET,
        )


def best_of(fn, n):
    times, out = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, out


def _key(df):
    return df.sort_values(["algorithm", "epsilon", "fold", "repeat"]).reset_index(drop=True)


def checks(ref: pd.DataFrame, other: pd.DataFrame) -> dict[str, float]:
    """Non-private trials must agree to rounding; private medians to sampling noise."""
    a, b = _key(ref), _key(other)
    nonpriv = a["algorithm"].isin(["trivial", "ols", "ridge"]).to_numpy()
    rel = np.abs(a["mse"].to_numpy() - b["mse"].to_numpy()) / np.abs(a["mse"].to_numpy())
    ma = a[~nonpriv].groupby(["algorithm", "epsilon"])["mse"].median()
    mb = b[~nonpriv].groupby(["algorithm", "epsilon"])["mse"].median()
    return {
        "nonprivate_mse_max_rel_diff": float(rel[nonpriv].max()),
        "private_median_mse_max_abs_log10_ratio": float(np.abs(np.log10(ma / mb)).max()),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=["bike", "elevators", "all"], default="all")
    ap.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    ap.add_argument("--best-of", type=int, default=3)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--naive", action="store_true", help="also time the per-trial loop")
    ap.add_argument(
        "--naive-limit",
        type=float,
        default=60.0,
        help="time one fold of the naive loop and scale linearly if the "
        "projected total exceeds this many seconds",
    )
    args = ap.parse_args(argv)
    datasets = ["bike", "elevators"] if args.dataset == "all" else [args.dataset]
    names = list(VARIANTS) if args.variant == "all" else [args.variant]
    K, R = args.folds, args.repeats
    trials = K * R * len(EPSILONS) * len(ALGORITHMS)
    emit(
        bench="environment",
        python=platform.python_version(),
        numpy=np.__version__,
        machine=platform.machine(),
        cpu_count=os.cpu_count(),
        load_average=os.getloadavg()[0],
        threads=1,
        trials=trials,
    )
    with tempfile.TemporaryDirectory(prefix="dpreg-bench-") as tmp:
        for ds in datasets:
            X, y = load_dataset(ds, Path(tmp))
            fold = assign_folds(X.shape[0], K, seed=SEED, dataset=ds)
            for vname in names:
                bench_one(ds, X, y, fold, vname, K, R, args)


def bench_one(ds, X, y, fold, vname, K, R, args) -> None:
    variant = VARIANTS[vname]
    where = {"dataset": ds, "n": int(X.shape[0]), "d": int(X.shape[1]), "variant": vname}
    run_dpreg(X, y, K, R, variant, ds)  # warm-up (imports, caches)
    t_dp, all_dp, df_dp = best_of(lambda: run_dpreg(X, y, K, R, variant, ds), args.best_of)
    emit(
        bench="dpreg",
        **where,
        trials=len(df_dp),
        seconds=round(t_dp, 4),
        runs=[round(t, 4) for t in all_dp],
        trials_per_second=round(len(df_dp) / t_dp),
    )
    t_bt, all_bt, df_bt = best_of(lambda: batched_sweep(X, y, fold, K, R, variant), args.best_of)
    emit(
        bench="batched",
        **where,
        trials=len(df_bt),
        seconds=round(t_bt, 4),
        runs=[round(t, 4) for t in all_bt],
        trials_per_second=round(len(df_bt) / t_bt),
        **checks(df_dp, df_bt),
    )
    summary = {"dpreg_over_batched": round(t_dp / t_bt, 2)}
    if args.naive:
        t0 = time.perf_counter()
        naive_sweep(X, y, fold, K, R, variant, folds_to_run=[0])
        t_nv = (time.perf_counter() - t0) * K
        emit(
            bench="naive",
            **where,
            trials=len(df_dp),
            seconds=round(t_nv, 3),
            scaled_from_one_fold=True,
            trials_per_second=round(len(df_dp) / t_nv),
        )
        summary["naive_over_dpreg"] = round(t_nv / t_dp, 1)
    emit(bench="summary", **where, **summary)


if __name__ == "__main__":
    main()
