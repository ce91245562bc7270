"""Rank statistics of several methods over several datasets (Demšar 2006).

The formulas (average ranks, Friedman's chi-square and Iman-Davenport's F,
Nemenyi's critical difference and its groups, the sign test) are derived in
the docstring of :mod:`dpreg.report.leaderboard`, which applies them to
Wang's suite; :mod:`dpreg.report.cdplot` draws the groups.

References
----------
Demšar, J. (2006). Statistical comparisons of classifiers over multiple data
sets. JMLR 7, 1-30.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpreg._validation import DPRegError

__all__ = [
    "TIES",
    "Friedman",
    "average_ranks",
    "critical_difference",
    "friedman",
    "nemenyi_cliques",
    "sign_test",
    "wins_ties_losses",
]

TIES = ("split", "drop")


def average_ranks(errors: np.ndarray) -> np.ndarray:
    """Ranks (1 = lowest error) within each row of an ``N x k`` matrix; ties averaged."""
    errors = np.asarray(errors, dtype=float)
    if errors.ndim != 2 or not np.isfinite(errors).all():
        raise DPRegError("ranks need a finite N x k matrix of errors (datasets x methods)")
    return np.apply_along_axis(stats.rankdata, 1, errors)


@dataclass(frozen=True)
class Friedman:
    """The Friedman test on an ``N x k`` rank matrix (Demšar 2006, eqs. 1-2)."""

    chi2: float
    p: float
    f: float
    f_p: float
    n: int
    k: int


def friedman(ranks: np.ndarray) -> Friedman:
    """Friedman's chi-square (tie-corrected) and Iman-Davenport's F of a rank matrix."""
    ranks = np.asarray(ranks, dtype=float)
    n, k = ranks.shape
    if n < 2 or k < 2:
        raise DPRegError(
            f"the Friedman test needs at least 2 datasets and 2 methods (got {n}, {k})"
        )
    r = ranks.mean(axis=0)
    chi2 = 12.0 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4.0)
    ties = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts**3 - counts))
    correction = 1.0 - ties / (n * k * (k * k - 1))
    chi2 = chi2 / correction if correction > 0 else 0.0
    p = float(stats.chi2.sf(chi2, k - 1))
    denom = n * (k - 1) - chi2
    f = (n - 1) * chi2 / denom if denom > 0 else math.inf
    f_p = float(stats.f.sf(f, k - 1, (k - 1) * (n - 1))) if math.isfinite(f) else 0.0
    return Friedman(float(chi2), p, float(f), f_p, n, k)


def critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi's critical difference of average ranks, ``q_alpha sqrt(k (k+1) / (6 N))``."""
    if not 0 < alpha < 1:
        raise DPRegError(f"alpha must be in (0, 1), got {alpha!r}")
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2)
    return float(q * math.sqrt(k * (k + 1) / (6.0 * n)))


def nemenyi_cliques(avg_ranks: Sequence[float], cd: float) -> list[tuple[int, int]]:
    """Maximal runs ``(i, j)`` of the sorted ranks whose spread is below ``cd``.

    Indices refer to ``sorted(avg_ranks)``; these are the bars of a
    critical-difference diagram (groups not significantly different).
    """
    r = np.sort(np.asarray(avg_ranks, dtype=float))
    out: list[tuple[int, int]] = []
    for i in range(len(r)):
        j = int(np.searchsorted(r, r[i] + cd, side="left")) - 1
        if j > i and (not out or j > out[-1][1]):
            out.append((i, j))
    return out


def wins_ties_losses(errors: np.ndarray, reference: np.ndarray, margin: float) -> tuple[int, ...]:
    """Datasets where ``errors`` is below, within ``margin`` of, or above ``reference``."""
    if margin < 0:
        raise DPRegError(f"margin must be >= 0, got {margin!r}")
    ratio = np.asarray(errors, dtype=float) / np.asarray(reference, dtype=float)
    tie = (ratio >= 1.0 / (1.0 + margin)) & (ratio <= 1.0 + margin)
    return int(np.sum(~tie & (ratio < 1))), int(np.sum(tie)), int(np.sum(~tie & (ratio > 1)))


def sign_test(wins: int, ties: int, losses: int, ties_rule: str = "split") -> float:
    """Two-sided sign-test p-value; ties split evenly (one of an odd number dropped) or dropped."""
    if ties_rule not in TIES:
        raise DPRegError(f"ties must be one of {', '.join(TIES)}, got {ties_rule!r}")
    if ties_rule == "split":
        wins, losses = wins + ties // 2, losses + ties // 2
    n = wins + losses
    return 1.0 if n == 0 else float(stats.binomtest(wins, n, 0.5).pvalue)
