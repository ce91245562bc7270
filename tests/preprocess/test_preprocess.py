"""Pre-processing variants (SPEC section 4) against direct numpy computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpreg._validation import DPRegError
from dpreg.preprocess import ArraySource, VariantSpec, fold_statistics
from dpreg.preprocess.stats import SuffStats

# --------------------------------------------------------------------------
# an independent, row-by-row implementation of SPEC section 4
# --------------------------------------------------------------------------


def reference(X, y, fold, k, spec: VariantSpec):
    """Everything fold ``k`` of ``spec`` should produce, computed directly."""
    stats_rows = np.ones(len(y), bool) if spec.stats == "global" else fold != k
    train, test = fold != k, fold == k
    Xs, ys = X[stats_rows], y[stats_rows]
    if spec.clip_sigma is not None:
        tau = Xs.mean(axis=0) + spec.clip_sigma * Xs.std(axis=0, ddof=1)
    else:
        tau = None

    def clip(A, on):
        return np.minimum(A, tau) if (on and tau is not None) else A

    Xs_c = clip(Xs, True)
    mean = Xs_c.mean(axis=0)
    sd = Xs_c.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, 1.0)
    ybar = ys.mean()
    y_center = ybar if spec.center_y else 0.0
    y_scale = np.abs(ys - y_center).max()
    t_center, t_scale = ybar, np.abs(ys - ybar).max()

    def feats(A, on):
        Z = (clip(A, on) - mean) / sd
        if spec.intercept:
            Z = np.column_stack([Z, np.ones(len(Z))])
        return Z

    def norms(Z):
        n = np.linalg.norm(Z, axis=1)
        return np.where(n > 0, n, 1.0)

    Zs = feats(Xs, True)
    x_max = norms(Zs).max() if spec.scale == "maxnorm" else 1.0
    y_max2 = (
        np.abs((ys - y_center) / y_scale / norms(Zs)).max() if spec.scale == "rownorm-y" else 1.0
    )

    def mapped(Z):
        if spec.scale == "maxnorm":
            return Z / x_max, np.ones(len(Z))
        n = norms(Z)
        factor = n * y_max2 if spec.scale == "rownorm-y" else np.ones(len(Z))
        return Z / n[:, None], factor

    Xtr, ftr = mapped(feats(X[train], True))
    ytr = (y[train] - y_center) / y_scale / ftr
    Xte, fte = mapped(feats(X[test], spec.clip_test))

    def test_mse(theta):
        pred_y = y_center + y_scale * fte[None, :] * (theta @ Xte.T)  # original units
        t = (y[test] - t_center) / t_scale
        return (((pred_y - t_center) / t_scale - t) ** 2).mean(axis=1)

    return {
        "clip_tau": tau,
        "x_mean": mean,
        "x_sd": sd,
        "y_center": y_center,
        "y_scale": y_scale,
        "x_max": x_max,
        "y_max2": y_max2,
        "t_center": t_center,
        "t_scale": t_scale,
        "Xtr": Xtr,
        "ytr": ytr,
        "test_mse": test_mse,
    }


def all_specs():
    out = []
    for scale, stats, clip, center, intercept in itertools.product(
        ("maxnorm", "rownorm", "rownorm-y"),
        ("global", "train"),
        (None, (1.0, False), (1.0, True)),
        (True, False),
        (False, True),
    ):
        out.append(
            VariantSpec(
                stats=stats,
                scale=scale,
                clip_sigma=None if clip is None else clip[0],
                clip_test=False if clip is None else clip[1],
                center_y=center,
                intercept=intercept,
            )
        )
    return out


SPECS = all_specs()


def spec_id(s: VariantSpec) -> str:
    clip = (
        "noclip" if s.clip_sigma is None else f"clip{s.clip_sigma:g}{'T' if s.clip_test else 'F'}"
    )
    return f"{s.scale}-{s.stats}-{clip}-{'cy' if s.center_y else 'ncy'}-{'ic' if s.intercept else 'noic'}"


def small_data():
    """6 rows x 2 columns, two folds (even rows fold 0, odd rows fold 1)."""
    X = np.array([[1.0, 0.0], [2.0, 10.0], [3.0, 0.0], [4.0, 10.0], [9.0, 0.0], [6.0, 40.0]])
    y = np.array([0.0, 1.0, 2.0, 2.0, 4.0, 6.0])
    fold = np.array([0, 1, 0, 1, 0, 1])
    return X, y, fold


def skewed_data(n=103, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(3, size=(n, d)) * [1.0, 5.0, 0.2] + [0.0, 10.0, -3.0]
    X[:, 0] = np.exp(X[:, 0])  # a skewed column, clipping bites
    y = X @ [0.3, -0.1, 2.0] + rng.normal(size=n) + 4.0
    fold = np.arange(n) % 4
    rng.shuffle(fold)
    return X, y, fold


def assert_transform_matches(tr, ref):
    if ref["clip_tau"] is None:
        assert tr.clip_tau is None
    else:
        np.testing.assert_allclose(tr.clip_tau, ref["clip_tau"], rtol=1e-12)
    np.testing.assert_allclose(tr.x_mean, ref["x_mean"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tr.x_sd, ref["x_sd"], rtol=1e-11)
    for key in ("y_center", "y_scale", "x_max", "y_max2", "t_center", "t_scale"):
        assert getattr(tr, key) == pytest.approx(ref[key], rel=1e-11, abs=1e-12), key


# --------------------------------------------------------------------------
# VariantSpec
# --------------------------------------------------------------------------
def test_from_dict_rejects_unknown_keys_by_name():
    with pytest.raises(DPRegError, match="variant 'v1'") as info:
        VariantSpec.from_dict({"scale": "maxnorm", "clip_sigmaa": 2, "bogus": 1}, "v1")
    msg = str(info.value)
    assert "clip_sigmaa" in msg and "bogus" in msg
    assert "clip_sigma" in msg  # the allowed keys are listed


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ({"stats": "all"}, "stats"),
        ({"scale": "unit"}, "scale"),
        ({"clip_sigma": -1.0}, "clip_sigma"),
        ({"clip_sigma": 0}, "clip_sigma"),
        ({"clip_sigma": True}, "clip_sigma"),
        ({"clip_sigma": "2"}, "clip_sigma"),
        ({"clip_test": "yes"}, "clip_test"),
        ({"center_y": 1}, "center_y"),
        ({"intercept": None}, "intercept"),
        ({"standardize": "no"}, "standardize"),
        ({"private_stats": {"epsilon_share": 1.5}}, "epsilon_share"),
        ({"private_stats": {"share": 0.1}}, "private_stats"),
    ],
)
def test_from_dict_rejects_bad_values(spec, word):
    with pytest.raises(DPRegError, match=word) as info:
        VariantSpec.from_dict(spec, "mine")
    assert "'mine'" in str(info.value)


def test_from_dict_accepts_and_round_trips():
    s = VariantSpec.from_dict({"stats": "global", "scale": "rownorm", "clip_sigma": 2})
    assert s.clip_sigma == 2.0 and isinstance(s.clip_sigma, float)
    assert VariantSpec.from_dict(s.to_dict()) == s
    assert VariantSpec.from_dict(s) is s
    with pytest.raises(DPRegError, match="mapping"):
        VariantSpec.from_dict(["maxnorm"], "x")


def test_defaults_are_the_thesis_choice():
    s = VariantSpec()
    assert (s.stats, s.scale, s.clip_sigma, s.center_y, s.intercept) == (
        "train",
        "maxnorm",
        None,
        True,
        False,
    )


# --------------------------------------------------------------------------
# hand-computed small example
# --------------------------------------------------------------------------
def test_hand_computed_maxnorm_train_stats():
    X, y, fold = small_data()
    fds = fold_statistics(ArraySource(X, y, fold), {"stats": "train", "scale": "maxnorm"}, folds=2)
    tr = fds[0].transform
    # fold 0 trains on rows 1, 3, 5: x1 = (2, 4, 6), x2 = (10, 10, 40), y = (1, 2, 6)
    np.testing.assert_allclose(tr.x_mean, [4.0, 20.0])
    np.testing.assert_allclose(tr.x_sd, [2.0, math.sqrt(300.0)])
    assert tr.y_center == pytest.approx(3.0)
    assert tr.y_scale == pytest.approx(3.0)  # max |(1, 2, 6) - 3|
    assert tr.t_center == pytest.approx(3.0) and tr.t_scale == pytest.approx(3.0)
    # standardised rows (-1, -1/sqrt3), (0, -1/sqrt3), (1, 2/sqrt3): largest norm sqrt(7/3)
    assert tr.x_max == pytest.approx(math.sqrt(7.0 / 3.0))
    Z = np.array([[-1.0, -1.0 / math.sqrt(3)], [0.0, -1.0 / math.sqrt(3)], [1.0, 2 / math.sqrt(3)]])
    Xm = Z / math.sqrt(7.0 / 3.0)
    ym = np.array([-2.0, -1.0, 3.0]) / 3.0
    train = fds[0].train
    assert train.n == 3
    np.testing.assert_allclose(train.xtx, Xm.T @ Xm, atol=1e-14)
    np.testing.assert_allclose(train.xty, Xm.T @ ym, atol=1e-14)
    assert train.yty == pytest.approx(float(ym @ ym))


def test_hand_computed_clipping_thresholds_and_recomputed_moments():
    X, y, fold = small_data()
    spec = {"stats": "train", "scale": "maxnorm", "clip_sigma": 1.0, "clip_test": True}
    tr = fold_statistics(ArraySource(X, y, fold), spec, folds=2)[0].transform
    # thresholds mean + 1 sd of the raw training columns (sample sd, ddof = 1)
    a = 20.0 + 10.0 * math.sqrt(3.0)
    np.testing.assert_allclose(tr.clip_tau, [6.0, a])
    # after clipping, column 2 is (10, 10, a): mean (20 + a)/3, sd (a - 10)/sqrt(3)
    np.testing.assert_allclose(tr.x_mean, [4.0, (20.0 + a) / 3.0])
    np.testing.assert_allclose(tr.x_sd, [2.0, (a - 10.0) / math.sqrt(3.0)])
    # test row (9, 0) is clipped to (6, 0) with clip_test
    U, r, t = tr.transform_test(np.array([[9.0, 0.0]]), np.array([4.0]))
    z = np.array([(6.0 - 4.0) / 2.0, (0.0 - (20.0 + a) / 3.0) / ((a - 10.0) / math.sqrt(3.0))])
    np.testing.assert_allclose(U[0], z / tr.x_max * tr.y_scale / tr.t_scale)
    assert t[0] == pytest.approx((4.0 - 3.0) / 3.0)


def test_hand_computed_global_rownorm_uncentred():
    X, y, fold = small_data()
    spec = {"stats": "global", "scale": "rownorm", "center_y": False}
    fds = fold_statistics(ArraySource(X, y, fold), spec, folds=2)
    for fd in fds:  # global statistics: one transform for every fold
        tr = fd.transform
        np.testing.assert_allclose(tr.x_mean, X.mean(axis=0))
        np.testing.assert_allclose(tr.x_sd, X.std(axis=0, ddof=1))
        assert tr.y_center == 0.0
        assert tr.y_scale == pytest.approx(6.0)  # max |y|
        assert tr.t_center == pytest.approx(15.0 / 6.0)
        assert tr.t_scale == pytest.approx(6.0 - 2.5)
    Z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    tr_rows = fold == 1  # fold 0 trains on the odd rows
    np.testing.assert_allclose(fds[0].train.xtx, Zn[tr_rows].T @ Zn[tr_rows], atol=1e-13)
    np.testing.assert_allclose(fds[0].train.xty, Zn[tr_rows].T @ (y[tr_rows] / 6.0), atol=1e-13)


# --------------------------------------------------------------------------
# every variant against the reference implementation
# --------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_fold_statistics_match_reference(spec):
    X, y, fold = skewed_data()
    fds = fold_statistics(ArraySource(X, y, fold), spec, folds=4)
    assert [fd.fold for fd in fds] == [0, 1, 2, 3]
    rng = np.random.default_rng(1)
    thetas = rng.normal(size=(3, X.shape[1] + int(spec.intercept)))
    for k, fd in enumerate(fds):
        ref = reference(X, y, fold, k, spec)
        assert_transform_matches(fd.transform, ref)
        # training statistics are those of the transformed training rows
        direct = SuffStats.from_arrays(ref["Xtr"], ref["ytr"])
        assert fd.train.n == direct.n == int((fold != k).sum())
        np.testing.assert_allclose(fd.train.xtx, direct.xtx, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fd.train.xty, direct.xty, rtol=1e-10, atol=1e-12)
        assert fd.train.yty == pytest.approx(direct.yty, rel=1e-10)
        # the test statistics score any theta as the direct computation does
        assert fd.test.m == int((fold == k).sum())
        np.testing.assert_allclose(fd.test.mse(thetas), ref["test_mse"](thetas), rtol=1e-9)


@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_training_rows_inside_unit_ball(spec):
    X, y, fold = skewed_data(seed=5)
    for fd in fold_statistics(ArraySource(X, y, fold), spec, folds=4):
        m = fold != fd.fold
        Xm, ym = fd.transform.transform_train(X[m], y[m])
        assert np.linalg.norm(Xm, axis=1).max() <= 1 + 1e-12
        assert np.abs(ym).max() <= 1 + 1e-12
        assert fd.train.bound_x == 1.0 and fd.train.bound_y == 1.0


def test_global_stats_share_transform_train_stats_do_not():
    X, y, fold = skewed_data()
    g = fold_statistics(ArraySource(X, y, fold), {"stats": "global"}, folds=4)
    t = fold_statistics(ArraySource(X, y, fold), {"stats": "train"}, folds=4)
    for fd in g[1:]:
        np.testing.assert_array_equal(fd.transform.x_mean, g[0].transform.x_mean)
        assert fd.transform.x_max == g[0].transform.x_max
    assert not np.allclose(t[0].transform.x_mean, t[1].transform.x_mean)


def test_constant_column_gives_sd_one_and_no_nan():
    X, y, fold = skewed_data()
    X = X.copy()
    X[:, 1] = 7.25
    for spec in ({"stats": "train"}, {"stats": "global", "scale": "rownorm", "clip_sigma": 2.0}):
        for fd in fold_statistics(ArraySource(X, y, fold), spec, folds=4):
            assert fd.transform.x_sd[1] == 1.0
            assert fd.transform.x_mean[1] == pytest.approx(7.25)
            assert np.all(np.isfinite(fd.train.xtx)) and np.all(np.isfinite(fd.train.xty))
            assert np.all(np.isfinite(fd.test.uu))
            assert np.all(fd.train.xtx[1, :] == 0.0)  # the column maps to zero


def test_column_constant_on_training_rows_only_gets_sd_one():
    """A column constant on a fold's statistics rows (say, an indicator that is
    0.1 everywhere except in one test row) is a constant column for that fold:
    SPEC section 4 step 4 gives it sd := 1, whichever row the table starts with."""
    X, y, fold = skewed_data()
    X = X.copy()
    X[:, 1] = 0.1
    X[0, 1] = 0.7  # the first row of the table differs ...
    k = int(fold[0])  # ... and sits in the test fold k
    fd = fold_statistics(ArraySource(X, y, fold), {"stats": "train"}, folds=4)[k]
    tr = fd.transform
    assert tr.x_mean[1] == pytest.approx(0.1, rel=1e-12)
    assert tr.x_sd[1] == 1.0
    # the test row's feature is then (0.7 - 0.1) / 1, mapped like every other row
    m = fold == k
    U, _, _ = tr.transform_test(X[m], y[m])
    g = tr.y_scale / tr.t_scale
    assert U[0, 1] == pytest.approx(0.6 / tr.x_max * g, rel=1e-9)
    assert fd.test.uu[1, 1] == pytest.approx((0.6 / tr.x_max * g) ** 2, rel=1e-9)


# --------------------------------------------------------------------------
# predictions and unstandardised coefficients
# --------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_predict_agrees_with_test_mapping(spec):
    X, y, fold = skewed_data(seed=2)
    fd = fold_statistics(ArraySource(X, y, fold), spec, folds=4)[1]
    tr = fd.transform
    m = fold == 1
    theta = np.random.default_rng(3).normal(size=(2, tr.d_out))
    U, r, t = tr.transform_test(X[m], y[m])
    o = t - r
    pred = tr.predict(X[m], theta)  # original units, shape (R, m)
    np.testing.assert_allclose(
        (pred - tr.t_center) / tr.t_scale, o + theta @ U.T, rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("center_y", [True, False])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("stats", ["global", "train"])
def test_unstandardize_reproduces_predictions(center_y, intercept, stats):
    X, y, fold = skewed_data(seed=4)
    spec = {"stats": stats, "scale": "maxnorm", "center_y": center_y, "intercept": intercept}
    tr = fold_statistics(ArraySource(X, y, fold), spec, folds=4)[2].transform
    theta = np.random.default_rng(4).normal(size=(3, tr.d_out))
    b0, coef = tr.unstandardize(theta)
    assert b0.shape == (3,) and coef.shape == (3, X.shape[1])
    np.testing.assert_allclose(
        b0[:, None] + coef @ X.T, tr.predict(X, theta), rtol=1e-10, atol=1e-10
    )


@pytest.mark.parametrize("scale", ["rownorm", "rownorm-y"])
def test_unstandardize_refuses_non_affine_mappings(scale):
    X, y, fold = skewed_data()
    tr = fold_statistics(ArraySource(X, y, fold), {"scale": scale}, folds=4)[0].transform
    with pytest.raises(DPRegError, match="maxnorm"):
        tr.unstandardize(np.zeros((1, X.shape[1])))


# --------------------------------------------------------------------------
# streaming equivalence
# --------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
@pytest.mark.parametrize("chunk", [7, 50])
def test_streaming_equals_single_chunk(spec, chunk):
    X, y, fold = skewed_data(seed=3)
    one = fold_statistics(ArraySource(X, y, fold), spec, folds=4)
    many = fold_statistics(ArraySource(X, y, fold, chunk_rows=chunk), spec, folds=4)
    for a, b in zip(one, many, strict=True):
        ta, tb = a.transform, b.transform
        for key in ("x_mean", "x_sd"):
            np.testing.assert_allclose(getattr(tb, key), getattr(ta, key), rtol=1e-12, atol=1e-13)
        if ta.clip_tau is not None:
            np.testing.assert_allclose(tb.clip_tau, ta.clip_tau, rtol=1e-12)
        for key in ("y_center", "y_scale", "x_max", "y_max2", "t_center", "t_scale"):
            assert getattr(tb, key) == pytest.approx(getattr(ta, key), rel=1e-12, abs=1e-13)
        assert a.train.n == b.train.n and a.test.m == b.test.m
        # entries of X^T X are sums of n terms of size <= 1; rounding is ~n * 1e-16
        scale = max(1.0, float(np.abs(a.train.xtx).max()))
        np.testing.assert_allclose(b.train.xtx, a.train.xtx, rtol=1e-12, atol=1e-12 * scale)
        np.testing.assert_allclose(b.train.xty, a.train.xty, rtol=1e-12, atol=1e-12 * scale)
        assert b.train.yty == pytest.approx(a.train.yty, rel=1e-12)
        np.testing.assert_allclose(b.test.uu, a.test.uu, rtol=1e-12, atol=1e-12 * scale)
        np.testing.assert_allclose(b.test.ur, a.test.ur, rtol=1e-12, atol=1e-12 * scale)
        assert b.test.rr == pytest.approx(a.test.rr, rel=1e-12)


def test_too_few_statistics_rows_rejected():
    X, y, _ = small_data()
    fold = np.array([0, 0, 0, 0, 0, 1])
    with pytest.raises(DPRegError, match="fewer than 2 rows"):
        fold_statistics(ArraySource(X, y, fold), {"stats": "train"}, folds=2)


# --------------------------------------------------------------------------
# the intercept: today's scaled form and the thesis' Eq. 3.6
# --------------------------------------------------------------------------
def _intercept_data(n=240, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 3.0, 0.2] + [5.0, -1.0, 0.0]
    y = X @ [0.4, -0.2, 2.0] + 7.0 + rng.normal(size=n)
    return X, y, np.arange(n) % 4


@pytest.mark.parametrize("stats", ["train", "global"])
def test_thesis_intercept_keeps_the_ones_column_and_bounds_rows_by_sqrt2(stats):
    X, y, fold = _intercept_data()
    spec = VariantSpec.from_dict(
        {"stats": stats, "scale": "maxnorm", "center_y": False, "intercept": "thesis"}
    )
    assert spec.intercept_form == "thesis" and spec.row_bound == math.sqrt(2)
    for fd in fold_statistics(ArraySource(X, y, fold), spec, folds=4):
        m = fold != fd.fold
        Xm, ym = fd.transform.transform_train(X[m], y[m])
        np.testing.assert_array_equal(Xm[:, -1], 1.0)  # Eq. 3.6: theta_0 times 1
        feat = np.linalg.norm(Xm[:, :-1], axis=1)
        if stats == "train":  # x_max is the largest training feature norm: attained
            assert feat.max() == pytest.approx(1.0, rel=1e-12)
        assert feat.max() <= 1 + 1e-12
        assert np.linalg.norm(Xm, axis=1).max() <= math.sqrt(2) * (1 + 1e-12)
        assert fd.train.bound_x == math.sqrt(2) and fd.train.bound_y == 1.0
        np.testing.assert_allclose(fd.train.xtx, Xm.T @ Xm, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fd.train.xty, Xm.T @ ym, rtol=1e-10, atol=1e-12)


def test_scaled_intercept_divides_the_ones_column_by_x_max():
    X, y, fold = _intercept_data()
    for value in (True, "scaled"):
        spec = VariantSpec.from_dict({"scale": "maxnorm", "center_y": False, "intercept": value})
        assert spec.intercept_form == "scaled" and spec.row_bound == 1.0
        fd = fold_statistics(ArraySource(X, y, fold), spec, folds=4)[1]
        Xm, _ = fd.transform.transform_train(X[fold != 1], y[fold != 1])
        np.testing.assert_allclose(Xm[:, -1], 1.0 / fd.transform.x_max, rtol=1e-15)
        assert np.linalg.norm(Xm, axis=1).max() == pytest.approx(1.0, rel=1e-12)
        assert fd.train.bound_x == 1.0


@pytest.mark.parametrize("form", ["scaled", "thesis"])
def test_unstandardised_coefficients_reproduce_predictions_with_an_intercept(form):
    X, y, fold = _intercept_data()
    spec = VariantSpec.from_dict({"scale": "maxnorm", "center_y": False, "intercept": form})
    tr = fold_statistics(ArraySource(X, y, fold), spec, folds=4)[0].transform
    theta = np.random.default_rng(1).normal(size=(3, 4))
    b0, coef = tr.unstandardize(theta)
    np.testing.assert_allclose(b0[:, None] + coef @ X.T, tr.predict(X, theta), rtol=1e-10)


def test_thesis_bound_reaches_the_sensitivities():
    from dpreg.algorithms import ALGORITHMS

    X, y, fold = _intercept_data()
    spec = VariantSpec.from_dict({"scale": "maxnorm", "center_y": False, "intercept": "thesis"})
    st = fold_statistics(ArraySource(X, y, fold), spec, folds=4)[0].train
    rel = ALGORITHMS["adassp"].releases(
        epsilon=1.0, delta=1e-6, d=st.d, bound_x=st.bound_x, bound_y=st.bound_y
    )
    assert [r.sensitivity for r in rel] == pytest.approx([2.0, 2.0, math.sqrt(2)])


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"intercept": "thesis", "scale": "rownorm"}, "'thesis'.*maxnorm"),
        ({"intercept": "yes"}, "intercept.*scaled.*thesis"),
        ({"intercept": 1}, "intercept"),
    ],
)
def test_bad_intercept_values_are_refused(spec, match):
    with pytest.raises(DPRegError, match=match):
        VariantSpec.from_dict(spec, "v")
