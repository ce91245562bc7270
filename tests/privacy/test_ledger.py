"""The privacy ledger: every column and total (basic and exact) on hand-computed releases.

Expected values are written out by hand from the definitions (basic
composition: sums of the nominal shares; exact: Gaussian-DP composition,
``mu = sqrt(sum (D_i / sigma_i)^2)``, with ``delta(eps; mu)`` evaluated here
with scipy's normal cdf, independently of :mod:`dpreg.privacy.mechanisms`; Laplace:
``sum D_i / b_i``).  Root-finder results are compared at 1e-9 (their
tolerance is 1e-12 relative).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.engine.run_ledger import ledger_entry, trial_columns
from dpreg.preprocess import (
    PublicRanges,
    private_stat_releases,
)
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.ledger import release_columns

DELTA = 1e-6


def _delta_of(eps: float, mu: float) -> float:
    """The Gaussian privacy profile, written independently of the package."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def _g(name, sens, sigma, eps, delta, valid=True):
    return mech.gaussian_release(
        name,
        sensitivity=sens,
        sigma=sigma,
        epsilon=eps,
        delta=delta,
        calibration="test",
        valid=valid,
    )


def test_no_releases_give_the_non_private_columns():
    cols = release_columns([], delta=DELTA)
    assert cols["releases"] == "none (non-private)"
    assert all(
        math.isnan(cols[k]) for k in ("eps_basic", "delta_basic", "eps_exact", "delta_exact")
    )


def test_two_gaussian_releases_by_hand():
    rel = [_g("XtX", 1.0, 2.0, 0.5, 5e-7), _g("Xty", 1.0, 4.0, 0.5, 5e-7)]
    cols = release_columns(rel, delta=DELTA)
    assert cols["releases"] == "XtX:sigma=2@(0.5,5e-07);Xty:sigma=4@(0.5,5e-07)"
    assert cols["eps_basic"] == pytest.approx(1.0, rel=1e-15)
    assert cols["delta_basic"] == pytest.approx(1e-6, rel=1e-15)
    mu = math.sqrt(0.5**2 + 0.25**2)
    # eps_exact is the epsilon at which the composed profile equals delta
    assert _delta_of(cols["eps_exact"], mu) == pytest.approx(DELTA, rel=1e-6)
    assert _delta_of(cols["eps_exact"] * (1 - 1e-6), mu) > DELTA
    # delta_exact is the composed profile at the basic epsilon
    assert cols["delta_exact"] == pytest.approx(_delta_of(1.0, mu), rel=1e-9)
    tot = mech.compose(rel, delta=DELTA)
    assert tot["gdp_mu"] == pytest.approx(mu, rel=1e-15) and tot["all_valid"]


def test_laplace_exact_epsilon_comes_from_sensitivity_and_scale():
    # nominal 0.3, but sensitivity 2 and scale 4 cost 0.5: the ledger says 0.5
    rel = [mech.laplace_release("objective_coefficients", sensitivity=2.0, b=4.0, epsilon=0.3)]
    cols = release_columns(rel, delta=DELTA)
    assert cols["releases"] == "objective_coefficients:b=4@(0.3,0)"
    assert (cols["eps_basic"], cols["delta_basic"]) == (0.3, 0.0)
    assert (cols["eps_exact"], cols["delta_exact"]) == (0.5, 0.0)
    assert mech.laplace_epsilon(rel[0]) == 0.5


def test_functional_mechanism_ledger_matches_its_scale():
    rel = ALGORITHMS["functional"].releases(epsilon=0.7, delta=DELTA, d=4)
    sens = 4 + 2 * math.sqrt(4)  # d B_X^2 + 2 sqrt(d) B_X B_Y
    assert rel[0].sensitivity == pytest.approx(sens) and rel[0].scale == pytest.approx(sens / 0.7)
    assert release_columns(rel, delta=DELTA)["eps_exact"] == pytest.approx(0.7, rel=1e-12)


