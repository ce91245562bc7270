"""Clopper-Pearson bounds and the distinguishing test (both audit layers).

For a test set ``S``, ``(epsilon, delta)``-DP requires
``P_D'(S) <= e^epsilon P_D(S) + delta`` (and the same with ``D``, ``D'``
swapped), so ``epsilon >= ln((P_D'(S) - delta) / P_D(S))``.  One-sided
Clopper-Pearson bounds on both probabilities at ``alpha / 2`` each give a
lower bound on epsilon at confidence ``1 - alpha`` (union bound).  The test
set is chosen on one half of the samples and evaluated once on the other.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaincinv
from scipy.stats import norm

from dpreg._validation import DPRegError

__all__ = [
    "ALPHA",
    "judge",
    "LLR_DECIMALS",
    "clopper_pearson",
    "count_ceiling",
    "distinguishing_test",
    "epsilon_lower_bound",
    "gaussian_ceiling",
    "power_of",
    "round_llr",
]

#: Overall error probability of one lower bound (confidence 1 - ALPHA).
ALPHA = 1e-3
#: Thresholds tried on the selection half.
N_CANDIDATES = 400
#: Decimals the log-likelihood ratio is rounded to (see :func:`round_llr`).
LLR_DECIMALS = 9


def round_llr(llr: np.ndarray) -> np.ndarray:
    """Round to ``LLR_DECIMALS`` so no test set resolves floating-point last bits.

    The low-order bits of a floating-point noisy release depend on which
    mean it was added to (Mironov 2012); the atoms of a Laplace LLR (e.g. at
    ``-epsilon``) are computed with a few ulps of such spread, and a
    threshold placed between those ulps measures that side channel, not the
    noise calibration this audit is about.
    """
    return np.round(llr, LLR_DECIMALS)


def clopper_pearson(k, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds ``(lower, upper)`` for ``k`` of ``n``, each at level ``alpha``.

    ``P(p >= lower) >= 1 - alpha`` and ``P(p <= upper) >= 1 - alpha``.
    """
    k = np.asarray(k, dtype=float)
    lower = np.where(k > 0, betaincinv(np.maximum(k, 1.0), n - k + 1.0, alpha), 0.0)
    upper = np.where(k < n, betaincinv(k + 1.0, np.maximum(n - k, 1.0), 1.0 - alpha), 1.0)
    return lower, upper


def epsilon_lower_bound(
    k1, n1: int, k0, n0: int, *, delta: float, alpha: float = ALPHA
) -> np.ndarray:
    """``ln((P1_lower - delta) / P0_upper)`` with one-sided CP bounds at ``alpha / 2`` each.

    ``k1`` of ``n1`` outputs of the "more likely" dataset fell in the test set,
    ``k0`` of ``n0`` of the other.  ``-inf`` where ``P1_lower <= delta``.
    """
    p1, _ = clopper_pearson(k1, n1, alpha / 2.0)
    _, p0 = clopper_pearson(k0, n0, alpha / 2.0)
    num = p1 - delta
    safe = np.where(num > 0, num, 1.0)
    return np.where(num > 0, np.log(safe / p0), -np.inf)


#: One-sided level of the pessimistic probability estimates that score thresholds.
SELECT_BETA = 0.02


def _selection_score(k1, h1: int, k0, h0: int, m1: int, m0: int, *, delta: float, alpha: float):
    """The bound a threshold is expected to give on the evaluation part, from the
    selection part's counts: pessimistic (one-sided ``SELECT_BETA``) Clopper-Pearson
    estimates of both probabilities, scaled to the evaluation sizes ``m1``, ``m0``
    and scored with :func:`epsilon_lower_bound`.  Without the pessimism the
    search picks far tails whose few counts happened to fall well."""
    p1, _ = clopper_pearson(k1, h1, SELECT_BETA)
    _, p0 = clopper_pearson(k0, h0, SELECT_BETA)
    return epsilon_lower_bound(p1 * m1, m1, p0 * m0, m0, delta=delta, alpha=alpha)


