"""dpreg.BudgetAccountant: a privacy budget tallied across fits."""

from __future__ import annotations

import copy
import math
import pickle
import re
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV

import dpreg
from dpreg import BudgetAccountant, BudgetExceededError, NonPrivateWarning, PrivateLinearRegression
from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS, Algorithm, FitResult
from dpreg.algorithms import registry as registry_module
from dpreg.budget import default_accountant, release_cost
from dpreg.privacy.accounting import gdp_epsilon, gdp_mu


@pytest.fixture
def data(make_data):
    return make_data(n=120)


def _fit(acc, X, y, eps=0.5, seed=0, **kw):
    return PrivateLinearRegression(epsilon=eps, accountant=acc, random_state=seed, **kw).fit(X, y)


def test_exported_lazily_from_the_package():
    assert "BudgetAccountant" in dir(dpreg) and "BudgetAccountant" in dpreg.__all__
    assert dpreg.BudgetAccountant is BudgetAccountant
    assert issubclass(BudgetExceededError, DPRegError)


# --------------------------------------------------------------------------
# basic composition
# --------------------------------------------------------------------------
def test_basic_composition_charges_each_fit_and_refuses_the_one_too_many(data, monkeypatch):
    X, y = data
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    for seed in range(4):
        _fit(acc, X, y, seed=seed)
    assert acc.spent == (pytest.approx(2.0, rel=1e-15), pytest.approx(4e-6, rel=1e-12))
    assert acc.remaining == (pytest.approx(0.0, abs=1e-15), pytest.approx(6e-6, rel=1e-12))
    assert [c.index for c in acc.charges] == [1, 2, 3, 4]
    assert all(c.epsilon == pytest.approx(0.5, rel=1e-15) for c in acc.charges)
    assert all(len(c.releases) == 3 for c in acc.charges)  # AdaSSP: lambda_min, XtX, Xty

    # the fifth fit is refused before any noise is drawn
    draws = []
    real_fit = Algorithm.fit

    def counting_fit(self, *args, **kwargs):
        draws.append(self.name)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(Algorithm, "fit", counting_fit)
    model = PrivateLinearRegression(epsilon=0.5, accountant=acc, random_state=9)
    with pytest.raises(BudgetExceededError) as err:
        model.fit(X, y)
    msg = str(err.value)
    # the error names the budget, what was spent, and the fit that would exceed it
    assert msg.startswith(
        "privacy budget exceeded: BudgetAccountant(epsilon=2, delta=1e-05, "
        "composition='basic') has spent epsilon=2, delta=4e-06 in 4 charge(s); charge #5, "
        "PrivateLinearRegression(algorithm='adassp', epsilon=0.5, delta=1e-06) on 120 rows, "
        "costs epsilon=0.5"
    ), msg
    assert "would bring the total to epsilon=2.5" in msg and "no noise drawn" in msg
    assert draws == [] and not hasattr(model, "coef_")
    assert len(acc.charges) == 4  # the refused fit is not charged
    # a smaller fit that fits in what is left still runs (nothing of epsilon is left here)
    with pytest.raises(BudgetExceededError):
        _fit(acc, X, y, eps=1e-3)


def test_delta_is_tallied_too(data):
    X, y = data
    acc = BudgetAccountant(epsilon=100.0, delta=2.5e-6)
    _fit(acc, X, y, delta=1e-6)
    _fit(acc, X, y, delta=1e-6)
    with pytest.raises(BudgetExceededError, match=r"delta=3e-06 \(basic composition\)"):
        _fit(acc, X, y, delta=1e-6)
    # a pure-DP fit (Laplace, delta 0) still fits
    _fit(acc, X, y, algorithm="functional")
    assert acc.spent == (pytest.approx(1.5, rel=1e-15), pytest.approx(2e-6, rel=1e-12))


def test_rounding_of_shares_does_not_refuse_the_last_fit(data):
    # ten fits at 0.1, each split into three shares of 0.1 / 3, fill epsilon = 1 exactly;
    # the eleventh is refused
    X, y = data
    acc = BudgetAccountant(epsilon=1.0, delta=1e-4)
    for seed in range(10):
        _fit(acc, X, y, eps=0.1, seed=seed)
    assert acc.spent[0] == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(BudgetExceededError, match="charge #11"):
        _fit(acc, X, y, eps=0.1)


