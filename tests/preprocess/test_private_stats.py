"""Private pre-processing (thesis option 3): declared ranges, releases, budget, bounds.

Tolerances: empirical means and sds of the noisy statistics are compared with
their declared values over 4,000 seeded draws, at 5 standard errors
(a correct draw fails with probability < 1e-6 per coordinate); exact
quantities at 1e-12 or 1e-9 (root-finder tolerance).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import dpreg.preprocess.private as private_module
import dpreg.preprocess.private_runs as private_runs_module
from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.preprocess import (
    ArraySource,
    PublicRanges,
    VariantSpec,
    algorithm_budget,
    private_fold_data,
    private_stat_releases,
    raw_fold_moments,
)
from dpreg.preprocess.private import STAT_RELEASES, release_statistics
from dpreg.preprocess.private_runs import private_fold_data_runs
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.ledger import release_columns

DELTA = 1e-6
FEATURES = ["a", "b", "c"]
DECLARED = {
    "source": "test fixture: ranges chosen by hand",
    "columns": {"a": [0.0, 10.0], "b": [-2.0, 2.0], "c": [5.0, 6.0], "y": [-20.0, 60.0]},
}


def _ranges() -> PublicRanges:
    return PublicRanges.from_config(DECLARED, dataset="toy", features=FEATURES, target="y")


def _data(n: int = 400, seed: int = 0, spread: float = 1.0):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.uniform(0, 10, n), rng.uniform(-2, 2, n), rng.uniform(5, 6, n)]
    ) * np.array([spread, spread, 1.0])
    y = np.clip(X @ np.array([2.0, 3.0, 4.0]) - 5 + rng.normal(size=n), -20, 60)
    fold = np.arange(n) % 4
    return X, y, fold


def _spec(share: float = 0.1, **kw) -> VariantSpec:
    return VariantSpec.from_dict(
        {"stats": "train", "scale": "maxnorm", "private_stats": {"epsilon_share": share}, **kw}
    )


def _fold_data(spec, X, y, fold, *, epsilon=1.0, seed=0, k=0):
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    total = moms[0]
    for m in moms[1:]:
        total = total + m
    share = spec.private_stats.epsilon_share
    rel = private_stat_releases(ranges, epsilon=share * epsilon, delta=share * DELTA)
    fd = private_fold_data(
        spec,
        ranges,
        total - moms[k],
        moms[k],
        (0.0, 1.0),
        rel,
        fold=k,
        rng=np.random.default_rng(seed),
    )
    return fd, rel, ranges


# --------------------------------------------------------------------------
# ranges come from the config, never from the data
# --------------------------------------------------------------------------
def test_ranges_from_config_are_the_declared_numbers():
    r = _ranges()
    np.testing.assert_array_equal(r.lo, [0.0, -2.0, 5.0])
    np.testing.assert_array_equal(r.hi, [10.0, 2.0, 6.0])
    assert (r.ylo, r.yhi) == (-20.0, 60.0)
    assert r.source == "test fixture: ranges chosen by hand"


def test_ranges_are_not_read_from_the_data():
    # two datasets with different extremes give the same ranges and centres
    X1, y1, f = _data(seed=1)
    X2, y2, _ = _data(seed=2, spread=0.5)
    r1, _ = raw_fold_moments(ArraySource(X1, y1, f), 4, ranges=_ranges())
    r2, _ = raw_fold_moments(ArraySource(X2, y2, f), 4, ranges=_ranges())
    np.testing.assert_array_equal(r1.lo, r2.lo)
    np.testing.assert_array_equal(r1.hi, r2.hi)
    assert (r1.ylo, r1.yhi) == (r2.ylo, r2.yhi)
    with pytest.raises(DPRegError, match="public_ranges"):
        raw_fold_moments(ArraySource(X1, y1, f), 4)


@pytest.mark.parametrize(
    ("declared", "match"),
    [
        (None, r"dataset 'toy'.*public_ranges\.toy\.columns.*missing columns: a, b, c, y"),
        ({**DECLARED, "columns": {"a": [0, 1], "y": [0, 1]}}, r"dataset 'toy'.*b, c"),
        ({"columns": DECLARED["columns"]}, "source"),
        ({**DECLARED, "source": "  "}, "source"),
        ({**DECLARED, "columns": {**DECLARED["columns"], "zz": [0, 1]}}, "unknown column.*zz"),
        ({**DECLARED, "columns": {**DECLARED["columns"], "b": [2, -2]}}, r"columns\.b.*lo <= hi"),
        ({**DECLARED, "columns": {**DECLARED["columns"], "c": [0, float("inf")]}}, r"columns\.c"),
        ({**DECLARED, "columns": {**DECLARED["columns"], "a": "0..10"}}, r"columns\.a"),
        ({**DECLARED, "extra": 1}, "keys 'source' and 'columns'"),
    ],
)
def test_undeclared_or_bad_ranges_are_refused(declared, match):
    with pytest.raises(DPRegError, match=match):
        PublicRanges.from_config(declared, dataset="toy", features=FEATURES, target="y")


def test_rows_outside_their_range_are_clipped_before_the_statistics():
    X, y, fold = _data(seed=3, spread=1.5)  # columns a and b exceed their declared ranges
    y = y.copy()
    y[:5] = 500.0  # and a few targets
    ranges = _ranges()
    assert (X[:, 0] > 10).any() and (X[:, 1] < -2).any()
    _, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=ranges)
    Xc, yc = np.clip(X, ranges.lo, ranges.hi), np.clip(y, ranges.ylo, ranges.yhi)
    m = fold == 2
    A, b = Xc[m] - ranges.centre, yc[m] - ranges.ycentre
    np.testing.assert_allclose(moms[2].sx, A.sum(0), rtol=1e-12)
    np.testing.assert_allclose(moms[2].sxx, A.T @ A, rtol=1e-12)
    np.testing.assert_allclose(moms[2].sxy, A.T @ b, rtol=1e-12)
    assert moms[2].sy == pytest.approx(b.sum(), rel=1e-12)
    assert moms[2].syy == pytest.approx(b @ b, rel=1e-12)
    # and the statistics handed to the algorithm are those of the clipped rows
    fd, _, _ = _fold_data(_spec(), X, y, fold, k=2)
    Xm, ym = fd.transform.transform_train(Xc[~m], yc[~m])
    np.testing.assert_allclose(fd.train.xtx, Xm.T @ Xm, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fd.train.xty, Xm.T @ ym, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------
# the releases: sensitivity, scale, noise
# --------------------------------------------------------------------------
def test_each_release_has_the_sensitivity_and_scale_of_its_ranges():
    ranges = _ranges()
    rel = private_stat_releases(ranges, epsilon=0.3, delta=3e-7)
    assert [r.name for r in rel] == list(STAT_RELEASES)
    r = np.array([5.0, 2.0, 0.5])  # half-widths
    assert rel[0].sensitivity == pytest.approx(np.linalg.norm(r), rel=1e-12)
    assert rel[1].sensitivity == pytest.approx(np.linalg.norm(r * r), rel=1e-12)
    assert rel[2].sensitivity == pytest.approx(40.0, rel=1e-12)
    mu = mech.gdp_mu(epsilon=0.3, delta=3e-7)
    for x in rel:
        assert x.mechanism == "gaussian" and x.calibration == "gdp" and x.valid
        assert x.scale == pytest.approx(x.sensitivity * math.sqrt(3) / mu, rel=1e-12)
        assert (x.epsilon, x.delta) == pytest.approx((0.1, 1e-7))
    # the three compose to exactly the statistics' share
    assert mech.compose(rel, delta=3e-7)["exact_epsilon"] == pytest.approx(0.3, rel=1e-9)


def test_each_released_statistic_is_noisy_at_its_scale():
    X, y, fold = _data(seed=4)
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    rel = private_stat_releases(ranges, epsilon=0.5, delta=DELTA)
    exact = {
        "column_sums": moms[0].sx,
        "column_sums_of_squares": np.diag(moms[0].sxx),
        "y_sum": np.array([moms[0].sy]),
    }
    n = 4000
    draws = [release_statistics(moms[0], rel, rng=np.random.default_rng(s)) for s in range(n)]
    for r in rel:
        values = np.array([np.atleast_1d(d[r.name]) for d in draws])
        noise = values - exact[r.name]
        se_mean = r.scale / math.sqrt(n)
        assert np.all(np.abs(noise.mean(axis=0)) < 5 * se_mean)
        # sd within 5 standard errors (se of an sd ~ sigma / sqrt(2n))
        assert np.all(np.abs(noise.std(axis=0) / r.scale - 1) < 5 / math.sqrt(2 * n))


def test_fold_data_carries_its_releases_and_released_values():
    X, y, fold = _data(seed=5)
    fd, rel, _ = _fold_data(_spec(), X, y, fold, seed=9)
    assert fd.releases == tuple(rel)
    assert set(fd.released) == set(STAT_RELEASES)
    # the same generator state gives the same released values (the audit relies on it)
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    total = moms[0] + moms[1] + moms[2] + moms[3]
    again = release_statistics(total - moms[0], rel, rng=np.random.default_rng(9))
    for k, v in again.items():
        np.testing.assert_array_equal(v, fd.released[k])


# --------------------------------------------------------------------------
# budget and ledger
# --------------------------------------------------------------------------
def test_the_share_is_subtracted_from_the_regression_budget():
    assert algorithm_budget(_spec(0.3), epsilon=2.0, delta=DELTA) == pytest.approx(
        (1.4, 0.7 * DELTA)
    )
    plain = VariantSpec.from_dict({"scale": "maxnorm"})
    assert algorithm_budget(plain, epsilon=2.0, delta=DELTA) == (2.0, DELTA)


@pytest.mark.parametrize("name", ["adassp", "adassp-gdp", "ssp"])
def test_the_composed_total_covers_every_release(name):
    eps, share = 1.0, 0.1
    stat_rel = private_stat_releases(_ranges(), epsilon=share * eps, delta=share * DELTA)
    e_alg, d_alg = algorithm_budget(_spec(share), epsilon=eps, delta=DELTA)
    alg_rel = ALGORITHMS[name].releases(epsilon=e_alg, delta=d_alg, d=3)
    cols = release_columns(stat_rel + alg_rel, delta=DELTA)
    assert cols["releases"].count(";") == len(stat_rel) + len(alg_rel) - 1
    assert all(r.name in cols["releases"] for r in stat_rel + alg_rel)
    # basic composition adds the nominal shares back up to the run's budget
    assert cols["eps_basic"] == pytest.approx(eps, rel=1e-12)
    assert cols["delta_basic"] == pytest.approx(DELTA, rel=1e-12)
    mu = math.sqrt(sum((r.sensitivity / r.scale) ** 2 for r in stat_rel + alg_rel))
    assert cols["eps_exact"] == pytest.approx(mech.gdp_epsilon(mu=mu, delta=DELTA), rel=1e-9)
    assert cols["eps_exact"] <= eps * (1 + 1e-9)


# --------------------------------------------------------------------------
# the bound check runs on the statistics path
# --------------------------------------------------------------------------
@pytest.mark.parametrize("intercept", [False, "scaled", "thesis"])
def test_statistics_path_rows_respect_the_bound(intercept):
    X, y, fold = _data(seed=6)
    spec = _spec(center_y=intercept is False, intercept=intercept)
    fd, _, _ = _fold_data(spec, X, y, fold, seed=2)
    m = fold == 0
    Xm, ym = fd.transform.transform_train(X[~m], y[~m])  # checks ||x|| <= row_bound, |y| <= 1
    assert np.linalg.norm(Xm, axis=1).max() <= spec.row_bound * (1 + 1e-12)
    assert fd.train.bound_x == spec.row_bound
    np.testing.assert_allclose(fd.train.xtx, Xm.T @ Xm, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fd.train.xty, Xm.T @ ym, rtol=1e-9, atol=1e-12)
    assert fd.train.yty == pytest.approx(ym @ ym, rel=1e-9)


def test_a_transform_breaking_the_bound_is_refused_on_the_statistics_path(monkeypatch):
    # a bug that halves x_max (rows reaching norm 2) must stop before any release
    X, y, fold = _data(seed=7)
    real = private_module._fit_from_noisy

    def half_xmax(*args, **kw):
        tr = real(*args, **kw)
        return dataclasses.replace(tr, x_max=tr.x_max / 2)

    monkeypatch.setattr(private_module, "_fit_from_noisy", half_xmax)
    with pytest.raises(DPRegError, match="private-stats row .* > bound_x=1"):
        _fold_data(_spec(), X, y, fold)


def test_private_stats_needs_an_affine_transform():
    X, y, fold = _data(seed=8)
    for bad in ({"scale": "rownorm"}, {"clip_sigma": 2.0}):
        spec = VariantSpec.from_dict(
            {"stats": "train", "scale": "maxnorm", "private_stats": {"epsilon_share": 0.1}, **bad}
        )
        with pytest.raises(DPRegError, match="maxnorm"):
            _fold_data(spec, X, y, fold)


# --------------------------------------------------------------------------
# through the sweep
# --------------------------------------------------------------------------
def test_the_sweep_spends_the_share_on_the_statistics_and_the_rest_on_the_algorithm():
    from dpreg.engine.sweep import assign_folds, sweep_source

    X, y, _ = _data(n=400, seed=10)
    fold = assign_folds(len(y), 4, seed=1, dataset="toy")
    kw = {
        "dataset": "toy",
        "variants": {"ps": _spec(0.3).to_dict()},
        "algorithms": ["adassp"],
        "epsilons": [1.0],
        "delta": DELTA,
        "folds": 4,
        "repeats": 2,
        "seed": 1,
    }
    trials = sweep_source(ArraySource(X, y, fold), ranges=_ranges(), **kw)
    rel = trials["releases"].iloc[0].split(";")
    assert [r.split(":")[0] for r in rel] == [*STAT_RELEASES, "lambda_min", "XtX", "Xty"]
    assert all(r.endswith("@(0.1,1e-07)") for r in rel[:3])  # 0.3 / 3 of (1, 1e-6) each
    assert all(r.endswith("@(0.233333,2.33e-07)") for r in rel[3:])  # 0.7 / 3 each
    np.testing.assert_allclose(trials["eps_basic"], 1.0, rtol=1e-12)  # 0.1*3 + 0.2333*3
    assert (trials["eps_exact"] <= 1.0).all()
    with pytest.raises(DPRegError, match="public ranges"):
        sweep_source(ArraySource(X, y, fold), **kw)


# --------------------------------------------------------------------------
# many runs at once
# --------------------------------------------------------------------------
RUNS = 1500


def _fold_fields(fd):
    t, s, q = fd.transform, fd.train, fd.test
    yield from (t.x_mean, t.x_sd, t.y_center, t.y_scale, t.x_max, t.t_center, t.t_scale)
    yield from (t.d_out, s.n, s.xtx, s.xty, s.yty, s.bound_x, s.bound_y)
    yield from (q.m, q.uu, q.ur, q.rr, q.t_sum, q.t_sq, fd.fold)
    yield from (fd.released[k] for k in STAT_RELEASES)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"intercept": "scaled"},
        {"intercept": "thesis", "center_y": False},
        {"standardize": False, "intercept": "thesis"},
    ],
)
@pytest.mark.parametrize("epsilon", [0.02, 1.0])
def test_batched_runs_are_bit_identical_to_runs_one_by_one(kw, epsilon):
    """Run r of private_fold_data_runs is exactly the r-th private_fold_data call on the
    same generator (same noise blocks, same arithmetic), and the generator ends in the
    same state; the first runs do not depend on how many are drawn."""
    X, y, fold = _data(seed=12, spread=1.3)
    spec = _spec(0.2, **kw)
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    total = moms[0] + moms[1] + moms[2] + moms[3]
    rel = private_stat_releases(ranges, epsilon=0.2 * epsilon, delta=0.2 * DELTA)
    args = (spec, ranges, total - moms[2], moms[2], (0.5, 3.0), rel)
    one, many = np.random.default_rng(21), np.random.default_rng(21)
    # many runs: a last-bit difference (e.g. numpy's x**2 against Python's pow) shows
    # up in roughly one run in a few thousand, so 1,500 runs per case catch it
    want = [private_fold_data(*args, fold=2, rng=one) for _ in range(RUNS)]
    got = private_fold_data_runs(*args, fold=2, rng=many, size=RUNS)
    assert one.bit_generator.state == many.bit_generator.state
    assert len(got) == RUNS
    assert all(b.releases == a.releases == tuple(rel) for a, b in zip(want, got, strict=True))
    fields_want = list(zip(*(_fold_fields(a) for a in want), strict=True))
    fields_got = list(zip(*(_fold_fields(b) for b in got), strict=True))
    for u, v in zip(fields_want, fields_got, strict=True):  # one field, every run
        assert [type(t) for t in u] == [type(t) for t in v]
        np.testing.assert_array_equal(np.stack(v), np.stack(u))
    head = private_fold_data_runs(*args, fold=2, rng=np.random.default_rng(21), size=4)
    for a, b in zip(head, got[:4], strict=True):
        np.testing.assert_array_equal(a.train.xtx, b.train.xtx)
        np.testing.assert_array_equal(a.test.uu, b.test.uu)


def test_batched_runs_refuse_a_transform_breaking_the_bound(monkeypatch):
    # the batched path has its own bound check: a bug halving x_max must stop it too
    X, y, fold = _data(seed=7)
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    total = moms[0] + moms[1] + moms[2] + moms[3]
    rel = private_stat_releases(ranges, epsilon=0.1, delta=0.1 * DELTA)
    args = (_spec(), ranges, total - moms[0], moms[0], (0.0, 1.0), rel)
    real = private_runs_module._fit_runs

    def half_xmax(*a, **kw):
        mean, sd, yc, ys, x_max = real(*a, **kw)
        return mean, sd, yc, ys, x_max / 2

    monkeypatch.setattr(private_runs_module, "_fit_runs", half_xmax)
    with pytest.raises(DPRegError, match="private-stats row .* > bound_x=1"):
        private_fold_data_runs(*args, fold=0, rng=np.random.default_rng(0), size=3)


def test_batched_runs_check_their_arguments():
    X, y, fold = _data(seed=8)
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    rel = private_stat_releases(ranges, epsilon=0.1, delta=0.1 * DELTA)
    args = (_spec(), ranges, moms[0] + moms[1], moms[2], (0.0, 1.0))
    with pytest.raises(DPRegError, match="size"):
        private_fold_data_runs(*args, rel, fold=0, rng=0, size=0)
    with pytest.raises(DPRegError, match="releases must be"):
        private_fold_data_runs(*args, rel[::-1], fold=0, rng=0, size=2)
    plain = VariantSpec.from_dict({"stats": "train", "scale": "rownorm"})
    with pytest.raises(DPRegError, match="maxnorm"):
        private_fold_data_runs(plain, *args[1:], rel, fold=0, rng=0, size=2)
    # rng=0 is normalised (SPEC 7): same runs as a Generator seeded 0
    a = private_fold_data_runs(*args, rel, fold=0, rng=0, size=2)
    b = private_fold_data_runs(*args, rel, fold=0, rng=np.random.default_rng(0), size=2)
    np.testing.assert_array_equal(a[1].train.xtx, b[1].train.xtx)


# --------------------------------------------------------------------------
# the control: public ranges with exact statistics (not private in its statistics)
# --------------------------------------------------------------------------
EXACT = {"stats": "train", "scale": "maxnorm", "private_stats": {"exact": True}}


def test_exact_variant_uses_the_exact_statistics_of_the_clipped_range_scaled_rows():
    X, y, fold = _data(seed=3, spread=1.5)  # some rows beyond the declared ranges
    spec = VariantSpec.from_dict(EXACT)
    assert spec.private_stats.epsilon_share == 0 and not spec.releases_statistics
    ranges, moms = raw_fold_moments(ArraySource(X, y, fold), 4, ranges=_ranges())
    total = moms[0]
    for m in moms[1:]:
        total = total + m
    k = 1
    assert private_stat_releases(ranges, epsilon=0.0, delta=0.0) == []
    assert algorithm_budget(spec, epsilon=2.0, delta=DELTA) == (2.0, DELTA)
    args = (spec, ranges, total - moms[k], moms[k], (0.0, 1.0), [])
    rng = np.random.default_rng(7)
    state = rng.bit_generator.state
    fd = private_fold_data(*args, fold=k, rng=rng)
    assert rng.bit_generator.state == state  # nothing drawn: no noise
    # the exact statistics of the clipped training rows, computed here independently
    Xc, yc = np.clip(X, ranges.lo, ranges.hi), np.clip(y, ranges.ylo, ranges.yhi)
    train = fold != k
    mean, sd = Xc[train].mean(0), Xc[train].std(0, ddof=1)
    tr = fd.transform
    np.testing.assert_allclose(tr.x_mean, mean, rtol=1e-12)
    np.testing.assert_allclose(tr.x_sd, sd, rtol=1e-9)
    assert tr.y_center == pytest.approx(yc[train].mean(), rel=1e-12)
    # y scale and x_max from the public ranges (as in the private variant), not the data
    assert tr.y_scale == pytest.approx(max(ranges.yhi - tr.y_center, tr.y_center - ranges.ylo))
    far = np.maximum(np.abs(ranges.lo - mean), np.abs(ranges.hi - mean)) / sd
    assert tr.x_max == pytest.approx(float(np.sqrt(far @ far)), rel=1e-9)
    Z = (Xc[train] - mean) / sd
    assert tr.x_max > np.linalg.norm(Z, axis=1).max()  # wider than the data's own x_max
    # the statistics handed to the algorithm: those of the clipped, range-scaled rows
    Xm = Z / tr.x_max
    ym = (yc[train] - tr.y_center) / tr.y_scale
    np.testing.assert_allclose(fd.train.xtx, Xm.T @ Xm, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fd.train.xty, Xm.T @ ym, rtol=1e-9, atol=1e-12)
    assert fd.releases == ()
    # the batched runs agree and are all the same run
    runs = private_fold_data_runs(*args, fold=k, rng=np.random.default_rng(7), size=3)
    for run in runs:
        np.testing.assert_array_equal(run.train.xtx, fd.train.xtx)
        assert run.transform.x_max == fd.transform.x_max
    with pytest.raises(DPRegError, match="without noise"):
        private_fold_data(spec, ranges, total - moms[k], moms[k], (0.0, 1.0),
                          private_stat_releases(ranges, epsilon=0.1, delta=1e-7),
                          fold=k, rng=rng)  # fmt: skip


@pytest.mark.parametrize(
    "ps, match",
    [
        ({"exact": True, "epsilon_share": 0.1}, "drop epsilon_share"),
        ({"exact": "yes"}, "true or false"),
        ({"exact": False, "epsilon_share": 0}, r"\(0, 1\)"),
        ({"noise": False}, "mapping with key epsilon_share"),
    ],
)
def test_bad_exact_options_are_refused(ps, match):
    with pytest.raises(DPRegError, match=match):
        VariantSpec.from_dict({"stats": "train", "scale": "maxnorm", "private_stats": ps})


def test_the_ledger_does_not_call_the_exact_statistics_private():
    from dpreg.engine.run_ledger import ledger_report
    from dpreg.engine.sweep import assign_folds, sweep_source
    from dpreg.preprocess import nonprivate_statistics

    spec = VariantSpec.from_dict(EXACT)
    listed = " ".join(nonprivate_statistics(spec))
    assert "public column ranges" in listed
    assert "column means and sds of the clipped training rows, without noise" in listed
    assert "y centre" in listed
    assert spec.to_dict()["private_stats"] == {"exact": True}
    assert VariantSpec.from_dict(spec.to_dict()) == spec
    config = {
        "epsilons": [1.0],
        "delta": DELTA,
        "variants": {"pr": EXACT, "ps": _spec(0.1).to_dict()},
        "experiments": {"e": {"algorithms": ["adassp"], "variants": ["pr", "ps"]}},
    }
    report = ledger_report(config, {"toy": 3})["variants"]
    assert (
        "without noise" in report["pr"]["note"]
        and "released with noise" not in report["pr"]["note"]
    )
    assert "released with noise" in report["ps"]["note"]
    # the trials: only the algorithm's releases, at the whole budget
    X, y, _ = _data(n=400, seed=10)
    fold = assign_folds(len(y), 4, seed=1, dataset="toy")
    trials = sweep_source(
        ArraySource(X, y, fold), ranges=_ranges(), dataset="toy", variants={"pr": EXACT},
        algorithms=["adassp"], epsilons=[1.0], delta=DELTA, folds=4, repeats=2, seed=1,
    )  # fmt: skip
    rel = trials["releases"].iloc[0].split(";")
    assert [r.split(":")[0] for r in rel] == ["lambda_min", "XtX", "Xty"]
    np.testing.assert_allclose(trials["eps_basic"], 1.0, rtol=1e-12)
