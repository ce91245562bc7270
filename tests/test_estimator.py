"""PrivateLinearRegression and RowNormClipper as scikit-learn estimators."""

from __future__ import annotations

import math
import pickle
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

from dpreg import BudgetAccountant, NonPrivateWarning, PrivateLinearRegression, RowNormClipper
from dpreg._validation import EPSILON_MIN, DPRegError
from dpreg.algorithms import ALGORITHMS, Algorithm, FitResult
from dpreg.algorithms import registry as registry_module
from dpreg.engine.sweep import sweep_arrays
from dpreg.estimator import clip_rows
from dpreg.preprocess.stats import BOUND_RTOL, check_rows_within_bounds

PRIVATE = [name for name, alg in ALGORITHMS.items() if alg.private]
NON_PRIVATE = [name for name, alg in ALGORITHMS.items() if not alg.private]

#: The data of scikit-learn's common checks reaches row norm 143.9 and
#: |y| = 137.6; bounds of 1e3 cover every check with room to spare.
WIDE = (1e3, 1e3)

#: The checks that fit the estimator on their own data (10 to 200 rows,
#: row norms up to 143.9).
FITTING_CHECKS = frozenset(
    [
        "check_dict_unchanged",
        "check_dont_overwrite_parameters",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_fit_returns_self",
        "check_estimators_nan_inf",
        "check_estimators_overwrite_params",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_fit2d_1feature",
        "check_fit2d_1sample",
        "check_fit2d_predict1d",
        "check_fit_check_is_fitted",
        "check_fit_idempotent",
        "check_fit_score_takes_y",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_n_features_in",
        "check_n_features_in_after_fitting",
        "check_pipeline_consistency",
        "check_positive_only_tag_during_fit",
        "check_readonly_memmap_input",
        "check_regressor_data_not_an_array",
        "check_regressors_int",
        "check_regressors_no_decision_function",
        "check_regressors_train",
        "check_supervised_y_2d",
    ]
)

#: Why each check fails on the default estimator (bounds (1, 1), clip=False).
#: Every one of them fits rows that scikit-learn generates with norms far
#: above B_X = 1, and the estimator refuses them with DPRegError "training row
#: i has norm ... > bound_x=1": a row beyond B_X would move X^T X by more than
#: the sensitivity B_X^2 the noise is calibrated to, so accepting it would void
#: the guarantee.  Refusing is the point, so these must fail; nothing else
#: makes them fail (test_default_bounds_failures_are_only_the_bound_refusal).
#: The same checks pass on the same estimator with clip=True, with
#: per-feature bounds and clip=True, and with bounds covering the rows (WIDE).
#: The norm is the largest row norm the check fits.
_REFUSED = "refused: its rows exceed ||x|| <= B_X = 1"
DEFAULT_BOUNDS_FAILURES = {
    "check_dict_unchanged": f"fits rows of norm up to 4.57; {_REFUSED}",
    "check_dont_overwrite_parameters": f"fits rows of norm up to 4.57; {_REFUSED}",
    "check_dtype_object": f"fits object-dtype rows of norm up to 2.53; {_REFUSED}",
    "check_estimators_dtypes": f"fits rows of norm up to 5.23 in each dtype; {_REFUSED}",
    "check_estimators_fit_returns_self": f"fits rows of norm up to 5.87; {_REFUSED}",
    "check_estimators_nan_inf": (
        f"fits finite rows of norm up to 1.52 before its NaN/inf cases; {_REFUSED}"
    ),
    "check_estimators_overwrite_params": f"fits rows of norm up to 5.87; {_REFUSED}",
    "check_estimators_pickle": f"fits rows of norm up to 2.00 before pickling; {_REFUSED}",
    "check_f_contiguous_array_estimator": f"fits rows of norm up to 4.57; {_REFUSED}",
    "check_fit2d_1feature": (
        "fits 1-feature rows of |x| up to 2.89 and accepts only a fit or an error naming "
        f"1 feature; {_REFUSED}"
    ),
    "check_fit2d_1sample": (
        "fits 1 row of norm 6.10 and accepts only a fit or an error naming 1 sample (one "
        f"row is fine for a private fit); {_REFUSED}"
    ),
    "check_fit2d_predict1d": f"fits rows of norm up to 4.57; {_REFUSED}",
    "check_fit_check_is_fitted": f"fits rows of norm up to 143.4; {_REFUSED}",
    "check_fit_idempotent": f"fits rows of norm up to 143.9; {_REFUSED}",
    "check_fit_score_takes_y": f"fits rows of norm up to 1.52; {_REFUSED}",
    "check_methods_sample_order_invariance": f"fits rows of norm up to 4.57; {_REFUSED}",
    "check_methods_subset_invariance": f"fits rows of norm up to 4.57; {_REFUSED}",
    "check_n_features_in": f"fits rows of norm up to 143.9; {_REFUSED}",
    "check_n_features_in_after_fitting": f"fits rows of norm up to 3.04; {_REFUSED}",
    "check_pipeline_consistency": f"fits rows of norm up to 2.00; {_REFUSED}",
    "check_positive_only_tag_during_fit": (
        "fits rows with negative values (norm up to 5.64) and reads any error as "
        f"'negative values unsupported'; {_REFUSED}"
    ),
    "check_readonly_memmap_input": f"fits read-only rows of norm up to 5.87; {_REFUSED}",
    "check_regressor_data_not_an_array": f"fits rows of norm up to 5.20; {_REFUSED}",
    "check_regressors_int": f"fits integer rows of norm up to 4.88; {_REFUSED}",
    "check_regressors_no_decision_function": f"fits rows of norm up to 3.04; {_REFUSED}",
    "check_regressors_train": (
        f"fits rows of norm up to 5.20 (three variants: float64, memmap, float32); {_REFUSED}"
    ),
    "check_supervised_y_2d": f"fits rows of norm up to 1.52; {_REFUSED}",
}
assert set(DEFAULT_BOUNDS_FAILURES) == FITTING_CHECKS

