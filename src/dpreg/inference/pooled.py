"""One decision per claim: pooled effect, dataset bootstrap, Holm, margin and TOST.

A claim compares stat(a) / stat(b) on several datasets and epsilons.  Its one
decision is made on the *pooled effect*

    theta = mean over datasets d of  mean over the claim's epsilons e of  log(stat_a / stat_b)[d, e],

reported as the geometric-mean ratio exp(theta).  An epsilon-independent
comparison (neither side's trials change with epsilon, e.g. two non-private
references) enters with one point per dataset, not one per epsilon.

Interval.  The units are the datasets and, within each, its partitions: a
replicate draws the claim's n datasets with replacement and, for each drawn
dataset, one replicate of its (partition, fold, repeat) design bootstrap
(:mod:`dpreg.inference.bootstrap`; partitions, then folds within partitions,
then repeats within folds), i.e. multi-stage resampling (Davison & Hinkley
1997, section 3.8).  The interval is the expanded percentile interval with n
clusters (Hesterberg 2015; :func:`dpreg.inference.bootstrap.expanded_alpha`),
which widens the plain percentile interval for small n.  With n = 1 the
interval is conditional on that dataset; with one partition per dataset
(``cv.partitions: 1``) it is conditional on each dataset's partition, and
with several it carries the partition-to-partition variation.

Decision at level alpha with the practical margin m (delta = log(1 + m);
ratios within [1/(1+m), 1+m] are ties), from the two-sided 1 - alpha
interval [L, U] of theta (:func:`decide`):

- ``expect: lower``: supported if U < -delta; contradicted if L > delta;
  equivalent (a practical tie, so no claimed difference) if -delta <= L and
  U <= delta; otherwise inconclusive.  ``higher`` mirrors it.
- ``expect: equal`` (TOST, Schuirmann 1987): supported if -delta <= L and
  U <= delta -- both one-sided tests reject at alpha / 2, so TOST at the
  two-sided interval is conservative; contradicted if the interval lies
  entirely outside [-delta, delta]; otherwise inconclusive.

Multiplicity.  The p-value of a claim is the smallest alpha at which its
interval reaches a decision (:func:`decision_p_value`; the intervals are
nested in alpha, so the decision it reaches is the same at every larger
alpha).  The confirmatory claims form one family, adjusted by Holm's step-down
procedure (Holm 1979; :func:`holm`): the claim of rank k among n is decided
at alpha / (n - k + 1) if every claim before it was; its interval is
reported at that adjusted level.  Exploratory claims are judged at the
unadjusted alpha = 1 - level and are labelled so.

References
----------
Holm, S. (1979). A simple sequentially rejective multiple test procedure.
*Scandinavian Journal of Statistics* 6(2), 65-70.
Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure
and the power approach for assessing the equivalence of average
bioavailability. *J. Pharmacokinetics and Biopharmaceutics* 15(6), 657-680.
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their
Application*, section 3.8.  Hesterberg, T. C. (2015), *The American
Statistician* 69(4), 371-386.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpreg.inference.bootstrap import expanded_alpha
from dpreg.seeding import seed_sequence

__all__ = [
    "DECISIONS",
    "Pooled",
    "decide",
    "decision_p_value",
    "holm",
    "holm_adjusted",
    "pool_datasets",
]

DECISIONS = ("supported", "contradicted", "equivalent", "inconclusive")


@dataclass(frozen=True)
class Pooled:
    """The pooled log effect of one claim and its dataset-bootstrap replicates."""

    theta: float  # mean over datasets of the mean log ratio over epsilons
    replicates: np.ndarray  # (B,) replicate values of theta
    datasets: int  # n, the number of datasets (top-level units)

    def interval(self, alpha: float) -> tuple[float, float]:
        """Two-sided 1 - alpha expanded percentile interval of theta (NaN if undefined)."""
        reps = self.replicates[np.isfinite(self.replicates)]
        if not len(reps) or not math.isfinite(self.theta):
            return math.nan, math.nan
        a = expanded_alpha(1.0 - alpha, self.datasets)
        lo, hi = np.quantile(reps, [a / 2.0, 1.0 - a / 2.0])
        return float(lo), float(hi)


def pool_datasets(
    points: Sequence[float],
    replicates: Sequence[np.ndarray],
    *,
    seed: int,
    key: str,
) -> Pooled:
    """Pool per-dataset log effects into one effect with two-stage replicates.

    Parameters
    ----------
    points : sequence of float
        Per dataset, the mean over the claim's epsilons of log(stat_a / stat_b).
    replicates : sequence of (B,) arrays
        Per dataset, the same mean in each replicate of its design bootstrap.
    seed, key
        Root seed and the claim's key: the dataset draws come from
        ``seed_sequence(seed, "claims", "pooled", key)``.

    Returns
    -------
    Pooled
        Replicate b averages, over n datasets drawn with replacement, one
        design replicate of each drawn dataset (picked at random, so a
        dataset drawn twice contributes two independent design replicates).
    """
    pts = np.asarray(points, dtype=float)
    n = len(pts)
    if n == 0:
        return Pooled(math.nan, np.full(0, np.nan), 0)
    reps = np.stack([np.asarray(r, dtype=float) for r in replicates])  # (n, B)
    B = reps.shape[1]
    rng = np.random.default_rng(seed_sequence(seed, "claims", "pooled", key))
    pick = rng.integers(0, n, size=(B, n))
    column = rng.integers(0, B, size=(B, n))
    pooled = reps[pick, column].mean(axis=1)
    return Pooled(float(pts.mean()), pooled, n)


def decide(lo: float, hi: float, *, expect: str, margin: float) -> str:
    """Decision from the interval [lo, hi] of the log effect (rules in the module docstring)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    d = math.log1p(margin)
    tie = -d <= lo and hi <= d
    if expect == "equal":
        if tie:
            return "supported"
        return "contradicted" if hi < -d or lo > d else "inconclusive"
    below, above = hi < -d, lo > d
    if expect == "higher":
        below, above = above, below
    if below:
        return "supported"
    if above:
        return "contradicted"
    return "equivalent" if tie else "inconclusive"


