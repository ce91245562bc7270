"""TukeyEM's depth mechanics: depth-region volumes, the propose-test-release
distances and the draw from a region of given depth.

The method, its steps and references (Amin, Joseph, Ribero & Vassilvitskii
2023; Brown et al. 2021) are described in :mod:`dpreg.algorithms.tukey`,
which applies these functions to the models fitted on the row batches.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["code_distance", "depth_log_volumes", "ptr_distance", "sample_depth_region"]


def depth_log_volumes(P: np.ndarray, depths: int) -> np.ndarray:
    """``ln V_q`` for ``q = 1..depths`` from sorted projections ``P`` (R, d, m).

    ``V_q = prod_j (P_j(m+1-q) - P_j(q))``; a non-positive length gives
    ``-inf`` (an empty region).
    """
    lengths = P[:, :, ::-1][:, :, :depths] - P[:, :, :depths]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(lengths > 0, np.log(np.where(lengths > 0, lengths, 1.0)), -np.inf)
    return logs.sum(axis=1)


def _suffix_min_h(logV: np.ndarray, eps2: float) -> np.ndarray:
    """``S[r, j] = min_{i >= j} (-ln V[r, i] - eps2 i / 2)`` (0-based ``i``)."""
    h = -logV - 0.5 * eps2 * np.arange(logV.shape[1])
    return np.minimum.accumulate(h[:, ::-1], axis=1)[:, ::-1]


def ptr_distance(logV: np.ndarray, t: int, eps2: float, delta: float) -> np.ndarray:
    """``k_hat``: the largest certified ``k`` in ``[-1, t-2]`` per repeat (``-1`` if none).

    ``k = t - 1`` would need ``V_0`` (the whole space) and is never certified.
    Every depth in ``logV`` (up to ``floor(m/2)``) may serve as
    ``t + k + g + 1``.  With 0-based ``j = t + k + g`` the certificate's
    ``-eps2 g / 2`` is ``-eps2 j / 2 + eps2 (t + k) / 2``, so its minimum over
    ``g >= 1`` is a suffix minimum of ``-ln V[j] - eps2 j / 2`` at
    ``j = t + k + 1``: every ``k`` is tested in ``O(R (Q + t))``.

    Parameters
    ----------
    logV : ndarray, shape (R, Q)
        ``ln V_q`` for ``q = 1..Q``.
    t : int
        Restricted depth.
    eps2 : float
        Budget of the test (``epsilon / 2``).
    delta : float
        The algorithm's delta.
    """
    R, Q = logV.shape
    log_thr = math.log(delta) - math.log(8.0) - eps2
    S = _suffix_min_h(logV, eps2)
    ks = np.arange(-1, t - 1)  # k = t - 1 would need V_0 and is never certified
    if ks.size == 0:
        return np.full(R, -1, dtype=np.int64)
    a = logV[:, t - ks - 2]  # (R, K): ln V at depth t - k - 1
    j0 = t + ks + 1  # first depth index t + k + g with g = 1
    best = np.where(j0 < Q, S[:, np.minimum(j0, Q - 1)], np.inf)
    cert = a + 0.5 * eps2 * (t + ks) + best <= log_thr
    last = ks.size - 1 - np.argmax(cert[:, ::-1], axis=1)  # largest certified k per repeat
    return np.where(cert.any(axis=1), ks[last], -1).astype(np.int64)


def code_distance(logV_code: np.ndarray, t: int, eps2: float, delta: float) -> np.ndarray:
    """The released code's ``distance_to_unsafety`` search, one value per repeat.

    ``logV_code`` holds ``ln V_q`` for ``q = 1..ceil(m/2)``; the search
    starts at ``(k_low, k_high) = (-1, t - 1)``, tests ``k = int((k_low +
    k_high) / 2)`` (truncation toward zero) with depths up to
    ``ceil(m/2) - 1`` only, moves ``k_low`` up on a certified ``k`` (returning
    ``k_high`` once the interval is narrow) and ``k_high`` down otherwise
    (returning ``k_low``).  The result is ``k_hat + 1`` when some ``k >= 0`` is
    certified.  An empty set of ``g`` (where the code's ``np.min`` of an empty
    array would raise) counts as not certified.
    """
    R, L = logV_code.shape
    stop = L - 1
    log_thr = math.log(delta) - math.log(8.0) - eps2
    S = _suffix_min_h(logV_code[:, :stop], eps2) if stop > 0 else np.full((R, 1), np.inf)
    out = np.empty(R, dtype=np.int64)
    for r in range(R):
        lo, hi = -1, t - 1
        while True:
            k = int((lo + hi) / 2)
            a = logV_code[r, t - k - 2]  # Python indexing, as in the code
            j0 = t + k + 1
            best = S[r, j0] if 0 <= j0 < stop else np.inf
            if a + 0.5 * eps2 * (t + k) + best <= log_thr:
                if lo >= hi - 1:
                    out[r] = hi
                    break
                lo = lo + int((hi - lo) / 2)
            elif hi > lo + 1:
                hi = hi - int((hi - lo) / 2)
            else:
                out[r] = lo
                break
    return out


def _length(P: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Side lengths ``P_j(m+1-q) - P_j(q)`` at depth ``q`` per repeat: (R, d)."""
    m = P.shape[2]
    q = np.clip(depth, 1, m)[:, None, None]
    hi = np.take_along_axis(P, np.broadcast_to(m - q, (P.shape[0], P.shape[1], 1)), 2)[..., 0]
    lo = np.take_along_axis(P, np.broadcast_to(q - 1, (P.shape[0], P.shape[1], 1)), 2)[..., 0]
    return hi - lo


