"""Private-stats runs: the statistics released with noise, then the algorithm.

A variant with ``private_stats`` (the thesis' option 3) releases the
statistics of every training fold with noise, one run after another
(:func:`dpreg.preprocess.private_fold_data_runs`); each run's algorithm fit
uses its own noisy statistics, is scored on the test fold and carries the
ledger of both releases composed (:func:`_private_stats_blocks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpreg._validation import (
    DPRegError,
)
from dpreg.algorithms import (
    Algorithm,
)
from dpreg.engine.blocks import _block, _failed, _release_args
from dpreg.engine.coef import coef_errors, mapped_theta
from dpreg.preprocess import (
    FoldData,
    PublicRanges,
    RowSource,
    VariantSpec,
    algorithm_budget,
    fold_statistics,
    private_fold_data_runs,
    private_stat_releases,
    raw_fold_moments,
)
from dpreg.privacy.ledger import release_columns
from dpreg.seeding import seed_sequence


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
    theta_star: np.ndarray | None = None,
    fold_offset: int = 0,
) -> list[dict[str, Any]]:
    """Trials of a variant whose transform statistics are released privately.

    ``fold_offset`` (``p K`` for partition ``p``) is added to every fold id:
    the trials' fold column and every stream key below (0 for partition 0).

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
        kid = fold_offset + k  # the fold's id over all partitions
        for eps in eps_grid:
            e_alg, d_alg, stat_rel = budgets[eps]
            stats_rng = np.random.default_rng(
                seed_sequence(seed, dataset, vname, kid, "private_stats", eps)
            )
            args = (spec, ranges, total - moms[k], moms[k], shared[k], stat_rel)
            # the R runs vectorised: bit-identical to R calls of private_fold_data
            fds = private_fold_data_runs(*args, fold=kid, rng=stats_rng, size=R_max)
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
                            seed_sequence(seed, dataset, vname, kid, alg.noise_stream, eps)
                        ),
                        delta=delta,
                        rho=rho,
                        xtx_offset=xtx_offset,
                        params=params.get(alg.name),
                        theta_star=theta_star,
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
    """MSE and R^2 of run r's coefficients on run r's test statistics.

    A failed run is scored as theta = 0 (its MSE and R^2 are theta = 0's), as
    in :func:`dpreg.engine.blocks._score`.

    The quadratic form of :meth:`~dpreg.preprocess.stats.ScoreStats.sse`, one run per row.
    """
    th = np.where(failed[:, None], 0.0, theta)
    quad = np.einsum("rd,rde,re->r", th, tests.uu, th)
    sse = np.maximum(tests.rr - 2.0 * np.einsum("rd,rd->r", th, tests.ur) + quad, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(tests.sst > 0, 1.0 - sse / tests.sst, np.nan)
    return sse / tests.m, r2


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
    theta_star: np.ndarray | None = None,
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
    theta, lam = res.theta, res.lam
    failed = _failed(theta, res.failed)
    rel = alg.releases(epsilon=e_alg, **run)
    mse, r2 = _score_runs(tests, theta, failed)
    # each run has its own noisy transform, so its own mapped theta* (a known answer)
    targets = (
        None
        if theta_star is None
        else np.array([mapped_theta(fd.transform, theta_star) for fd in fds])
    )
    led = release_columns(list(stat_rel) + rel, delta=delta)
    return _block(
        variant=vname,
        algorithm=alg.name,
        epsilons=[eps],
        fold=fds[0].fold,
        R=len(fds),
        mse=mse,
        r2=r2,
        coef_err=coef_errors(theta, targets, failed),
        lam=lam,
        failed=failed,
        outside=[alg.outside_validity(epsilon=e_alg, **run)],
        calibration=alg.calibration,
        ledger=[led],
    )