def test_failed_fit_after_noise_is_charged_refused_input_is_not(data, monkeypatch):
    X, y = data
    acc = BudgetAccountant(epsilon=5.0, delta=1e-4)
    with pytest.raises(DPRegError, match="bound_x"):
        _fit(acc, 2 * X, y)  # rows outside the bounds: refused before any release
    with pytest.raises(DPRegError, match="epsilon"):
        _fit(acc, X, y, eps=-1.0)
    with pytest.raises(DPRegError, match="random_state"):
        _fit(acc, X, y, seed=1.5)
    assert acc.charges == []

    def fails(stats, releases, opts):
        nan = np.full((opts.size, stats.d), np.nan)
        return FitResult(theta=nan, lam=np.full(opts.size, np.nan), failed=np.ones(opts.size, bool))

    entry = Algorithm(
        "fails",
        "fails",
        private=True,
        calibration="gdp",
        release_fn=ALGORITHMS["ssp-gdp"].release_fn,
        fit_fn=fails,
    )
    monkeypatch.setitem(registry_module.ALGORITHMS, "fails", entry)
    # its noise was drawn: the budget is spent even though no model came out
    with pytest.raises(DPRegError, match="fails: the fit returned no estimate"):
        _fit(acc, X, y, algorithm="fails")
    assert len(acc.charges) == 1 and acc.spent[0] == pytest.approx(0.5, rel=1e-15)


# --------------------------------------------------------------------------
# what a fit costs
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("algorithm", "eps"), [("ssp-wang", 1.0), ("ssp", 10.0)])
def test_release_outside_its_theorem_costs_its_exact_epsilon(data, algorithm, eps):
    # Wang's scales come with no proof, and the classical calibration at a per-release
    # epsilon of 5 >= 1 is outside Dwork & Roth's Theorem A.1: such a release costs the
    # exact epsilon of its Gaussian profile at its own delta, not its nominal share
    X, y = data
    acc = BudgetAccountant(epsilon=math.inf, delta=1e-4)
    model = _fit(acc, X, y, eps=eps, algorithm=algorithm)
    assert not any(r.valid for r in model.releases_)
    exact = [gdp_epsilon(mu=r.sensitivity / r.scale, delta=r.delta) for r in model.releases_]
    assert acc.charges[0].epsilon == pytest.approx(sum(exact), rel=1e-12)
    assert acc.charges[0].delta == pytest.approx(1e-6, rel=1e-12)
    # Wang's SSP scales are too small for their nominal 1.0 (the exact cost is 2.26);
    # the classical scales at 10 happen to meet 9.17, and the exact figure is charged
    assert acc.charges[0].epsilon == pytest.approx(
        {"ssp-wang": 2.258, "ssp": 9.168}[algorithm], rel=1e-3
    )


def test_valid_release_costs_its_nominal_budget(data):
    X, y = data
    acc = BudgetAccountant(epsilon=math.inf, delta=1e-4)
    valid = _fit(acc, X, y, eps=0.5, algorithm="ssp").releases_
    assert all(r.valid and release_cost(r) == (r.epsilon, r.delta) for r in valid)
    assert acc.charges[0].epsilon == pytest.approx(0.5, rel=1e-15)


def test_release_with_no_computable_cost_is_refused(data):
    # Wang's one-posterior-sample scale does not meet its stated budget, and the release
    # records no sensitivity and scale from which an exact cost could be computed
    X, y = data
    acc = BudgetAccountant(epsilon=10.0, delta=1e-4)
    with pytest.raises(DPRegError, match=r"release 'theta' \(ops, calibration 'ops-wang'\) does"):
        _fit(acc, X, y, algorithm="ops-balanced")
    assert acc.charges == []


