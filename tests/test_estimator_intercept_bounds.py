"""PrivateLinearRegression: fit_intercept and per-feature bounds (bounds_X, bounds_y)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg import BudgetAccountant, PrivateLinearRegression
from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.estimator import box_norm_bounds, clip_rows
from dpreg.preprocess.stats import SuffStats
from dpreg.seeding import as_generator

#: Kalaja (2020) Alg. 1 at delta = 1e-6 and epsilon = 0.5, two releases of
#: epsilon / 2: sigma = D sqrt(2 ln(2.5 / delta)) * 2 / epsilon.
SSP_FACTOR = math.sqrt(2 * math.log(2.5 / 1e-6)) * 2 / 0.5


def _with_intercept(n=4000, intercept=5.0, seed=0):
    """Rows of norm <= 1 and ``y = intercept + X w + 0.02 N(0, 1)``, ``|y| < 8``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X /= np.linalg.norm(X, axis=1).max()
    w = np.array([0.8, -0.4, 0.3])
    y = intercept + X @ w + 0.02 * rng.normal(size=n)
    assert np.abs(y).max() < 8.0
    return X, y, w


# --------------------------------------------------------------------------
# fit_intercept
# --------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["adassp", "adassp-gdp", "ssp-gdp"])
def test_large_intercept_recovered_at_large_epsilon(algorithm):
    X, y, w = _with_intercept(intercept=5.0)
    model = PrivateLinearRegression(
        algorithm, epsilon=1e8, bounds=(1.0, 8.0), fit_intercept=True, random_state=0
    ).fit(X, y)
    # at epsilon = 1e8 the noise sd is below 1e-3 (scales ~ D sqrt(ln 1/delta) / eps with
    # D <= 16): the fit is ridge on [X, c] with c = B_X = 1 and penalty I (xtx_offset)
    A = np.hstack([X, np.ones((len(X), 1))])
    theta = np.linalg.solve(A.T @ A + np.eye(4), A.T @ y)
    np.testing.assert_allclose(np.r_[model.coef_, model.intercept_], theta, atol=1e-2)
    # the intercept: its ridge shrinkage is ~5 / n = 1.3e-3 (A^T A has n c^2 = 4000 on its
    # diagonal) and its standard error 0.02 / sqrt(n) = 3e-4, so 0.02 is > 10 times both
    assert model.intercept_ == pytest.approx(5.0, abs=0.02)
    # the slopes: lambda_min(X^T X) ~ n / (3 * 13) ~ 100 here, so ridge and sampling errors
    # stay below 0.05 (the largest row norm is 1, typical ones ~0.3)
    np.testing.assert_allclose(model.coef_, w, atol=0.05)
    np.testing.assert_allclose(model.predict(X[:7]), X[:7] @ model.coef_ + model.intercept_)
    # without the intercept the same data is fitted far worse: the mean of y (5) is lost
    plain = PrivateLinearRegression(algorithm, epsilon=1e8, bounds=(1.0, 8.0), random_state=0).fit(
        X, y
    )
    assert plain.intercept_ == 0.0
    assert model.score(X, y) > 0.99 > plain.score(X, y)


def test_without_intercept_results_are_unchanged(make_data):
    # the default (fit_intercept=False) is the algorithm run on the rows themselves,
    # bit for bit: no column added, the bounds unwidened, intercept_ exactly 0
    X, y = make_data(n=300)
    model = PrivateLinearRegression("adassp", epsilon=0.7, random_state=11).fit(X, y)
    stats = SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0)
    ref = ALGORITHMS["adassp"].fit(
        stats, epsilon=0.7, delta=1e-6, rng=as_generator(11, "random_state"), size=1
    )
    np.testing.assert_array_equal(model.coef_, ref.theta[0])
    assert model.intercept_ == 0.0 and model.fit_intercept is False
    assert model.norm_bounds_ == (1.0, 1.0)
    np.testing.assert_array_equal(model.predict(X), X @ model.coef_)


