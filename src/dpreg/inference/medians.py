"""Medians of the bootstrap replicates of a cell, computed from the resample counts.

A bootstrap replicate of the (fold, repeat) design (:mod:`dpreg.inference.bootstrap`)
is given by its counts: replicate b holds trial j of a cell ``counts[b, j]``
times.  Its median is therefore the median of a weighted multiset, and
:mod:`dpreg.inference.bootstrap` needs it for every replicate b of every cell (the
median intervals of the tables, the median ratios of the claims).  Building
each resample and calling :func:`numpy.median` on it takes B arrays of K R
values per cell, each partitioned anew; this module finds the same medians
from the counts without building any resample.

The two-level search (:func:`_replicate_medians`)
--------------------------------------------------
With the cell's usable trials sorted once (stably; a missing trial or a
non-finite error left out, a failed trial counted with its recorded error)
and n_b the number of usable trials in replicate b, the lower and upper
middle are the first sorted positions whose running count exceeds
``(n_b - 1) // 2`` and ``n_b // 2``; the median is the mean of their values
(numpy's convention, so a replicate with every count 1 gives
:func:`numpy.median` of the trials).  The first level locates, for every
replicate at once, the block of sorted positions that holds each middle, from
running counts at the block ends given by a matrix product of the counts with
a 0/1 matrix (exact in float32: every sum is an integer below 2**24).  The
second level finds the position inside that block from the running counts of
its few positions.  Cells whose trials are equal within each fold (a
non-private method) take a shorter route, :func:`_fold_constant_medians`,
from the fold totals of the counts.

Both routes return exactly what the direct computation returns: the medians
are the same two order statistics averaged the same way, not an
approximation; ``tests/inference/test_bootstrap_equivalence.py`` and
``tests/inference/test_claims.py`` compare them with the full scan and with
:func:`numpy.median` of explicit resamples.

See Also
--------
dpreg.inference.bootstrap.DesignBootstrap.cell_statistic : the caller; it caches the
    medians per cell and passes the counts in the layouts of
    ``dpreg.inference.bootstrap._median_layouts``.
"""

from __future__ import annotations

import numpy as np

#: Trial slots per block of the two-level median search (:func:`_replicate_medians`).
_MEDIAN_BLOCK = 48
#: Blocks around the middle whose running counts :func:`_replicate_medians`
#: computes for every replicate (the others only for the replicates needing them).
_MEDIAN_BAND = 9
#: Cells per matrix product in :func:`_replicate_medians` (bounds its memory).
_MEDIAN_CHUNK = 32


