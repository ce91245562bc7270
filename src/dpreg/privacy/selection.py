"""Private selection by random repetition: what the whole tuning protocol costs.

The protocol (Papernot & Steinke 2022): draw ``K ~ Poisson(mu_K)``, run a base
mechanism ``Q`` ``K`` times and output only the run with the best (private)
score; ``K = 0`` outputs something independent of the data.  Its releases are
written as one *selection release* (mechanism ``"poisson-selection"``, made by
:func:`dpreg.privacy.mechanisms.selection_release`: ``scale`` = ``mu_K``, ``copies`` = the number
``J`` of candidates) beside the releases of every candidate's run of ``Q``,
named ``c<j>/<name>`` (:func:`candidate_name`, ``j = 1 .. J``).  The
accountant :func:`dpreg.privacy.accounting.compose` hands such a list here
(:func:`selection_cost`), the split dp_accounting makes between its
``RepeatAndSelectDpEvent`` and its RDP accountant.

Cost
----
``Q`` picks candidate ``j`` uniformly from a public grid and makes ``j``'s
releases.  A mixture is no less private than its worst component: the Renyi
divergence is jointly quasi-convex and the hockey-stick divergence jointly
convex (van Erven & Harremoes 2014, Theorem 13), so ``Q`` is ``mu_Q``-GDP with
``mu_Q = max_j sqrt(sum_i mu_ij^2)`` over the (Gaussian) releases of each
candidate (Dong, Roth & Su 2019, Corollary 3.3).  Hence ``Q`` is
``(lambda, lambda mu_Q^2 / 2)``-RDP for every ``lambda > 1`` (Mironov 2017,
Proposition 7) and ``(eps_hat, delta_hat)``-DP with ``delta_hat =
delta_Q(eps_hat)`` its exact GDP profile (Dong, Roth & Su 2019, Corollary 2.13).

A candidate may also make pure-DP releases (Laplace, an exponential
mechanism) of ``eps_p`` in all: its RDP is then ``lambda mu^2/2 + min(eps_p,
lambda eps_p^2/2)`` (pure ``eps``-DP is ``eps^2/2``-zCDP; Bun & Steinke 2016,
Proposition 1.4) and ``delta_hat`` the smaller of ``delta_GDP(eps_hat -
eps_p)`` (basic composition; 1 below ``eps_p``) and the CKS conversion of
that curve (:func:`ps22_curve`).

Papernot & Steinke (2022, Theorem 6, Poisson distribution): if ``Q`` is
``(lambda, eps_lambda)``-RDP and ``(eps_hat, delta_hat)``-DP with ``e^eps_hat
<= 1 + 1/(lambda - 1)``, the protocol is ``(lambda, eps')``-RDP with ::

    eps' = eps_lambda + mu_K delta_hat + ln(mu_K) / (lambda - 1).

``delta_Q`` decreases in ``eps_hat``, so at each order the largest admissible
``eps_hat = ln(1 + 1/(lambda - 1))`` is the best choice (as dp_accounting's
``_compute_rdp_repeat_and_select``, which takes ``delta_hat`` from the RDP
curve instead of the exact profile used here).  The curve is then converted to
``(epsilon, delta)`` optimally over ``lambda`` with the conversion of Canonne,
Kamath & Steinke (2020, Proposition 12), on the order grid of
:mod:`dpreg.privacy.renyi`.  This is an upper bound on the protocol's cost,
tight for nothing else.  Gaussian releases outside the selection (private
pre-processing) compose with it in Renyi DP; pure-epsilon and stated releases
add their epsilons and deltas.

References
----------
Papernot, N. & Steinke, T. (2022). Hyperparameter tuning with Renyi
differential privacy. ICLR (arXiv 2110.03620, Theorem 6).
Canonne, C., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS.
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
van Erven, T. & Harremoes, P. (2014). Renyi divergence and Kullback-Leibler
divergence. IEEE Trans. Inf. Theory.
Mironov, I. (2017). Renyi differential privacy. CSF.
Bun, M. & Steinke, T. (2016). Concentrated differential privacy:
simplifications, extensions, and lower bounds. TCC.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpreg._validation import DPRegError

#: A :class:`dpreg.privacy.accounting.Release` (not imported: the accountant imports this
#: module, and the privacy layer has no import cycles).
Release = Any

__all__ = [
    "SELECTION",
    "candidate_groups",
    "candidate_name",
    "candidate_of",
    "incomplete_candidates",
    "optional_releases",
    "ps22_curve",
    "ps22_rdp",
    "selection_cost",
    "selection_epsilon",
    "selection_mu",
]

#: The mechanism of the selection release.
SELECTION = "poisson-selection"

_CANDIDATE = re.compile(r"c([1-9][0-9]*)/(.+)")


def candidate_name(j: int, name: str) -> str:
    """The name of release ``name`` of candidate ``j`` (1-based) inside a selection."""
    return f"c{int(j)}/{name}"


def candidate_of(name: str) -> int | None:
    """The candidate (1-based) a release name belongs to, None outside a selection."""
    m = _CANDIDATE.fullmatch(name)
    return int(m.group(1)) if m else None


def _orders() -> np.ndarray:
    from dpreg.privacy.renyi import _orders as grid

    return grid([])


def _gdp_delta(eps: np.ndarray, mu: float) -> np.ndarray:
    """The GDP profile ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` at many ``eps``."""
    from scipy.special import log_ndtr, ndtr

    value = ndtr(-eps / mu + mu / 2.0) - np.exp(eps + log_ndtr(-eps / mu - mu / 2.0))
    return np.maximum(value, 0.0)


def ps22_rdp(orders: np.ndarray, mu_q: float, mean: float, pure: float = 0.0) -> np.ndarray:
    """Papernot & Steinke (2022) Theorem 6: the protocol's RDP over a base of one kind.

    For a ``mu_q``-GDP base: ``lambda mu_q^2 / 2 + mean * delta_Q(ln(1 + 1/(lambda - 1)))
    + ln(mean) / (lambda - 1)``; with ``pure > 0`` the base also makes pure-DP releases of
    ``pure`` in all (see :func:`ps22_curve`).
    """
    return ps22_curve(orders, [(mu_q, pure)], mean)


def _base_rdp(a: np.ndarray, mu: float, pure: float) -> np.ndarray:
    """RDP of a base of ``mu``-GDP and ``pure``-DP parts: ``lambda mu^2/2 + min(pure,
    lambda pure^2/2)`` (pure eps-DP is eps^2/2-zCDP; Bun & Steinke 2016, Prop. 1.4)."""
    return a * mu**2 / 2.0 + np.minimum(pure, a * pure**2 / 2.0)


#: orders of the inner conversion giving delta_hat of a base with a pure part
_INNER = 1.0 + np.exp(np.linspace(math.log(1e-3), math.log(1e4), 300))


def _base_delta(eps_hat: np.ndarray, mu: float, pure: float) -> np.ndarray:
    """``delta_Q(eps_hat)`` of a base of ``mu``-GDP and ``pure``-DP parts.

    Gaussian only: the exact GDP profile.  With a pure part, the smaller of two
    valid bounds: basic composition ``delta_GDP(eps_hat - pure)`` (1 below
    ``pure``), and the CKS conversion of the base's RDP curve at ``eps_hat``.
    """
    if pure == 0.0:
        return _gdp_delta(eps_hat, mu)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = np.where(eps_hat >= pure, _gdp_delta(np.maximum(eps_hat - pure, 0.0), mu), 1.0)
    # CKS at inner order b is affine in eps_hat: ln delta_b = c_b - (b - 1) eps_hat
    b = _INNER
    c_b = (b - 1.0) * (_base_rdp(b, mu, pure) + np.log1p(-1.0 / b)) - np.log(b)
    log_d = np.min(c_b[:, None] - (b - 1.0)[:, None] * eps_hat[None, :], axis=0)
    cks = np.exp(np.minimum(0.0, log_d))
    return np.minimum(shifted, cks)


def ps22_curve(orders: np.ndarray, parts: Sequence[tuple[float, float]], mean: float) -> np.ndarray:
    """The protocol's RDP over a uniform mixture of candidates, candidate ``j`` being
    ``mu_j``-GDP plus ``pure_j``-DP (``parts``): the mixture's RDP and ``delta_hat`` are at
    most the largest candidate's (module docstring), and Theorem 6 applies to those."""
    a = np.asarray(orders, dtype=float)
    eps_hat = np.log1p(1.0 / (a - 1.0))
    rdp = np.max([_base_rdp(a, mu, p) for mu, p in parts], axis=0)
    dhat = np.max([_base_delta(eps_hat, mu, p) for mu, p in parts], axis=0)
    return rdp + mean * dhat + math.log(mean) / (a - 1.0)


def _convert_eps(a: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    conv = (math.log(1.0 / delta) + (a - 1.0) * np.log1p(-1.0 / a) - np.log(a)) / (a - 1.0)
    return max(0.0, float(np.min(rdp + conv)))


def _convert_delta(a: np.ndarray, rdp: np.ndarray, epsilon: float) -> float:
    log_d = (a - 1.0) * (rdp - epsilon) + (a - 1.0) * np.log1p(-1.0 / a) - np.log(a)
    return float(min(1.0, math.exp(min(0.0, float(np.min(log_d))))))


def selection_epsilon(mu_q: float, mean: float, *, delta: float, mu_out: float = 0.0) -> float:
    """Epsilon at ``delta`` of the protocol over a ``mu_q``-GDP base, with ``mu_out``-GDP
    releases beside it, after the optimal conversion over the order grid."""
    a = _orders()
    return _convert_eps(a, ps22_rdp(a, mu_q, mean) + a * mu_out**2 / 2.0, delta)


def selection_mu(*, epsilon: float, delta: float, mean: float) -> float:
    """The largest ``mu_Q`` whose protocol (``mean`` repetitions) meets ``(epsilon, delta)``."""
    from scipy.optimize import brentq

    def f(log_mu: float) -> float:
        return selection_epsilon(math.exp(log_mu), mean, delta=delta) - epsilon

    lo, hi = -20.0, 3.0
    if f(lo) > 0:
        raise DPRegError(
            f"no base noise meets epsilon={epsilon}, delta={delta} with {mean} mean repetitions"
        )
    while f(hi) < 0:
        hi += 2.0
    return math.exp(brentq(f, lo, hi, xtol=1e-13, rtol=1e-12))


#: pure-DP mechanisms a candidate may hold beside its Gaussian releases (delta 0)
_PURE = ("laplace", "exponential")


def _pure_cost(r: Release) -> float:
    if r.mechanism == "laplace":
        return float(r.sensitivity / r.scale)
    return float(r.epsilon if r.true_epsilon is None else r.true_epsilon)


def candidate_groups(releases: Sequence[Release]) -> tuple[Release, dict[int, list[Release]]]:
    """The selection release of a list and its candidates' releases by candidate."""
    sel = [r for r in releases if r.mechanism == SELECTION]
    if len(sel) != 1:
        raise DPRegError(f"a release list holds {len(sel)} selection releases; at most 1 allowed")
    wrapper = sel[0]
    groups: dict[int, list[Release]] = {j: [] for j in range(1, wrapper.copies + 1)}
    for r in releases:
        j = candidate_of(r.name)
        if j is None:
            continue
        if j not in groups:
            raise DPRegError(
                f"release {r.name!r} names candidate {j}; the selection has {wrapper.copies}"
            )
        groups[j].append(r)
    return wrapper, groups


def optional_releases(releases: Sequence[Release]) -> set[str]:
    """Names of releases a fit need not draw in every call: the candidates' of a selection
    (a candidate is run a Poisson number of times, possibly never)."""
    if not any(r.mechanism == SELECTION for r in releases):
        return set()
    return {r.name for r in releases if candidate_of(r.name) is not None}


def incomplete_candidates(releases: Sequence[Release], served: set[str]) -> list[str]:
    """Candidates of a selection that ran (some release drawn) without drawing all their
    noisy releases (Gaussian and pure-DP): a run of the base mechanism makes every release
    of its candidate."""
    optional = optional_releases(releases)
    groups: dict[int, set[str]] = {}
    for r in releases:
        if r.name in optional and r.mechanism in ("gaussian", *_PURE):
            groups.setdefault(candidate_of(r.name), set()).add(r.name)  # type: ignore[arg-type]
    out = []
    for j, names in sorted(groups.items()):
        drawn = names & served
        if drawn and drawn != names:
            out.append(f"candidate c{j} ran but never drew {', '.join(sorted(names - drawn))}")
    return out


def selection_cost(releases: Sequence[Release], *, delta: float) -> dict[str, float | None]:
    """``basic_epsilon``, ``basic_delta``, ``gdp_mu``, ``exact_epsilon``, ``exact_delta`` of a
    list holding one selection release (see the module docstring).

    The basic accounting takes the selection's nominal budget (its ``epsilon``
    and ``delta``) in place of its candidates' shares, plus the other releases'.
    """
    wrapper, groups = candidate_groups(releases)
    inner = [r for g in groups.values() for r in g]
    for r in inner:
        if r.mechanism not in ("gaussian", *_PURE) or (r.mechanism in _PURE and r.delta != 0):
            raise DPRegError(
                f"release {r.name!r} inside a selection is {r.mechanism}; only Gaussian "
                f"and pure-DP ({', '.join(_PURE)}) candidates are accounted"
            )
    parts = sorted(  # equal candidates (the calibrated case) counted once
        {
            (
                math.sqrt(sum(r.mu**2 for r in g if r.mechanism == "gaussian")),
                sum(_pure_cost(r) for r in g if r.mechanism in _PURE),
            )
            for g in groups.values()
            if g
        }
    )
    if not parts or max(mu + p for mu, p in parts) == 0.0:
        raise DPRegError("a selection without candidate releases")
    inside = {id(r) for r in inner} | {id(wrapper)}
    outside = [r for r in releases if id(r) not in inside and r.mechanism != "none"]
    if any(r.mechanism == SELECTION or r.mechanism == "gaussian-mixing" for r in outside):
        raise DPRegError("a selection composes only with Gaussian, Laplace or stated releases")
    mu_out = math.sqrt(sum(r.mu**2 for r in outside if r.mechanism == "gaussian"))
    # Laplace: sensitivity / b; stated: true_epsilon where known (as the accountant charges them)
    pure = sum(r.sensitivity / r.scale for r in outside if r.mechanism == "laplace")
    pure += sum(
        r.epsilon if r.true_epsilon is None else r.true_epsilon
        for r in outside
        if r.mechanism not in ("gaussian", "laplace")
    )
    fixed = sum(r.delta for r in outside if r.mechanism not in ("gaussian", "laplace"))
    basic_eps = wrapper.epsilon + sum(r.epsilon for r in outside)
    a = _orders()
    rdp = ps22_curve(a, parts, wrapper.scale) + a * mu_out**2 / 2.0
    eps: float | None = math.inf
    if delta > fixed:
        eps = pure + _convert_eps(a, rdp, delta - fixed)
    elif delta > 0:
        eps = None
    left = basic_eps - pure
    dlt = fixed + (_convert_delta(a, rdp, left) if left > 0 else 1.0)
    return {
        "basic_epsilon": float(basic_eps),
        "basic_delta": float(wrapper.delta + sum(r.delta for r in outside)),
        "gdp_mu": None,
        "exact_epsilon": eps,
        "exact_delta": min(dlt, 1.0),
    }