@pytest.mark.parametrize(("scaling", "c"), [(None, 2.0), (1.5, 1.5)])
def test_intercept_widens_the_norm_bound_in_the_releases(make_data, scaling, c):
    X, y = make_data(bx=2.0, by=3.0)
    model = PrivateLinearRegression(
        "ssp",
        epsilon=0.5,
        bounds=(2.0, 3.0),
        fit_intercept=True,
        intercept_scaling=scaling,
        random_state=0,
    ).fit(X, y)
    widened = math.sqrt(2.0**2 + c**2)  # ||(x, c)|| <= sqrt(B_X^2 + c^2)
    assert model.norm_bounds_ == (pytest.approx(widened, rel=1e-15), 3.0)
    xtx, xty = model.releases_
    # sensitivities of X^T X and X^T y on the augmented rows: B_X'^2 and B_X' B_Y
    assert xtx.sensitivity == pytest.approx(4.0 + c**2, rel=1e-14)
    assert xty.sensitivity == pytest.approx(3.0 * widened, rel=1e-14)
    assert xtx.scale == pytest.approx((4.0 + c**2) * SSP_FACTOR, rel=1e-12)
    assert xty.scale == pytest.approx(3.0 * widened * SSP_FACTOR, rel=1e-12)
    # the releases are those of d + 1 = 4 features
    assert model.releases_ == ALGORITHMS["ssp"].releases(
        epsilon=0.5, delta=1e-6, d=4, bound_x=widened, bound_y=3.0, n=300
    )


def test_intercept_is_the_coefficient_of_a_public_constant_column(make_data):
    # fit_intercept=True is exactly a fit on [X, c] with the widened bound, same noise
    X, y = make_data(n=300)
    c = 0.5
    model = PrivateLinearRegression(
        epsilon=2.0, fit_intercept=True, intercept_scaling=c, random_state=3
    ).fit(X, y)
    manual = PrivateLinearRegression(
        epsilon=2.0, bounds=(math.hypot(1.0, c), 1.0), random_state=3
    ).fit(np.hstack([X, np.full((300, 1), c)]), y)
    np.testing.assert_array_equal(model.coef_, manual.coef_[:3])
    assert model.intercept_ == manual.coef_[3] * c
    assert model.releases_ == manual.releases_


def test_intercept_checks_and_clips_the_rows_against_the_user_bound(make_data):
    X, y = make_data(n=200, bx=1.3)
    # the message names the user's B_X = 1, not the widened bound sqrt(2)
    with pytest.raises(DPRegError, match=r"norm 1\.3\d* > bound_x=1;"):
        PrivateLinearRegression(fit_intercept=True, random_state=0).fit(X, y)
    clipped = PrivateLinearRegression(fit_intercept=True, clip=True, random_state=0).fit(X, y)
    manual = PrivateLinearRegression(fit_intercept=True, random_state=0).fit(clip_rows(X, 1.0), y)
    np.testing.assert_array_equal(clipped.coef_, manual.coef_)
    assert clipped.intercept_ == manual.intercept_


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_bad_fit_intercept_named(make_data, bad):
    X, y = make_data()
    with pytest.raises(DPRegError, match="fit_intercept must be True or False"):
        PrivateLinearRegression(fit_intercept=bad).fit(X, y)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, "1"])
def test_bad_intercept_scaling_named(make_data, bad):
    X, y = make_data()
    with pytest.raises(DPRegError, match="intercept_scaling"):
        PrivateLinearRegression(fit_intercept=True, intercept_scaling=bad).fit(X, y)


# --------------------------------------------------------------------------
# per-feature bounds
# --------------------------------------------------------------------------
LOWER = np.array([-1.0, 0.0, -3.0])
UPPER = np.array([2.0, 0.5, 1.0])


def _box_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(LOWER, UPPER, size=(n, 3))
    y = np.clip(X @ [0.3, 1.0, -0.2] + 0.5 + 0.1 * rng.normal(size=n), -0.5, 2.0)
    return X, y


def test_box_translates_to_the_norm_bounds_of_its_corner():
    # m = max(|lower|, |upper|) = (2, 0.5, 3): B_X = sqrt(4 + 0.25 + 9); B_Y = max(0.5, 2)
    assert box_norm_bounds(LOWER, UPPER, -0.5, 2.0) == (
        pytest.approx(math.sqrt(13.25), rel=1e-15),
        2.0,
    )
    # the corner of largest norm lies in the box and attains B_X: no smaller ball holds it
    corner = np.array([2.0, 0.5, -3.0])
    assert np.all((LOWER <= corner) & (corner <= UPPER))
    assert np.linalg.norm(corner) == pytest.approx(math.sqrt(13.25), rel=1e-15)
    # no overflow for huge finite boxes, where squaring would overflow
    assert box_norm_bounds(np.full(4, -1e200), np.full(4, 1e200), -1.0, 1.0)[0] == pytest.approx(
        2e200, rel=1e-15
    )


