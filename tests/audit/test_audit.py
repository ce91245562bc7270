"""Empirical privacy audit (dpreg.audit): validity, power, both layers, the command line.

Sample sizes.  With ``n`` draws per hypothesis (half choose the test set, half
evaluate it) a Gaussian target with composed ``mu`` reaches an expected lower
bound of about ``ln(P_D'(S) / P_D(S))`` at the best tail threshold, less the
Clopper-Pearson margin (overall confidence 1 - 1e-3).  Where a violation must
be found the sizes leave a margin above the claim (quoted next to each test,
measured at the fixed seed).  Every audit is seeded, so the outcome is fixed;
a correct target is reported as a violation with probability <= 1e-3 at any
seed, by construction.

The end-to-end tests inject each bug into the real functions the fit path
calls (monkeypatch) and check that the audit of the unchanged ledger fails,
and that the same audit of the correct code passes.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom, binomtest

import dpreg.algorithms.adassp as adassp_module
import dpreg.preprocess.private as private_module
import dpreg.preprocess.private_runs as private_runs_module
from dpreg import audit
from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.audit import (
    AUDITED,
    MECHANISMS,
    PRIVATE_ALGORITHMS,
    audit_algorithm,
    audit_end_to_end,
    audit_release,
    clopper_pearson,
    distinguishing_test,
    epsilon_lower_bound,
    judge,
    main,
    simulate_releases,
)
from dpreg.audit.model import claimed_releases, declared_layout
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech

DELTA = 1e-6


def _declared(name: str) -> bool:
    try:
        rel = claimed_releases(name, epsilon=1.0, delta=DELTA, d=3)
    except DPRegError:
        return False
    return declared_layout(name, rel) is not None


#: private algorithms the declared-scale layer has a model of
DECLARED = [n for n in PRIVATE_ALGORITHMS if _declared(n)]
DECLARED_PRIVATE = [n for n in DECLARED if not ALGORITHMS[n].reproduction]
SUMMARY_KEYS = {
    "layer",
    "name",
    "claimed_epsilon",
    "delta",
    "empirical_epsilon_lb",
    "exact_epsilon",
    "n_samples",
    "verdict",
    "label",
}


# --------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("k", "n"), [(0, 50), (3, 100), (50, 100), (100, 100), (7, 10**6)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    # a two-sided exact interval at 1 - 2a has the one-sided bounds at level a
    # (scipy solves for them to ~1e-8 relative; the bounds here are exact tail quantiles)
    lo, hi = clopper_pearson(k, n, 0.005)
    ci = binomtest(k, n).proportion_ci(0.99, method="exact")
    assert float(lo) == pytest.approx(ci.low, rel=1e-6, abs=1e-15)
    assert float(hi) == pytest.approx(ci.high, rel=1e-6)
    if 0 < k:
        assert binom.sf(k - 1, n, float(lo)) == pytest.approx(0.005, rel=1e-9)
    if k < n:
        assert binom.cdf(k, n, float(hi)) == pytest.approx(0.005, rel=1e-9)


def test_epsilon_lower_bound_formula_and_delta():
    k1, k0, n = 400, 100, 10**5
    p1, _ = clopper_pearson(k1, n, 5e-4)
    _, p0 = clopper_pearson(k0, n, 5e-4)
    got = float(epsilon_lower_bound(k1, n, k0, n, delta=1e-4))
    assert got == pytest.approx(math.log((p1 - 1e-4) / p0), rel=1e-12)
    assert got < math.log(4.0)  # CP margins only lower the plug-in ratio
    # no bound when delta swallows the numerator
    assert float(epsilon_lower_bound(k1, n, k0, n, delta=1e-2)) == -math.inf


def test_identical_distributions_give_no_positive_bound():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(400_000), rng.standard_normal(400_000)
    res = distinguishing_test(a, b, delta=DELTA)
    assert res["epsilon_lb"] < 0.05
    assert res["n_selection"] + res["n_evaluation"] == 400_000


def test_distinguishing_test_recovers_a_known_laplace_ratio():
    # Laplace(0, 1) against Laplace(1, 1): the likelihood ratio is at most e^1,
    # attained on {x >= 1} with P = e^-1/2 vs 1/2 -- the bound approaches 1 from below
    rng = np.random.default_rng(2)
    n = 2_000_000
    x0, x1 = rng.laplace(0.0, 1.0, n), 1.0 + rng.laplace(0.0, 1.0, n)
    llr = [np.round(np.abs(x) - np.abs(x - 1.0), 9) for x in (x0, x1)]
    res = distinguishing_test(*llr, delta=0.0)
    assert 0.95 < res["epsilon_lb"] <= 1.0


def test_judge_flags_each_failure_and_its_precedence():
    assert judge(0.3, 0.9, 1.0)["verdict"] == "ok"
    v = judge(1.2, 1.5, 1.0)
    assert v["verdict"] == "violation" and v["lb_exceeds_claim"] and v["exact_exceeds_claim"]
    v = judge(0.8, 0.5, 1.0)  # lower bound above the exact epsilon: a wrong scale
    assert v["verdict"] == "inconsistent" and v["lb_exceeds_exact"]
    assert not v["lb_exceeds_claim"] and not v["exact_exceeds_claim"]
    v = judge(0.2, 1.3, 1.0)
    assert v["verdict"] == "over-claim" and v["exact_exceeds_claim"]
    # root-finder rounding of an exactly calibrated budget is not an over-claim
    assert judge(0.0, 1.0 + 1e-12, 1.0)["verdict"] == "ok"
    assert judge(0.1, None, 1.0)["verdict"] == "ok"


# --------------------------------------------------------------------------
# declared-scale layer: the simulated releases are the fit's
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", DECLARED)
def test_simulated_releases_equal_the_captured_releases(name, make_data):
    # same generator state -> the declared layer draws exactly the noise fit adds
    stats = SuffStats.from_arrays(*make_data(n=3000, d=3, seed=3, at_bound=True))
    eps, R = 1.0, 16
    fit = ALGORITHMS[name].fit(
        stats, epsilon=eps, delta=DELTA, rng=np.random.default_rng(11), size=R, capture=True
    )
    sim = simulate_releases(
        name, stats, epsilon=eps, delta=DELTA, rng=np.random.default_rng(11), size=R
    )
    got = fit.released
    if name == "functional":
        M, beta = sim
        np.testing.assert_allclose(
            got["objective_coefficients"], np.concatenate([M.reshape(R, -1), beta], 1)
        )
        return
    names = [r.name for r in ALGORITHMS[name].releases(epsilon=eps, delta=DELTA, d=stats.d)]
    for rel_name, value in zip(names, sim, strict=True):
        if rel_name == "lambda_min":  # the fit releases lambda_min of X^T X + c I (c = 1)
            value = value + 1.0
        np.testing.assert_allclose(got[rel_name], value, rtol=1e-12, atol=1e-12)


def test_declared_layer_is_used_only_where_its_model_reproduces_the_fit(monkeypatch):
    import dpreg.algorithms.ssp as ssp_module
    from dpreg.audit.model import reproduces_fit

    assert all(reproduces_fit(n, epsilon=1.0, delta=DELTA) for n in DECLARED)
    real = ssp_module.draw_noise

    def other_noise(kinds, releases, d, *, rng, size):  # a fit the model no longer describes
        return [2.0 * v for v in real(kinds, releases, d, rng=rng, size=size)]

    monkeypatch.setattr(ssp_module, "draw_noise", other_noise)
    assert not reproduces_fit("ssp", epsilon=1.0, delta=DELTA)
    assert reproduces_fit("adassp", epsilon=1.0, delta=DELTA)


def test_every_private_algorithm_is_audited():
    assert set(AUDITED) == set(MECHANISMS) | {n for n, a in ALGORITHMS.items() if a.private}
    assert {"ssp", "adassp", "functional"} <= set(DECLARED)


@pytest.mark.parametrize("name", [*MECHANISMS, *DECLARED_PRIVATE])
def test_correct_declared_targets_pass(name):
    r = audit_algorithm(name, epsilon=1.0, delta=DELTA, samples=200_000, seed=20200601)
    assert r["verdict"] == "ok"
    assert r["method"] == "shortcut" and r["shortcut_verified"]
    assert all(rel["pair_attains_sensitivity"] for rel in r["releases"])
    assert 0.0 <= r["empirical_epsilon_lb"] <= r["exact_epsilon"] <= 1.0 + 1e-9
    assert r["delta"] == (0.0 if name in ("laplace", "functional") else DELTA)
    json.dumps(r, allow_nan=False)


def test_the_bound_is_real_not_vacuous():
    # at the exact (1, 1e-6) GDP budget 4*10^6 draws give an expected bound of ~0.65
    r = audit_algorithm("ssp-gdp", epsilon=1.0, delta=DELTA, samples=4 * 10**6, seed=5)
    assert 0.5 < r["empirical_epsilon_lb"] <= 1.0
    # a pure-DP Laplace release attains its epsilon with positive probability (the LLR
    # atom at epsilon, P_D ~ 7e-4 at d = 3): expected bound ~0.7 with 10^6 draws
    r = audit_algorithm("functional", epsilon=1.0, delta=DELTA, samples=10**6, seed=5)
    assert 0.5 < r["empirical_epsilon_lb"] <= 1.0


@pytest.mark.parametrize(
    "name", ["gaussian-analytic", "laplace", "ssp-gdp", "adassp-gdp", "functional"]
)
def test_quarter_noise_is_a_violation_at_eps_1(name):
    # expected bounds with 10^6 draws: GDP-calibrated ~2.8, laplace and functional ~3.5-3.9
    r = audit_algorithm(
        name, epsilon=1.0, delta=DELTA, samples=10**6, seed=20200601, noise_factor=0.25
    )
    assert r["verdict"] == "violation"
    assert r["empirical_epsilon_lb"] > r["claimed_epsilon"] == 1.0
    assert r["empirical_epsilon_lb"] <= r["exact_epsilon"]  # exact epsilon of the broken version
    assert r["exact_exceeds_claim"]


def test_wang_ssp_violates_its_claim_at_eps_1():
    # SPEC: ssp-wang is about (1, 5e-4)-DP, claimed (1, 1e-6); its exact epsilon
    # at 1e-6 is 1.59 and 10^7 draws give an expected bound of ~1.16 > 1
    r = audit_algorithm("ssp-wang", epsilon=1.0, delta=DELTA, samples=10**7, seed=20200601)
    assert r["label"] == "reproduction"
    assert r["exact_epsilon"] == pytest.approx(1.587, abs=1e-3)
    assert mech.gdp_delta(1.0, r["gdp_mu"]) == pytest.approx(5e-4, rel=0.05)
    assert r["verdict"] == "violation"
    assert 1.0 < r["empirical_epsilon_lb"] <= r["exact_epsilon"]
    # at eps = 0.1 the exact epsilon (0.134) still exceeds the claim, but the gap is
    # below what an empirical bound can resolve: the audit reports it through exact_epsilon
    r = audit_algorithm("ssp-wang", epsilon=0.1, delta=DELTA, samples=10**6, seed=20200601)
    assert r["exact_exceeds_claim"] and r["exact_epsilon"] == pytest.approx(0.134, abs=1e-3)
    assert r["empirical_epsilon_lb"] <= r["exact_epsilon"]


def test_adassp_wang_is_audited_and_within_its_claim():
    r = audit_algorithm("adassp-wang", epsilon=1.0, delta=DELTA, samples=10**6, seed=3)
    assert r["label"] == "reproduction"
    assert r["verdict"] == "ok" and not r["exact_exceeds_claim"]
    draws = {rel["name"]: rel["draw"] for rel in r["releases"]}
    assert draws == {"lambda_min": "scalar", "XtX": "wang", "Xty": "vector"}


def test_direct_draws_agree_with_the_shortcut():
    # the full matrices drawn with the project's functions (2*10^5 per hypothesis)
    # catch the same violation; expected bound ~3.8 at this size
    kw = {"epsilon": 1.0, "delta": DELTA, "samples": 200_000, "seed": 4, "noise_factor": 0.25}
    direct = audit_algorithm("ssp-wang", method="direct", **kw)
    short = audit_algorithm("ssp-wang", method="shortcut", **kw)
    assert direct["method"] == "direct" and short["method"] == "shortcut"
    assert direct["verdict"] == short["verdict"] == "violation"
    assert abs(direct["empirical_epsilon_lb"] - short["empirical_epsilon_lb"]) < 0.5


def test_release_audit_uses_the_release_share():
    r = audit_release("ssp", "XtX", epsilon=1.0, delta=DELTA, samples=10**6, seed=6)
    assert (r["claimed_epsilon"], r["delta"]) == (0.5, 0.5 * DELTA)
    assert r["verdict"] == "ok" and r["release"] == "XtX"
    # one release at quarter noise: mu = 4 * 0.092, expected bound ~0.9 > 0.5
    r = audit_release(
        "ssp", "XtX", epsilon=1.0, delta=DELTA, samples=10**6, seed=6, noise_factor=0.25
    )
    assert r["verdict"] == "violation"
    with pytest.raises(DPRegError, match="release"):
        audit_release("ssp", "lambda_min", epsilon=1.0, delta=DELTA, samples=100)


# --------------------------------------------------------------------------
# the verification sample guards the shortcut's model
# --------------------------------------------------------------------------
def test_a_draw_function_that_breaks_the_model_is_detected(monkeypatch):
    real = mech.wang_symmetric_noise

    def not_symmetric(d, *, scale, rng, size):  # lower triangle no longer a mirror
        return mech.full_noise(d, scale=scale, rng=rng, size=size)

    monkeypatch.setattr(mech, "wang_symmetric_noise", not_symmetric)
    r = audit_algorithm("adassp-wang", epsilon=1.0, delta=DELTA, samples=20_000, seed=1)
    assert not r["shortcut_verified"] and r["method"] == "direct"
    xtx = [b for b in r["check"]["blocks"] if b["release"] == "XtX"][0]
    assert not xtx["mirror_exact"]

    def too_small(d, *, scale, rng, size):  # 10% less noise than declared
        return real(d, scale=0.9 * scale, rng=rng, size=size)

    monkeypatch.setattr(mech, "wang_symmetric_noise", too_small)
    r = audit_algorithm("adassp-wang", epsilon=1.0, delta=DELTA, samples=20_000, seed=1)
    assert not r["shortcut_verified"] and r["method"] == "direct"


def test_deterministic_given_the_seed():
    kw = {"epsilon": 1.0, "delta": DELTA, "samples": 100_000}
    a = audit_algorithm("adassp", seed=9, **kw)
    b = audit_algorithm("adassp", seed=9, **kw)
    c = audit_algorithm("adassp", seed=10, **kw)
    a.pop("seconds"), b.pop("seconds")
    assert a == b
    assert c["test"] != a["test"]


def test_bad_arguments_raise():
    with pytest.raises(DPRegError, match="audit target"):
        audit_algorithm("ridge", epsilon=1.0, delta=DELTA, samples=100)
    with pytest.raises(DPRegError, match="noise_factor"):
        audit_algorithm("ssp", epsilon=1.0, delta=DELTA, samples=100, noise_factor=0.0)
    with pytest.raises(DPRegError, match="delta"):
        audit_algorithm("ssp", epsilon=1.0, delta=0.0, samples=100)


# --------------------------------------------------------------------------
# end-to-end layer: the real fit path, and the bugs it must catch
# --------------------------------------------------------------------------
E2E = {"epsilon": 1.0, "delta": DELTA, "seed": 20200601}


def test_end_to_end_observes_what_the_fit_releases():
    r = audit_end_to_end("adassp", samples=2_000, **E2E)
    assert r["layer"] == "end-to-end" and r["label"] == "private"
    assert r["observed"] == ["XtX", "Xty", "lambda_min"]
    assert r["pair"]["added_x"] == [1.0, 0.0, 0.0] and r["pair"]["added_y"] == 1.0
    assert r["exact_epsilon"] == pytest.approx(
        mech.compose(ALGORITHMS["adassp"].releases(epsilon=1.0, delta=DELTA, d=3), delta=DELTA)[
            "exact_epsilon"
        ]
    )
    ps = audit_end_to_end("adassp", samples=200, private_stats=0.1, **E2E)
    assert ps["variant"] == "private-stats-0.1"
    assert {"stats:column_sums", "stats:column_sums_of_squares", "stats:y_sum"} <= set(
        ps["observed"]
    )
    # the claim is the whole run's; the ledger composes the statistics' releases with it
    names = [rel["name"] for rel in ps["releases"]]
    assert names[:3] == ["column_sums", "column_sums_of_squares", "y_sum"]
    assert ps["exact_epsilon"] <= 1.0 + 1e-9


def test_end_to_end_is_deterministic_given_the_seed():
    a = audit_end_to_end("ssp-gdp", samples=4_000, **E2E)
    b = audit_end_to_end("ssp-gdp", samples=4_000, **E2E)
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_lambda_min_released_without_noise_is_caught(monkeypatch):
    # AdaSSP whose lambda_min noise is dropped: true epsilon infinite, ledger unchanged
    kw = {"samples": 20_000, **E2E}
    assert audit_end_to_end("adassp", **kw)["verdict"] == "ok"
    real = adassp_module.draw_noise

    def no_lambda_noise(kinds, releases, d, *, rng, size):
        out = real(kinds, releases, d, rng=rng, size=size)
        out[0] = np.zeros_like(out[0])
        return out

    monkeypatch.setattr(adassp_module, "draw_noise", no_lambda_noise)
    r = audit_end_to_end("adassp", **kw)
    # perfect separation: the bound is the sample-size limit (~6.9 at this size)
    assert r["verdict"] == "violation" and r["empirical_epsilon_lb"] > 5.0
    # the declared-scale layer simulates from the ledger and cannot see this bug
    d = audit_algorithm("adassp", epsilon=1.0, delta=DELTA, samples=200_000, seed=1)
    assert d["verdict"] == "ok"


def test_noise_not_scaled_by_sigma_is_caught(monkeypatch):
    # the X^T X noise matrix built from standard normals without its sigma (~10.8 for
    # ssp at eps = 1): true mu ~ 1, lower bound ~2.4 at this size
    kw = {"samples": 20_000, **E2E}
    assert audit_end_to_end("ssp", **kw)["verdict"] == "ok"
    real = mech.matrix_from_normals

    def unscaled(kind, z, d, scale):
        return real(kind, z, d, 1.0)

    monkeypatch.setattr(mech, "matrix_from_normals", unscaled)
    r = audit_end_to_end("ssp", **kw)
    assert r["verdict"] == "violation" and r["empirical_epsilon_lb"] > 1.5


def test_laplace_draw_halved_behind_an_unchanged_ledger_is_caught(monkeypatch):
    # functional mechanism with b / 2: true epsilon 2 against the claimed (and ledger) 1;
    # 1.2*10^5 fits give a bound of ~1.46, above both the claim and the ledger's exact 1
    kw = {"samples": 120_000, **E2E}
    ok = audit_end_to_end("functional", **kw)
    assert ok["verdict"] == "ok" and ok["exact_epsilon"] == pytest.approx(1.0)
    real = mech.laplace_noise

    def halved(shape, *, scale, rng):
        return real(shape, scale=scale / 2, rng=rng)

    monkeypatch.setattr(mech, "laplace_noise", halved)
    r = audit_end_to_end("functional", **kw)
    assert r["verdict"] == "violation"
    assert r["lb_exceeds_claim"] and r["lb_exceeds_exact"] and not r["exact_exceeds_claim"]


def test_private_means_released_without_noise_are_caught(monkeypatch):
    kw = {"samples": 1_000, "private_stats": 0.1, **E2E}
    assert audit_end_to_end("adassp", **kw)["verdict"] == "ok"
    real = private_module.release_statistics

    def without_noise(train, releases, *, rng, size=None):
        return real(
            train, [dataclasses.replace(r, scale=0.0) for r in releases], rng=rng, size=size
        )

    monkeypatch.setattr(private_module, "release_statistics", without_noise)
    monkeypatch.setattr(private_runs_module, "release_statistics", without_noise)
    r = audit_end_to_end("adassp", **kw)
    # the column sums are deterministic and differ between D and D': ~4.6 at this size
    assert r["verdict"] == "violation" and r["empirical_epsilon_lb"] > 3.0


def test_end_to_end_refuses_non_private_targets():
    with pytest.raises(DPRegError, match="end-to-end audit target"):
        audit_end_to_end("ridge", epsilon=1.0, delta=DELTA, samples=100)


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
def _lines(capsys) -> list[dict]:
    out = capsys.readouterr().out.strip().splitlines()
    return [json.loads(line) for line in out]


def test_quick_mode_audits_everything_and_passes(capsys, tmp_path):
    # the documented `dpreg audit --quick`: both layers, every private algorithm
    assert main(["--quick", "--out", str(tmp_path)]) == 0
    recs = _lines(capsys)
    e2e = [r for r in recs if r["layer"] == "end-to-end"]
    assert {r["name"] for r in e2e if r["variant"] is None} == set(PRIVATE_ALGORITHMS)
    stats_names = {r["name"] for r in e2e if r["variant"] == "private-stats-0.1"}
    assert {"adassp", "adassp-gdp", "ssp", "functional"} <= stats_names
    declared = {r["name"] for r in recs if r["layer"] == "declared"}
    assert set(MECHANISMS) | set(DECLARED) == declared
    for r in recs:
        assert SUMMARY_KEYS <= set(r)
        if r["label"] == "private":
            assert r["verdict"] == "ok"
    with (tmp_path / "audit.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(recs)
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["mode"] == "quick" and doc["exit_status"] == 0
    assert len(doc["records"]) == len(recs) and doc["seconds"] > 0
    report = (tmp_path / "audit.md").read_text()
    assert "every record labelled private passes (exit status 0)" in report
    assert report.count("\n| ") == len(recs) + 1  # header + one row per record


def test_cli_declared_violation_in_private_algorithm_exits_nonzero(capsys):
    # quarter noise of ssp-gdp at eps = 1: expected bound ~2.2 with 10^5 draws
    argv = ["--layer", "declared", "--samples", "1e5", "--epsilon", "1"]
    assert main([*argv, "--algorithms", "ssp-gdp", "--noise-factor", "0.25"]) == 1
    (rec,) = _lines(capsys)
    assert rec["verdict"] == "violation" and rec["label"] == "private"


def test_cli_reproduction_violation_does_not_decide_exit(capsys):
    # quarter-noise ssp-wang is a violation (expected bound ~3.9) but a reproduction
    argv = ["--layer", "declared", "--samples", "3e5", "--epsilon", "1", "--seed", "8"]
    assert main([*argv, "--noise-factor", "0.25", "--algorithms", "ssp-wang"]) == 0
    (rec,) = _lines(capsys)
    assert rec["verdict"] == "violation" and rec["label"] == "reproduction"
    assert main([*argv, "--noise-factor", "0.25", "--algorithms", "ssp-wang,ssp-gdp"]) == 1
    capsys.readouterr()


def test_cli_end_to_end_bug_exits_nonzero(capsys, monkeypatch):
    real = adassp_module.draw_noise

    def no_lambda_noise(kinds, releases, d, *, rng, size):
        out = real(kinds, releases, d, rng=rng, size=size)
        out[0] = np.zeros_like(out[0])
        return out

    monkeypatch.setattr(adassp_module, "draw_noise", no_lambda_noise)
    argv = ["--quick", "--layer", "end-to-end", "--ps-shares", "--algorithms", "adassp"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    (rec,) = [json.loads(line) for line in captured.out.strip().splitlines()]
    assert rec["verdict"] == "violation" and rec["layer"] == "end-to-end"
    assert "adassp[end-to-end]" in captured.err


def test_an_entry_that_cannot_be_audited_end_to_end_fails_the_audit(capsys, monkeypatch):
    import dpreg.audit.cli as cli

    def refuses(name, **kw):
        raise DPRegError(f"{name}: fit(capture=True) recorded no released values")

    monkeypatch.setattr(cli, "audit_end_to_end", refuses)
    argv = ["--quick", "--layer", "end-to-end", "--ps-shares", "--algorithms", "ssp"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    (rec,) = [json.loads(line) for line in captured.out.strip().splitlines()]
    assert rec["verdict"] == "error" and rec["label"] == "private"
    assert "ssp[end-to-end]" in captured.err


def test_cli_full_records_and_errors(capsys):
    argv = ["--layer", "declared", "--samples", "1e4", "--check-samples", "200", "--epsilon", "1"]
    assert main([*argv, "--algorithms", "functional", "--full"]) == 0
    (rec,) = _lines(capsys)
    assert rec["test"]["confidence"] == pytest.approx(1 - audit.ALPHA)
    assert rec["releases"][0]["pair_attains_sensitivity"]
    assert main(["--algorithms", "nope"]) == 2
    assert "unknown audit target" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--samples", "abc"])


def test_module_entry_point_runs():
    argv = ["--layer", "declared", "--algorithms", "laplace", "--samples", "1e4", "--epsilon", "1"]
    argv += ["--check-samples", "200"]
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "dpreg.audit", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["name"] == "laplace"