#: TukeyEM fits m = n / (2d) OLS models on disjoint batches and needs m >= 4
#: and n/m >= d, and its safety test passes only for m >~ 8 ln(1/(2 delta)) / epsilon
#: (Amin et al. 2023); on the checks' 10 to 200 rows it refuses or declines by design.
TOO_FEW_ROWS = "TukeyEM needs thousands of rows; the checks fit 10 to 200"
DECLINES_ON_SMALL_DATA = {
    name for name, alg in ALGORITHMS.items() if alg.fit_fn.__module__ == "dpreg.algorithms.tukey"
} | {
    "dpk-tukey",  # DPKendall selection, then TukeyEM on the selected columns
    "tukey-em-tuned",  # TukeyEM at every m of its grid
}


def _default_bounds(estimator):
    return (
        isinstance(estimator, PrivateLinearRegression)
        and not estimator.clip
        and estimator.bounds is None
        and estimator.bounds_X is None
    )


def _expected_failures(estimator):
    return DEFAULT_BOUNDS_FAILURES if _default_bounds(estimator) else {}


# --------------------------------------------------------------------------
# scikit-learn's common checks: one test per check; an expected failure that
# starts passing, or a new failure, fails the suite (xfail_strict = true)
# --------------------------------------------------------------------------
_COMMON_CHECKS = parametrize_with_checks(
    [
        PrivateLinearRegression(bounds=WIDE, random_state=0),
        PrivateLinearRegression(clip=True, random_state=0),
        PrivateLinearRegression(random_state=0),
        # an intercept; per-feature bounds (covering the rows, or clipped to); an accountant
        PrivateLinearRegression(bounds=WIDE, fit_intercept=True, random_state=0),
        PrivateLinearRegression(bounds_X=(-1e3, 1e3), bounds_y=(-1e3, 1e3), random_state=0),
        PrivateLinearRegression(
            bounds_X=(-1.0, 1.0),
            bounds_y=(-1.0, 1.0),
            clip=True,
            fit_intercept=True,
            random_state=0,
        ),
        PrivateLinearRegression(
            bounds=WIDE, accountant=BudgetAccountant(math.inf, 0.5), random_state=0
        ),
        RowNormClipper(bound=1.0),
    ],
    expected_failed_checks=_expected_failures,
)


