"""The evaluation engine: K folds x R repeats x epsilon grid x algorithms.

For one (dataset, variant) the sufficient statistics of every fold are
computed once (:func:`dpreg.preprocess.fold_statistics`) and shared by every
algorithm run on that variant; every trial after that is d x d work.  For
each (fold, algorithm, epsilon) the ``R`` noise repeats are drawn and solved
in one batch and scored with the test fold's :class:`~dpreg.preprocess.stats.ScoreStats`
(no pass over rows).  What runs is the grid ``variants x algorithms`` at
``repeats``, or a *plan* ``variant -> {algorithm: repeats}`` (the workflow's
form: one job sweeps every pair any experiment needs on a dataset).

Randomness: the noise of (dataset, variant, fold, algorithm, epsilon) comes
from ``SeedSequence([seed, id(dataset), id(variant), id(fold),
id(noise stream), id(epsilon)])`` with ids from
:func:`dpreg.seeding.stable_id` (algorithms with the same noise layout share
a stream: common random numbers), and repeats are laid out repeat-major, so
a trial does not depend on what else is run, on job order or core count, and
the first ``R`` repeats do not change when ``R`` grows.  Private-stats runs
draw their statistics noise from ``SeedSequence([..., id(fold),
id("private_stats"), id(epsilon)])`` one run after another, and each
algorithm's noise from its stream in the same order.  An algorithm's
epsilon-free step (TukeyEM's partition and batch fits,
:attr:`~dpreg.algorithms.base.Algorithm.epsilon_free_step`) comes from
``SeedSequence([..., id(fold), id(algorithm), id("epsilon-free")])`` and is
computed once per (fold, algorithm) for the whole grid.  Folds come from
``SeedSequence([seed, id(dataset), id("folds"), id(K)])``.
"""

from __future__ import annotations

import logging
import math
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
from dpreg.algorithms import (
    ALGORITHMS,
    Algorithm,
    get_algorithm,
)
from dpreg.algorithms.peers import PEERS, diffprivlib_available, fit_diffprivlib, peer_ledger
from dpreg.data import iter_prepared, prepared_shape
from dpreg.engine.run_ledger import trial_columns
from dpreg.io.tables import TRIAL_COLUMNS
from dpreg.preprocess import (
    ArraySource,
    FoldData,
    PublicRanges,
    RowSource,
    VariantSpec,
    algorithm_budget,
    fold_rows,
    fold_statistics,
    private_fold_data_runs,
    private_stat_releases,
    raw_fold_moments,
)
from dpreg.privacy.ledger import release_columns
from dpreg.privacy.mechanisms import ClassicalCalibrationWarning
from dpreg.seeding import seed_sequence

__all__ = ["TRIAL_COLUMNS", "assign_folds", "sweep_arrays", "sweep_dataset", "sweep_source"]

log = logging.getLogger(__name__)

#: Rows per chunk of every pass over a table (in memory or streamed): the
#: temporaries of a pass are this many rows, and the same chunking gives the
#: same summation order, so in-memory and streamed sweeps agree to rounding.
CHUNK_ROWS = 65536


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
    fold[rng.permutation(n)] = np.arange(n, dtype=np.int32) % np.int32(K)
    return fold


def _check_grid(
    epsilons: Sequence[float], delta: float, repeats: int, rho: float, xtx_offset: float = 0.0
) -> list[float]:
    eps = [check_epsilon(e, f"epsilons[{i}]") for i, e in enumerate(epsilons)]
    if not eps:
        raise DPRegError("epsilons must list at least one value")
    if len(set(eps)) != len(eps):
        raise DPRegError(f"epsilons contains duplicates: {list(epsilons)}")
    check_delta(delta)
    check_positive_int(repeats, "cv.repeats")
    if not (0.0 < rho < 1.0):
        raise DPRegError(f"rho must lie in (0, 1), got {rho!r}")
    if not (math.isfinite(xtx_offset) and xtx_offset >= 0):
        raise DPRegError(f"xtx_offset must be a finite number >= 0, got {xtx_offset!r}")
    return eps


