"""Tight calibration against independent accountants and closed forms.

The independent accountant is Google's ``dp_accounting`` (PLD and RDP),
used only here; the closed forms are those of Gaussian DP (Dong, Roth & Su
2019, Corollary 2.13 and Theorem 2.14) and the Renyi divergence of two
centred normals.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpreg._validation import DPRegError
from dpreg.privacy import renyi
from dpreg.privacy.accounting import (
    compose,
    failure_release,
    gaussian_release,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    laplace_release,
    mixing_release,
)
from dpreg.privacy.calibrate import RTOL, calibrate_multiplier, exact_epsilon

DELTA = 1e-6
EPSILONS = [0.1, 1.0, 10.0]
#: sensitivities and base scales of three Gaussian releases (AdaSSP-like: B^2, B^2, B B_Y)
SENS = [1.0, 1.0, 0.5]
BASE = [3.0, 5.0, 2.0]


def _gaussians(z: float) -> list:
    return [
        gaussian_release(
            f"r{i}",
            sensitivity=D,
            sigma=z * c,
            epsilon=0.1,
            delta=1e-7,
            calibration="t",
            valid=True,
        )
        for i, (D, c) in enumerate(zip(SENS, BASE, strict=True))
    ]


def _pld_epsilon(noise_multipliers, delta, relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE):
    # a discretisation of 1e-4 in the privacy loss: the PLD epsilon is an upper bound
    # within about that of the exact one, far inside the 0.1% asked for at eps >= 0.1
    acc = dpa.pld.PLDAccountant(relation, value_discretization_interval=1e-4)
    acc.compose(dpa.ComposedDpEvent([dpa.GaussianDpEvent(m) for m in noise_multipliers]))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("eps", EPSILONS)
def test_the_bisection_finds_the_gdp_closed_form(eps):
    # a failure release of probability 0 costs nothing but makes the list not all
    # Gaussian, so the bisection runs instead of the closed form
    def releases(z):
        return [*_gaussians(z), failure_release("f", probability=0.0, calibration="t", valid=True)]

    z = calibrate_multiplier(releases, epsilon=eps, delta=DELTA)
    # closed form: mu(z) = sqrt(sum (D_i / c_i)^2) / z must equal gdp_mu(eps, delta)
    closed = math.sqrt(sum((D / c) ** 2 for D, c in zip(SENS, BASE, strict=True))) / gdp_mu(
        epsilon=eps, delta=DELTA
    )
    assert closed <= z <= closed * (1 + 2 * RTOL)
    spent = exact_epsilon(releases(z), delta=DELTA)
    assert eps * (1 - RTOL) <= spent <= eps
    # Gaussian releases alone take the closed form: exact up to rounding
    exact = calibrate_multiplier(_gaussians, epsilon=eps, delta=DELTA)
    assert exact == pytest.approx(closed, rel=1e-12)
    assert exact_epsilon(_gaussians(exact), delta=DELTA) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("eps", EPSILONS)
def test_gaussian_calibration_against_the_pld_accountant(eps):
    z = calibrate_multiplier(_gaussians, epsilon=eps, delta=DELTA)
    pld = _pld_epsilon([z * c / D for D, c in zip(SENS, BASE, strict=True)], DELTA)
    assert pld == pytest.approx(eps, rel=1e-3)


@pytest.mark.parametrize("eps", EPSILONS)
def test_gdp_profile_matches_corollary_2_13_and_the_pld(eps):
    mu = gdp_mu(epsilon=eps, delta=DELTA)
    # Corollary 2.13 written with scipy's normal cdf (no log-space tricks)
    direct = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert gdp_delta(eps, mu) == pytest.approx(direct, rel=1e-6)
    assert direct == pytest.approx(DELTA, rel=1e-6)
    # one Gaussian release of noise multiplier 1/mu is mu-GDP
    assert _pld_epsilon([1.0 / mu], DELTA) == pytest.approx(eps, rel=1e-3)


@pytest.mark.parametrize("eps", EPSILONS)
def test_replace_one_doubles_mu(eps):
    """A replace-one neighbour is two add/remove steps: the GDP ``mu`` doubles (see
    :mod:`dpreg.privacy.calibrate`); dp_accounting's replace-one PLD agrees."""
    z = calibrate_multiplier(_gaussians, epsilon=eps, delta=DELTA)
    mults = [z * c / D for D, c in zip(SENS, BASE, strict=True)]
    mu = math.sqrt(sum(1 / m**2 for m in mults))
    replace_one = _pld_epsilon(mults, DELTA, dpa.NeighboringRelation.REPLACE_ONE)
    assert replace_one == pytest.approx(gdp_epsilon(mu=2 * mu, delta=DELTA), rel=1e-3)
    assert replace_one > 2 * eps * 0.99  # not comparable with eps: at least about twice it


def test_gaussian_with_laplace_adds_the_pure_epsilon():
    eps_lap = 0.3

    def releases(z):
        return [
            *_gaussians(z),
            laplace_release("lap", sensitivity=1.0, b=1.0 / eps_lap, epsilon=eps_lap),
        ]

    z = calibrate_multiplier(releases, epsilon=1.0, delta=DELTA)
    mu = math.sqrt(sum((D / (z * c)) ** 2 for D, c in zip(SENS, BASE, strict=True)))
    assert eps_lap + gdp_epsilon(mu=mu, delta=DELTA) == pytest.approx(1.0, rel=RTOL)


