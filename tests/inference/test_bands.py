"""The simultaneous band over epsilon (dpreg.inference.bands) and its claims.csv columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg.inference.bands import curve_bands, simultaneous_band
from dpreg.inference.bootstrap import _percentile_interval
from dpreg.inference.evaluation import evaluate_claims
from dpreg.inference.intervals import paired_ratios

CURVES, POINTS, UNITS, RESAMPLES = 300, 10, 200, 400
LEVEL = 0.95


def _curves(seed: int):
    """Per curve: UNITS iid units of POINTS correlated log ratios (true ratio 1 everywhere).

    AR(1) correlation 0.7 between neighbouring epsilons (a curve's points share
    the data), unequal spreads per point; the estimate is exp(mean log ratio) and
    the bootstrap resamples the units, as the design bootstrap resamples folds.
    200 units: the band's coverage is asymptotic; with 40 units the same simulation
    gives 0.89 (the bootstrap underestimates the tail of the max with few units; see
    dpreg.inference.bands).
    """
    rng = np.random.default_rng(seed)
    lag = np.abs(np.subtract.outer(np.arange(POINTS), np.arange(POINTS)))
    sd = np.linspace(0.2, 1.0, POINTS)
    cov = 0.7**lag * np.outer(sd, sd)
    for _ in range(CURVES):
        x = rng.multivariate_normal(np.zeros(POINTS), cov, size=UNITS)
        idx = rng.integers(0, UNITS, size=(RESAMPLES, UNITS))
        reps = np.exp(x[idx].mean(axis=1))
        yield np.exp(x.mean(axis=0)), reps


def test_band_covers_the_whole_curve_at_its_level():
    band_hits = point_hits = 0
    for ratio, reps in _curves(seed=8128):
        b = simultaneous_band(ratio, reps, level=LEVEL, clusters=UNITS)
        band_hits += bool(((b.band_low <= 1) & (1 <= b.band_high)).all())
        point_hits += bool(((b.low <= 1) & (1 <= b.high)).all())
    # tolerance: 3 binomial standard errors of a 95% proportion over 300 curves
    # (3 * sqrt(0.95 * 0.05 / 300) = 0.038)
    tol = 3 * np.sqrt(LEVEL * (1 - LEVEL) / CURVES)
    assert abs(band_hits / CURVES - LEVEL) <= tol
    # the per-point intervals cover the whole curve far less often (ten correlated
    # points: about 0.75); "much less" = below the band's lower tolerance limit by 0.1
    assert point_hits / CURVES < LEVEL - tol - 0.1


def test_band_contains_every_point_interval_and_is_wider_somewhere():
    for ratio, reps in list(_curves(seed=5))[:20]:
        b = simultaneous_band(ratio, reps, level=LEVEL, clusters=UNITS)
        lo, hi = _percentile_interval(reps, LEVEL, UNITS)
        np.testing.assert_array_equal(b.low, lo)
        np.testing.assert_array_equal(b.high, hi)
        assert (b.band_low <= lo).all() and (hi <= b.band_high).all()
        assert b.critical > 1.0 and (b.band_high - b.band_low > hi - lo).all()


def test_band_of_one_point_is_its_interval():
    rng = np.random.default_rng(3)
    reps = np.exp(rng.normal(0.1, 0.3, size=(500, 1)) + rng.gamma(2.0, 0.1, size=(500, 1)))
    b = simultaneous_band(np.array([1.2]), reps, level=LEVEL, clusters=10)
    lo, hi = _percentile_interval(reps, LEVEL, 10)
    assert (b.band_low[0], b.band_high[0]) == (lo[0], hi[0])
    assert b.critical == 1.0


def test_nan_points_take_no_part():
    rng = np.random.default_rng(4)
    reps = np.exp(rng.normal(0, 0.2, size=(300, 3)))
    reps[:, 1] = np.nan  # a point without a finite replicate
    b = simultaneous_band(np.array([1.0, 1.0, 1.0]), reps, level=LEVEL, clusters=10)
    assert np.isnan(b.band_low[1]) and np.isnan(b.band_high[1])
    assert np.isfinite(b.band_low[[0, 2]]).all()
    with pytest.raises(ValueError, match="do not match"):
        simultaneous_band(np.ones(2), reps, level=LEVEL, clusters=10)


def test_claims_csv_carries_the_band():
    from test_claims import EXPERIMENT, synthetic_sweep_trials

    cfg = {"seed": 4, "bootstrap": {"resamples": 400}, "experiments": {"e": EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": synthetic_sweep_trials()})
    pts = table[table["scope"] == "point"]
    assert pts["band_low"].notna().all()
    assert (pts["band_low"] <= pts["ratio_lo"]).all()
    assert (pts["ratio_hi"] <= pts["band_high"]).all()
    # a (claim, dataset) with one point: the band is its interval
    counts = pts.groupby(["claim", "dataset"])["ratio"].transform("size")
    one = pts[counts == 1]
    assert len(one) and (one["band_low"] == one["ratio_lo"]).all()
    assert (one["band_high"] == one["ratio_hi"]).all()
    several = pts[counts > 1]
    assert (
        several["band_high"] - several["band_low"] > several["ratio_hi"] - several["ratio_lo"]
    ).any()
    assert table.loc[table["scope"] == "overall", "band_low"].isna().all()


def test_curve_bands_of_a_ratio_figure():
    from test_claims import synthetic_sweep_trials

    from dpreg.report.ratios import band_comparisons

    trials = synthetic_sweep_trials()
    cells = sorted(set(zip(trials["variant"], trials["algorithm"], strict=True)))
    ref = cells[0][1]
    pairs = band_comparisons(cells, {"kind": "ratio", "reference": ref})
    assert pairs and all(b[1] == ref and a[1] != ref for a, b in pairs)
    assert band_comparisons(cells, {"kind": "lines"}) == []
    bands = curve_bands(trials, pairs, statistic="median", seed=4, level=LEVEL, resamples=300)
    assert len(bands) and (bands["band_low"] <= bands["ratio_lo"]).all()
    assert (bands["ratio_hi"] <= bands["band_high"]).all()
    # the paired per-point interval is paired_ratios' interval
    (a, b), ds = pairs[0], bands["dataset"].iloc[0]
    one = paired_ratios(
        trials[trials["dataset"] == ds], a, b, sorted(set(trials["epsilon"])),
        statistic="median", seed=4, resamples=300,
    )  # fmt: skip
    got = bands[(bands["dataset"] == ds) & (bands["algorithm"] == a[1])]
    np.testing.assert_allclose(got["ratio_lo"], one["ratio_lo"], rtol=1e-12)


def test_curve_bands_reuse_the_summary_medians():
    from test_claims import synthetic_sweep_trials

    from dpreg.inference.intervals import bootstrap_intervals
    from dpreg.report.ratios import band_comparisons

    trials = synthetic_sweep_trials()
    cells = sorted(set(zip(trials["variant"], trials["algorithm"], strict=True)))
    pairs = band_comparisons(cells, {"kind": "ratio", "reference": cells[0][1]})
    kw = {"statistic": "median", "seed": 4, "level": LEVEL, "resamples": 300}
    cache: dict = {}
    bootstrap_intervals(trials, seed=4, resamples=300, median_cache=cache)
    filled = len(cache)
    assert filled
    shared = curve_bands(trials, pairs, median_cache=cache, **kw)
    assert len(cache) == filled  # every median came from the summary's bootstrap
    pd.testing.assert_frame_equal(shared, curve_bands(trials, pairs, **kw))