def test_box_bounds_fit_equals_norm_bounds_fit():
    X, y = _box_data()
    box = PrivateLinearRegression(
        "ssp", epsilon=0.5, bounds_X=(LOWER, UPPER), bounds_y=(-0.5, 2.0), random_state=4
    ).fit(X, y)
    bx = math.sqrt(13.25)
    norm = PrivateLinearRegression("ssp", epsilon=0.5, bounds=(bx, 2.0), random_state=4).fit(X, y)
    np.testing.assert_array_equal(box.coef_, norm.coef_)
    assert box.norm_bounds_ == pytest.approx((bx, 2.0), rel=1e-15)
    xtx, xty = box.releases_
    assert xtx.sensitivity == pytest.approx(13.25, rel=1e-14)
    assert xty.sensitivity == pytest.approx(2.0 * bx, rel=1e-14)
    assert xtx.scale == pytest.approx(13.25 * SSP_FACTOR, rel=1e-12)


def test_box_bounds_with_intercept_widen_the_translated_bound():
    X, y = _box_data()
    model = PrivateLinearRegression(
        "ssp",
        epsilon=0.5,
        bounds_X=(LOWER, UPPER),
        bounds_y=(-0.5, 2.0),
        fit_intercept=True,
        random_state=0,
    ).fit(X, y)
    # c = B_X = sqrt(13.25) by default: widened to sqrt(2 * 13.25)
    assert model.norm_bounds_[0] == pytest.approx(math.sqrt(26.5), rel=1e-15)
    assert model.releases_[0].sensitivity == pytest.approx(26.5, rel=1e-14)


def test_scalar_box_broadcasts_to_every_feature(make_data):
    X, y = make_data(n=100, d=4)
    model = PrivateLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1), random_state=0).fit(X, y)
    assert model.norm_bounds_ == (2.0, 1.0)  # sqrt(4 * 1^2)
    # the box does not depend on the data: other rows give the same bounds
    other = PrivateLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1), random_state=0)
    assert other.fit(X[:10] * 0.1, y[:10] * 0.1).norm_bounds_ == (2.0, 1.0)


def test_box_clip_clips_each_feature_to_its_range():
    rng = np.random.default_rng(5)
    X = rng.uniform(-4, 4, size=(300, 3))
    y = rng.uniform(-3, 3, size=300)
    model = PrivateLinearRegression(
        bounds_X=(LOWER, UPPER), bounds_y=(-0.5, 2.0), clip=True, random_state=1
    ).fit(X, y)
    Xc, yc = np.clip(X, LOWER, UPPER), np.clip(y, -0.5, 2.0)
    assert not np.array_equal(Xc, X) and not np.array_equal(yc, y)
    manual = PrivateLinearRegression(
        bounds_X=(LOWER, UPPER), bounds_y=(-0.5, 2.0), random_state=1
    ).fit(Xc, yc)
    np.testing.assert_array_equal(model.coef_, manual.coef_)
    # clipping to the box is not clipping to the ball: it gives other statistics
    ball = PrivateLinearRegression(bounds=(math.sqrt(13.25), 2.0), clip=True, random_state=1).fit(
        X, np.clip(y, -0.5, 2.0)
    )
    assert not np.array_equal(ball.coef_, model.coef_)


