"""Non-private references: ridge with lambda chosen by cross-validation (ridge-cv)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import cross_val_score

from dpreg import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.algorithms.baselines import RIDGE_CV_GRID, ridge_cv_lambda
from dpreg.preprocess.stats import SuffStats


def data(n, d, noise, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = X @ rng.normal(size=d) + noise * rng.normal(size=n)
    return X, y / np.abs(y).max()


@pytest.mark.parametrize(("n", "d", "noise", "seed"), [(60, 8, 1.0, 1), (400, 5, 0.05, 2)])
def test_cv_scores_match_scikit_learn(n, d, noise, seed):
    """An independent implementation: scikit-learn's Ridge on the same sub-folds."""
    X, y = data(n, d, noise, seed)
    lam, scores = ridge_cv_lambda(X, y, 5)
    folds = [
        (np.flatnonzero(np.arange(n) % 5 != k), np.flatnonzero(np.arange(n) % 5 == k))
        for k in range(5)
    ]
    for j, frac in enumerate(RIDGE_CV_GRID):
        if frac == 0:
            continue  # scikit-learn warns on alpha = 0 (least squares); the others suffice
        sk = -cross_val_score(
            Ridge(alpha=frac * n, fit_intercept=False, solver="cholesky"),
            X, y, cv=folds, scoring="neg_mean_squared_error",
        ).mean()  # fmt: skip
        # equal-size sub-folds up to one row: the mean of fold means differs from
        # scikit-learn's by floating point only
        assert scores[j] == pytest.approx(sk, rel=1e-9)
    chosen = list(np.asarray(RIDGE_CV_GRID) * n).index(lam)
    assert scores[chosen] == scores.min()


def test_noisy_small_data_choose_shrinkage_and_clean_data_almost_none():
    X, y = data(40, 10, 3.0, 3)  # few rows, much noise: shrinkage pays
    assert ridge_cv_lambda(X, y, 5)[0] > 0
    X, y = data(2000, 4, 0.001, 4)  # many rows, little noise: (almost) least squares
    assert ridge_cv_lambda(X, y, 5)[0] <= 1e-4 * 2000


def test_entry_fits_the_chosen_lambda_on_the_whole_training_fold():
    X, y = data(300, 6, 0.5, 5)
    stats = SuffStats.from_arrays(X, y)
    entry = ALGORITHMS["ridge-cv"]
    assert not entry.private and entry.needs_rows and entry.has_lambda
    out = entry.fit(stats, epsilon=1.0, delta=1e-6, rng=None, size=3, rows=(X, y))
    lam = ridge_cv_lambda(X, y, 5)[0]
    want = np.linalg.solve(X.T @ X + lam * np.eye(6), X.T @ y)
    np.testing.assert_allclose(out.theta, np.tile(want, (3, 1)), rtol=1e-10)
    np.testing.assert_allclose(out.lam, lam)
    with pytest.raises(DPRegError, match="needs the training rows"):
        entry.fit(stats, epsilon=1.0, delta=1e-6, rng=None)


@pytest.mark.parametrize("folds", [1, 301, 2.5, True])
def test_bad_folds_are_named(folds):
    X, y = data(300, 3, 0.5, 6)
    with pytest.raises(DPRegError, match=r"ridge-cv: folds must be an integer in \[2, n=300\]"):
        ridge_cv_lambda(X, y, folds)


def test_fewer_rows_than_folds_leave_one_out_and_one_row_least_squares():
    entry = ALGORITHMS["ridge-cv"]
    X, y = data(3, 2, 0.5, 7)
    out = entry.fit(SuffStats.from_arrays(X, y), epsilon=1.0, delta=1e-6, rng=None, rows=(X, y))
    assert out.lam[0] == ridge_cv_lambda(X, y, 3)[0]
    one = entry.fit(SuffStats.from_arrays(X[:1], y[:1]), epsilon=1.0, delta=1e-6, rng=None,
                    rows=(X[:1], y[:1]))  # fmt: skip
    np.testing.assert_allclose(one.theta[0], np.linalg.pinv(X[:1]) @ y[:1], rtol=1e-10)
    assert one.lam[0] == 0.0
    with pytest.raises(DPRegError, match="ridge-cv: folds must be an integer >= 2, got 1"):
        entry.fit(SuffStats.from_arrays(X, y), epsilon=1.0, delta=1e-6, rng=None, rows=(X, y),
                  params={"folds": 1})  # fmt: skip
