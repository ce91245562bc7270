"""The accountant of a private selection (Papernot & Steinke 2022, Theorem 6, Poisson)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg._validation import DPRegError
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.selection import (
    candidate_name,
    candidate_of,
    incomplete_candidates,
    selection_epsilon,
    selection_mu,
)

DELTA = 1e-6


def _gauss(name: str, mu: float) -> mech.Release:
    return mech.gaussian_release(
        name, sensitivity=1.0, sigma=1.0 / mu, epsilon=0.5, delta=DELTA, calibration="t", valid=True
    )


def _selection(mus: list[list[float]], mean: float = 4.0) -> list[mech.Release]:
    out = [
        mech.selection_release(
            "selection", mean=mean, candidates=len(mus), epsilon=1.0, delta=DELTA, calibration="t"
        )
    ]
    for j, group in enumerate(mus, start=1):
        out += [_gauss(candidate_name(j, f"r{i}"), m) for i, m in enumerate(group)]
    return out


def test_candidate_names_round_trip():
    assert candidate_of(candidate_name(12, "grad_3")) == 12
    assert candidate_of("grad_3") is None and candidate_of("c0/x") is None


def test_the_worst_candidate_sets_the_cost():
    """A uniform mixture costs at most its worst component: the bound uses max_j mu_j."""
    rel = _selection([[0.3, 0.4], [0.1]])  # mu_1 = 0.5, mu_2 = 0.1
    got = mech.compose(rel, delta=DELTA)["exact_epsilon"]
    assert got == pytest.approx(selection_epsilon(0.5, 4.0, delta=DELTA), rel=1e-12)
    assert got > selection_epsilon(0.3, 4.0, delta=DELTA)


def test_gaussian_releases_outside_the_selection_compose_in_renyi_dp():
    rel = [*_selection([[0.5]]), _gauss("preprocess", 0.2)]
    out = mech.compose(rel, delta=DELTA)
    want = selection_epsilon(0.5, 4.0, delta=DELTA, mu_out=0.2)
    assert out["exact_epsilon"] == pytest.approx(want, rel=1e-12)
    assert out["exact_epsilon"] > selection_epsilon(0.5, 4.0, delta=DELTA)
    # basic: the selection's nominal budget plus the outside release's
    assert out["basic_epsilon"] == pytest.approx(1.5) and out["basic_delta"] == 2 * DELTA


def test_a_laplace_release_beside_it_adds_its_epsilon():
    lap = mech.laplace_release("count", sensitivity=1.0, b=4.0, epsilon=0.25)
    out = mech.compose([*_selection([[0.5]]), lap], delta=DELTA)
    assert out["exact_epsilon"] == pytest.approx(0.25 + selection_epsilon(0.5, 4.0, delta=DELTA))


def test_more_repetitions_cost_more_and_the_cost_grows_with_mu():
    eps = [selection_epsilon(0.5, m, delta=DELTA) for m in (1.0, 4.0, 16.0, 64.0)]
    assert eps == sorted(eps) and eps[0] < eps[-1]
    assert selection_epsilon(0.2, 4.0, delta=DELTA) < selection_epsilon(0.4, 4.0, delta=DELTA)


def test_the_bound_is_above_the_base_alone():
    """One run of a mu-GDP base costs its GDP epsilon; repeating and selecting costs more."""
    mu = 0.5
    assert selection_epsilon(mu, 1.0, delta=DELTA) > mech.gdp_epsilon(mu=mu, delta=DELTA)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_selection_mu_inverts_the_bound(eps):
    mu = selection_mu(epsilon=eps, delta=DELTA, mean=5.0)
    assert selection_epsilon(mu, 5.0, delta=DELTA) == pytest.approx(eps, rel=1e-9)


def test_refusals_name_the_problem():
    op = mech.stated_release(
        candidate_name(1, "x"), mechanism="objpert", epsilon=1.0, delta=1e-7, calibration="t"
    )
    with pytest.raises(DPRegError, match="inside a selection is objpert"):
        mech.compose([*_selection([[0.5]]), op], delta=DELTA)
    with pytest.raises(DPRegError, match="names candidate 3; the selection has 1"):
        mech.compose([*_selection([[0.5]]), _gauss(candidate_name(3, "x"), 0.1)], delta=DELTA)
    with pytest.raises(DPRegError, match="2 selection releases"):
        mech.compose([*_selection([[0.5]]), *_selection([[0.5]])[:1]], delta=DELTA)
    with pytest.raises(DPRegError, match="mean must be a finite number > 0"):
        mech.selection_release("s", mean=0.0, candidates=2, epsilon=1, delta=DELTA, calibration="t")


def test_a_candidate_that_ran_draws_all_its_releases():
    rel = _selection([[0.3, 0.4], [0.1]])
    names = {r.name for r in rel}
    assert incomplete_candidates(rel, set()) == []  # nothing ran: fine
    assert incomplete_candidates(rel, names) == []
    bad = incomplete_candidates(rel, {"c1/r0"})
    assert bad == ["candidate c1 ran but never drew c1/r1"]


def test_existing_accounting_is_unchanged_without_a_selection():
    rel = [_gauss("a", 0.3), _gauss("b", 0.4)]
    out = mech.compose(rel, delta=DELTA)
    assert out["exact_epsilon"] == mech.gdp_epsilon(mu=0.5, delta=DELTA)
    assert out["gdp_mu"] == pytest.approx(0.5) and math.isfinite(out["exact_delta"])
    assert np.isclose(out["basic_epsilon"], 1.0)


def test_a_pure_part_inside_a_candidate_costs_between_its_two_bounds():
    """Candidate = mu-GDP + pure eps_p: the protocol costs more than the Gaussian part alone
    and at most the Gaussian part's selection plus eps_p... per order; a Laplace release in
    a candidate is charged sensitivity / b."""
    lap = mech.laplace_release(candidate_name(1, "lap"), sensitivity=1.0, b=20.0, epsilon=0.05)
    rel = [*_selection([[0.5]]), lap]
    got = mech.compose(rel, delta=DELTA)["exact_epsilon"]
    alone = selection_epsilon(0.5, 4.0, delta=DELTA)
    assert alone < got
    # RDP of the candidate grows by at most 0.05 per order and delta_hat(eps) is at most
    # delta_GDP(eps - 0.05); both push the bound up by a bounded amount
    assert got < alone + 0.05 + 4.0 * 0.05