def decision_p_value(pooled: Pooled, *, expect: str, margin: float) -> float:
    """Smallest alpha at which the 1 - alpha interval decides (1 when none does).

    Found by bisection on alpha in (0, 1): the intervals shrink as alpha
    grows, so "decided at alpha" is monotone (to 1e-6 in alpha).  B
    replicates resolve no tail below 1 / B: a claim decided there gets p = 1 / B.
    """

    def decided(alpha: float) -> bool:
        return decide(*pooled.interval(alpha), expect=expect, margin=margin) != "inconclusive"

    top = 1.0 - 1e-9
    if not decided(top):
        return 1.0
    floor = 1.0 / max(len(pooled.replicates), 1)
    if decided(floor):
        return floor
    lo, hi = floor, top
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if decided(mid) else (mid, hi)
    return hi


def holm(p_values: Sequence[float], alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure: (adjusted level, decided) of each hypothesis.

    The hypothesis of rank k (1-based, p ascending, ties in input order) is
    tested at alpha / (n - k + 1) and decided when it and every hypothesis
    before it have p at or below their level.
    """
    p = np.asarray(p_values, dtype=float)
    n = len(p)
    order = np.argsort(p, kind="mergesort")
    level = np.empty(n)
    decided = np.zeros(n, dtype=bool)
    going = True
    for rank, i in enumerate(order):
        level[i] = alpha / (n - rank)
        going = going and bool(p[i] <= level[i])
        decided[i] = going
    return level, decided


def holm_adjusted(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values: max over ranks j <= k of min(1, (n - j + 1) p_(j))."""
    p = np.asarray(p_values, dtype=float)
    n = len(p)
    order = np.argsort(p, kind="mergesort")
    out = np.empty(n)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (n - rank) * p[i]))
        out[i] = running
    return out