def _normalise_plan(
    variants: Mapping[str, Any],
    algorithms: Sequence[str],
    repeats: int | None,
    plan: Mapping[str, Mapping[str, int]] | None,
) -> dict[str, dict[str, int]]:
    """``variant -> {algorithm: repeats}`` from a plan, or from the full grid."""
    if plan is None:
        if repeats is None:
            raise DPRegError("give repeats (with algorithms) or a plan")
        check_positive_int(repeats, "cv.repeats")
        plan = {v: dict.fromkeys(algorithms, repeats) for v in variants}
    elif algorithms:
        raise DPRegError("give either algorithms and repeats or a plan, not both")
    out: dict[str, dict[str, int]] = {}
    for vname, algs in plan.items():
        if vname not in variants:
            raise DPRegError(
                f"plan names variant {vname!r}, which is not among the variants "
                f"({', '.join(variants)})"
            )
        out[vname] = {
            str(a): check_positive_int(r, f"repeats of {vname}/{a}") for a, r in algs.items()
        }
    return out


def sweep_source(
    source: RowSource,
    *,
    dataset: str,
    variants: Mapping[str, Mapping[str, Any] | VariantSpec],
    epsilons: Sequence[float],
    delta: float,
    folds: int,
    seed: int,
    algorithms: Sequence[str] = (),
    repeats: int | None = None,
    plan: Mapping[str, Mapping[str, int]] | None = None,
    rho: float = 0.05,
    xtx_offset: float = 1.0,
    algorithm_params: Mapping[str, Mapping[str, Any]] | None = None,
    ranges: PublicRanges | None = None,
) -> pd.DataFrame:
    """Run every trial of one dataset over a :class:`~dpreg.preprocess.RowSource`.

    What runs is either the full grid ``variants x algorithms`` at
    ``repeats`` noise repeats, or a ``plan``: ``variant -> {algorithm:
    repeats}`` (the workflow's form, where each pair has its own number of
    repeats).  Each variant's fold statistics are computed once and shared by
    all its algorithms.

    Returns one row per trial with the columns :data:`TRIAL_COLUMNS`.
    ``source.chunks()`` must yield fold ids made by :func:`assign_folds`.
    ``algorithm_params`` maps an algorithm name to hyperparameters overriding
    its registry defaults.  Algorithms that need rows
    (:attr:`~dpreg.algorithms.Algorithm.needs_rows`) and external peers get
    the transformed training rows of each fold.  ``ranges`` are the declared
    public ranges of the dataset (needed only by private-stats variants).
    """
    work = _normalise_plan(variants, algorithms, repeats, plan)
    eps_grid = _check_grid(epsilons, delta, 1, rho, xtx_offset)
    specs = {name: VariantSpec.from_dict(variants[name], name) for name in work}
    params = dict(algorithm_params or {})
    blocks: list[dict[str, Any]] = []
    for vname, spec in specs.items():
        algs, peers = _split_algorithms(work[vname], dataset)
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
                    seed=seed,
                    rho=rho,
                    xtx_offset=xtx_offset,
                    params=params,
                    ranges=ranges,
                )
            )
            continue
        need_rows = bool(peers) or any(a.needs_rows for a, _ in algs)
        for fd in fold_statistics(source, spec, folds=folds):
            rows = fold_rows(source, fd) if need_rows else None
            for alg, R in algs:
                blocks.append(
                    _fit_block(
                        alg,
                        fd,
                        vname,
                        eps_grid,
                        R=R,
                        rows=rows,
                        dataset=dataset,
                        delta=delta,
                        seed=seed,
                        rho=rho,
                        xtx_offset=xtx_offset,
                        params=params.get(alg.name),
                    )
                )
            for peer, R in peers:
                blocks.append(
                    _peer_block(
                        peer,
                        fd,
                        vname,
                        eps_grid,
                        R=R,
                        rows=rows,
                        dataset=dataset,
                        delta=delta,
                        seed=seed,
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


def _split_algorithms(
    algs: Mapping[str, int], dataset: str
) -> tuple[list[tuple[Algorithm, int]], list[tuple[str, int]]]:
    """Registry algorithms and external peers (with their repeats) of one variant."""
    peers = [(a, R) for a, R in algs.items() if a in PEERS]
    if any(a == "diffprivlib" for a, _ in peers) and not diffprivlib_available():
        log.warning(
            "%s: diffprivlib is not installed; its curve is skipped "
            "(pip install 'dpreg[peers]' to include it)",
            dataset,
        )
        peers = [(a, R) for a, R in peers if a != "diffprivlib"]
    return [(get_algorithm(a), R) for a, R in algs.items() if a not in PEERS], peers


def _release_args(
    train: Any, *, delta: float, rho: float, params: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Keyword arguments of :meth:`Algorithm.releases` (bar epsilon) for a training fold."""
    return {
        "delta": delta,
        "d": train.d,
        "rho": rho,
        "n": train.n,
        "params": params,
        "bound_x": train.bound_x,
        "bound_y": train.bound_y,
    }


def _fit_block(
    alg: Algorithm,
    fd: FoldData,
    vname: str,
    eps_grid: list[float],
    *,
    R: int,
    rows: tuple[np.ndarray, np.ndarray] | None,
    dataset: str,
    delta: float,
    seed: int,
    rho: float,
    xtx_offset: float,
    params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Every (epsilon, repeat) of one registry algorithm on one fold."""
    run = _release_args(fd.train, delta=delta, rho=rho, params=params)
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
        params=params,
        rows=rows if alg.needs_rows else None,
        # an epsilon-free step (TukeyEM's partition) is shared by the grid: done once
        shared_seed=seed_sequence(seed, dataset, vname, fd.fold, alg.name, "epsilon-free")
        if alg.epsilon_free_step
        else None,
    )
    mse, r2 = _score(fd.test, res.theta, res.failed)
    return _block(
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


def _peer_block(
    peer: str,
    fd: FoldData,
    vname: str,
    eps_grid: list[float],
    *,
    R: int,
    rows: tuple[np.ndarray, np.ndarray] | None,
    dataset: str,
    delta: float,
    seed: int,
) -> dict[str, Any]:
    """Every (epsilon, repeat) of an external peer on one fold (one library fit per trial)."""
    assert rows is not None
    Xtr, ytr = rows
    thetas = []
    for eps in eps_grid:
        ss = seed_sequence(seed, dataset, vname, fd.fold, peer, eps)
        thetas.append(fit_diffprivlib(Xtr, ytr, epsilon=eps, seeds=ss.generate_state(R)))
    theta = np.concatenate(thetas)
    failed = ~np.all(np.isfinite(theta), axis=1)
    mse, r2 = _score(fd.test, theta, failed)
    return _block(
        variant=vname,
        algorithm=peer,
        epsilons=eps_grid,
        fold=fd.fold,
        R=R,
        mse=mse,
        r2=r2,
        lam=np.full(len(eps_grid) * R, np.nan),
        failed=failed,
        outside=[False] * len(eps_grid),
        calibration="laplace",
        ledger=[peer_ledger(peer, e, delta=delta) for e in eps_grid],
    )


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
    source: RowSource,
    vname: str,
    spec: VariantSpec,
    algs: list[tuple[Algorithm, int]],
    eps_grid: list[float],
    *,
    dataset: str,
    delta: float,
    folds: int,
    seed: int,
    rho: float,
    xtx_offset: float,
    params: Mapping[str, Mapping[str, Any]],
    ranges: PublicRanges | None,
) -> list[dict[str, Any]]:
    """Trials of a variant whose transform statistics are released privately.

    Each run -- one (fold, epsilon, repeat) -- spends the variant's share of
    (epsilon, delta) on noisy column sums, sums of squares and the y sum
    (:func:`dpreg.preprocess.private_stat_releases`) and the rest on the
    algorithm (:func:`dpreg.preprocess.algorithm_budget`); the ledger
    composes both.  The statistics noise of a run is shared by the
    algorithms compared on it (common random numbers).

    Batched over repeats: per (fold, epsilon) one generator draws the
    statistics noise of the runs one after another, and per algorithm one
    generator (keyed by its noise stream) draws the runs' noise one after
    another, so run ``r`` is the same whatever the number of repeats; the
    noisy systems of all runs are solved in one stacked call.
    """
    if spec.scale != "maxnorm" or spec.clip_sigma is not None:
        raise DPRegError(
            f"variant {vname!r}: private_stats needs scale 'maxnorm' and no clipping "
            "(the transform must be affine in x)"
        )
    ranges, moms = raw_fold_moments(source, folds, ranges=ranges)
    total = moms[0]
    for m in moms[1:]:
        total = total + m
    public = VariantSpec.from_dict({**spec.to_dict(), "private_stats": None})
    shared = [
        (fd.transform.t_center, fd.transform.t_scale)
        for fd in fold_statistics(source, public, folds=folds)
    ]
    d = source.d + int(spec.has_intercept)
    R_max = max((R for _, R in algs), default=0)
    # per epsilon, the same for every fold: the algorithm's budget, and the
    # statistics' releases calibrated for what it leaves
    budgets = {}
    for eps in eps_grid:
        e_alg, d_alg = algorithm_budget(spec, epsilon=eps, delta=delta)
        budgets[eps] = (
            e_alg,
            d_alg,
            private_stat_releases(ranges, epsilon=eps - e_alg, delta=delta - d_alg, d=d),
        )
    blocks = []
    for k in range(folds):
        for eps in eps_grid:
            e_alg, d_alg, stat_rel = budgets[eps]
            stats_rng = np.random.default_rng(
                seed_sequence(seed, dataset, vname, k, "private_stats", eps)
            )
            args = (spec, ranges, total - moms[k], moms[k], shared[k], stat_rel)
            # the R runs vectorised: bit-identical to R calls of private_fold_data
            fds = private_fold_data_runs(*args, fold=k, rng=stats_rng, size=R_max)
            tests = _RunTests(fds)
            for alg, R in algs:
                blocks.append(
                    _runs_block(
                        alg,
                        fds[:R],
                        vname,
                        eps,
                        e_alg,
                        d_alg,
                        stat_rel,
                        tests=tests.head(R),
                        rng=np.random.default_rng(
                            seed_sequence(seed, dataset, vname, k, alg.noise_stream, eps)
                        ),
                        delta=delta,
                        rho=rho,
                        xtx_offset=xtx_offset,
                        params=params.get(alg.name),
                    )
                )
    return blocks


class _RunTests:
    """The test-fold :class:`~dpreg.preprocess.stats.ScoreStats` of R runs, stacked (run axis first)."""

    def __init__(self, fds: Sequence[FoldData]):
        self.uu = np.stack([fd.test.uu for fd in fds])
        self.ur = np.stack([fd.test.ur for fd in fds])
        self.rr = np.array([fd.test.rr for fd in fds])
        self.m = np.array([fd.test.m for fd in fds], dtype=float)
        t_sum = np.array([fd.test.t_sum for fd in fds])
        t_sq = np.array([fd.test.t_sq for fd in fds])
        self.sst = t_sq - t_sum**2 / self.m

    def head(self, R: int) -> _RunTests:
        out = object.__new__(_RunTests)
        for key in ("uu", "ur", "rr", "m", "sst"):
            setattr(out, key, getattr(self, key)[:R])
        return out


def _score_runs(
    tests: _RunTests, theta: np.ndarray, failed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """MSE and R^2 of run r's coefficients on run r's test statistics (NaN where failed).

    The quadratic form of :meth:`~dpreg.preprocess.stats.ScoreStats.sse`, one run per row.
    """
    th = np.where(failed[:, None], 0.0, theta)
    quad = np.einsum("rd,rde,re->r", th, tests.uu, th)
    sse = np.maximum(tests.rr - 2.0 * np.einsum("rd,rd->r", th, tests.ur) + quad, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(tests.sst > 0, 1.0 - sse / tests.sst, np.nan)
    return np.where(failed, np.nan, sse / tests.m), np.where(failed, np.nan, r2)


def _runs_block(
    alg: Algorithm,
    fds: Sequence[FoldData],
    vname: str,
    eps: float,
    e_alg: float,
    d_alg: float,
    stat_rel: Sequence[Any],
    *,
    tests: _RunTests,
    rng: np.random.Generator,
    delta: float,
    rho: float,
    xtx_offset: float,
    params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One algorithm on R runs, each with its own (noisy) fold statistics.

    :meth:`~dpreg.algorithms.Algorithm.fit_runs`: each run is one call of the
    entry's fit function with ``size=1`` on its statistics, drawing from
    ``rng`` in turn (one call on the stacked statistics for entries with
    ``stacks_runs``), and the systems are solved in one stacked call.
    """
    train0 = fds[0].train
    run = _release_args(train0, delta=d_alg, rho=rho, params=params)
    res = alg.fit_runs(
        [fd.train for fd in fds],
        epsilon=e_alg,
        delta=d_alg,
        rng=rng if alg.private else None,
        rho=rho,
        xtx_offset=xtx_offset,
        params=params,
    )
    theta, failed, lam = res.theta, res.failed, res.lam
    rel = alg.releases(epsilon=e_alg, **run)
    mse, r2 = _score_runs(tests, theta, failed)
    led = release_columns(list(stat_rel) + rel, delta=delta)
    return _block(
        variant=vname,
        algorithm=alg.name,
        epsilons=[eps],
        fold=fds[0].fold,
        R=len(fds),
        mse=mse,
        r2=r2,
        lam=lam,
        failed=failed,
        outside=[alg.outside_validity(epsilon=e_alg, **run)],
        calibration=alg.calibration,
        ledger=[led],
    )


def _strings(values: Sequence[str], counts: Sequence[int] | np.ndarray) -> pd.Series:
    """``values[i]`` repeated ``counts[i]`` times, as a pandas string column.

    Built as a dictionary-encoded Arrow array (codes repeated, each distinct
    string stored once) and decoded in C++: much faster than converting
    hundreds of thousands of Python strings one by one.
    """
    import pyarrow as pa

    index: dict[str, int] = {}
    codes = np.array([index.setdefault(v, len(index)) for v in values], dtype=np.int32)
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(codes, counts)), pa.array(list(index), type=pa.string())
    )
    return dictionary.cast(pa.string()).to_pandas()


def _assemble(
    blocks: list[dict[str, Any]], *, dataset: str, delta: float, seed: int
) -> pd.DataFrame:
    """The trial table of a list of blocks (columns :data:`TRIAL_COLUMNS`)."""
    if not blocks:
        return pd.DataFrame(columns=TRIAL_COLUMNS)
    sizes = np.array([len(b["mse"]) for b in blocks])
    # a unit is one (block, epsilon): R consecutive trials sharing ledger and seed key
    units = [
        (b, e, led)
        for b in blocks
        for e, led in zip(dict.fromkeys(b["epsilon"].tolist()), b["ledger"], strict=True)
    ]
    unit_sizes = np.array([b["R"] for b, _, _ in units])
    cols: dict[str, Any] = {"dataset": _strings([dataset], [int(sizes.sum())])}
    cols["variant"] = _strings([b["variant"] for b in blocks], sizes)
    cols["algorithm"] = _strings([b["algorithm"] for b in blocks], sizes)
    cols["epsilon"] = np.concatenate([b["epsilon"] for b in blocks]).astype(float)
    cols["delta"] = np.full(int(sizes.sum()), float(delta))
    cols["fold"] = np.repeat(np.array([b["fold"] for b in blocks], dtype=np.int64), sizes)
    cols["repeat"] = np.concatenate([b["repeat"] for b in blocks]).astype(np.int64)
    for key in ("mse", "r2", "lam"):
        cols[key] = np.concatenate([b[key] for b in blocks]).astype(float)
    for key in ("failed", "outside_validity"):
        cols[key] = np.concatenate([b[key] for b in blocks]).astype(bool)
    cols["calibration"] = _strings([b["calibration"] for b in blocks], sizes)
    # one key per (variant, fold, algorithm, epsilon), repeated over the repeats
    cols["seed_key"] = _strings(
        [
            f"{int(seed)}/{dataset}/{b['variant']}/{b['fold']}/{b['algorithm']}/{e!r}"
            for b, e, _ in units
        ],
        unit_sizes,
    )
    cols["releases"] = _strings([led["releases"] for _, _, led in units], unit_sizes)
    for key in ("eps_basic", "delta_basic", "eps_exact", "delta_exact"):
        cols[key] = np.repeat(np.array([led[key] for _, _, led in units], dtype=float), unit_sizes)
    return pd.DataFrame({key: cols[key] for key in TRIAL_COLUMNS})


def sweep_arrays(
    X: np.ndarray, y: np.ndarray, *, dataset: str = "data", seed: int, folds: int = 10, **kw: Any
) -> pd.DataFrame:
    """:func:`sweep_source` on in-memory arrays (folds from :func:`assign_folds`)."""
    X = check_finite_array(np.asarray(X, dtype=float), "X")
    y = check_finite_array(np.asarray(y, dtype=float), "y")
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DPRegError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    fold = assign_folds(X.shape[0], folds, seed=seed, dataset=dataset)
    source = ArraySource(X, y, fold, chunk_rows=CHUNK_ROWS)
    return sweep_source(source, dataset=dataset, seed=seed, folds=folds, **kw)


class ParquetSource:
    """Streams a prepared Parquet table in chunks (never the whole table in memory)."""

    def __init__(self, path: str | Path, fold: np.ndarray, *, chunk_rows: int = 65536):
        self.path = Path(path)
        self.n, self.d = prepared_shape(self.path)
        self.fold = fold
        self.chunk_rows = int(chunk_rows)

    def chunks(self):
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
    epsilons: Sequence[float],
    delta: float,
    folds: int,
    seed: int,
    algorithms: Sequence[str] = (),
    repeats: int | None = None,
    plan: Mapping[str, Mapping[str, int]] | None = None,
    rho: float = 0.05,
    xtx_offset: float = 1.0,
    algorithm_params: Mapping[str, Mapping[str, Any]] | None = None,
    public_ranges: Mapping[str, Any] | None = None,
    memory_budget_mb: float | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> pd.DataFrame:
    """Sweep a prepared table (see :mod:`dpreg.data`); arguments as :func:`sweep_source`.

    Tables whose float64 size exceeds ``memory_budget_mb`` are streamed in
    chunks of ``chunk_rows``; smaller ones are read once into memory.  Both
    paths run the same code on the same fold ids, so their results agree
    to rounding (summation order).  ``public_ranges`` is the dataset's entry
    of the config key ``public_ranges`` (``{"source": ..., "columns": {...}}``),
    read only by private-stats variants.
    """
    n, d = prepared_shape(table_path)
    fold = assign_folds(n, folds, seed=seed, dataset=dataset)
    size_mb = table_size_mb(n, d)
    source: RowSource
    if memory_budget_mb is not None and size_mb > memory_budget_mb:
        source = ParquetSource(table_path, fold, chunk_rows=chunk_rows)
    else:
        X, y = _read_rows(table_path, n, d, chunk_rows=chunk_rows)
        # served in chunks too, so per-pass temporaries stay chunk-sized
        source = ArraySource(X, y, fold, chunk_rows=chunk_rows)
    ranges = None
    if any(
        VariantSpec.from_dict(variants[v], v).private_stats is not None
        for v in (plan if plan is not None else variants)
    ):
        import pyarrow.parquet as pq

        names = pq.read_schema(table_path).names  # features in order, target last
        features, target = names[:-1], names[-1]
        ranges = PublicRanges.from_config(
            public_ranges, dataset=dataset, features=features, target=target
        )
    return sweep_source(
        source,
        dataset=dataset,
        variants=variants,
        algorithms=algorithms,
        repeats=repeats,
        plan=plan,
        epsilons=epsilons,
        delta=delta,
        folds=folds,
        seed=seed,
        rho=rho,
        xtx_offset=xtx_offset,
        algorithm_params=algorithm_params,
        ranges=ranges,
    )


def _read_rows(
    table_path: str | Path, n: int, d: int, *, chunk_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """A prepared table read into preallocated ``X``, ``y``, one chunk at a time.

    Peak memory is the table itself plus one chunk (reading the whole
    Parquet table first and then copying it out would hold it twice).
    """
    import pyarrow as pa

    X = np.empty((n, d))
    y = np.empty(n)
    lo = 0
    pool = pa.default_memory_pool()
    for Xc, yc in iter_prepared(table_path, chunk_rows=chunk_rows):
        X[lo : lo + Xc.shape[0]] = Xc
        y[lo : lo + Xc.shape[0]] = yc
        lo += Xc.shape[0]
        pool.release_unused()  # decoded row groups are not kept cached by the allocator
    if lo != n:
        raise DPRegError(f"prepared table {str(table_path)!r} holds {lo} rows, its footer says {n}")
    return X, y


def table_size_mb(n: int, d: int) -> float:
    """Float64 size of an ``n x (d + 1)`` table in MiB."""
    return n * (d + 1) * 8 / 2**20 if n and d else 0.0
