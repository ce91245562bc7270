"""The evaluation engine: K folds x R repeats x epsilon grid x algorithms.

For one (dataset, variant) the sufficient statistics of every fold are
computed once (:func:`dpreg.preprocess.fold_statistics`); every trial after
that is d x d work.  For each (fold, algorithm, epsilon) the ``R`` noise
repeats are drawn and solved in one batch and scored with the test fold's
:class:`~dpreg.stats.ScoreStats` (no pass over rows).

Randomness: the noise of (dataset, variant, fold, algorithm, epsilon) comes
from ``SeedSequence([seed, id(dataset), id(variant), id(fold),
id(algorithm), id(epsilon)])`` with ids from :func:`dpreg.seeding.stable_id`,
and repeats are laid out repeat-major, so a trial does not depend on what
else is run, on job order or core count, and the first ``R`` repeats do not
change when ``R`` grows.  Folds come from ``SeedSequence([seed,
id(dataset), id("folds"), id(K)])``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import (
    DPRegError,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_positive_int,
)
from dpreg.algorithms import ALGORITHMS, get_algorithm
from dpreg.ledger import release_columns, trial_columns
from dpreg.mechanisms import ClassicalCalibrationWarning
from dpreg.peers import PEERS, diffprivlib_available, fit_diffprivlib, peer_ledger
from dpreg.preprocess import (
    ArraySource,
    RowSource,
    VariantSpec,
    fold_rows,
    fold_statistics,
    private_fold_data,
    private_stat_releases,
    raw_fold_moments,
)
from dpreg.seeding import seed_sequence
from dpreg.tables import TRIAL_COLUMNS

__all__ = ["TRIAL_COLUMNS", "assign_folds", "sweep_arrays", "sweep_dataset", "sweep_source"]

log = logging.getLogger(__name__)


def assign_folds(n: int, folds: int, *, seed: int, dataset: str) -> np.ndarray:
    """Fold id (0..K-1) of each of ``n`` rows, fixed by ``seed`` and the dataset name.

    A random permutation is cut into ``K`` folds whose sizes differ by at
    most one.
    """
    K = check_positive_int(folds, "cv.folds", minimum=2)
    if n < 2 * K:
        raise DPRegError(f"dataset {dataset!r} has {n} rows; {K} folds need at least {2 * K}")
    rng = np.random.default_rng(seed_sequence(seed, dataset, "folds", K))
    fold = np.empty(n, dtype=np.int32)
    fold[rng.permutation(n)] = np.arange(n) % K
    return fold


def _check_grid(epsilons: Sequence[float], delta: float, repeats: int, rho: float) -> list[float]:
    eps = [check_epsilon(e, f"epsilons[{i}]") for i, e in enumerate(epsilons)]
    if not eps:
        raise DPRegError("epsilons must list at least one value")
    if len(set(eps)) != len(eps):
        raise DPRegError(f"epsilons contains duplicates: {list(epsilons)}")
    check_delta(delta)
    check_positive_int(repeats, "cv.repeats")
    if not (0.0 < rho < 1.0):
        raise DPRegError(f"rho must lie in (0, 1), got {rho!r}")
    return eps


def sweep_source(
    source: RowSource,
    *,
    dataset: str,
    variants: Mapping[str, Mapping[str, Any] | VariantSpec],
    algorithms: Sequence[str],
    epsilons: Sequence[float],
    delta: float,
    folds: int,
    repeats: int,
    seed: int,
    rho: float = 0.05,
    xtx_offset: float = 1.0,
    algorithm_params: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Run every trial of one dataset over a :class:`~dpreg.preprocess.RowSource`.

    Returns one row per trial with the columns :data:`TRIAL_COLUMNS`.
    ``source.chunks()`` must yield fold ids made by :func:`assign_folds`.
    ``algorithm_params`` maps an algorithm name to hyperparameters overriding
    its registry defaults.  Algorithms that need rows
    (:attr:`~dpreg.algorithms.Algorithm.needs_rows`) get the transformed
    training rows of each fold.
    """
    eps_grid = _check_grid(epsilons, delta, repeats, rho)
    peers = [a for a in algorithms if a in PEERS]
    algs = [get_algorithm(a) for a in algorithms if a not in PEERS]
    if "diffprivlib" in peers and not diffprivlib_available():
        log.warning(
            "%s: diffprivlib is not installed; its curve is skipped "
            "(pip install 'dpreg[peers]' to include it)",
            dataset,
        )
        peers.remove("diffprivlib")
    specs = {name: VariantSpec.from_dict(v, name) for name, v in variants.items()}
    R = int(repeats)
    E = len(eps_grid)
    blocks: list[dict[str, Any]] = []
    for vname, spec in specs.items():
        if spec.private_stats is not None:
            blocks.extend(
                _private_stats_blocks(
                    source,
                    vname,
                    spec,
                    algs,
                    eps_grid,
                    dataset=dataset,
                    delta=delta,
                    folds=folds,
                    R=R,
                    seed=seed,
                    rho=rho,
                    xtx_offset=xtx_offset,
                )
            )
            continue
        params = dict(algorithm_params or {})
        for fd in fold_statistics(source, spec, folds=folds):
            rows = fold_rows(source, fd) if any(a.needs_rows for a in algs) else None
            for alg in algs:
                p = params.get(alg.name)
                run = {
                    "delta": delta,
                    "d": fd.train.d,
                    "rho": rho,
                    "n": fd.train.n,
                    "params": p,
                }
                ledger = trial_columns(alg.name, eps_grid, **run)
                res = alg.fit_grid(
                    fd.train,
                    epsilons=eps_grid,
                    delta=delta,
                    # non-private algorithms draw nothing: no generators to build;
                    # algorithms with the same noise layout share a stream
                    rngs=[
                        np.random.default_rng(
                            seed_sequence(seed, dataset, vname, fd.fold, alg.noise_stream, eps)
                        )
                        if alg.private
                        else None
                        for eps in eps_grid
                    ],
                    size=R,
                    rho=rho,
                    xtx_offset=xtx_offset,
                    params=p,
                    rows=rows if alg.needs_rows else None,
                )
                mse, r2 = _score(fd.test, res.theta, res.failed)
                blocks.append(
                    _block(
                        variant=vname,
                        algorithm=alg.name,
                        epsilons=eps_grid,
                        fold=fd.fold,
                        R=R,
                        mse=mse,
                        r2=r2,
                        lam=res.lam,
                        failed=res.failed,
                        outside=[alg.outside_validity(epsilon=e, **run) for e in eps_grid],
                        calibration=alg.calibration,
                        ledger=[ledger[e] for e in eps_grid],
                    )
                )
            for peer in peers:
                Xtr, ytr = fold_rows(source, fd)
                thetas = []
                for eps in eps_grid:
                    ss = seed_sequence(seed, dataset, vname, fd.fold, peer, eps)
                    thetas.append(
                        fit_diffprivlib(Xtr, ytr, epsilon=eps, seeds=ss.generate_state(R))
                    )
                theta = np.concatenate(thetas)
                failed = ~np.all(np.isfinite(theta), axis=1)
                mse, r2 = _score(fd.test, theta, failed)
                blocks.append(
                    _block(
                        variant=vname,
                        algorithm=peer,
                        epsilons=eps_grid,
                        fold=fd.fold,
                        R=R,
                        mse=mse,
                        r2=r2,
                        lam=np.full(E * R, np.nan),
                        failed=failed,
                        outside=[False] * E,
                        calibration="laplace",
                        ledger=[peer_ledger(peer, e) for e in eps_grid],
                    )
                )
    frame = _assemble(blocks, dataset=dataset, delta=delta, seed=seed)
    flagged = set(frame.loc[frame["outside_validity"], "algorithm"])
    # reproductions of published code (Wang's scales) are labelled as such in the
    # ledger; only the algorithms the project calls private warn here
    bad = sorted(a for a in flagged if a in ALGORITHMS and not ALGORITHMS[a].reproduction)
    if bad:
        warnings.warn(
            f"{dataset}: {', '.join(bad)} made releases outside their calibration's proven "
            "validity (e.g. classical Gaussian with a per-release epsilon >= 1); those trials "
            "are flagged in the 'outside_validity' column",
            ClassicalCalibrationWarning,
            stacklevel=2,
        )
    return frame