# scikit-learn hands pytest a generator of checks; pytest >= 9.2 deprecates
# generators as parameter values (an error under filterwarnings = error), so
# the checks are listed once here and parametrized from the list.
@pytest.mark.parametrize(
    _COMMON_CHECKS.args[0], list(_COMMON_CHECKS.args[1]), **_COMMON_CHECKS.kwargs
)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


def test_default_bounds_failures_are_only_the_bound_refusal():
    # the expected failures above fail for the stated reason and no other: each
    # raises the estimator's bound refusal (directly, or as the cause of the
    # assertion error of a check that expected a different message)
    results = check_estimator(PrivateLinearRegression(random_state=0), on_fail=None)
    failed = [r for r in results if r["status"] != "passed"]
    assert {r["check_name"] for r in failed} == set(DEFAULT_BOUNDS_FAILURES)
    assert len(failed) == 30
    for r in failed:
        err = r["exception"]
        refusal = err if isinstance(err, DPRegError) else err.__cause__ or err.__context__
        assert isinstance(refusal, DPRegError), (r["check_name"], err)
        m = re.fullmatch(
            r"training row \d+ has norm ([0-9.]+) > bound_x=1; rows must satisfy .*", str(refusal)
        )
        assert m, (r["check_name"], str(refusal))
        # the norm named in the reason is the largest one refused (3 significant digits)
        stated = re.search(
            r"(?:norm|\|x\|) (?:up to )?([0-9.]+)", DEFAULT_BOUNDS_FAILURES[r["check_name"]]
        )
        assert float(m.group(1)) == pytest.approx(float(stated.group(1)), rel=5e-3), r["check_name"]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_registry_algorithm_passes_check_estimator(name):
    est = PrivateLinearRegression(name, bounds=WIDE, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonPrivateWarning)
        results = check_estimator(est, on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] != "passed"}
    expected = dict.fromkeys(FITTING_CHECKS, TOO_FEW_ROWS) if name in DECLINES_ON_SMALL_DATA else {}
    assert failed == set(expected)
    assert len(results) >= 50


# --------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------
def test_fit_predict_shapes_and_attributes(make_data):
    X, y = make_data(n=400)
    model = PrivateLinearRegression(epsilon=1.0, delta=1e-6, random_state=0)
    assert model.fit(X, y) is model
    assert model.coef_.shape == (3,)
    assert model.n_features_in_ == 3
    assert model.intercept_ == 0.0
    assert model.lambda_ >= 0.0
    np.testing.assert_allclose(model.predict(X[:5]), X[:5] @ model.coef_, rtol=1e-15)
    # the ledger is the algorithm's own release list for these (n, d, bounds)
    expected = ALGORITHMS["adassp"].releases(epsilon=1.0, delta=1e-6, d=3, n=400)
    assert model.releases_ == expected
    assert model.score(X, y) == pytest.approx(r2_score(y, X @ model.coef_), rel=1e-12)


def test_params_are_sklearn_params():
    model = PrivateLinearRegression(
        "ssp", epsilon=0.5, delta=1e-5, bounds=(2.0, 3.0), random_state=4
    )
    assert model.get_params() == {
        "algorithm": "ssp",
        "epsilon": 0.5,
        "delta": 1e-5,
        "bounds": (2.0, 3.0),
        "bounds_X": None,
        "bounds_y": None,
        "clip": False,
        "fit_intercept": False,
        "intercept_scaling": None,
        "rho": 0.05,
        "xtx_offset": 1.0,
        "params": None,
        "accountant": None,
        "random_state": 4,
    }
    assert model.set_params(epsilon=0.25, algorithm="adassp-gdp") is model
    assert model.epsilon == 0.25 and model.algorithm == "adassp-gdp"
    assert clone(model).get_params() == model.get_params()
    with pytest.raises(ValueError, match="colour"):
        model.set_params(colour="red")