def test_a_failure_delta_is_taken_from_the_target():
    p = 4e-7

    def releases(z):
        return [*_gaussians(z), failure_release("f", probability=p, calibration="t", valid=True)]

    z = calibrate_multiplier(releases, epsilon=1.0, delta=DELTA)
    mu = math.sqrt(sum((D / (z * c)) ** 2 for D, c in zip(SENS, BASE, strict=True)))
    assert gdp_epsilon(mu=mu, delta=DELTA - p) == pytest.approx(1.0, rel=RTOL)


def test_unreachable_targets_and_bad_tolerances_are_refused():
    def releases(z):
        return [*_gaussians(z), laplace_release("lap", sensitivity=1.0, b=0.5, epsilon=2.0)]

    with pytest.raises(DPRegError, match=r"no noise multiplier meets epsilon=1\.0"):
        calibrate_multiplier(releases, epsilon=1.0, delta=DELTA)
    with pytest.raises(DPRegError, match=r"rtol must lie in \(0, 0\.01\), got 0\.5"):
        calibrate_multiplier(_gaussians, epsilon=1.0, delta=DELTA, rtol=0.5)
    with pytest.raises(DPRegError, match="epsilon"):
        calibrate_multiplier(_gaussians, epsilon=-1.0, delta=DELTA)


# --------------------------------------------------------------------------
# Renyi DP: the accountant of Gaussian-mixing releases
# --------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.5, 4.0, 20.0])
def test_mixing_rdp_is_the_renyi_divergence_of_two_normals(alpha):
    gamma, k = 50.0, 7
    p, q = stats.norm(scale=math.sqrt(gamma)), stats.norm(scale=math.sqrt(gamma - 1.0))

    def integrand(x):
        return math.exp(alpha * p.logpdf(x) + (1 - alpha) * q.logpdf(x))

    mass, _ = integrate.quad(integrand, -np.inf, np.inf, epsabs=0, epsrel=1e-12)
    assert renyi.mixing_rdp(alpha, gamma, k) == pytest.approx(
        k * math.log(mass) / (alpha - 1), rel=1e-8
    )


@pytest.mark.parametrize("eps", EPSILONS)
def test_renyi_gaussian_conversion_matches_dp_accounting_rdp(eps):
    mu2 = gdp_mu(epsilon=eps, delta=DELTA) ** 2
    orders = list(1 + np.exp(np.linspace(math.log(1e-4), math.log(1e5), 6000)))
    acc = dpa.rdp.RdpAccountant(orders=orders)
    acc.compose(dpa.GaussianDpEvent(1.0 / math.sqrt(mu2)))
    # the same conversion on grids of similar density: within 1e-3 of each other
    assert renyi.rdp_epsilon(mu2=mu2, mixing=[], delta=DELTA) == pytest.approx(
        acc.get_epsilon(DELTA), rel=1e-3
    )


@pytest.mark.parametrize("eps", EPSILONS)
def test_mixing_calibration_against_an_independent_minimisation(eps):
    """Gaussian + mixing releases (IHM's shape): the calibrated multiplier spends eps,
    recomputed by a continuous minimisation over the order with scipy."""
    k, floor_delta = 120, 1e-9

    # nominal shares summing to eps: exact_delta is the profile's delta at the basic epsilon
    def releases(z):
        lam = gaussian_release(
            "lam",
            sensitivity=1.0,
            sigma=10 * z,
            epsilon=0.2 * eps,
            delta=1e-7,
            calibration="t",
            valid=True,
        )
        sk = mixing_release(
            "sk",
            sensitivity=1.0,
            scale=math.sqrt(math.sqrt(k) * 10 * z),
            copies=3 * k,
            epsilon=0.5 * eps,
            delta=floor_delta,
            calibration="t",
        )
        grads = [
            gaussian_release(
                f"g{t}",
                sensitivity=1.0,
                sigma=6 * z,
                epsilon=0.1 * eps,
                delta=1e-7,
                calibration="t",
                valid=True,
            )
            for t in range(3)
        ]
        return [lam, sk, *grads]

    z = calibrate_multiplier(releases, epsilon=eps, delta=DELTA)
    rel = releases(z)
    total = compose(rel, delta=DELTA)
    assert eps * (1 - RTOL) <= total["exact_epsilon"] <= eps
    # spent at most eps at delta, so the delta at eps is at most delta (grid slack 0.1%)
    assert total["exact_delta"] is not None
    assert DELTA * 0.99 <= total["exact_delta"] <= DELTA * 1.001
    gamma = rel[1].scale ** 2 / rel[1].sensitivity
    mu2 = (1 / (10 * z)) ** 2 + 3 * (1 / (6 * z)) ** 2

    def converted(u):
        a = 1 + math.exp(u)
        if a >= gamma:
            return math.inf
        curve = a * mu2 / 2 + 3 * k * renyi.mixing_rdp(a, gamma, 1)
        return renyi.rdp_to_dp(a, curve, DELTA - floor_delta)

    res = optimize.minimize_scalar(
        converted,
        bounds=(math.log(1e-6), math.log(gamma - 1) - 1e-9),
        method="bounded",
        options={"xatol": 1e-10},
    )
    # the accountant's grid minimum is above the continuous one by at most 1e-3 relative
    assert res.fun <= total["exact_epsilon"] <= res.fun * (1 + 1e-3)
    assert res.fun == pytest.approx(eps, rel=1e-3)


def test_mixing_release_is_checked():
    with pytest.raises(DPRegError, match="copies must be an integer >= 1, got 0"):
        mixing_release(
            "sk", sensitivity=1.0, scale=3.0, copies=0, epsilon=1.0, delta=0.0, calibration="t"
        )