def distinguishing_test(
    llr0: np.ndarray,
    llr1: np.ndarray,
    *,
    delta: float,
    alpha: float = ALPHA,
    select_share: float = 0.5,
) -> dict:
    """Empirical epsilon lower bound from LLR samples under ``D`` (``llr0``) and ``D'`` (``llr1``).

    The first ``select_share`` of each sample chooses the test set -- ``LLR >= t``
    (``D'`` more likely) or ``LLR <= t`` (``D`` more likely) with ``t`` on a grid
    of about 400 tail quantiles -- scored by :func:`_selection_score` (the
    bound expected on the evaluation part); the rest evaluates that one test
    set, so the bound is valid whatever the selection did.
    """
    if not 0.0 < select_share < 1.0:
        raise DPRegError(f"select_share must be in (0, 1), got {select_share!r}")
    n0, n1 = llr0.size, llr1.size
    h0, h1 = max(int(select_share * n0), 1), max(int(select_share * n1), 1)
    s0 = np.sort(llr0[:h0])
    s1 = np.sort(llr1[:h1])
    best: tuple[float, str, float] = (-np.inf, ">=", math.inf)
    m = np.unique(np.geomspace(5.0, max(h0, h1) / 2.0, N_CANDIDATES).astype(np.int64))
    # upper tail: thresholds from the D' sample, P_D'(S) against P_D(S)
    t_up = np.unique(s1[np.clip(h1 - m, 0, h1 - 1)])
    k1 = h1 - np.searchsorted(s1, t_up, side="left")
    k0 = h0 - np.searchsorted(s0, t_up, side="left")
    e_up = _selection_score(k1, h1, k0, h0, n1 - h1, n0 - h0, delta=delta, alpha=alpha)
    # lower tail: thresholds from the D sample, P_D(S) against P_D'(S)
    t_lo = np.unique(s0[np.clip(m - 1, 0, h0 - 1)])
    k0l = np.searchsorted(s0, t_lo, side="right")
    k1l = np.searchsorted(s1, t_lo, side="right")
    e_lo = _selection_score(k0l, h0, k1l, h1, n0 - h0, n1 - h1, delta=delta, alpha=alpha)
    if e_up.size and np.max(e_up) > best[0]:
        j = int(np.argmax(e_up))
        best = (float(e_up[j]), ">=", float(t_up[j]))
    if e_lo.size and np.max(e_lo) > best[0]:
        j = int(np.argmax(e_lo))
        best = (float(e_lo[j]), "<=", float(t_lo[j]))
    sel_eps, direction, t = best
    e0, e1 = llr0[h0:], llr1[h1:]
    m0, m1 = e0.size, e1.size
    if direction == ">=":  # P_D'(S) <= e^eps P_D(S) + delta is tested
        c1, c0 = int(np.count_nonzero(e1 >= t)), int(np.count_nonzero(e0 >= t))
        (k_num, n_num), (k_den, n_den) = (c1, m1), (c0, m0)
    else:  # P_D(S) <= e^eps P_D'(S) + delta is tested
        c1, c0 = int(np.count_nonzero(e1 <= t)), int(np.count_nonzero(e0 <= t))
        (k_num, n_num), (k_den, n_den) = (c0, m0), (c1, m1)
    eps = float(epsilon_lower_bound(k_num, n_num, k_den, n_den, delta=delta, alpha=alpha))
    p_num_lower, _ = clopper_pearson(k_num, n_num, alpha / 2)
    _, p_den_upper = clopper_pearson(k_den, n_den, alpha / 2)
    return {
        "epsilon_lb_raw": eps if math.isfinite(eps) else None,
        "epsilon_lb": max(eps, 0.0),
        "test_set": f"LLR {direction} t",
        "threshold": t if math.isfinite(t) else None,
        "selection_epsilon_lb": sel_eps if math.isfinite(sel_eps) else None,
        "n_selection": int(h0),
        "n_evaluation": int(m0),
        "count_D": c0,
        "count_D_prime": c1,
        # CP bounds on the more likely dataset's probability of S and the other's
        "p_numerator_lower": float(p_num_lower),
        "p_denominator_upper": float(p_den_upper),
        "confidence": 1.0 - alpha,
    }


def judge(lb: float, exact: float | None, claim: float) -> dict[str, object]:
    """The three failure conditions of one audit record and its verdict.

    ``lb_exceeds_claim``: the empirical lower bound refutes the claim;
    ``exact_exceeds_claim``: the exact epsilon computed from the ledger's
    releases is above the claim; ``lb_exceeds_exact``: the lower bound is
    above the exact epsilon, a contradiction that means a sensitivity or a
    noise scale in the code differs from the ledger's.  ``verdict`` is
    ``violation``, ``inconsistent``, ``over-claim`` (in that precedence) or
    ``ok``.  A relative slack of 1e-9 absorbs root-finder rounding.
    """
    lb_claim = bool(lb > claim)
    exact_claim = exact is not None and bool(exact > claim * (1 + 1e-9))
    lb_exact = exact is not None and bool(lb > exact * (1 + 1e-9))
    if lb_claim:
        verdict = "violation"
    elif lb_exact:
        verdict = "inconsistent"
    elif exact_claim:
        verdict = "over-claim"
    else:
        verdict = "ok"
    return {
        "lb_exceeds_claim": lb_claim,
        "exact_exceeds_claim": exact_claim,
        "lb_exceeds_exact": lb_exact,
        "verdict": verdict,
    }