@pytest.mark.parametrize(
    "seed",
    [7, np.int64(7), np.random.SeedSequence(7), np.random.PCG64(7)],
    ids=["int", "np.int64", "SeedSequence", "BitGenerator"],
)
def test_random_state_forms_give_the_same_model(make_data, seed):
    X, y = make_data()
    ref = PrivateLinearRegression(epsilon=0.5, random_state=7).fit(X, y).coef_
    got = PrivateLinearRegression(epsilon=0.5, random_state=seed).fit(X, y).coef_
    np.testing.assert_array_equal(got, ref)
    gen = np.random.default_rng(7)
    np.testing.assert_array_equal(
        PrivateLinearRegression(epsilon=0.5, random_state=gen).fit(X, y).coef_, ref
    )
    other = PrivateLinearRegression(epsilon=0.5, random_state=8).fit(X, y).coef_
    assert not np.array_equal(other, ref)


@pytest.mark.parametrize("bad", [1.5, "0", True, -1, np.random.RandomState(0)])
def test_bad_random_state_is_named(make_data, bad):
    X, y = make_data()
    with pytest.raises(DPRegError, match="random_state"):
        PrivateLinearRegression(random_state=bad).fit(X, y)


@pytest.mark.parametrize("algorithm", ["adassp", "adassp-wang", "ssp", "ssp-gdp", "adassp-gdp"])
def test_huge_epsilon_gives_ridge_like_solution(make_data, algorithm):
    X, y = make_data(n=400)
    expected = np.linalg.solve(X.T @ X + np.eye(3), X.T @ y)
    model = PrivateLinearRegression(algorithm, epsilon=1e8, random_state=1).fit(X, y)
    # noise sd at eps = 1e8 is <= 2e-4 and lambda_min(XtX + I) >= 1, so the
    # coefficients move by far less than 1e-2
    np.testing.assert_allclose(model.coef_, expected, atol=1e-2)
    if ALGORITHMS[algorithm].has_lambda:
        assert model.lambda_ == 0.0
    else:
        assert math.isnan(model.lambda_)


def test_xtx_offset_zero_gives_ols_at_huge_epsilon(make_data):
    X, y = make_data(n=400)
    expected = np.linalg.lstsq(X, y, rcond=None)[0]
    model = PrivateLinearRegression("ssp", epsilon=1e8, xtx_offset=0.0, random_state=2).fit(X, y)
    # lambda_min(XtX) of 400 such rows is about 100: noise 2e-4 moves theta < 1e-4
    np.testing.assert_allclose(model.coef_, expected, atol=1e-4)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_registry_algorithm_fits(make_data, name):
    # 4000 rows at epsilon = 10: enough for TukeyEM's safety test (m = 666 models)
    X, y = make_data(n=4000)
    model = PrivateLinearRegression(name, epsilon=10.0, random_state=3)
    if ALGORITHMS[name].private:
        model.fit(X, y)
    else:
        with pytest.warns(NonPrivateWarning, match=f"{name!r} is not private"):
            model.fit(X, y)
    assert model.coef_.shape == (3,) and np.all(np.isfinite(model.coef_))
    assert (model.releases_ == []) == (not ALGORITHMS[name].private)


def test_non_private_baselines_are_the_registry_ones():
    # the warning follows Algorithm.private, and today's baselines are these three
    assert set(NON_PRIVATE) >= {"ols", "ridge", "trivial"}


def _fake_entry(name, fit_fn, *, needs_rows):
    return Algorithm(
        name,
        name,
        private=True,
        calibration="gdp",
        release_fn=ALGORITHMS["ssp-gdp"].release_fn,
        fit_fn=fit_fn,
        needs_rows=needs_rows,
    )


def test_row_based_algorithm_gets_the_checked_rows(make_data, monkeypatch):
    seen = {}

    def fit_fn(stats, releases, opts):
        seen["rows"] = opts.rows
        seen["n"] = stats.n
        d = stats.d
        zeros = np.zeros((opts.size, d))
        return FitResult(
            theta=zeros, lam=np.full(opts.size, np.nan), failed=np.zeros(opts.size, bool)
        )

    monkeypatch.setitem(
        registry_module.ALGORITHMS, "rows-test", _fake_entry("rows-test", fit_fn, needs_rows=True)
    )
    X, y = make_data(n=50, bx=2.0, by=1.0)
    model = PrivateLinearRegression("rows-test", bounds=(1.0, 1.0), clip=True, random_state=0)
    model.fit(X, y)
    Xs, ys = seen["rows"]
    # the algorithm sees the clipped rows, never the raw ones
    np.testing.assert_array_equal(Xs, clip_rows(X, 1.0))
    np.testing.assert_array_equal(ys, np.clip(y, -1.0, 1.0))
    assert seen["n"] == 50