def test_non_private_fit_costs_infinite_epsilon(data):
    X, y = data
    acc = BudgetAccountant(epsilon=1e6, delta=0.1)
    with pytest.raises(BudgetExceededError, match=r"\(not private\), costs epsilon=inf"):
        _fit(acc, X, y, algorithm="ols")
    unlimited = BudgetAccountant(epsilon=math.inf, delta=0.1)
    with pytest.warns(NonPrivateWarning):
        _fit(unlimited, X, y, algorithm="ols")
    assert unlimited.spent[0] == math.inf and unlimited.remaining[0] == math.inf


# --------------------------------------------------------------------------
# GDP composition against its closed form
# --------------------------------------------------------------------------
def _gdp_delta_closed_form(eps, mu):
    # Dong, Roth & Su (2019), Corollary 2.13, written out independently of dpreg
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def test_gdp_composition_admits_the_closed_form_number_of_fits(data):
    X, y = data
    eps_total, delta_total = 2.0, 1e-5
    # one ssp-gdp fit at (0.5, 1e-6) is mu0-GDP; k fits are sqrt(k) mu0-GDP, which meet
    # (2, 1e-5) while delta(2; sqrt(k) mu0) <= 1e-5
    mu0 = gdp_mu(epsilon=0.5, delta=1e-6)
    fits = [k for k in range(1, 100) if _gdp_delta_closed_form(2.0, math.sqrt(k) * mu0) <= 1e-5]
    K = max(fits)
    assert fits == list(range(1, K + 1))
    # away from the boundary: the rounding slack of 1e-9 cannot decide it
    assert _gdp_delta_closed_form(2.0, math.sqrt(K + 1) * mu0) > 1.2e-5
    assert K == 16  # basic composition would stop at 4 (epsilon) or 10 (delta)

    acc = BudgetAccountant(epsilon=eps_total, delta=delta_total, composition="gdp")
    for seed in range(K):
        model = _fit(acc, X, y, seed=seed, algorithm="ssp-gdp")
        assert math.sqrt(sum(r.mu**2 for r in model.releases_)) == pytest.approx(mu0, rel=1e-9)
    with pytest.raises(BudgetExceededError, match=r"charge #17, .* \(gdp composition\)"):
        _fit(acc, X, y, algorithm="ssp-gdp")
    spent_eps, spent_delta = acc.spent
    # the spent epsilon is where the closed-form profile of sqrt(K) mu0 meets the delta
    assert spent_delta == delta_total
    assert _gdp_delta_closed_form(spent_eps, math.sqrt(K) * mu0) == pytest.approx(
        delta_total, rel=1e-6
    )
    assert spent_eps < eps_total < 4 * 0.5 * K / 4  # far below the basic sum, 8

    basic = BudgetAccountant(epsilon=eps_total, delta=delta_total)
    for seed in range(4):
        _fit(basic, X, y, seed=seed, algorithm="ssp-gdp")
    with pytest.raises(BudgetExceededError):
        _fit(basic, X, y, algorithm="ssp-gdp")


def test_gdp_composition_adds_pure_releases_by_the_basic_rule(data):
    X, y = data
    acc = BudgetAccountant(epsilon=3.0, delta=1e-5, composition="gdp")
    _fit(acc, X, y, eps=0.7, algorithm="functional")  # Laplace: 0.7 at delta 0
    g = _fit(acc, X, y, eps=0.5, algorithm="ssp-gdp")
    mu = math.sqrt(sum(r.mu**2 for r in g.releases_))
    assert acc.spent[0] == pytest.approx(0.7 + gdp_epsilon(mu=mu, delta=1e-5), rel=1e-12)


# --------------------------------------------------------------------------
# a grid search charges every fit
# --------------------------------------------------------------------------
GRID = {"epsilon": [0.5, 1.0]}


def test_grid_search_spends_silently_without_an_accountant(data, monkeypatch):
    # what happens today: 2 candidates x 3 folds + 1 refit = 7 private fits of the rows
    X, y = data
    fits = []
    real_fit = PrivateLinearRegression.fit

    def spy(self, X, y):
        fits.append(self.epsilon)
        return real_fit(self, X, y)

    monkeypatch.setattr(PrivateLinearRegression, "fit", spy)
    search = GridSearchCV(PrivateLinearRegression(random_state=0), GRID, cv=3).fit(X, y)
    assert len(fits) == 7 and sum(fits) == 3 * 0.5 + 3 * 1.0 + search.best_params_["epsilon"]