def test_value_outside_the_box_refused_even_inside_the_ball():
    X, y = _box_data()
    X = X.copy()
    X[7, 1] = -0.1  # below lower = 0; the row's norm stays below B_X
    assert np.linalg.norm(X[7]) < math.sqrt(13.25)
    with pytest.raises(
        DPRegError, match=r"row 7, feature 1 is -0\.1.*outside bounds_X=\[0, 0\.5\]"
    ):
        PrivateLinearRegression(bounds_X=(LOWER, UPPER), bounds_y=(-0.5, 2.0)).fit(X, y)
    X, y = _box_data()
    y = y.copy()
    y[3] = -0.6
    with pytest.raises(DPRegError, match=r"row 3 has y = -0\.6.*outside bounds_y=\[-0\.5, 2\]"):
        PrivateLinearRegression(bounds_X=(LOWER, UPPER), bounds_y=(-0.5, 2.0)).fit(X, y)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"bounds": (1.0, 1.0), "bounds_X": (-1, 1), "bounds_y": (-1, 1)},
            r"give either norm bounds \(bounds=\(B_X, B_Y\)\) or per-feature bounds .* not both",
        ),
        ({"bounds": (1.0, 1.0), "bounds_X": (-1, 1)}, "not both"),
        ({"bounds_X": (-1, 1)}, "bounds_X needs bounds_y"),
        ({"bounds_y": (-1, 1)}, "bounds_y needs bounds_X"),
        ({"bounds_X": (-1, 1, 2), "bounds_y": (-1, 1)}, r"bounds_X must be a pair \(lower, upper\)"),
        ({"bounds_X": 1.0, "bounds_y": (-1, 1)}, "bounds_X must be a pair"),
        ({"bounds_X": ([-1, -1], [1, 1]), "bounds_y": (-1, 1)}, "bounds_X lower has 2 values but X has 3 features"),
        ({"bounds_X": (-1, [1, 1, 1, 1]), "bounds_y": (-1, 1)}, "bounds_X upper has 4 values but X has 3"),
        ({"bounds_X": ([-1, -1], [1, 1, 1]), "bounds_y": (-1, 1)}, "bounds_X lower and upper must have the same length"),
        ({"bounds_X": ([-1, 2, -1], 1), "bounds_y": (-1, 1)}, "feature 1 has lower=2 > upper=1"),
        ({"bounds_X": (-1, np.nan), "bounds_y": (-1, 1)}, "bounds_X upper must be finite"),
        ({"bounds_X": (-np.inf, 1), "bounds_y": (-1, 1)}, "bounds_X lower must be finite"),
        ({"bounds_X": ("a", 1), "bounds_y": (-1, 1)}, "bounds_X lower must be a finite real"),
        ({"bounds_X": (np.zeros((3, 1)), 1), "bounds_y": (-1, 1)}, "bounds_X lower must be .* 1-D"),
        ({"bounds_X": ([], []), "bounds_y": (-1, 1)}, "bounds_X lower must be"),
        ({"bounds_X": (0, 0), "bounds_y": (-1, 1)}, r"bounds_X give the norm bound B_X = .* = 0"),
        ({"bounds_X": (-1, 1), "bounds_y": (2, 1)}, r"bounds_y must have lo <= hi"),
        ({"bounds_X": (-1, 1), "bounds_y": ([0, 0], [1, 1])}, r"bounds_y must be a pair of numbers"),
        ({"bounds_X": (-1, 1), "bounds_y": (0, 0)}, r"bounds_y give B_Y = max\(\|lo\|, \|hi\|\) = 0"),
        ({"bounds_X": (-1, 1), "bounds_y": (0, math.inf)}, "bounds_y hi must be finite"),
        ({"bounds_X": (-1, 1), "bounds_y": None, "bounds": None}, None),
    ],
)  # fmt: skip
def test_bad_per_feature_bounds_named_before_any_charge(make_data, params, message):
    X, y = make_data(n=50)
    acc = BudgetAccountant(math.inf, 0.5)
    model = PrivateLinearRegression(accountant=acc, random_state=0, **params)
    if message is None:  # bounds_X without bounds_y, spelt out with None
        message = "bounds_X needs bounds_y"
    with pytest.raises(DPRegError, match=message):
        model.fit(X, y)
    assert acc.charges == [] and not hasattr(model, "coef_")


# --------------------------------------------------------------------------
# bounds outside double precision: one message naming the parameters
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"bounds": (1e200, 1.0)}, r"^bounds give B_X = 1e\+200 and B_Y = 1, so the sensitivity B_X\^2 = inf"),
        ({"bounds": (1e-200, 1.0)}, r"^bounds give B_X = 1e-200 .* B_X\^2 = 0 is outside"),
        ({"bounds": (1.0, 1e-310)}, r"^bounds give .* B_X B_Y = 1e-310 is outside"),
        ({"bounds_X": (-1e200, 1e200), "bounds_y": (-1, 1)}, r"^bounds_X and bounds_y give B_X = 1\.73205e\+200"),
        ({"fit_intercept": True, "intercept_scaling": 1e300}, r"^bounds with the intercept column c=1e\+300 give B_X = 1e\+300"),
    ],
)  # fmt: skip
def test_bounds_whose_sensitivity_overflows_are_named(params, message):
    X = np.full((20, 3), 1e-201)
    y = np.zeros(20)
    acc = BudgetAccountant(math.inf, 0.5)
    with pytest.raises(DPRegError, match=message):
        PrivateLinearRegression(clip=True, accountant=acc, random_state=0, **params).fit(X, y)
    assert acc.charges == []


def test_clip_rows_projects_rows_whose_squared_norm_overflows():
    X = np.array([[3e200, 4e200], [0.3, 0.4], [-3e300, 0.0]])
    out = clip_rows(X, 1.0)
    # onto the sphere along the row's direction, not to zero
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4], [-1.0, 0.0]], rtol=1e-15)
    np.testing.assert_array_equal(out[1], X[1])