def count_ceiling(n: int, *, delta: float, alpha: float = ALPHA) -> float:
    """The largest epsilon any test set can certify with ``n`` samples per side.

    The bound is :func:`epsilon_lower_bound`, increasing in ``k1`` and
    decreasing in ``k0``, so its maximum is at the best possible counts
    ``k1 = n`` and ``k0 = 0``.  There the one-sided Clopper-Pearson bounds at
    ``alpha / 2`` have closed forms: the lower bound for ``n`` of ``n`` solves
    ``p^n = alpha / 2``, i.e. ``p1 = (alpha/2)^(1/n)``, and the upper bound for
    ``0`` of ``n`` solves ``(1 - p)^n = alpha / 2``, i.e. ``p0 = 1 - (alpha/2)^(1/n)``.
    Hence

    ``ceiling = ln(((alpha/2)^(1/n) - delta) / (1 - (alpha/2)^(1/n)))``

    (``-inf`` when ``(alpha/2)^(1/n) <= delta``).  No audit with ``n``
    evaluation samples can report more, whatever the target.
    """
    q = (alpha / 2.0) ** (1.0 / n)
    return (
        math.log((q - delta) / -math.expm1(math.log(alpha / 2.0) / n)) if q > delta else -math.inf
    )


def gaussian_ceiling(mu: float, n: int, *, delta: float, alpha: float = ALPHA) -> float:
    """The largest epsilon a threshold test can certify, at ``n`` samples per side, on a
    target whose privacy loss is that of ``mu``-GDP (its exact privacy profile).

    For a ``mu``-Gaussian pair the log-likelihood ratio is ``N(-mu^2/2, mu^2)``
    under ``D`` and ``N(mu^2/2, mu^2)`` under ``D'`` (Dong, Roth & Su 2019), so
    the test ``LLR >= t`` has ``P_D'(S) = Phi((mu^2/2 - t)/mu)`` and
    ``P_D(S) = Phi((-mu^2/2 - t)/mu)`` (the ``LLR <= t`` tests are the mirror
    image).  The ceiling is the maximum over ``t`` of :func:`epsilon_lower_bound`
    at the expected counts ``n P_D'(S)`` and ``n P_D(S)``, capped by
    :func:`count_ceiling`.  It is what an audit that saw the optimal threshold
    and typical counts would report (e.g. 0.695 at ``(1, 1e-5)``, analytic
    calibration, ``n = 10^6``, confidence ``1 - 1e-3``; about 0.77 at
    confidence 0.95).
    """
    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return count_ceiling(n, delta=delta, alpha=alpha)
    # thresholds in units of mu around the optimum, which lies in the tail
    t = mu * np.linspace(-0.5 * mu, 0.5 * mu + 12.0, 6001)
    p1 = norm.sf((t - 0.5 * mu * mu) / mu)
    p0 = norm.sf((t + 0.5 * mu * mu) / mu)
    with np.errstate(divide="ignore"):
        e = epsilon_lower_bound(n * p1, n, n * p0, n, delta=delta, alpha=alpha)
    best = float(np.max(e))
    return max(min(best, count_ceiling(n, delta=delta, alpha=alpha)), 0.0)


def power_of(
    lb: float, claim: float, n: int, *, delta: float, mu: float | None, alpha: float = ALPHA
) -> dict[str, object]:
    """Power fields of one record: ``ceiling``, ``tightness`` and ``power``.

    ``ceiling`` is :func:`gaussian_ceiling` when the whole output is a
    Gaussian-DP release of composed ``mu`` (the exact privacy profile), else
    :func:`count_ceiling`; ``n`` is the number of samples per side the
    threshold test sees.  ``tightness = lb / min(claim, ceiling)`` (0 when
    the denominator is not positive).  ``power`` is ``none`` when no test at
    this ``n`` could refute the claim (``count_ceiling <= claim``) or when
    the lower bound is 0 (tightness 0: the audit detected nothing), else
    ``ok``.  ``power`` never changes the verdict.
    """
    top = count_ceiling(n, delta=delta, alpha=alpha)
    ceiling = gaussian_ceiling(mu, n, delta=delta, alpha=alpha) if mu is not None else top
    ceiling = max(ceiling, 0.0)
    denom = min(claim, ceiling)
    ok_lb = lb is not None and math.isfinite(lb) and lb > 0
    tightness = float(lb) / denom if ok_lb and denom > 0 else 0.0
    power = "ok" if top > claim and ok_lb else "none"
    return {
        "ceiling": ceiling,
        "count_ceiling": top if math.isfinite(top) else None,
        "tightness": tightness,
        "power": power,
    }
