"""Empirical privacy audit (dpreg.audit): validity, power and the command line.

Sample sizes.  With ``n`` draws per hypothesis (half choose the test set, half
evaluate it) a Gaussian target with composed ``mu`` reaches an expected lower
bound of about ``ln(P_D'(S) / P_D(S))`` at the best tail threshold, less the
Clopper-Pearson margin (overall confidence 1 - 1e-3).  The expected bounds
quoted next to each test come from that calculation (normal tails, exact CP
bounds) and leave a margin of >= 0.15 in epsilon above the claim where a
violation must be found.  Every audit is seeded, so the outcome is fixed;
a correct target is reported as a violation with probability <= 1e-3 at
any seed, by construction.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from dpreg import audit
from dpreg import mechanisms as mech
from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.audit import (
    AUDITED,
    MECHANISMS,
    audit_algorithm,
    audit_release,
    clopper_pearson,
    distinguishing_test,
    epsilon_lower_bound,
    main,
    simulate_releases,
)
from dpreg.stats import SuffStats

DELTA = 1e-6
PRIVATE = [n for n, a in ALGORITHMS.items() if a.private and not a.reproduction]
REPRODUCTION = ["ssp-wang", "adassp-wang"]
GAUSSIAN = [n for n in ALGORITHMS if ALGORITHMS[n].private and n != "functional"]
SUMMARY_KEYS = {
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


# --------------------------------------------------------------------------
# the audited releases are the algorithms' releases
# --------------------------------------------------------------------------
def _stats(d: int = 3, n: int = 3000) -> SuffStats:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.array([0.5, -0.3, 0.2][:d]) + 0.1 * rng.standard_normal(n), -1, 1)
    return SuffStats.from_arrays(X, y)


@pytest.mark.parametrize("name", [n for n, a in ALGORITHMS.items() if a.private])
def test_simulated_releases_reproduce_fit(name):
    # same generator state -> the audit draws exactly the noise fit adds
    stats, eps, c, rho, R = _stats(), 1.0, 1.0, 0.05, 32
    fit = ALGORITHMS[name].fit(
        stats, epsilon=eps, delta=DELTA, rng=np.random.default_rng(11), size=R, xtx_offset=c
    )
    rel = simulate_releases(
        name, stats, epsilon=eps, delta=DELTA, rng=np.random.default_rng(11), size=R
    )
    eye = np.eye(stats.d)
    if name == "functional":
        A, b = rel[0] + c * eye, rel[1]
    elif len(rel) == 2:
        A, b = rel[0] + c * eye, rel[1]
    else:
        lam_obs, A_obs, b = rel
        sigma = ALGORITHMS[name].releases(epsilon=eps, delta=DELTA, d=stats.d)[0].scale
        # SPEC section 3: shift sqrt(L') sigma for adassp, sqrt(ln(6/delta)) sigma otherwise
        shift = math.sqrt(2 * math.log(3.75 / DELTA) if name == "adassp" else math.log(6 / DELTA))
        lam_tilde = np.maximum(lam_obs + c - shift * sigma, 0.0)
        lam = np.maximum(
            0.0, math.sqrt(stats.d * math.log(2 * stats.d**2 / rho)) * sigma - lam_tilde
        )
        np.testing.assert_allclose(fit.lam, lam, rtol=1e-10, atol=1e-10)
        A = A_obs + (c + lam)[:, None, None] * eye
    theta = np.linalg.solve(A, b[..., None])[..., 0]
    assert not fit.failed.any()
    np.testing.assert_allclose(fit.theta, theta, rtol=1e-8, atol=1e-10)
    if name == "ssp-wang":
        assert not np.allclose(rel[0], np.swapaxes(rel[0], 1, 2))  # Wang's full noise
    elif name != "functional":
        k = 0 if len(rel) == 2 else 1
        np.testing.assert_array_equal(rel[k], np.swapaxes(rel[k], 1, 2))


def test_every_private_algorithm_is_audited():
    assert set(AUDITED) == set(MECHANISMS) | {n for n, a in ALGORITHMS.items() if a.private}


# --------------------------------------------------------------------------
# correct versions: no violation, and lb <= exact <= claim
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.1, 1.0])
@pytest.mark.parametrize("name", [*MECHANISMS, *PRIVATE])
def test_correct_private_targets_pass(name, eps):
    # 10^6 draws: enough to show a real bound (e.g. ~0.55 for ssp-gdp at eps = 1)
    r = audit_algorithm(name, epsilon=eps, delta=DELTA, samples=10**6, seed=20200601)
    assert r["verdict"] == "ok"
    assert r["label"] == "private"
    assert r["method"] == "shortcut" and r["shortcut_verified"]
    assert all(rel["pair_attains_sensitivity"] for rel in r["releases"])
    assert 0.0 <= r["empirical_epsilon_lb"] <= r["exact_epsilon"]
    assert r["exact_epsilon"] <= eps * (1 + 1e-9)
    assert not r["exact_exceeds_claim"]
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


# --------------------------------------------------------------------------
# broken versions (sigma / 4, b / 4) are caught
# --------------------------------------------------------------------------
# expected lower bounds at eps = 1 (claim 1): ssp 1.43 (10^6), adassp 1.27 (4*10^6),
# adassp-analytic 1.54, adassp-gdp / ssp-gdp / gaussian-analytic 2.8, gaussian-classical 2.2,
# laplace and functional ~3.5-3.9 (true epsilon 4)
_BROKEN_SAMPLES = {"adassp": 4 * 10**6}


@pytest.mark.parametrize("name", [*MECHANISMS, *PRIVATE])
def test_quarter_noise_is_a_violation_at_eps_1(name):
    n = _BROKEN_SAMPLES.get(name, 10**6)
    r = audit_algorithm(name, epsilon=1.0, delta=DELTA, samples=n, seed=20200601, noise_factor=0.25)
    assert r["verdict"] == "violation"
    assert r["empirical_epsilon_lb"] > r["claimed_epsilon"] == 1.0
    assert r["empirical_epsilon_lb"] <= r["exact_epsilon"]  # exact epsilon of the broken version
    assert r["exact_exceeds_claim"]


@pytest.mark.parametrize(
    "name", ["gaussian-analytic", "ssp-gdp", "adassp-gdp", "laplace", "functional"]
)
def test_quarter_noise_is_a_violation_at_eps_0_1(name):
    # claim 0.1; expected bounds with 2*10^6 draws: GDP-calibrated ~0.23, laplace ~0.37,
    # functional ~0.3.  (Quarter noise of the classically calibrated algorithms at
    # eps = 0.1 has exact epsilon 0.16-0.3 at delta = 1e-6 but needs far more draws.)
    r = audit_algorithm(
        name, epsilon=0.1, delta=DELTA, samples=2 * 10**6, seed=1, noise_factor=0.25
    )
    assert r["verdict"] == "violation"
    assert r["empirical_epsilon_lb"] > 0.1


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
    assert draws == {"lambda_min": "scalar", "XtX": "wang_symmetric", "Xty": "vector"}


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
# command line
# --------------------------------------------------------------------------
def _lines(capsys) -> list[dict]:
    out = capsys.readouterr().out.strip().splitlines()
    return [json.loads(line) for line in out]


def test_cli_ok_exits_zero_and_prints_json_lines(capsys, tmp_path):
    path = tmp_path / "audit.jsonl"
    argv = [
        "--samples",
        "2e5",
        "--epsilon",
        "0.5",
        "1",
        "--algorithms",
        "ssp,adassp-gdp",
        "laplace",
    ]
    assert main([*argv, "--seed", "3", "--json-out", str(path)]) == 0
    recs = _lines(capsys)
    assert [(r["name"], r["claimed_epsilon"]) for r in recs] == [
        (n, e) for e in (0.5, 1.0) for n in ("ssp", "adassp-gdp", "laplace")
    ]
    for r in recs:
        assert SUMMARY_KEYS <= set(r)
        assert r["verdict"] == "ok" and r["n_samples"] == 200_000
    assert [json.loads(x) for x in path.read_text().splitlines()] == recs


def test_cli_violation_in_private_algorithm_exits_nonzero(capsys):
    # quarter noise of ssp-gdp at eps = 1: expected bound ~2.2 with 10^5 draws
    argv = [
        "--samples",
        "1e5",
        "--epsilon",
        "1",
        "--algorithms",
        "ssp-gdp",
        "--noise-factor",
        "0.25",
    ]
    assert main(argv) == 1
    (rec,) = _lines(capsys)
    assert rec["verdict"] == "violation" and rec["label"] == "private"


def test_cli_reproduction_violation_does_not_decide_exit(capsys):
    # Quarter-noise ssp-wang and adassp-wang are violations (expected bounds ~3.9 and
    # ~1.44 with 3*10^5 draws) and reported as such, but labelled "reproduction": exit 0.
    # (Nominal ssp-wang's own violation at (1, 1e-6) needs 10^7 draws; see
    # test_wang_ssp_violates_its_claim_at_eps_1.)
    argv = ["--samples", "3e5", "--epsilon", "1", "--noise-factor", "0.25", "--seed", "8"]
    assert main([*argv, "--algorithms", "ssp-wang", "adassp-wang"]) == 0
    recs = _lines(capsys)
    assert {r["verdict"] for r in recs} == {"violation"}
    assert {r["label"] for r in recs} == {"reproduction"}
    # the same with a private algorithm violated too (quarter-noise ssp-gdp): non-zero
    assert main([*argv, "--algorithms", "ssp-wang,adassp-wang,ssp-gdp"]) == 1
    recs = {r["name"]: r for r in _lines(capsys)}
    assert recs["ssp-gdp"]["verdict"] == "violation" and recs["ssp-gdp"]["label"] == "private"


def test_cli_full_records_and_errors(capsys):
    assert main(["--samples", "1e4", "--epsilon", "1", "--algorithms", "functional", "--full"]) == 0
    (rec,) = _lines(capsys)
    assert rec["test"]["confidence"] == pytest.approx(1 - audit.ALPHA)
    assert rec["releases"][0]["pair_attains_sensitivity"]
    assert main(["--algorithms", "nope"]) == 2
    assert "unknown audit target" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--samples", "abc"])
