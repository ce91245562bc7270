"""The evaluation engine: P partitions x K folds x R repeats x epsilon grid x algorithms.

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

Partitions (config key ``cv.partitions``): the K folds of partition ``p >= 1``
come from their own stream, ``SeedSequence([seed, id(dataset), id("folds"),
id(K), id("partition"), id(p)])``; partition 0 is the single partition above.
A trial's ``fold`` is unique over the partitions, ``p K + k`` for fold ``k``
of partition ``p`` (column ``partition`` holds ``p``), and every stream key
above takes that fold id: partition 0 keeps fold ids ``0 .. K-1`` and hence
every key (one partition is byte-identical to the single-partition design),
and no noise stream repeats across partitions.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
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
from dpreg.engine.blocks import _assemble, _fit_block
from dpreg.engine.private_runs import _private_stats_blocks
from dpreg.io.tables import TRIAL_COLUMNS
from dpreg.preprocess import (
    ArraySource,
    PublicRanges,
    RowSource,
    VariantSpec,
    fold_rows,
    fold_statistics,
)
from dpreg.privacy.mechanisms import ClassicalCalibrationWarning
from dpreg.seeding import seed_sequence

__all__ = ["TRIAL_COLUMNS", "assign_folds", "assign_partitions", "sweep_arrays", "sweep_source"]

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


def assign_partitions(
    n: int, folds: int, partitions: int, *, seed: int, dataset: str
) -> np.ndarray:
    """Fold ids of each row under ``P`` random K-fold partitions.

    One partition returns :func:`assign_folds` itself (``(n,)``); ``P > 1``
    an ``(n, P)`` matrix whose column 0 is :func:`assign_folds` and column
    ``p`` a permutation from ``seed_sequence(seed, dataset, "folds", K,
    "partition", p)`` cut the same way.  The ids are within-partition
    (``0..K-1``); the sweep numbers the trials' folds ``p K + k``.
    """
    P = check_partitions(partitions)
    first = assign_folds(n, folds, seed=seed, dataset=dataset)
    if P == 1:
        return first
    K = int(folds)
    out = np.empty((n, P), dtype=np.int16 if K < 2**15 else np.int32)
    out[:, 0] = first
    for p in range(1, P):
        rng = np.random.default_rng(seed_sequence(seed, dataset, "folds", K, "partition", p))
        out[rng.permutation(n), p] = np.arange(n) % K
    return out


#: Largest ``cv.partitions`` (the schema's bound).
MAX_PARTITIONS = 1000


def check_partitions(partitions: int) -> int:
    """``cv.partitions`` as an int in 1..:data:`MAX_PARTITIONS`, or a clear error."""
    P = check_positive_int(partitions, "cv.partitions")
    if P > MAX_PARTITIONS:
        raise DPRegError(f"cv.partitions must be at most {MAX_PARTITIONS}, got {P}")
    return P


class _Partition:
    """One partition's view of a source whose chunks carry ``(rows, P)`` fold ids."""

    def __init__(self, source: RowSource, p: int):
        self.source, self.p = source, p

    @property
    def n(self) -> int:
        return self.source.n

    @property
    def d(self) -> int:
        return self.source.d

    def chunks(self):
        for X, y, f in self.source.chunks():
            yield X, y, (f[:, self.p] if f.ndim == 2 else f)


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
    theta_star: Sequence[float] | None = None,
    partitions: int = 1,
) -> pd.DataFrame:
    """Run every trial of one dataset over a :class:`~dpreg.preprocess.RowSource`.

    What runs is either the full grid ``variants x algorithms`` at
    ``repeats`` noise repeats, or a ``plan``: ``variant -> {algorithm:
    repeats}`` (the workflow's form, where each pair has its own number of
    repeats).  Each variant's fold statistics are computed once and shared by
    all its algorithms.

    Returns one row per trial with the columns :data:`TRIAL_COLUMNS`.
    ``source.chunks()`` must yield fold ids made by :func:`assign_partitions`
    (one column per partition when ``partitions > 1``); every partition's
    statistics are computed in turn and its trials numbered ``p K + k``.
    ``algorithm_params`` maps an algorithm name to hyperparameters overriding
    its registry defaults.  Algorithms that need rows
    (:attr:`~dpreg.algorithms.Algorithm.needs_rows`) get the transformed training rows of each fold.  ``ranges`` are the declared
    public ranges of the dataset (needed only by private-stats variants).
    ``theta_star`` is the known answer of a synthetic dataset (the sidecar's
    ``theta_star``): each trial's ``coef_err`` is measured against it
    (:mod:`dpreg.engine.coef`); without it ``coef_err`` is NaN.
    """
    work = _normalise_plan(variants, algorithms, repeats, plan)
    eps_grid = _check_grid(epsilons, delta, 1, rho, xtx_offset)
    specs = {name: VariantSpec.from_dict(variants[name], name) for name in work}
    params = dict(algorithm_params or {})
    truth = (
        None
        if theta_star is None
        else check_finite_array(np.asarray(theta_star, float), "theta_star")
    )
    blocks: list[dict[str, Any]] = []
    P = check_partitions(partitions)
    K = int(folds)
    for p in range(P):
        part = source if P == 1 else _Partition(source, p)
        for vname, spec in specs.items():
            algs = _split_algorithms(work[vname], dataset)
            if spec.private_stats is not None:
                found = _private_stats_blocks(
                    part,
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
                    theta_star=truth,
                    fold_offset=p * K,
                )
                blocks.extend({**b, "partition": p} for b in found)
                continue
            need_rows = any(a.needs_rows for a, _ in algs)
            for fd in fold_statistics(part, spec, folds=folds):
                rows = fold_rows(part, fd) if need_rows else None
                if p:  # the trials' fold id, unique over partitions (and in every stream key)
                    fd = replace(fd, fold=p * K + fd.fold)
                for alg, R in algs:
                    block = _fit_block(
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
                        theta_star=truth,
                    )
                    blocks.append({**block, "partition": p})
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


def _split_algorithms(algs: Mapping[str, int], dataset: str) -> list[tuple[Algorithm, int]]:
    """Registry entries (with their repeats) of one variant, without those whose optional
    package (:attr:`~dpreg.algorithms.Algorithm.requires`) is missing: skipped with a warning."""
    out = []
    for name, R in algs.items():
        alg = get_algorithm(name)
        if not alg.available:
            log.warning(
                "%s: %s needs %s, which is not installed; its curve is skipped (%s to include it)",
                dataset,
                name,
                ", ".join(alg.requires),
                alg.install_hint or "install it",
            )
            continue
        out.append((alg, R))
    return out


def sweep_arrays(
    X: np.ndarray,
    y: np.ndarray,
    *,
    dataset: str = "data",
    seed: int,
    folds: int = 10,
    partitions: int = 1,
    **kw: Any,
) -> pd.DataFrame:
    """:func:`sweep_source` on in-memory arrays (folds from :func:`assign_partitions`)."""
    X = check_finite_array(np.asarray(X, dtype=float), "X")
    y = check_finite_array(np.asarray(y, dtype=float), "y")
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DPRegError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    fold = assign_partitions(X.shape[0], folds, partitions, seed=seed, dataset=dataset)
    source = ArraySource(X, y, fold, chunk_rows=CHUNK_ROWS)
    return sweep_source(
        source, dataset=dataset, seed=seed, folds=folds, partitions=partitions, **kw
    )
