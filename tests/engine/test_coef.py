"""Coefficient error against a known theta* (dpreg.engine.coef and the sweep's coef_err)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg._validation import DPRegError
from dpreg.engine.coef import coef_errors, mapped_theta
from dpreg.engine.sweep import assign_folds, sweep_arrays
from dpreg.io.tables import SUMMARY_COLUMNS
from dpreg.preprocess import ArraySource, PublicRanges, fold_rows, fold_statistics
from dpreg.report.summary import summarise

THETA = np.array([0.5, -1.0, 2.0, 0.25])

#: variants whose map is affine in x: the mapped theta* is exact on noise-free data
AFFINE = {
    "maxnorm": {"stats": "train", "scale": "maxnorm"},
    "maxnorm-global": {"stats": "global", "scale": "maxnorm"},
    "raw-y-intercept": {"stats": "train", "scale": "maxnorm", "center_y": False, "intercept": True},
    "raw-y-thesis": {
        "stats": "train",
        "scale": "maxnorm",
        "center_y": False,
        "intercept": "thesis",
    },
    "unstandardised": {
        "stats": "train",
        "scale": "maxnorm",
        "standardize": False,
        "center_y": False,
    },
}


def _data(noise: float = 0.0, b0: float = 0.0, n: int = 600, seed: int = 3):
    rng = np.random.default_rng(seed)
    # features with non-zero means and unequal scales, so centring and sds matter
    X = rng.normal(size=(n, THETA.size)) * [1.0, 3.0, 0.5, 2.0] + [1.0, -2.0, 0.0, 5.0]
    y = b0 + X @ THETA + noise * rng.standard_normal(n)
    return X, y


def _folds(X, y, spec, K=5):
    fold = assign_folds(X.shape[0], K, seed=1, dataset="t")
    src = ArraySource(X, y, fold)
    return src, fold_statistics(src, spec, folds=K)


@pytest.mark.parametrize("name", sorted(AFFINE))
def test_least_squares_on_transformed_rows_recovers_the_mapped_theta(name):
    # noise-free y = b0 + X theta*: the transformed training rows satisfy y' = x' theta'
    # exactly, so least squares on them returns the mapped theta* to rounding.
    # Without an intercept column the constant b0 + mean . theta* - y_center must
    # vanish: b0 = 0 and either y centred at its training mean with x standardised
    # (y_center = mean . theta*), or neither (x_mean = 0, y_center = 0).
    spec = AFFINE[name]
    b0 = 0.0 if spec.get("intercept", False) is False else 1.5
    X, y = _data(b0=b0)
    src, fds = _folds(X, y, spec)
    for fd in fds:
        Xm, ym = fold_rows(src, fd)
        fit = np.linalg.lstsq(Xm, ym, rcond=None)[0]
        target = mapped_theta(fd.transform, THETA, intercept=b0)
        np.testing.assert_allclose(target, fit, rtol=1e-9, atol=1e-11)
        # the map is not the identity (the coordinates differ from the raw ones)
        assert not np.allclose(target[: THETA.size], THETA, rtol=1e-3)
        if spec["scale"] == "maxnorm":
            # and it is the inverse of unstandardize (Kalaja 2020, Eq. 3.7)
            b, coef = fd.transform.unstandardize(target)
            np.testing.assert_allclose(coef[0], THETA, rtol=1e-12)
            if fd.transform.spec.has_intercept:
                assert b[0] == pytest.approx(b0, abs=1e-12)


@pytest.mark.parametrize("name", ["maxnorm", "raw-y-thesis", "maxnorm-global"])
def test_sweep_ols_has_zero_coef_err_on_noise_free_data_and_a_wrong_theta_does_not(name):
    X, y = _data()
    kw = dict(
        seed=5,
        folds=5,
        variants={name: AFFINE[name]},
        algorithms=["ols", "trivial"],
        repeats=2,
        epsilons=[1.0],
        delta=1e-6,
    )
    trials = sweep_arrays(X, y, theta_star=THETA, **kw)
    ols = trials[trials.algorithm == "ols"]
    assert len(ols) == 10 and ols["coef_err"].max() < 1e-8
    # theta = 0 is as far from theta*' as theta*' is long: the error is not vacuous
    triv = trials[trials.algorithm == "trivial"]
    assert triv["coef_err"].min() > 1.0
    wrong = sweep_arrays(X, y, theta_star=2 * THETA, **kw)
    assert wrong.loc[wrong.algorithm == "ols", "coef_err"].min() > 0.5


def test_coef_err_decreases_with_noise_level_for_ols():
    # OLS's error in the fitted coordinates scales with the noise sd (for fixed X)
    errs = []
    for noise in (0.01, 0.1, 1.0):
        X, y = _data(noise=noise, n=2000)
        t = sweep_arrays(
            X,
            y,
            theta_star=THETA,
            seed=5,
            folds=4,
            variants={"m": AFFINE["maxnorm"]},
            algorithms=["ols"],
            repeats=1,
            epsilons=[1.0],
            delta=1e-6,
        )
        errs.append(t["coef_err"].median())
    # exactly linear in the noise sd up to the y_scale change (max |y| moves a little)
    assert errs[0] < errs[1] < errs[2]
    assert 5 < errs[1] / errs[0] < 15


def test_without_a_known_answer_or_with_rownorm_coef_err_is_nan():
    X, y = _data(noise=0.1)
    kw = dict(seed=5, folds=4, algorithms=["ols", "adassp"], repeats=2, epsilons=[1.0], delta=1e-6)
    none = sweep_arrays(X, y, variants={"m": AFFINE["maxnorm"]}, **kw)
    assert none["coef_err"].isna().all() and none["mse"].notna().all()
    rown = sweep_arrays(X, y, theta_star=THETA, variants={"w": {"scale": "rownorm"}}, **kw)
    assert rown["coef_err"].isna().all()
    clip = sweep_arrays(
        X, y, theta_star=THETA, variants={"c": {"scale": "maxnorm", "clip_sigma": 2}}, **kw
    )
    assert clip["coef_err"].notna().all()  # clipping keeps the coordinates


def test_private_stats_runs_measure_against_their_own_transform():
    X, y = _data(noise=0.0, n=4000)
    cols = {f"x{j}": [float(X[:, j].min()) - 1, float(X[:, j].max()) + 1] for j in range(4)}
    cols["y"] = [float(y.min()) - 1, float(y.max()) + 1]
    ranges = PublicRanges.from_config(
        {"source": "test", "columns": cols}, dataset="t", features=list(cols)[:4], target="y"
    )
    spec = {"scale": "maxnorm", "private_stats": {"epsilon_share": 0.5}}
    kw = dict(seed=5, folds=4, repeats=3, delta=1e-6, ranges=ranges, theta_star=THETA)
    t = sweep_arrays(X, y, variants={"p": spec}, algorithms=["ols"], epsilons=[1e4], **kw)
    # at epsilon = 1e4 the released statistics are nearly exact: OLS recovers each
    # run's mapped theta* closely (its noise-free fit in that run's coordinates)
    assert t["coef_err"].notna().all() and t["coef_err"].max() < 1e-3
    low = sweep_arrays(X, y, variants={"p": spec}, algorithms=["ols"], epsilons=[0.1], **kw)
    assert low["coef_err"].median() > t["coef_err"].median()


def test_mapped_theta_checks_its_length_and_coef_errors_score_failures_as_zero():
    X, y = _data()
    _, fds = _folds(X, y, AFFINE["maxnorm"])
    with pytest.raises(DPRegError, match=r"theta_star has shape \(3,\); the data have 4 features"):
        mapped_theta(fds[0].transform, THETA[:3])
    theta = np.array([[0.0, 0.0], [3.0, 4.0], [np.nan, np.nan]])
    out = coef_errors(theta, np.array([3.0, 0.0]), np.array([False, False, True]))
    # a failed fit is scored as theta = 0: its error is ||0 - target|| = 3
    np.testing.assert_array_equal(out, [3.0, 4.0, 3.0])
    assert np.isnan(coef_errors(theta, None, np.zeros(3, bool))).all()


def test_summary_reports_coef_err_beside_mse_and_r2():
    i = SUMMARY_COLUMNS.index("r2_mean")
    assert SUMMARY_COLUMNS[i - 5 : i + 3] == [
        "mse_mean", "mse_sd", "mse_median", "mse_q25", "mse_q75",
        "r2_mean", "coef_err_median", "coef_err_mean",
    ]  # fmt: skip
    X, y = _data(noise=0.5)
    kw = dict(seed=5, folds=4, variants={"m": AFFINE["maxnorm"]}, repeats=3, delta=1e-6)
    trials = sweep_arrays(X, y, theta_star=THETA, algorithms=["adassp"], epsilons=[0.2, 0.8], **kw)
    table = summarise(trials, experiment="e", resamples=50)
    for _, row in table.iterrows():
        cell = trials[trials.epsilon == row.epsilon]
        assert row.coef_err_median == pytest.approx(cell["coef_err"].median(), rel=1e-12)
        assert row.coef_err_mean == pytest.approx(cell["coef_err"].mean(), rel=1e-12)
        assert np.isfinite(row.r2_mean)
    # trial tables without the column (or without a known answer) give NaN, not an error
    old = summarise(trials.drop(columns="coef_err"), experiment="e", resamples=50)
    assert old["coef_err_median"].isna().all() and old["mse_median"].notna().all()
    assert isinstance(table, pd.DataFrame)