def test_failed_solve_raises_clear_error(make_data, monkeypatch):
    def fit_fn(stats, releases, opts):
        nan = np.full((opts.size, stats.d), np.nan)
        return FitResult(theta=nan, lam=np.full(opts.size, np.nan), failed=np.ones(opts.size, bool))

    monkeypatch.setitem(
        registry_module.ALGORITHMS, "fails", _fake_entry("fails", fit_fn, needs_rows=False)
    )
    X, y = make_data()
    with pytest.raises(DPRegError, match="fails: the fit returned no estimate"):
        PrivateLinearRegression("fails", random_state=0).fit(X, y)


# --------------------------------------------------------------------------
# bounds and clipping
# --------------------------------------------------------------------------
def test_refuses_rows_breaking_bounds(make_data):
    X, y = make_data(n=400)
    X = X.copy()
    X[10] *= 1.2 / np.linalg.norm(X[10])
    with pytest.raises(DPRegError, match="bound_x"):
        PrivateLinearRegression(random_state=0).fit(X, y)
    model = PrivateLinearRegression(bounds=(1.2, 1.0), random_state=0).fit(X, y)
    assert [r.sensitivity for r in model.releases_][1] == pytest.approx(1.44)
    X, y = make_data(n=400)
    y = y.copy()
    y[0] = 1.5
    with pytest.raises(DPRegError, match="bound_y"):
        PrivateLinearRegression(random_state=0).fit(X, y)


def test_clip_true_equals_fitting_clipped_rows(make_data):
    X, y = make_data(n=400, bx=3.0, by=2.0)
    clipped = PrivateLinearRegression(clip=True, random_state=5).fit(X, y)
    manual = PrivateLinearRegression(random_state=5).fit(clip_rows(X, 1.0), np.clip(y, -1, 1))
    np.testing.assert_array_equal(clipped.coef_, manual.coef_)


def test_bounds_scale_the_noise(make_data):
    X, y = make_data(bx=2.0, by=3.0)
    model = PrivateLinearRegression("ssp", epsilon=0.5, bounds=(2.0, 3.0), random_state=0).fit(X, y)
    # Kalaja Alg. 1: sigma = D sqrt(2 ln(2.5/delta)) * 2 / eps, D = B_X^2 and B_X B_Y
    s = math.sqrt(2 * math.log(2.5 / 1e-6)) * 2 / 0.5
    assert model.releases_[0].scale == pytest.approx(4.0 * s, rel=1e-12)
    assert model.releases_[1].scale == pytest.approx(6.0 * s, rel=1e-12)


def test_clip_rows_projects_onto_the_ball():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)) * rng.choice([0.1, 10.0], size=(500, 1))
    out = clip_rows(X, 2.0)
    norms_in, norms_out = np.linalg.norm(X, axis=1), np.linalg.norm(out, axis=1)
    inside = norms_in <= 2.0
    assert inside.any() and (~inside).any()
    np.testing.assert_array_equal(out[inside], X[inside])
    # the library's own bound check accepts them (rounding stays within BOUND_RTOL)
    assert check_rows_within_bounds(out, np.zeros(len(out)), bound_x=2.0, bound_y=1.0)[0] <= 2.0 * (
        1 + BOUND_RTOL
    )
    np.testing.assert_allclose(norms_out[~inside], 2.0, rtol=1e-15)
    # direction is kept: clipped rows are positive multiples of the originals
    cos = np.einsum("ij,ij->i", out[~inside], X[~inside]) / (norms_out * norms_in)[~inside]
    np.testing.assert_allclose(cos, 1.0, rtol=1e-14)


