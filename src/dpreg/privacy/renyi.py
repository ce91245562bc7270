"""Renyi differential privacy: the curves of Gaussian and Gaussian-mixing releases.

The accountant :func:`dpreg.privacy.accounting.compose` uses this module when
a list of releases holds a mechanism with no exact privacy profile of its own
here -- the Gaussian-mixing sketch of Iterative Hessian Mixing.  All the
releases that have a Renyi curve (Gaussian and Gaussian-mixing) are then
composed in Renyi DP, where composition is exact (the orders add), and the
sum is converted to ``(epsilon, delta)`` with the conversion of Canonne,
Kamath & Steinke (2020), optimised over the order ``alpha``.  That is the
tightest method this package has for such a mix; for Gaussian releases alone
the exact Gaussian-DP profile is used instead (it is exact, RDP is not).

Curves (orders ``alpha > 1``)
-----------------------------
* Gaussian release of L2 sensitivity ``D`` and noise ``sigma``, ``mu = D /
  sigma``: ``alpha mu^2 / 2`` (Mironov 2017, Proposition 7).
* Gaussian-mixing release of ``k`` sketch rows whose covariance is at least
  ``gamma B^2 I`` while one row changes the data's Gram matrix by a rank-one
  ``x x^T`` with ``||x||^2 <= B^2``: ``k`` times the Renyi divergence
  ``D_alpha(N(0, gamma) || N(0, gamma - 1))``, i.e. ::

      k / (2 (alpha - 1)) [alpha ln(1 - 1/gamma) - ln(1 - alpha/gamma)]

  finite for ``1 < alpha < gamma`` (Lev et al. 2025, the Gaussian mixing
  mechanism).

References
----------
Mironov, I. (2017). Renyi differential privacy. CSF.
Canonne, C., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS (Proposition 12: RDP to (eps, delta)).
Lev, O. et al. (2025). The Gaussian mixing mechanism (arXiv 2505.24603).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["exact_profile", "mixing_rdp", "rdp_delta", "rdp_epsilon", "rdp_to_dp"]


def mixing_rdp(alpha: float, gamma: float, k: int) -> float:
    """Renyi DP of order ``alpha`` of ``k`` Gaussian-mixing sketch rows (``B_X = 1``).

    ``k / (2 (alpha - 1)) [alpha ln(1 - 1/gamma) - ln(1 - alpha/gamma)]``, which
    is ``k`` times the Renyi divergence ``D_alpha(N(0, gamma) || N(0, gamma - 1))``
    (Lev et al. 2025); finite for ``1 < alpha < gamma``.
    """
    if not (1.0 < alpha < gamma):
        return math.inf
    return (
        k / (2.0 * (alpha - 1.0)) * (alpha * math.log1p(-1.0 / gamma) - math.log1p(-alpha / gamma))
    )


def rdp_to_dp(alpha: float, rdp: float, delta: float) -> float:
    """``(alpha, rdp)``-RDP implies ``(eps, delta)``-DP with this ``eps``.

    ``eps = rdp + [ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln alpha] / (alpha - 1)``
    (Canonne, Kamath & Steinke 2020, Proposition 12).
    """
    return rdp + (
        math.log(1.0 / delta) + (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)
    ) / (alpha - 1.0)


def _curve(alpha: np.ndarray, mu2: float, mixing: Sequence[tuple[float, int]]) -> np.ndarray:
    """The composed RDP curve at the orders ``alpha``: ``alpha mu2/2 + sum k_j D_alpha(gamma_j)``."""
    out = alpha * mu2 / 2.0
    for gamma, k in mixing:
        with np.errstate(invalid="ignore", divide="ignore"):
            term = (
                k
                / (2.0 * (alpha - 1.0))
                * (alpha * math.log1p(-1.0 / gamma) - np.log1p(-alpha / gamma))
            )
        out = out + np.where(alpha < gamma, term, np.inf)
    return out


def _orders(mixing: Sequence[tuple[float, int]]) -> np.ndarray:
    """A logarithmic grid of orders ``1 < alpha < min gamma`` (or up to 1e6 without mixing)."""
    top = min([g for g, _ in mixing], default=1e6 + 1.0)
    hi = math.log(top - 1.0) - 1e-9
    return 1.0 + np.exp(np.linspace(min(math.log(1e-6), hi - 1.0), hi, 4000))


def rdp_epsilon(*, mu2: float, mixing: Sequence[tuple[float, int]], delta: float) -> float:
    """``min_alpha`` of the CKS conversion of the composed curve at ``delta``.

    ``mu2`` is the sum of the Gaussian releases' ``mu^2``; ``mixing`` lists
    ``(gamma, k)`` of every Gaussian-mixing release.  The minimum is taken on
    a grid of 4000 orders, logarithmic in ``alpha - 1`` (the curve is convex
    in ``alpha``; adjacent orders differ by under 1%, and the conversion is
    flat at its minimum, so the grid minimum is within 1e-4 relative of the
    true one); the result is always a valid (never smaller) epsilon, and
    never below 0.
    """
    a = _orders(mixing)
    conv = (np.log(1.0 / delta) + (a - 1.0) * np.log1p(-1.0 / a) - np.log(a)) / (a - 1.0)
    # the conversion may go below 0 at large orders: the releases are then (0, delta)-DP
    return max(0.0, float(np.min(_curve(a, mu2, mixing) + conv)))


def rdp_delta(*, mu2: float, mixing: Sequence[tuple[float, int]], epsilon: float) -> float:
    """The smallest delta at which the CKS conversion gives ``epsilon`` (the inverse of
    :func:`rdp_epsilon`): ``min_alpha exp((alpha-1)(rdp - eps)) (1 - 1/alpha)^(alpha-1) / alpha``."""
    a = _orders(mixing)
    log_d = (
        (a - 1.0) * (_curve(a, mu2, mixing) - epsilon) + (a - 1.0) * np.log1p(-1.0 / a) - np.log(a)
    )
    return float(min(1.0, math.exp(min(0.0, float(np.min(log_d))))))


def exact_profile(
    mu2: float,
    mixing: Sequence[tuple[float, int]],
    *,
    delta: float,
    pure: float,
    fixed: float,
    at: float,
) -> tuple[float | None, float]:
    """``(epsilon at delta, delta at epsilon = at)`` of a Renyi part beside other releases.

    The Renyi part converts at what is left of ``delta`` after the ``fixed``
    deltas (failure probabilities, stated deltas), and the ``pure`` epsilons
    of the other releases add: ``inf`` at ``delta = 0``, None when ``fixed``
    leaves nothing.  The delta is the conversion's at ``at - pure`` plus
    ``fixed`` (at most 1).
    """
    eps: float | None = math.inf
    if delta > fixed:
        eps = pure + rdp_epsilon(mu2=mu2, mixing=mixing, delta=delta - fixed)
    elif delta > 0:
        eps = None
    left = at - pure
    dlt = fixed + (rdp_delta(mu2=mu2, mixing=mixing, epsilon=left) if left > 0 else 1.0)
    return eps, min(dlt, 1.0)
