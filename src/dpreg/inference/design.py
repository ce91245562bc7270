"""The resampling design of a dataset's trials: replicate counts and design indices.

A bootstrap replicate of the (partition, fold, repeat) design is given by
how often each trial enters it (:func:`resample_counts`); the design and its
reasons are in :mod:`dpreg.inference.bootstrap`, which uses these counts.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.seeding import seed_sequence

__all__ = ["resample_counts"]


def resample_counts(
    folds: int, repeats: int, resamples: int, *, seed: int, dataset: str, partitions: int = 1
) -> np.ndarray:
    """How often each (partition, fold, repeat) enters each bootstrap replicate.

    Parameters
    ----------
    folds, repeats : int
        K and R of the design.
    partitions : int
        P of the design (1: the single-partition design).
    resamples : int
        Number of replicates B.
    seed : int
        The configuration's root seed.
    dataset : str
        Dataset name (part of the stream key).

    Returns
    -------
    numpy.ndarray
        ``(B, P * K * R)`` float64 counts, row b summing to P K R; column
        ``(p * K + k) * R + r`` is trial (partition p, fold k, repeat r).
        Replicate b draws P partitions with replacement, then K folds with
        replacement within each drawn partition, then R repeats with
        replacement within each drawn fold (see the module docstring).
    """
    P, K, R, B = int(partitions), int(folds), int(repeats), int(resamples)
    if P < 1 or K < 1 or R < 1 or B < 1:
        raise DPRegError(
            f"bootstrap needs partitions, folds, repeats, resamples >= 1, got {P}, {K}, {R}, {B}"
        )
    return _design_counts(P, K, R, B, int(seed), str(dataset)).copy()


@functools.lru_cache(maxsize=16)
def _design_counts(P: int, K: int, R: int, B: int, seed: int, dataset: str) -> np.ndarray:
    """:func:`resample_counts`, drawn once per design in a process (read-only).

    With P = 1 the fold and repeat draws are those of the two-stage design
    (a ``(B, 1, K)`` draw is the ``(B, K)`` draw), so its replicates are unchanged.
    """
    f_rng = np.random.default_rng(seed_sequence(seed, "bootstrap", dataset, "folds", K))
    r_rng = np.random.default_rng(seed_sequence(seed, "bootstrap", dataset, "repeats", K, R))
    if P == 1:
        part_pick = np.zeros((B, 1), dtype=np.int64)
    else:
        p_rng = np.random.default_rng(
            seed_sequence(seed, "bootstrap", dataset, "partitions", P, K, R)
        )
        part_pick = p_rng.integers(0, P, size=(B, P))
    fold_pick = f_rng.integers(0, K, size=(B, P, K))  # row-major: prefix-stable in B
    rep_pick = r_rng.integers(0, R, size=(B, P, K, R))
    N = P * K * R
    unit = part_pick[:, :, None] * K + fold_pick  # (B, P, K): the drawn folds' design index
    flat = (np.arange(B)[:, None, None, None] * N + unit[..., None] * R + rep_pick).ravel()
    counts = np.bincount(flat, minlength=B * N).reshape(B, N).astype(np.float64)
    counts.flags.writeable = False
    return counts


@functools.lru_cache(maxsize=16)
def _median_layouts(P: int, K: int, R: int, B: int, seed: int, dataset: str):
    """The counts of a design in the layouts :func:`dpreg.inference.medians._replicate_medians` reads.

    Returns float32 counts ``(B, N)`` (the matrix product; exact, every sum is
    an integer below 2**24), the integer counts with one zero column appended,
    flattened (``(B (N + 1),)``, for gathers), and each replicate's offset in it.
    """
    counts = _design_counts(P, K, R, B, seed, dataset)
    N = P * K * R
    padded = np.zeros((B, N + 1), dtype=np.int16 if N < np.iinfo(np.int16).max else np.int32)
    padded[:, :N] = counts
    for arr in (dense := counts.astype(np.float32), padded):
        arr.flags.writeable = False
    return dense, padded.ravel(), np.arange(B, dtype=np.intp) * (N + 1)


def _fold_units(trials: pd.DataFrame, dataset: str) -> tuple[int, int, np.ndarray]:
    """(P, K, design fold index ``p K + k`` of each trial) from the partition and fold columns.

    Partitions and the folds within each are numbered in sorted order of
    their ids; a table without a ``partition`` column is one partition.
    """
    fold = trials["fold"].to_numpy()
    if "partition" not in trials.columns:
        fold_ids, fold_idx = _unique_inverse(fold)
        return 1, len(fold_ids), fold_idx
    part_ids, part_idx = _unique_inverse(trials["partition"].to_numpy())
    fold_ids, fold_code = _unique_inverse(fold)
    pair_ids, pair_idx = _unique_inverse(part_idx * max(len(fold_ids), 1) + fold_code)
    P = len(part_ids)
    per = np.bincount(pair_ids // max(len(fold_ids), 1), minlength=P)
    if P and (per != per[0]).any():
        raise DPRegError(
            f"dataset {dataset!r}: partitions hold different numbers of folds "
            f"({dict(zip(part_ids.tolist(), per.tolist(), strict=True))}); the bootstrap "
            "needs the same K in every partition"
        )
    return P, int(per[0]) if P else 0, pair_idx


def _unique_inverse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(x, return_inverse=True)`` of a 1-D integer array.

    Small non-negative integers (fold, repeat and cell codes) are counted
    with :func:`numpy.bincount` instead of sorted; the result is the same.
    """
    x = np.asarray(x)
    if x.ndim == 1 and len(x) and x.dtype.kind in "iu" and x.min() >= 0:
        top = int(x.max())
        if top < 4 * len(x) + 1024:
            ids = np.flatnonzero(np.bincount(x, minlength=top + 1))
            lookup = np.zeros(top + 1, dtype=np.intp)
            lookup[ids] = np.arange(len(ids))
            return ids.astype(x.dtype), lookup[x]
    ids, inverse = np.unique(x, return_inverse=True)
    return ids, inverse.reshape(-1)