def test_row_clipper_is_data_independent():
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(30, 3)) * 5, rng.normal(size=(40, 3)) * 0.01
    T = rng.normal(size=(10, 3)) * 3
    np.testing.assert_array_equal(
        RowNormClipper(bound=1.5).fit(A).transform(T), RowNormClipper(bound=1.5).fit(B).transform(T)
    )
    np.testing.assert_array_equal(RowNormClipper(bound=1.5).transform(T), clip_rows(T, 1.5))


def test_row_clipper_keeps_column_names_for_pandas_output(make_data):
    import pandas as pd

    X, _ = make_data(n=20, bx=3.0)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    out = RowNormClipper(bound=1.0).set_output(transform="pandas").fit_transform(frame)
    assert list(out.columns) == ["a", "b", "c"]
    # a DataFrame's column-major layout may change the norm's rounding by one ulp
    np.testing.assert_allclose(out.to_numpy(), clip_rows(X, 1.0), rtol=1e-15)


def test_pipeline_and_target_regressor_equal_clip_true(make_data):
    X, y = make_data(n=400, bx=4.0, by=3.0)
    direct = PrivateLinearRegression(clip=True, random_state=2).fit(X, y)
    pipe = make_pipeline(
        RowNormClipper(bound=1.0),
        TransformedTargetRegressor(
            regressor=PrivateLinearRegression(random_state=2),
            func=lambda t: np.clip(t, -1.0, 1.0),
            inverse_func=lambda t: t,
            check_inverse=False,
        ),
    ).fit(X, y)
    fitted = pipe[-1].regressor_
    np.testing.assert_array_equal(fitted.coef_, direct.coef_)
    np.testing.assert_array_equal(pipe.predict(X), direct.predict(clip_rows(X, 1.0)))


# --------------------------------------------------------------------------
# bad input: one clear error, before any release
# --------------------------------------------------------------------------
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
        ({"rho": "0.1"}, "rho"),
        ({"xtx_offset": -1.0}, "xtx_offset"),
        ({"clip": "yes"}, "clip"),
        ({"algorithm": "adasp"}, "algorithm"),
        ({"params": {"not_a_param": 1}}, "not_a_param"),
    ],
)
def test_bad_parameters_rejected_by_name(make_data, params, word):
    X, y = make_data()
    with pytest.raises(DPRegError, match=word):
        PrivateLinearRegression(random_state=0, **params).fit(X, y)


def test_not_fitted_and_wrong_width(make_data):
    with pytest.raises(NotFittedError):
        PrivateLinearRegression().predict(np.zeros((2, 3)))
    X, y = make_data()
    model = PrivateLinearRegression(random_state=0).fit(X, y)
    with pytest.raises(DPRegError, match="4 features"):
        model.predict(np.zeros((2, 4)))


def test_zero_rows_refused(make_data):
    X, y = make_data()
    with pytest.raises(DPRegError, match="0 sample"):
        PrivateLinearRegression(random_state=0).fit(X[:0], y[:0])


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_input_refused(make_data, value):
    X, y = make_data()
    model = PrivateLinearRegression(random_state=0).fit(X, y)
    Xbad = X[:5].copy()
    Xbad[2, 1] = value
    with pytest.raises(DPRegError, match="NaN|infinity"):
        model.predict(Xbad)
    with pytest.raises(DPRegError, match="NaN|infinity"):
        PrivateLinearRegression(random_state=0).fit(np.vstack([X, Xbad]), np.r_[y, y[:5]])
    ybad = y.copy()
    ybad[0] = value
    with pytest.raises(DPRegError, match="NaN|infinity"):
        PrivateLinearRegression(random_state=0).fit(X, ybad)


def test_column_target_warns_like_sklearn(make_data):
    X, y = make_data()
    ref = PrivateLinearRegression(random_state=0).fit(X, y).coef_
    with pytest.warns(DataConversionWarning):
        got = PrivateLinearRegression(random_state=0).fit(X, y[:, None]).coef_
    np.testing.assert_array_equal(got, ref)


