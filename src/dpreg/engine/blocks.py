"""Blocks of trials: one (fold, algorithm) over the epsilon grid and its repeats.

The sweep hands each block the fold's statistics; a block fits every
(epsilon, repeat) in one batch (:func:`_fit_block`), scores the fits on the test fold's
statistics (:func:`_score`) and records them with their ledger columns
(:func:`_block`); :func:`_assemble` turns the blocks into the tidy trial
table (:data:`dpreg.io.tables.TRIAL_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpreg.algorithms import (
    Algorithm,
)
from dpreg.engine.coef import coef_errors, mapped_theta
from dpreg.engine.run_ledger import trial_columns
from dpreg.io.tables import TRIAL_COLUMNS
from dpreg.preprocess import (
    FoldData,
)
from dpreg.seeding import seed_sequence


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
    theta_star: np.ndarray | None = None,
) -> dict[str, Any]:
    """Every (epsilon, repeat) of one registry algorithm on one fold.

    With ``theta_star`` (a known answer, raw coordinates) each trial's
    ``coef_err`` is ``||theta - theta*'||`` with ``theta*'`` mapped into the
    fold's fitted coordinates (:func:`dpreg.engine.coef.mapped_theta`).
    """
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
    failed = _failed(res.theta, res.failed)
    mse, r2 = _score(fd.test, res.theta, failed)
    target = None if theta_star is None else mapped_theta(fd.transform, theta_star)
    return _block(
        variant=vname,
        algorithm=alg.name,
        epsilons=eps_grid,
        fold=fd.fold,
        R=R,
        mse=mse,
        r2=r2,
        coef_err=coef_errors(res.theta, target, failed),
        lam=res.lam,
        failed=failed,
        outside=[alg.outside_validity(epsilon=e, **run) for e in eps_grid],
        calibration=alg.calibration,
        ledger=[ledger[e] for e in eps_grid],
    )


def _failed(theta: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """The fit's failure flags, with any non-finite coefficient vector a failure too.

    So every recorded error is finite: a failed fit is scored as theta = 0.
    """
    return np.asarray(failed, dtype=bool) | ~np.isfinite(theta).all(axis=1)


def _score(test: Any, theta: np.ndarray, failed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MSE and R^2 of a batch of coefficients on one test fold.

    A failed fit is scored as what it outputs, the trivial predictor theta = 0
    (TukeyEM's bottom; a non-finite solve): its MSE and R^2 are theta = 0's,
    flagged ``failed``; the tables, figures and claims score it with them.
    """
    sse = test.sse(np.where(failed[:, None], 0.0, theta))
    return sse / test.m, test.r2_from_sse(sse)


def _block(
    *,
    variant,
    algorithm,
    epsilons,
    fold,
    R,
    mse,
    r2,
    lam,
    failed,
    outside,
    calibration,
    ledger,
    coef_err=None,
) -> dict[str, Any]:
    """The trials of one (variant, fold, algorithm) over ``epsilons`` x ``R`` repeats.

    ``coef_err`` is NaN for every trial when not given (no known answer).
    """
    failed = np.asarray(failed, dtype=bool)
    if coef_err is None:
        coef_err = np.full(failed.shape, np.nan)
    return {
        "variant": variant,
        "algorithm": algorithm,
        "epsilon": np.repeat(epsilons, R),
        "fold": fold,
        "repeat": np.tile(np.arange(R), len(epsilons)),
        # a failed trial's errors are theta = 0's (see _score and coef_errors)
        "mse": mse,
        "r2": r2,
        "coef_err": coef_err,
        "lam": lam,
        "failed": failed,
        "outside_validity": np.repeat(outside, R).astype(bool),
        "calibration": calibration,
        "ledger": ledger,
        "R": R,
    }


def _strings(values: Sequence[str], counts: Sequence[int] | np.ndarray) -> pd.Series:
    """``values[i]`` repeated ``counts[i]`` times, as a pandas string column.

    Built as a dictionary-encoded Arrow array (codes repeated, each distinct
    string stored once) and decoded in C++: much faster than converting
    hundreds of thousands of Python strings one by one.
    """
    import pyarrow as pa  # on first use: a costly import most callers skip

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
    cols["partition"] = np.repeat(
        np.array([b.get("partition", 0) for b in blocks], dtype=np.int64), sizes
    )
    cols["fold"] = np.repeat(np.array([b["fold"] for b in blocks], dtype=np.int64), sizes)
    cols["repeat"] = np.concatenate([b["repeat"] for b in blocks]).astype(np.int64)
    for key in ("mse", "r2", "coef_err", "lam"):
        cols[key] = np.concatenate([b[key] for b in blocks]).astype(float)
    for key in ("failed", "outside_validity"):
        cols[key] = np.concatenate([b[key] for b in blocks]).astype(bool)
    cols["calibration"] = _strings([b["calibration"] for b in blocks], sizes)
    # one key per (variant, fold, algorithm, epsilon), repeated over the repeats (fold ids
    # are unique over partitions: p K + k)
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