@pytest.mark.parametrize("how", ["parameter", "with"])
def test_grid_search_charges_every_fit(data, how):
    X, y = data
    acc = BudgetAccountant(epsilon=10.0, delta=1e-4)
    if how == "parameter":
        base = PrivateLinearRegression(accountant=acc, random_state=0)
        search = GridSearchCV(base, GRID, cv=3).fit(X, y)
    else:
        with acc:
            search = GridSearchCV(PrivateLinearRegression(random_state=0), GRID, cv=3).fit(X, y)
    best = search.best_params_["epsilon"]
    assert [c.epsilon for c in acc.charges] == pytest.approx([0.5] * 3 + [1.0] * 3 + [best])
    # the folds are fitted on 80 of the 120 rows, the refit on all of them
    assert [c.label.endswith("on 80 rows") for c in acc.charges] == [True] * 6 + [False]
    assert acc.spent[0] == pytest.approx(4.5 + best, rel=1e-12)
    assert search.best_estimator_.accountant is (acc if how == "parameter" else None)


def test_grid_search_stops_at_the_fit_that_would_exceed(data):
    X, y = data
    acc = BudgetAccountant(epsilon=2.0, delta=1e-4)
    base = PrivateLinearRegression(accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError) as err:
        GridSearchCV(base, GRID, cv=3, error_score="raise").fit(X, y)
    # the first candidate's three folds cost 1.5; the second candidate's first fold (1.0)
    # is the one refused
    assert re.search(
        r"BudgetAccountant\(epsilon=2, delta=0.0001, composition='basic'\) has spent "
        r"epsilon=1.5, .* charge #4, PrivateLinearRegression\(algorithm='adassp', "
        r"epsilon=1, delta=1e-06\) on 80 rows, costs epsilon=1",
        str(err.value),
    ), str(err.value)
    assert len(acc.charges) == 3