def _at(P: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``P[r, j, index[r]]`` for every repeat and coordinate (0-based, clipped)."""
    m = P.shape[2]
    i = np.clip(index, 0, m - 1)[:, None, None]
    return np.take_along_axis(P, np.broadcast_to(i, (P.shape[0], P.shape[1], 1)), 2)[..., 0]


def _safe_log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)


def sample_depth_region(
    P: np.ndarray,
    depth: np.ndarray,
    *,
    gumbel: np.ndarray,
    u: np.ndarray,
    code: bool = False,
) -> np.ndarray:
    """A point of exact depth ``depth[r]`` per repeat (published) or the code's draw.

    Published: pick ``j*`` with probability proportional to
    ``(l_j*(q) - l_j*(q+1)) prod_{j<j*} l_j(q+1) prod_{j>j*} l_j(q)``;
    coordinates ``j < j*`` are uniform on the depth-``(q+1)`` interval,
    ``j*`` uniform on its two end pieces (weighted by length) and ``j > j*``
    uniform on the depth-``q`` interval.  ``code=True`` weights the
    coordinates after ``j*`` with ``l_j(q+1)`` instead (the released code).

    Parameters
    ----------
    P : ndarray, shape (R, d, m)
        Sorted projections.
    depth : ndarray of int, shape (R,)
    gumbel : ndarray, shape (R, d)
        Standard Gumbel variables (coordinate choice by Gumbel-max).
    u : ndarray, shape (R, d + 1)
        Uniforms on [0, 1): one per coordinate and one for the end piece.
    """
    R, d, m = P.shape
    q = depth
    l_q = np.maximum(_length(P, q), 0.0)
    l_q1 = np.where((q + 1 <= m // 2)[:, None], np.maximum(_length(P, q + 1), 0.0), 0.0)
    log_q, log_q1 = _safe_log(l_q), _safe_log(l_q1)
    left = np.zeros((R, d))
    left[:, 1:] = np.cumsum(log_q1, axis=1)[:, :-1]
    right_src = log_q1 if code else log_q
    right = np.zeros((R, d))
    right[:, :-1] = np.cumsum(right_src[:, ::-1], axis=1)[:, ::-1][:, 1:]
    logw = _safe_log(l_q - l_q1) + left + right
    score = np.where(np.isfinite(logw), logw + gumbel, -np.inf)
    jstar = np.where(np.all(~np.isfinite(logw), axis=1), 0, np.argmax(score, axis=1))
    # intervals (0-based): depth >= q is [P[q-1], P[m-q]], depth >= q+1 is [P[q], P[m-q-1]]
    lo_q, hi_q = _at(P, q - 1), _at(P, m - q)
    lo_q1, hi_q1 = _at(P, q), _at(P, m - q - 1)
    coord = np.arange(d)[None, :]
    before = coord < jstar[:, None]
    lo = np.where(before, lo_q1, lo_q)
    hi = np.where(before, hi_q1, hi_q)
    theta = lo + (hi - lo) * u[:, :d]  # reversed intervals as legacy uniform(low, high)
    # coordinate j*: the two end pieces [P(q), P(q+1)] and [P(m-q), P(m+1-q)] (1-based)
    rows = np.arange(R)
    a_lo, a_hi = lo_q[rows, jstar], lo_q1[rows, jstar]
    b_lo, b_hi = hi_q1[rows, jstar], hi_q[rows, jstar]
    ml, mr = a_hi - a_lo, b_hi - b_lo
    total = ml + mr
    pos = u[:, d] * np.where(total > 0, total, 1.0)
    theta[rows, jstar] = np.where(pos < ml, a_lo + pos, b_lo + (pos - ml))
    return theta