def test_external_and_stated_releases_cost_their_stated_budget():
    ext = mech.external_release("diffprivlib", epsilon=1.5)
    cols = release_columns([ext], delta=DELTA)
    assert cols["releases"] == "diffprivlib:library@(1.5,0)"
    assert (cols["eps_basic"], cols["eps_exact"], cols["delta_exact"]) == (1.5, 1.5, 0.0)
    # the diffprivlib entry's ledger: its one external release, at face value
    cols = trial_columns("diffprivlib", [1.5], delta=DELTA, d=3, rho=0.05)[1.5]
    assert cols["eps_exact"] == 1.5 and cols["delta_exact"] == 0.0
    entry = ledger_entry("diffprivlib", epsilon=1.5, delta=DELTA, d=3)
    assert entry["total"]["exact_epsilon"] == 1.5 and entry["calibration"] == "external"
    stated = mech.stated_release(
        "theta", mechanism="objpert", epsilon=0.4, delta=2e-7, calibration="kst"
    )
    g = _g("lambda_min", 1.0, 5.0, 0.6, 8e-7)
    tot = mech.compose([g, stated], delta=DELTA)
    # exact per kind, basic across kinds: 0.4 + the GDP epsilon of mu = 0.2 at 1e-6 - 2e-7
    assert tot["exact_epsilon"] == pytest.approx(
        0.4 + mech.gdp_epsilon(mu=0.2, delta=8e-7), rel=1e-12
    )
    assert _delta_of(tot["exact_epsilon"] - 0.4, 0.2) == pytest.approx(8e-7, rel=1e-6)
    assert tot["exact_delta"] is None
    assert (tot["basic_epsilon"], tot["basic_delta"]) == pytest.approx((1.0, 1e-6))
    with pytest.raises(DPRegError, match="gaussian_release"):
        mech.stated_release("x", mechanism="gaussian", epsilon=1, delta=0, calibration="c")


def test_mixed_gaussian_and_laplace_compose_per_kind():
    g = _g("a", 1.0, 2.0, 0.5, DELTA)
    lap = mech.laplace_release("b", sensitivity=1.0, b=5.0, epsilon=0.2)
    tot = mech.compose([g, lap], delta=DELTA)
    assert tot["exact_epsilon"] == pytest.approx(0.2 + mech.gdp_epsilon(mu=0.5, delta=DELTA))
    assert tot["basic_epsilon"] == pytest.approx(0.7)


def test_all_valid_reflects_every_release():
    rel = [_g("a", 1.0, 2.0, 0.5, 5e-7), _g("b", 1.0, 2.0, 0.5, 5e-7, valid=False)]
    assert mech.compose(rel, delta=DELTA)["all_valid"] is False


def test_composition_with_the_private_statistics_releases():
    ranges = PublicRanges(np.zeros(2), np.array([4.0, 2.0]), -1.0, 3.0, "hand")
    stats = private_stat_releases(ranges, epsilon=0.3, delta=0.3 * DELTA)
    # sensitivities: ||r|| = sqrt(5), ||r^2|| = sqrt(17), r_y = 2
    assert [r.sensitivity for r in stats] == pytest.approx([math.sqrt(5), math.sqrt(17), 2.0])
    alg = ALGORITHMS["ssp-gdp"].releases(epsilon=0.7, delta=0.7 * DELTA, d=2)
    cols = release_columns(stats + alg, delta=DELTA)
    assert cols["eps_basic"] == pytest.approx(1.0) and cols["delta_basic"] == pytest.approx(DELTA)
    mu_s, mu_a = (
        mech.gdp_mu(epsilon=0.3, delta=0.3 * DELTA),
        mech.gdp_mu(epsilon=0.7, delta=0.7 * DELTA),
    )
    mu = math.hypot(mu_s, mu_a)  # each part is exactly mu_s- resp. mu_a-GDP
    assert cols["eps_exact"] == pytest.approx(mech.gdp_epsilon(mu=mu, delta=DELTA), rel=1e-9)
    assert _delta_of(cols["eps_exact"], mu) == pytest.approx(DELTA, rel=1e-6)
    # splitting one budget in two exact parts loses a little against the exact whole
    assert cols["eps_exact"] < 1.0 + 1e-9
    assert cols["delta_exact"] == pytest.approx(_delta_of(1.0, mu), rel=1e-9)
