"""Tight calibration: the noise at which all of a run's releases cost exactly (epsilon, delta).

An entry's releases are written as a function of one *noise multiplier*
``z`` (every noise scale grows with ``z``; for the tight entries of
:mod:`dpreg.algorithms.tight` ``z`` multiplies the scales of a counterpart
entry).  :func:`calibrate_multiplier` finds the ``z`` at which the exact
accounting of :func:`dpreg.privacy.accounting.compose` over all the releases
composed meets the target: ``(1 - rtol) epsilon <= eps_exact(z) <= epsilon``
at ``delta`` with ``rtol = 1e-4`` (well inside the 0.1% the comparisons
require), by bisection on ``ln z``, keeping the private end of the bracket,
so the returned multiplier never spends more than ``epsilon`` (the style of
``dp_accounting``'s ``calibrate_dp_mechanism``).

Which exact accounting applies is the accountant's (see ``compose``):

* Gaussian releases only: Gaussian DP, exact -- the releases compose as
  ``mu = sqrt(sum mu_i^2)`` (Dong, Roth & Su 2019, Corollary 3.3) and ``mu``
  converts to ``(epsilon, delta)`` by Corollary 2.13.  With every scale
  ``z c_i`` the answer has the closed form ``z = sqrt(sum (D_i / c_i)^2) /
  gdp_mu(epsilon, delta)``, which is used (no bisection).
* Gaussian and Gaussian-mixing releases (IHM): Renyi DP with the optimal
  conversion of Canonne, Kamath & Steinke (2020) (:mod:`dpreg.privacy.renyi`)
  -- the tightest method this package has for the mixing sketch; the
  failure probability of the sketch's covariance floor is added to delta.
* Laplace and stated pure-epsilon releases add their epsilons (basic
  composition is exact for pure DP at delta = 0), plus the Gaussian part's
  GDP epsilon at what their deltas leave.

Neighbouring relation
---------------------
Every comparison uses add/remove-one-row neighbours: the sensitivities of
the releases are add/remove sensitivities.  A replace-one neighbour is two
add/remove steps (remove the row, add its replacement), so:

* pure ``epsilon``-DP under add/remove is ``2 epsilon``-DP under replace-one
  (group privacy for a group of two; Dwork & Roth 2014, Theorem 2.2);
* ``mu``-GDP under add/remove is ``2 mu``-GDP under replace-one: group
  privacy for GDP gives ``k mu`` for groups of ``k`` (Dong, Roth & Su 2019,
  Theorem 2.14); for a Gaussian release of a sum this is exact, since the
  replace-one L2 sensitivity of ``sum_i f(x_i)`` with ``||f|| <= D`` is
  ``||f(x) - f(x')|| <= 2 D`` and ``mu = 2 D / sigma``;
* ``(epsilon, delta)`` under add/remove is ``(2 epsilon, (1 + e^epsilon)
  delta)`` under replace-one (group privacy).

An entry whose sensitivities are replace-one (``neighbouring =
"replace-one"``) is therefore not comparable at equal nominal budgets; its
add/remove guarantee, where one exists, is stated where its formula lives.

References
----------
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
Canonne, C., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS.
Dwork, C. & Roth, A. (2014). The Algorithmic Foundations of Differential
Privacy.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpreg._validation import DPRegError, check_delta, check_epsilon, epsilon_too_small
from dpreg.privacy.accounting import Release, compose, gdp_mu

__all__ = ["RTOL", "calibrate_multiplier", "exact_epsilon"]

#: Relative tolerance of a tight calibration: ``(1 - RTOL) eps <= eps_exact <= eps``.
RTOL = 1e-4


def exact_epsilon(releases: list[Release], *, delta: float) -> float:
    """The exact epsilon of ``releases`` composed at ``delta`` (``inf`` if none exists)."""
    value = compose(releases, delta=delta)["exact_epsilon"]
    return math.inf if value is None else float(value)


def _mu(releases: list[Release]) -> float | None:
    """GDP ``mu`` of a list of Gaussian releases (None if any is not Gaussian)."""
    if not releases or any(r.mechanism != "gaussian" for r in releases):
        return None
    return math.hypot(*(r.mu for r in releases))  # no underflow of tiny mu_i^2


def _gaussian_closed_form(
    releases_of: Callable[[float], list[Release]], eps: float, dlt: float
) -> float | None:
    """``z = mu(1) / gdp_mu(eps, delta)`` when every release is Gaussian with scale ``z c_i``.

    Then ``mu(z) = mu(1) / z`` (Dong, Roth & Su 2019, Corollary 3.3), and the
    multiplier is exact; the proportionality is checked at ``z = 2``.  None:
    use the bisection.
    """
    mu1, mu2 = _mu(releases_of(1.0)), _mu(releases_of(2.0))
    if mu1 is None or mu2 is None or not math.isclose(mu1, 2.0 * mu2, rel_tol=1e-12):
        return None
    z = mu1 / gdp_mu(epsilon=eps, delta=dlt)
    if not (0.0 < z < math.inf):
        raise epsilon_too_small(eps)
    return z


def calibrate_multiplier(
    releases_of: Callable[[float], list[Release]],
    *,
    epsilon: float,
    delta: float,
    rtol: float = RTOL,
    start: float = 1.0,
) -> float:
    """The noise multiplier ``z`` at which ``releases_of(z)`` costs exactly ``(epsilon, delta)``.

    Parameters
    ----------
    releases_of : callable
        ``z -> list[Release]``; every noise scale must grow with ``z``.
    epsilon, delta : float
        The target; ``delta`` in (0, 1).
    rtol : float
        The result has ``(1 - rtol) epsilon <= eps_exact <= epsilon``.
    start : float
        First guess of ``z`` (the bracket grows from it by factors of 2).

    Returns
    -------
    float
        The multiplier; ``eps_exact(releases_of(z))`` at ``delta`` is within
        ``rtol`` below ``epsilon``, never above it.  When every release is
        Gaussian with a scale proportional to ``z``, the closed form of
        Gaussian DP instead: ``z = mu(1) / gdp_mu(epsilon, delta)``, exact up
        to rounding (as the ``gdp`` calibration of
        :func:`dpreg.algorithms.ssp.split_releases`).
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if not (0.0 < rtol < 0.01):
        raise DPRegError(f"rtol must lie in (0, 0.01), got {rtol!r}")

    closed = _gaussian_closed_form(releases_of, eps, dlt)
    if closed is not None:
        return closed
    seen: dict[float, float] = {}

    def cost(z: float) -> float:
        if z not in seen:
            seen[z] = exact_epsilon(releases_of(z), delta=dlt)
        return seen[z]

    lo = hi = float(start)  # lo: spends more than eps; hi: spends at most eps
    while cost(hi) > eps:
        lo, hi = hi, hi * 4.0
        if hi > 1e100:
            raise DPRegError(
                f"no noise multiplier meets epsilon={eps}, delta={dlt}: the releases' "
                "other costs (pure epsilons, failure deltas) already exceed it"
            )
    if lo == hi:
        while cost(lo) <= eps:
            hi, lo = lo, lo / 2.0
            if lo < 1e-12:
                raise DPRegError(f"the releases cost at most epsilon={eps} for any noise")
    for _ in range(200):
        if cost(hi) >= eps * (1.0 - rtol):
            return hi
        mid = math.sqrt(lo * hi)
        if cost(mid) > eps:
            lo = mid
        else:
            hi = mid
    if cost(hi) == 0.0:  # eps lies below what the accountant resolves at any noise level
        raise epsilon_too_small(eps)
    raise DPRegError(  # pragma: no cover - 200 halvings of ln z suffice for eps >= 1e-12
        f"calibration did not reach epsilon={eps} within rtol={rtol}"
    )
