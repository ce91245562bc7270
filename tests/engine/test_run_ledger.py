"""The ledger by algorithm name: provenance records, trial columns, the config report."""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import norm

from dpreg.engine.run_ledger import ledger_entry, ledger_report, trial_columns
from dpreg.preprocess import (
    VariantSpec,
    nonprivate_statistics,
)

DELTA = 1e-6


def _delta_of(eps: float, mu: float) -> float:
    """The Gaussian privacy profile, written independently of the package."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def test_ledger_entry_lists_every_release_with_its_exact_delta():
    e = ledger_entry("adassp", epsilon=1.0, delta=DELTA, d=3, spec=VariantSpec())
    assert [r["name"] for r in e["releases"]] == ["lambda_min", "XtX", "Xty"]
    for r in e["releases"]:
        assert r["mu"] == pytest.approx(r["sensitivity"] / r["scale"])
        assert r["exact_delta_at_nominal_epsilon"] == pytest.approx(
            _delta_of(r["epsilon"], r["mu"]), rel=1e-9
        )
        assert (r["epsilon"], r["delta"]) == pytest.approx((1 / 3, DELTA / 3))
    assert e["total"]["basic_epsilon"] == pytest.approx(1.0)
    assert e["total"]["exact_epsilon"] < 1.0  # classical calibration is conservative
    assert e["private"] and not e["reproduction"] and e["calibration"] == "classical"
    assert "column means and sds (training rows)" in e["nonprivate_statistics"]


def test_trial_columns_use_the_row_bound_of_the_statistics():
    one = trial_columns("ssp", [1.0], delta=DELTA, d=3, rho=0.05)[1.0]
    two = trial_columns("ssp", [1.0], delta=DELTA, d=3, rho=0.05, bound_x=math.sqrt(2))[1.0]
    sig1 = [float(p.split("=")[1].split("@")[0]) for p in one["releases"].split(";")]
    sig2 = [float(p.split("=")[1].split("@")[0]) for p in two["releases"].split(";")]
    # XtX sensitivity B_X^2 doubles, Xty's B_X B_Y grows by sqrt(2); the budget is unchanged
    assert sig2[0] / sig1[0] == pytest.approx(2.0, rel=1e-5)
    assert sig2[1] / sig1[1] == pytest.approx(math.sqrt(2), rel=1e-5)
    assert one["eps_basic"] == two["eps_basic"] == pytest.approx(1.0)
    assert two["eps_exact"] == pytest.approx(one["eps_exact"], rel=1e-9)


def test_ledger_report_derives_per_dataset_records_and_variant_notes():
    config = {
        "delta": DELTA,
        "rho": 0.05,
        "epsilons": [0.5, 1.0],
        "experiments": {"e": {"algorithms": ["adassp", "functional", "diffprivlib", "ridge"]}},
        "variants": {
            "maxnorm": {"scale": "maxnorm"},
            "ps": {"scale": "maxnorm", "private_stats": {"epsilon_share": 0.1}},
        },
    }
    rep = ledger_report(config, {"a": 3, "b": 5})
    algs = rep["algorithms"]
    assert set(algs["adassp"]) == {"0.5", "1.0"}  # releases do not depend on d: recorded once
    assert set(algs["functional"]) == {"a", "b"}  # its sensitivity grows with d
    assert algs["functional"]["b"]["1.0"]["releases"][0]["sensitivity"] == pytest.approx(
        5 + 2 * math.sqrt(5)
    )
    assert algs["diffprivlib"]["1.0"]["total"]["exact_epsilon"] == 1.0
    assert algs["ridge"]["1.0"]["total"] is None
    assert "noise" in rep["variants"]["ps"]["note"]
    assert any("public column ranges" in s for s in rep["variants"]["ps"]["nonprivate_statistics"])
    assert "without noise" in rep["variants"]["maxnorm"]["note"]
    # provenance is JSON: releases without a visible sensitivity or scale give None, not NaN
    json.dumps(rep, allow_nan=False)
    assert algs["diffprivlib"]["1.0"]["releases"][0]["scale"] is None


def test_nonprivate_statistics_per_variant():
    s = nonprivate_statistics(VariantSpec.from_dict({"stats": "global", "scale": "rownorm-y"}))
    assert s[0] == "n (row count of the all rows)"
    assert any("y_max2" in x for x in s)
    s = nonprivate_statistics(VariantSpec.from_dict({"clip_sigma": 2.0}))
    assert any("clip thresholds mean + 2 sd" in x for x in s)
    assert any("x_max" in x for x in s)


def test_trial_columns_composed_once_per_setting_and_never_shared():
    """The second call returns the same columns (from the cache) as fresh copies, and a
    changed setting (delta, bound) is composed anew."""
    from dpreg.algorithms import get_algorithm
    from dpreg.privacy.ledger import release_columns

    kw = dict(delta=1e-6, d=4, rho=0.05, n=500)
    first = trial_columns("adassp-tight", [0.5, 1.0], **kw)
    first[0.5]["releases"] = "edited by the caller"
    again = trial_columns("adassp-tight", [0.5, 1.0], **kw)
    rel = get_algorithm("adassp-tight").releases(epsilon=0.5, **kw)
    assert again[0.5] == release_columns(list(rel), delta=1e-6)
    assert again[0.5]["releases"] != "edited by the caller"
    other = trial_columns("adassp-tight", [0.5], **{**kw, "delta": 1e-5})
    assert other[0.5] != again[0.5]
    wide = trial_columns("adassp-tight", [0.5], **kw, bound_x=2.0)
    assert wide[0.5]["releases"] != again[0.5]["releases"]