def test_grid_search_with_default_error_score_never_exceeds_the_budget(data):
    # scikit-learn turns the refused fits into NaN scores and warnings; the budget holds
    X, y = data
    acc = BudgetAccountant(epsilon=2.0, delta=1e-4)
    base = PrivateLinearRegression(accountant=acc, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = GridSearchCV(base, GRID, cv=3).fit(X, y)
    assert any(issubclass(w.category, FitFailedWarning) for w in caught)
    assert search.best_params_ == {"epsilon": 0.5}
    # 3 folds at 0.5, then the refit of the best at 0.5: exactly the budget
    assert [c.epsilon for c in acc.charges] == pytest.approx([0.5] * 4)
    assert acc.spent[0] == pytest.approx(2.0, rel=1e-12)


def test_parallel_grid_search_cannot_spend_on_copies(data):
    # joblib worker processes receive pickled copies; a detached copy refuses to charge,
    # so the budget is never spent where the original cannot see it
    X, y = data
    acc = BudgetAccountant(epsilon=10.0, delta=1e-4)
    base = PrivateLinearRegression(accountant=acc, random_state=0)
    with pytest.raises(DPRegError, match="is a copy made by pickling"):
        GridSearchCV(base, GRID, cv=2, n_jobs=2, error_score="raise").fit(X, y)
    assert acc.charges == []


@pytest.mark.parametrize("how", ["parameter", "with"])
def test_threaded_grid_search_charges_every_fit(data, how):
    # threads share the accountant (and the with-block default): all 7 fits are charged
    from joblib import parallel_backend

    X, y = data
    acc = BudgetAccountant(epsilon=10.0, delta=1e-4)
    base = PrivateLinearRegression(accountant=acc if how == "parameter" else None, random_state=0)
    with parallel_backend("threading", n_jobs=2):
        if how == "parameter":
            search = GridSearchCV(base, GRID, cv=3, n_jobs=2).fit(X, y)
        else:
            with acc:
                search = GridSearchCV(base, GRID, cv=3, n_jobs=2).fit(X, y)
    expected = sorted([0.5] * 3 + [1.0] * 3 + [search.best_params_["epsilon"]])
    assert sorted(c.epsilon for c in acc.charges) == pytest.approx(expected)
    assert len(acc.charges) == 7
    assert sorted(c.index for c in acc.charges) == list(range(1, 8))


# --------------------------------------------------------------------------
# sharing, pickling, with-blocks
# --------------------------------------------------------------------------
def test_clone_and_deepcopy_share_pickle_detaches(data):
    X, y = data
    acc = BudgetAccountant(epsilon=5.0, delta=1e-4)
    model = PrivateLinearRegression(accountant=acc, random_state=0)
    assert clone(model).accountant is acc
    assert copy.deepcopy(acc) is acc and copy.copy(acc) is acc
    model.fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    assert again.accountant is not acc
    assert again.accountant.spent == acc.spent  # readable
    with pytest.raises(DPRegError, match="copy made by pickling .* would never reach"):
        again.fit(X, y)
    assert len(again.accountant.charges) == 1 and len(acc.charges) == 1
    _fit(acc, X, y)  # the original still charges
    assert len(acc.charges) == 2


def test_with_block_sets_the_default_innermost_first(data):
    X, y = data
    outer = BudgetAccountant(epsilon=5.0, delta=1e-4)
    inner = BudgetAccountant(epsilon=5.0, delta=1e-4)
    explicit = BudgetAccountant(epsilon=5.0, delta=1e-4)
    assert default_accountant() is None
    with outer:
        _fit(None, X, y)
        with inner as got:
            assert got is inner and default_accountant() is inner
            _fit(None, X, y)
            _fit(explicit, X, y)  # accountant= wins over the with-block
        _fit(None, X, y)
    _fit(None, X, y)  # outside every block: no tally
    assert default_accountant() is None
    assert (len(outer.charges), len(inner.charges), len(explicit.charges)) == (2, 1, 1)


def test_with_block_ends_on_error(data):
    acc = BudgetAccountant(epsilon=1.0)
    with pytest.raises(RuntimeError), acc:
        raise RuntimeError
    assert default_accountant() is None


# --------------------------------------------------------------------------
# bad arguments
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, r"epsilon must be a number > 0 \(math.inf: no limit\), got 0.0"),
        ({"epsilon": -1.0}, "epsilon must be a number > 0"),
        ({"epsilon": math.nan}, "epsilon must be a number > 0"),
        ({"epsilon": "1"}, "epsilon must be a number > 0"),
        ({"epsilon": True}, "epsilon must be a number > 0"),
        ({"epsilon": 1.0, "delta": -0.1}, r"delta must be a number in \[0, 1\)"),
        ({"epsilon": 1.0, "delta": 1.0}, r"delta must be a number in \[0, 1\)"),
        ({"epsilon": 1.0, "delta": math.nan}, r"delta must be a number in \[0, 1\)"),
        ({"epsilon": 1.0, "composition": "advanced"}, "unknown composition 'advanced'; known: basic, gdp"),
    ],
)  # fmt: skip
def test_bad_budget_named(kwargs, message):
    with pytest.raises(DPRegError, match=message):
        BudgetAccountant(**kwargs)


def test_pure_budget_refuses_gaussian_fits_accepts_laplace(data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)  # delta = 0
    assert repr(acc) == "BudgetAccountant(epsilon=1, delta=0, composition='basic')"
    with pytest.raises(BudgetExceededError, match="delta=1e-06"):
        _fit(acc, X, y)
    _fit(acc, X, y, algorithm="functional")
    assert acc.spent == (0.5, 0.0)


def test_bad_accountant_parameter_named(data):
    X, y = data
    with pytest.raises(DPRegError, match="accountant must be a dpreg.BudgetAccountant or None"):
        PrivateLinearRegression(accountant="budget").fit(X, y)


def test_docstring_examples_run():
    import doctest

    import dpreg.budget

    result = doctest.testmod(dpreg.budget, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 10