def test_fitted_model_pickles(make_data):
    X, y = make_data()
    model = PrivateLinearRegression(random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


# --------------------------------------------------------------------------
# epsilon too small: the estimator and the pipeline say the same thing
# --------------------------------------------------------------------------
TOO_SMALL = r"is too small to calibrate: the noise scale overflows to infinity"


@pytest.mark.parametrize("eps", [1e-310, 5e-324, EPSILON_MIN / 10])
def test_tiny_epsilon_same_message_in_estimator_and_sweep(make_data, eps):
    X, y = make_data(n=60)
    with pytest.raises(DPRegError, match=TOO_SMALL) as est_err:
        PrivateLinearRegression("adassp-gdp", epsilon=eps, random_state=0).fit(X, y)
    with pytest.raises(DPRegError, match=TOO_SMALL) as sweep_err:
        sweep_arrays(
            X, y, seed=1, folds=3, variants={"raw": {}}, algorithms=["adassp-gdp"],
            epsilons=[eps], delta=1e-6, repeats=1,
        )  # fmt: skip
    # same words; only the name of the offending key differs
    assert str(sweep_err.value).replace("epsilons[0]", "epsilon") == str(est_err.value)


def _sweep_error(X, y, name, eps, bounds_note=""):
    with pytest.raises(DPRegError) as err:
        sweep_arrays(
            X, y, seed=1, folds=3, variants={"raw": {}}, algorithms=[name],
            epsilons=[eps], delta=1e-6, repeats=1,
        )  # fmt: skip
    return str(err.value)


#: Classical and analytic calibrations split epsilon into shares epsilon/k;
#: just above the floor a share falls below it.
SHARED = [n for n in PRIVATE if ALGORITHMS[n].calibration in ("classical", "analytic")]


@pytest.mark.parametrize("name", SHARED)
def test_share_below_floor_same_message_as_sweep(make_data, name):
    X, y = make_data(n=60)
    eps = 1.5 * EPSILON_MIN  # shares of 1/2 or 1/3 fall below the floor
    with pytest.raises(DPRegError, match=TOO_SMALL) as err:
        PrivateLinearRegression(name, epsilon=eps, random_state=0).fit(X, y)
    assert _sweep_error(X, y, name, eps) == str(err.value)


def test_docstring_examples_run():
    import doctest

    import dpreg.estimator

    result = doctest.testmod(dpreg.estimator, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 10


#: Calibrations whose scale is proportional to sensitivity / epsilon.
INVERSE_EPSILON = [
    n for n in PRIVATE if ALGORITHMS[n].calibration in ("classical", "wang", "laplace")
]
EXTREME = {"epsilon": 1e-290, "bounds": (1e10, 1.0), "random_state": 0}


@pytest.mark.parametrize("name", INVERSE_EPSILON)
def test_scale_overflow_gives_the_same_message(make_data, name):
    # epsilon = 1e-290 is fine for every share, but with B_X = 1e10 the scale
    # D c / epsilon (D = B_X^2 = 1e20) exceeds the largest double
    X, y = make_data(n=60)
    with pytest.raises(DPRegError, match=TOO_SMALL):
        PrivateLinearRegression(name, **EXTREME).fit(X, y)


@pytest.mark.parametrize("name", PRIVATE)
def test_extreme_budget_and_bounds_give_a_model_or_one_clear_error(make_data, name):
    # other calibrations (GDP, analytic, zCDP, ...) keep sigma finite as epsilon -> 0
    # (it then depends on delta); either way no raw exception may escape
    X, y = make_data(n=60)
    model = PrivateLinearRegression(name, **EXTREME)
    try:
        model.fit(X, y)
    except DPRegError as err:
        assert re.search(f"{TOO_SMALL}|{name}: the fit returned no estimate", str(err)), err
    else:
        assert np.all(np.isfinite(model.coef_))


def test_the_small_data_exception_covers_tukey_only():
    # derived from the registry; guards against the set silently growing or emptying
    assert {"tukey-em", "tukey-code"} <= DECLINES_ON_SMALL_DATA
    assert all(name.startswith(("tukey", "dpk-tukey")) for name in DECLINES_ON_SMALL_DATA)