def _score(test: Any, theta: np.ndarray, failed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MSE and R^2 of a batch of coefficients on one test fold (NaN where failed)."""
    sse = test.sse(np.where(failed[:, None], 0.0, theta))
    return (
        np.where(failed, np.nan, sse / test.m),
        np.where(failed, np.nan, test.r2_from_sse(sse)),
    )


def _block(
    *, variant, algorithm, epsilons, fold, R, mse, r2, lam, failed, outside, calibration, ledger
) -> dict[str, Any]:
    """The trials of one (variant, fold, algorithm) over ``epsilons`` x ``R`` repeats."""
    failed = np.asarray(failed, dtype=bool)
    return {
        "variant": variant,
        "algorithm": algorithm,
        "epsilon": np.repeat(epsilons, R),
        "fold": fold,
        "repeat": np.tile(np.arange(R), len(epsilons)),
        "mse": np.where(failed, np.nan, mse),
        "r2": np.where(failed, np.nan, r2),
        "lam": lam,
        "failed": failed,
        "outside_validity": np.repeat(outside, R).astype(bool),
        "calibration": calibration,
        "ledger": ledger,
        "R": R,
    }


def _private_stats_blocks(
    source, vname, spec, algs, eps_grid, *, dataset, delta, folds, R, seed, rho, xtx_offset
) -> list[dict[str, Any]]:
    """Trials of a variant whose transform statistics are released privately.

    Each run -- one (fold, epsilon, repeat) -- spends ``epsilon_share`` of
    (epsilon, delta) on noisy column sums, sums of squares and the y sum
    (:func:`dpreg.preprocess.private_stat_releases`) and the rest on the
    algorithm; the ledger composes both.  The statistics noise of a run is
    shared by the algorithms compared on it (common random numbers).
    """
    if spec.scale != "maxnorm" or spec.clip_sigma is not None:
        raise DPRegError(
            f"variant {vname!r}: private_stats needs scale 'maxnorm' and no clipping "
            "(the transform must be affine in x)"
        )
    share = spec.private_stats.epsilon_share
    ranges, moms = raw_fold_moments(source, folds)
    total = moms[0]
    for m in moms[1:]:
        total = total + m
    public = VariantSpec.from_dict({**spec.to_dict(), "private_stats": None})
    shared = [
        (fd.transform.t_center, fd.transform.t_scale)
        for fd in fold_statistics(source, public, folds=folds)
    ]
    d = source.d + int(spec.intercept)
    blocks = []
    for k in range(folds):
        for eps in eps_grid:
            stat_rel = private_stat_releases(ranges, epsilon=share * eps, delta=share * delta, d=d)
            fds = [
                private_fold_data(
                    spec,
                    ranges,
                    total - moms[k],
                    moms[k],
                    shared[k],
                    stat_rel,
                    fold=k,
                    rng=np.random.default_rng(
                        seed_sequence(seed, dataset, vname, k, "private_stats", eps, r)
                    ),
                )
                for r in range(R)
            ]
            for alg in algs:
                e_alg, d_alg = (1 - share) * eps, (1 - share) * delta
                thetas, lams, fails = [], [], []
                for r, fd in enumerate(fds):
                    res = alg.fit(
                        fd.train,
                        epsilon=e_alg,
                        delta=d_alg,
                        size=1,
                        rho=rho,
                        xtx_offset=xtx_offset,
                        rng=np.random.default_rng(
                            seed_sequence(seed, dataset, vname, k, alg.name, eps, "run", r)
                        ),
                    )
                    thetas.append(res.theta)
                    lams.append(res.lam)
                    fails.append(res.failed)
                failed = np.concatenate(fails)
                theta = np.where(failed[:, None], 0.0, np.concatenate(thetas))
                mse = np.array([fd.test.mse(t[None])[0] for fd, t in zip(fds, theta, strict=True)])
                r2 = np.array([fd.test.r2(t[None])[0] for fd, t in zip(fds, theta, strict=True)])
                led = release_columns(
                    stat_rel + alg.releases(epsilon=e_alg, delta=d_alg, d=d, rho=rho), delta=delta
                )
                blocks.append(
                    _block(
                        variant=vname,
                        algorithm=alg.name,
                        epsilons=[eps],
                        fold=k,
                        R=R,
                        mse=mse,
                        r2=r2,
                        lam=np.concatenate(lams),
                        failed=failed,
                        outside=[alg.outside_validity(epsilon=e_alg, delta=d_alg, d=d, rho=rho)],
                        calibration=alg.calibration,
                        ledger=[led],
                    )
                )
    return blocks


def _assemble(
    blocks: list[dict[str, Any]], *, dataset: str, delta: float, seed: int
) -> pd.DataFrame:
    if not blocks:
        return pd.DataFrame(columns=TRIAL_COLUMNS)
    sizes = [len(b["mse"]) for b in blocks]
    cols: dict[str, Any] = {}
    for key in ("epsilon", "repeat", "mse", "r2", "lam", "failed", "outside_validity"):
        cols[key] = np.concatenate([b[key] for b in blocks])
    for key in ("variant", "algorithm", "calibration", "fold"):
        cols[key] = np.repeat([b[key] for b in blocks], sizes)
    frame = pd.DataFrame(
        {
            "dataset": dataset,
            "variant": cols["variant"],
            "algorithm": cols["algorithm"],
            "epsilon": cols["epsilon"],
            "delta": float(delta),
            "fold": cols["fold"].astype(np.int64),
            "repeat": cols["repeat"].astype(np.int64),
            "mse": cols["mse"],
            "r2": cols["r2"],
            "lam": cols["lam"],
            "failed": cols["failed"].astype(bool),
            "outside_validity": cols["outside_validity"].astype(bool),
            "calibration": cols["calibration"],
        }
    )
    for key in ("releases", "eps_basic", "delta_basic", "eps_exact", "delta_exact"):
        frame[key] = np.concatenate(
            [np.repeat([led[key] for led in b["ledger"]], b["R"]) for b in blocks]
        )
    # one key per (variant, fold, algorithm, epsilon), repeated over the repeats
    keys = [
        f"{int(seed)}/{dataset}/{b['variant']}/{b['fold']}/{b['algorithm']}/{e!r}"
        for b in blocks
        for e in dict.fromkeys(b["epsilon"].tolist())
    ]
    frame["seed_key"] = np.repeat(
        np.array(keys, dtype=object),
        [b["R"] for b in blocks for _ in dict.fromkeys(b["epsilon"].tolist())],
    )
    return frame[TRIAL_COLUMNS]


def sweep_arrays(
    X: np.ndarray, y: np.ndarray, *, dataset: str = "data", seed: int, folds: int = 10, **kw: Any
) -> pd.DataFrame:
    """:func:`sweep_source` on in-memory arrays (folds from :func:`assign_folds`)."""
    X = check_finite_array(np.asarray(X, dtype=float), "X")
    y = check_finite_array(np.asarray(y, dtype=float), "y")
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DPRegError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    fold = assign_folds(X.shape[0], folds, seed=seed, dataset=dataset)
    return sweep_source(ArraySource(X, y, fold), dataset=dataset, seed=seed, folds=folds, **kw)


class ParquetSource:
    """Streams a prepared Parquet table in chunks (never the whole table in memory)."""

    def __init__(self, path: str | Path, fold: np.ndarray, *, chunk_rows: int = 65536):
        from dpreg.data import prepared_shape

        self.path = Path(path)
        self.n, self.d = prepared_shape(self.path)
        self.fold = fold
        self.chunk_rows = int(chunk_rows)

    def chunks(self):
        from dpreg.data import iter_prepared

        lo = 0
        for X, y in iter_prepared(self.path, chunk_rows=self.chunk_rows):
            hi = lo + X.shape[0]
            yield X, y, self.fold[lo:hi]
            lo = hi


def sweep_dataset(
    table_path: str | Path,
    *,
    dataset: str,
    variants: Mapping[str, Mapping[str, Any] | VariantSpec],
    algorithms: Sequence[str],
    epsilons: Sequence[float],
    delta: float,
    folds: int,
    repeats: int,
    seed: int,
    rho: float = 0.05,
    xtx_offset: float = 1.0,
    memory_budget_mb: float | None = None,
    chunk_rows: int = 65536,
) -> pd.DataFrame:
    """Sweep a prepared table (see :mod:`dpreg.data`).

    Tables whose float64 size exceeds ``memory_budget_mb`` are streamed in
    chunks of ``chunk_rows``; smaller ones are read once into memory.  Both
    paths run the same code on the same fold ids, so their results agree
    to rounding (summation order).
    """
    from dpreg.data import prepared_shape, read_prepared

    n, d = prepared_shape(table_path)
    fold = assign_folds(n, folds, seed=seed, dataset=dataset)
    size_mb = table_size_mb(n, d)
    source: RowSource
    if memory_budget_mb is not None and size_mb > memory_budget_mb:
        source = ParquetSource(table_path, fold, chunk_rows=chunk_rows)
    else:
        X, y, _, _ = read_prepared(table_path)
        source = ArraySource(X, y, fold)
    return sweep_source(
        source,
        dataset=dataset,
        variants=variants,
        algorithms=algorithms,
        epsilons=epsilons,
        delta=delta,
        folds=folds,
        repeats=repeats,
        seed=seed,
        rho=rho,
        xtx_offset=xtx_offset,
    )


def table_size_mb(n: int, d: int) -> float:
    """Float64 size of an ``n x (d + 1)`` table in MiB."""
    return n * (d + 1) * 8 / 2**20 if n and d else 0.0