def _replicate_medians(
    values: np.ndarray,
    ok: np.ndarray,
    dense: np.ndarray,
    flat: np.ndarray,
    row_start: np.ndarray,
) -> np.ndarray:
    """Median of every replicate of every cell: the multisets ``values[g, j]`` x ``counts[b, j]``.

    Parameters
    ----------
    values : numpy.ndarray
        ``(G, N)`` trial values of the cells.
    ok : numpy.ndarray
        ``(G, N)`` boolean, False for missing trials or non-finite
        errors (left out); a failed trial with its recorded error is usable.
    dense, flat, row_start : numpy.ndarray
        The replicate counts (:func:`dpreg.inference.bootstrap.resample_counts`) in the layouts of
        :func:`dpreg.inference.bootstrap._median_layouts`.

    Returns
    -------
    numpy.ndarray
        ``(B, G)`` medians, numpy's convention for an even count (mean of the
        two middle values, so a replicate with every count 1 gives
        ``np.median``); NaN where a replicate holds no usable trial.

    Notes
    -----
    The median of replicate b is the value at the first position of the
    cell's sorted trials where the running count exceeds ``(n_b - 1) // 2``
    (and ``n_b // 2`` for the upper middle), n_b being the replicate's
    number of usable trials.  Scanning all N positions for all B replicates
    costs B N per cell; here the sorted positions are cut into blocks of
    :data:`_MEDIAN_BLOCK`.  The running counts at the ends of the
    :data:`_MEDIAN_BAND` blocks around the middle of the full sample (where
    nearly every replicate's middle lies), the count before them and the
    total come from one matrix product (counts times a 0/1 matrix, exact in
    float32 because every sum is an integer below 2**24); the rare
    replicates whose middle lies outside the band get the running counts at
    every block end from a second product over their rows only.  Inside the
    block holding the middle the counts are gathered, laid out
    position-major (one row per position, one column per replicate) and
    summed row by row, so the running counts of all replicates advance
    together; the middle's position in the block is the number of running
    counts not above the rank sought.  The result equals the full scan
    exactly.
    """
    B, N = dense.shape
    G = values.shape[0]
    out = np.full((B, G), np.nan)
    if G == 0:
        return out
    s = min(_MEDIAN_BLOCK, N)
    P = -(-N // s)
    W = min(P, _MEDIAN_BAND)
    order_all = np.argsort(np.where(ok, values, np.inf), axis=1, kind="stable")
    n_ok = ok.sum(axis=1)
    steps = np.arange(W + 1)
    for g0 in range(0, G, _MEDIAN_CHUNK):
        chunk = range(g0, min(G, g0 + _MEDIAN_CHUNK))
        # per cell W + 2 columns: the count of the positions before the band's first
        # block, before each later band block, after the band's last, and in all blocks
        member = np.zeros((N, len(chunk) * (W + 2)), dtype=np.float32)
        first = np.zeros(len(chunk), dtype=np.intp)
        for c, g in enumerate(chunk):
            n = int(n_ok[g])
            if n == 0:
                continue
            used = -(-n // s)  # blocks holding usable trials
            first[c] = min(max(((n - 1) // 2) // s - W // 2, 0), max(used - W, 0))
            ends = np.append(first[c] + steps, P)
            block = np.arange(n) // s
            member[order_all[g, :n], c * (W + 2) : (c + 1) * (W + 2)] = block[:, None] < ends
        band_all = (dense @ member).astype(np.int32).reshape(B, len(chunk), W + 2)
        for c, g in enumerate(chunk):
            n = int(n_ok[g])
            if n == 0:
                continue
            band = band_all[:, c, :]
            total = band[:, -1]
            slots = np.full(P * s, N, dtype=np.intp)
            slots[:n] = order_all[g, :n]
            blocks = slots.reshape(P, s)
            sorted_vals = values[g, slots[:n]]
            full = _BlockEnds(dense, order_all[g, :n], s, P)
            rows = np.flatnonzero(total > 0)  # replicates with a usable trial
            lower, upper = (total[rows] - 1) // 2, total[rows] // 2
            blk, before = _locate(band[rows], first[c], lower, full, rows)
            running_in = _block_running_counts(flat, row_start[rows], blocks, blk)
            lo_in, hi_in = _counts_at_most(running_in, lower - before, upper - before)
            lo, hi = blk * s + lo_in, blk * s + hi_in
            # the upper middle lies in the same block unless that block ends at or
            # below it; only those replicates are searched again
            again = np.flatnonzero(running_in[-1] <= upper - before)
            if len(again):
                k = upper[again]
                blk2, before2 = _locate(band[rows[again]], first[c], k, full, rows[again])
                inside = _counts_at_most(
                    _block_running_counts(flat, row_start[rows[again]], blocks, blk2),
                    k - before2,
                )[0]
                hi[again] = blk2 * s + inside
            lo, hi = np.minimum(lo, n - 1), np.minimum(hi, n - 1)
            out[rows, g] = 0.5 * (sorted_vals[lo] + sorted_vals[hi])
    return out


class _BlockEnds:
    """Running counts at every block end of one cell, for some replicates (rows)."""

    def __init__(self, dense: np.ndarray, order: np.ndarray, s: int, P: int):
        self.dense, self.order, self.s, self.P = dense, order, s, P

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        member = np.zeros((self.dense.shape[1], self.P), dtype=np.float32)
        block = np.arange(len(self.order)) // self.s
        member[self.order] = block[:, None] <= np.arange(self.P)
        return (self.dense[rows] @ member).astype(np.int32)


def _locate(band, first, k, full, rows):
    """Block holding rank ``k`` and the running count before it, per replicate.

    ``band`` holds the running counts before the band's first block and at
    the end of each band block (then the total, unused here); ranks outside
    the band are located from every block end (``full`` over their rows).
    """
    W = band.shape[1] - 2
    w = (band[:, : W + 1] <= k[:, None]).sum(axis=1)  # band[w - 1] <= k < band[w]
    blk = first + w - 1
    before = band[np.arange(len(k)), np.maximum(w - 1, 0)]
    outside = np.flatnonzero((w < 1) | (w > W))
    if len(outside):
        upto = full(rows[outside])
        found = (upto > k[outside][:, None]).argmax(axis=1)
        blk[outside] = found
        before[outside] = np.where(
            found > 0, upto[np.arange(len(outside)), np.maximum(found - 1, 0)], 0
        )
    return blk, before


def _fold_constant_medians(fold_values: np.ndarray, fold_counts: np.ndarray) -> np.ndarray:
    """Replicate medians of cells whose trials are equal within each fold.

    Parameters
    ----------
    fold_values : numpy.ndarray
        ``(G, K)`` the value shared by every trial of a fold (none failed).
    fold_counts : numpy.ndarray
        ``(B, K)`` how often the trials of each fold enter each replicate
        (the replicate counts summed over the fold's repeats).

    Returns
    -------
    numpy.ndarray
        ``(B, G)``: what :func:`_replicate_medians` returns for these cells.
        Sorted stably, a cell's trials form one run per fold (folds of equal
        value in fold order), so the first position whose running count
        exceeds a rank lies in the first fold whose running total exceeds
        it, and the median is the mean of two fold values; K running totals
        per replicate replace the search over the K R trials.
    """
    B = fold_counts.shape[0]
    out = np.empty((B, fold_values.shape[0]))
    for g, values in enumerate(fold_values):
        order = np.argsort(values, kind="stable")
        running = np.cumsum(fold_counts[:, order], axis=1)
        total = running[:, -1]
        lower, upper = (total - 1) // 2, total // 2
        lo = (running <= lower[:, None]).sum(axis=1)
        hi = (running <= upper[:, None]).sum(axis=1)
        out[:, g] = 0.5 * (values[order][lo] + values[order][hi])
    return out


def _block_running_counts(flat, row_start, blocks, blk):
    """Running counts inside each replicate's block, ``(s, replicates)``.

    Row j is the count of the block's first j + 1 positions (``flat`` at
    ``row_start`` + slot, gathered replicate-major for locality, then
    transposed so that each running sum is one vectorised row addition).
    """
    window = np.take(flat, blocks[blk] + row_start[:, None]).T.copy()
    for j in range(1, window.shape[0]):
        np.add(window[j], window[j - 1], out=window[j])
    return window


def _counts_at_most(running: np.ndarray, *thresholds: np.ndarray) -> list[np.ndarray]:
    """Per replicate (column), the number of running counts <= each threshold.

    The running counts are non-decreasing down a column, so this is the first
    position whose running count exceeds the threshold (when one does).
    """
    return [
        (running <= t.astype(running.dtype)).view(np.int8).sum(axis=0, dtype=np.int32)
        for t in thresholds
    ]
