"""The scikit-learn-style PrivateLinearRegression."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg import PrivateLinearRegression
from dpreg.algorithms import base as algbase
from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS


def data(n=400, d=3, seed=0, bx=1.0, by=1.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    X *= bx / np.linalg.norm(X, axis=1).max()
    y = X @ np.array([0.6, -0.3, 0.2])[:d] / bx + 0.02 * rng.normal(size=n)
    y *= by / np.abs(y).max()
    return X, y


def test_fit_predict_shapes_and_attributes():
    X, y = data()
    model = PrivateLinearRegression(epsilon=1.0, delta=1e-6, random_state=0)
    assert model.fit(X, y) is model
    assert model.coef_.shape == (3,)
    assert model.n_features_in_ == 3
    assert model.lambda_ >= 0.0
    pred = model.predict(X[:5])
    np.testing.assert_allclose(pred, X[:5] @ model.coef_, rtol=1e-15)
    # the ledger matches the algorithm's own releases
    assert [r.scale for r in model.releases_] == [
        r.scale for r in ALGORITHMS["adassp"].releases(epsilon=1.0, delta=1e-6, d=3)
    ]
    resid = y - X @ model.coef_
    expected_r2 = 1 - resid @ resid / np.sum((y - y.mean()) ** 2)
    assert model.score(X, y) == pytest.approx(expected_r2, rel=1e-12)


def test_get_and_set_params():
    model = PrivateLinearRegression(
        "ssp", epsilon=0.5, delta=1e-5, bounds=(2.0, 3.0), random_state=4
    )
    params = model.get_params()
    assert params == {
        "algorithm": "ssp",
        "epsilon": 0.5,
        "delta": 1e-5,
        "bounds": (2.0, 3.0),
        "rho": 0.05,
        "xtx_offset": 1.0,
        "random_state": 4,
    }
    assert model.set_params(epsilon=0.25, algorithm="adassp-gdp") is model
    assert model.epsilon == 0.25 and model.algorithm == "adassp-gdp"
    assert PrivateLinearRegression(**model.get_params()).get_params() == model.get_params()
    with pytest.raises(DPRegError, match="colour"):
        model.set_params(colour="red")


def test_random_state_reproducibility():
    X, y = data()
    a = PrivateLinearRegression(epsilon=0.5, random_state=7).fit(X, y).coef_
    b = PrivateLinearRegression(epsilon=0.5, random_state=7).fit(X, y).coef_
    c = PrivateLinearRegression(epsilon=0.5, random_state=8).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # a Generator is accepted too, and gives the same result as its seed
    g = PrivateLinearRegression(epsilon=0.5, random_state=np.random.default_rng(7)).fit(X, y).coef_
    np.testing.assert_array_equal(a, g)


@pytest.mark.parametrize("algorithm", ["adassp", "adassp-wang", "ssp", "ssp-gdp", "adassp-gdp"])
def test_huge_epsilon_gives_ridge_like_solution(algorithm):
    X, y = data()
    expected = np.linalg.solve(X.T @ X + np.eye(3), X.T @ y)
    model = PrivateLinearRegression(algorithm, epsilon=1e8, random_state=1).fit(X, y)
    # noise sd at eps = 1e8 is <= 2e-4 (GDP) and lambda_min(XtX + I) >= 1, so the
    # coefficients move by far less than 1e-2
    np.testing.assert_allclose(model.coef_, expected, atol=1e-2)
    if ALGORITHMS[algorithm].has_lambda:
        assert model.lambda_ == 0.0
    else:
        assert math.isnan(model.lambda_)


def test_xtx_offset_zero_gives_ols_at_huge_epsilon():
    X, y = data()
    expected = np.linalg.lstsq(X, y, rcond=None)[0]
    model = PrivateLinearRegression("ssp", epsilon=1e8, xtx_offset=0.0, random_state=2).fit(X, y)
    np.testing.assert_allclose(model.coef_, expected, atol=1e-4)


def test_refuses_rows_breaking_bounds():
    X, y = data()
    X = X.copy()
    X[10] *= 1.2 / np.linalg.norm(X[10])
    with pytest.raises(DPRegError, match="bound_x"):
        PrivateLinearRegression(random_state=0).fit(X, y)
    # with bounds that cover the rows, the same data is accepted
    model = PrivateLinearRegression(bounds=(1.2, 1.0), random_state=0).fit(X, y)
    assert model.releases_[1].sensitivity == pytest.approx(1.44)
    X, y = data()
    y = y.copy()
    y[0] = 1.5
    with pytest.raises(DPRegError, match="bound_y"):
        PrivateLinearRegression(random_state=0).fit(X, y)
    assert not hasattr(PrivateLinearRegression(), "coef_")


def test_bounds_scale_the_noise():
    X, y = data(bx=2.0, by=3.0)
    model = PrivateLinearRegression("ssp", epsilon=0.5, bounds=(2.0, 3.0), random_state=0).fit(X, y)
    s = math.sqrt(2 * math.log(2.5 / 1e-6)) * 2 / 0.5
    assert model.releases_[0].scale == pytest.approx(4.0 * s, rel=1e-12)
    assert model.releases_[1].scale == pytest.approx(6.0 * s, rel=1e-12)


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"bounds": (0.0, 1.0)}, "bounds"),
        ({"bounds": (1.0, -1.0)}, "bounds"),
        ({"bounds": (1.0, float("inf"))}, "bounds"),
        ({"bounds": (1.0,)}, "bounds"),
        ({"bounds": 1.0}, "bounds"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": "1"}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 0.0}, "delta"),
        ({"rho": 2.0}, "rho"),
        ({"algorithm": "adasp"}, "algorithm"),
    ],
)
def test_bad_parameters_rejected_by_name(params, word):
    X, y = data()
    with pytest.raises(DPRegError, match=word):
        PrivateLinearRegression(random_state=0, **params).fit(X, y)


def test_predict_before_fit_and_wrong_width():
    with pytest.raises(DPRegError, match="not fitted"):
        PrivateLinearRegression().predict(np.zeros((2, 3)))
    X, y = data()
    model = PrivateLinearRegression(random_state=0).fit(X, y)
    with pytest.raises(DPRegError, match="shape"):
        model.predict(np.zeros((2, 4)))


def test_singular_noisy_system_raises_clear_error(monkeypatch):
    def always_failed(A, b):
        return np.full(b.shape, np.nan), np.ones(b.shape[0], dtype=bool)

    monkeypatch.setattr(algbase, "solve_batched", always_failed)
    X, y = data()
    with pytest.raises(DPRegError, match="singular"):
        PrivateLinearRegression(random_state=0).fit(X, y)
