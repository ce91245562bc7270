"""Noise calibration (classical, Wang's scales, analytic, GDP) and noise draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.privacy import mechanisms as mech


def profile_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Balle & Wang (2018) Theorem 8, written out independently with norm.cdf."""
    a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    return float(norm.cdf(a) - math.exp(epsilon) * norm.cdf(b))


def gdp_profile(epsilon: float, mu: float) -> float:
    """Dong, Roth & Su (2019) Corollary 2.13, independently with norm.cdf."""
    return float(
        norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    )


# --------------------------------------------------------------------------
# classical calibration
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.01, 0.3, 0.99])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("sens", [0.5, 1.0, 4.0])
def test_classical_sigma_closed_form(eps, delta, sens):
    expected = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
    got = mech.classical_sigma(epsilon=eps, delta=delta, sensitivity=sens)
    assert got == pytest.approx(expected, rel=1e-14)


def test_gaussian_sigma_classical_below_one_does_not_warn():
    # filterwarnings=error turns any warning here into a failure
    got = mech.gaussian_sigma(epsilon=0.5, delta=1e-6, sensitivity=1.0, calibration="classical")
    assert got == pytest.approx(math.sqrt(2 * math.log(1.25e6)) / 0.5, rel=1e-14)


@pytest.mark.parametrize("eps", [1.0, 2.5])
def test_gaussian_sigma_classical_outside_validity_warns(eps):
    with pytest.warns(mech.ClassicalCalibrationWarning, match="epsilon"):
        got = mech.gaussian_sigma(epsilon=eps, delta=1e-6, sensitivity=1.0, calibration="classical")
    # the value is still computed, as the thesis does
    assert got == pytest.approx(math.sqrt(2 * math.log(1.25e6)) / eps, rel=1e-14)


def test_gaussian_sigma_analytic_never_warns_and_matches_analytic_sigma():
    for eps in (0.5, 1.0, 5.0):
        g = mech.gaussian_sigma(epsilon=eps, delta=1e-6, sensitivity=2.0, calibration="analytic")
        assert g == mech.analytic_sigma(epsilon=eps, delta=1e-6, sensitivity=2.0)


# --------------------------------------------------------------------------
# analytic calibration and GDP
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
@pytest.mark.parametrize("sens", [1.0, 3.0])
def test_analytic_sigma_meets_privacy_profile_tightly(eps, delta, sens):
    sigma = mech.analytic_sigma(epsilon=eps, delta=delta, sensitivity=sens)
    # delta is met: the exact profile at sigma equals delta (project promise: rel 1e-9)
    assert profile_delta(eps, sigma, sens) == pytest.approx(delta, rel=1e-9)
    # and sigma is the smallest such value: a sigma 1e-6 (relative) smaller violates delta
    assert profile_delta(eps, sigma * (1 - 1e-6), sens) > delta


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-6, 1e-12])
def test_analytic_never_noisier_than_classical_below_one(eps, delta):
    a = mech.analytic_sigma(epsilon=eps, delta=delta, sensitivity=1.0)
    c = mech.classical_sigma(epsilon=eps, delta=delta, sensitivity=1.0)
    assert a <= c


def test_analytic_sigma_scales_linearly_with_sensitivity():
    s1 = mech.analytic_sigma(epsilon=0.7, delta=1e-6, sensitivity=1.0)
    s5 = mech.analytic_sigma(epsilon=0.7, delta=1e-6, sensitivity=5.0)
    assert s5 == pytest.approx(5 * s1, rel=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 4.0])
@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0])
def test_gdp_delta_matches_independent_formula(eps, mu):
    expected = gdp_profile(eps, mu)
    got = mech.gdp_delta(eps, mu)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_gdp_mu_epsilon_delta_mutually_inverse(eps, delta):
    mu = mech.gdp_mu(epsilon=eps, delta=delta)
    assert mech.gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-9)
    assert gdp_profile(eps, mu) == pytest.approx(delta, rel=1e-9)
    assert mech.gdp_epsilon(mu=mu, delta=delta) == pytest.approx(eps, rel=1e-9)
    # the analytic sigma is the GDP sigma with mu = sensitivity / sigma
    assert mech.analytic_sigma(epsilon=eps, delta=delta, sensitivity=2.0) == pytest.approx(
        2.0 / mu, rel=1e-12
    )


def test_gdp_delta_increasing_in_mu_and_decreasing_in_epsilon():
    mus = np.linspace(0.1, 3.0, 30)
    d_mu = [mech.gdp_delta(1.0, m) for m in mus]
    assert np.all(np.diff(d_mu) > 0)
    epss = np.linspace(0.0, 5.0, 30)
    d_eps = [mech.gdp_delta(e, 1.0) for e in epss]
    assert np.all(np.diff(d_eps) < 0)


def test_gdp_epsilon_zero_when_delta_already_met():
    # delta(0; mu) = Phi(mu/2) - Phi(-mu/2) ~ 0.0399 for mu = 0.1
    mu = 0.1
    d0 = norm.cdf(mu / 2) - norm.cdf(-mu / 2)
    assert mech.gdp_epsilon(mu=mu, delta=d0 * 1.01) == 0.0
    assert mech.gdp_epsilon(mu=mu, delta=d0 * 0.5) > 0.0


# --------------------------------------------------------------------------
# known values (SPEC section 2-3) via the algorithms' release lists
# --------------------------------------------------------------------------
def _scales(name, eps=1.0, delta=1e-6, d=4, bx=1.0, by=1.0):
    rel = ALGORITHMS[name].releases(epsilon=eps, delta=delta, d=d, bound_x=bx, bound_y=by)
    return {r.name: r for r in rel}


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-4])
def test_wang_and_classical_scales_through_releases(eps, delta):
    bx, by = 1.5, 2.0
    ssp_wang = _scales("ssp-wang", eps, delta, bx=bx, by=by)
    s = math.sqrt(math.log(4 / delta)) / eps
    assert ssp_wang["XtX"].scale == pytest.approx(s * bx * bx, rel=1e-14)
    assert ssp_wang["Xty"].scale == pytest.approx(s * bx * by, rel=1e-14)

    ada_wang = _scales("adassp-wang", eps, delta, bx=bx, by=by)
    s = math.sqrt(math.log(6 / delta)) / (eps / 3)
    assert ada_wang["lambda_min"].scale == pytest.approx(s * bx * bx, rel=1e-14)
    assert ada_wang["XtX"].scale == pytest.approx(s * bx * bx, rel=1e-14)
    assert ada_wang["Xty"].scale == pytest.approx(s * bx * by, rel=1e-14)

    ssp = _scales("ssp", eps, delta, bx=bx, by=by)
    s = math.sqrt(2 * math.log(2.5 / delta)) * 2 / eps
    assert ssp["XtX"].scale == pytest.approx(bx * bx * s, rel=1e-12)
    assert ssp["Xty"].scale == pytest.approx(bx * by * s, rel=1e-12)
    # ... which is the classical sigma at (eps/2, delta/2)
    assert ssp["XtX"].scale == pytest.approx(
        mech.classical_sigma(epsilon=eps / 2, delta=delta / 2, sensitivity=bx * bx), rel=1e-14
    )

    ada = _scales("adassp", eps, delta, bx=bx, by=by)
    s = math.sqrt(2 * math.log(3.75 / delta)) / (eps / 3)
    assert ada["lambda_min"].scale == pytest.approx(bx * bx * s, rel=1e-12)
    assert ada["XtX"].scale == pytest.approx(bx * bx * s, rel=1e-12)
    assert ada["Xty"].scale == pytest.approx(bx * by * s, rel=1e-12)


def test_known_values_at_eps1_delta1e6():
    # SPEC: "sigma 7.3 vs 16.5 at eps = 1" (three significant digits: 7.32, 16.5)
    gdp = _scales("adassp-gdp")["XtX"].scale
    classical = _scales("adassp")["XtX"].scale
    assert abs(gdp - 7.32) < 0.005
    assert abs(classical - 16.5) < 0.05
    # SPEC: adassp-analytic is 12-40% less noisy than adassp at delta = 1e-6
    analytic = _scales("adassp-analytic")["XtX"].scale
    assert 0.60 * classical <= analytic <= 0.88 * classical


def test_gdp_releases_compose_to_exactly_delta():
    for name, k in (("adassp-gdp", 3), ("ssp-gdp", 2)):
        rel = ALGORITHMS[name].releases(epsilon=0.8, delta=1e-6, d=3)
        assert len(rel) == k
        mu = math.sqrt(sum((r.sensitivity / r.scale) ** 2 for r in rel))
        assert gdp_profile(0.8, mu) == pytest.approx(1e-6, rel=1e-9)
        out = mech.compose(rel, delta=1e-6)
        assert out["exact_epsilon"] == pytest.approx(0.8, rel=1e-9)
        assert out["basic_epsilon"] == pytest.approx(0.8, rel=1e-12)


def test_compose_exact_delta_of_wang_scales():
    # ssp-wang: two releases each with mu_i = 1/s = eps/sqrt(ln(4/delta))
    out = mech.compose(ALGORITHMS["ssp-wang"].releases(epsilon=1.0, delta=1e-6, d=3), delta=1e-6)
    mu = math.sqrt(2) / math.sqrt(math.log(4e6))
    assert out["gdp_mu"] == pytest.approx(mu, rel=1e-12)
    assert out["basic_epsilon"] == pytest.approx(1.0)
    assert out["exact_delta"] == pytest.approx(gdp_profile(1.0, mu), rel=1e-9)
    assert 4e-4 < out["exact_delta"] < 6e-4  # SPEC: "only about (1, 5e-4)-DP"
    assert out["exact_delta"] > 1e-6  # the claimed delta is not met

    # adassp-wang: three releases, mu_i = (eps/3)/sqrt(ln(6/delta))
    out = mech.compose(ALGORITHMS["adassp-wang"].releases(epsilon=1.0, delta=1e-6, d=3), delta=1e-6)
    mu = math.sqrt(3) * (1 / 3) / math.sqrt(math.log(6e6))
    assert out["gdp_mu"] == pytest.approx(mu, rel=1e-12)
    assert out["exact_delta"] == pytest.approx(gdp_profile(1.0, mu), rel=1e-6)
    assert out["exact_delta"] <= 1e-10
    assert out["exact_epsilon"] < 1.0


def test_compose_basic_sums_and_laplace_has_no_gdp():
    rel = ALGORITHMS["adassp"].releases(epsilon=0.9, delta=3e-6, d=2)
    out = mech.compose(rel, delta=3e-6)
    assert out["basic_epsilon"] == pytest.approx(0.9, rel=1e-12)
    assert out["basic_delta"] == pytest.approx(3e-6, rel=1e-12)
    assert out["all_valid"] is True
    lap = ALGORITHMS["functional"].releases(epsilon=0.9, delta=3e-6, d=2)
    out = mech.compose(lap, delta=3e-6)
    # a pure epsilon-DP (Laplace) release has no GDP parameter; its exact
    # guarantee is the basic one at delta = 0
    assert out["gdp_mu"] is None
    assert out["basic_epsilon"] == pytest.approx(0.9)
    assert out["basic_delta"] == 0.0
    assert out["exact_delta"] in (None, 0.0)
    with pytest.raises(DPRegError, match="not Gaussian"):
        _ = lap[0].mu


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
FUNCS = [mech.classical_sigma, mech.analytic_sigma, mech.gaussian_sigma]


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "a", True, None])
def test_bad_epsilon_rejected(func, bad):
    with pytest.raises(DPRegError, match="epsilon"):
        func(epsilon=bad, delta=1e-6, sensitivity=1.0)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, float("nan"), "x", False])
def test_bad_delta_rejected(func, bad):
    with pytest.raises(DPRegError, match="delta"):
        func(epsilon=0.5, delta=bad, sensitivity=1.0)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("bad", [0, -2.0, float("inf"), float("nan"), "1", True])
def test_bad_sensitivity_rejected(func, bad):
    with pytest.raises(DPRegError, match="sensitivity"):
        func(epsilon=0.5, delta=1e-6, sensitivity=bad)


def test_unknown_calibration_rejected_and_listed():
    with pytest.raises(DPRegError, match="calibration") as info:
        mech.gaussian_sigma(epsilon=0.5, delta=1e-6, sensitivity=1.0, calibration="renyi")
    assert "analytic" in str(info.value) and "classical" in str(info.value)


def test_gdp_functions_reject_bad_parameters():
    with pytest.raises(DPRegError, match="mu"):
        mech.gdp_delta(1.0, 0.0)
    with pytest.raises(DPRegError, match="epsilon"):
        mech.gdp_delta(-1.0, 1.0)
    with pytest.raises(DPRegError, match="delta"):
        mech.gdp_mu(epsilon=1.0, delta=1.0)
    with pytest.raises(DPRegError, match="mu"):
        mech.gdp_epsilon(mu=-1.0, delta=1e-6)


def test_draws_reject_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(DPRegError, match="scale"):
        mech.symmetric_noise(3, scale=-1.0, rng=rng, size=2)
    with pytest.raises(DPRegError, match="scale"):
        mech.vector_noise(3, scale=float("nan"), rng=rng, size=2)
    with pytest.raises(DPRegError, match="size"):
        mech.full_noise(3, scale=1.0, rng=rng, size=0)
    with pytest.raises(DPRegError, match="d"):
        mech.wang_symmetric_noise(0, scale=1.0, rng=rng, size=2)


# --------------------------------------------------------------------------
# noise draws
# --------------------------------------------------------------------------
N_DRAWS = 20000
# A variance estimated from N Gaussian draws has relative sd sqrt(2/N) = 0.01;
# 5 sd gives a relative tolerance of 0.05 (fixed seeds make the test deterministic).
VAR_RTOL = 5 * math.sqrt(2 / N_DRAWS)


def test_symmetric_noise_is_symmetric_with_equal_variances():
    scale, d = 2.5, 4
    E = mech.symmetric_noise(d, scale=scale, rng=np.random.default_rng(11), size=N_DRAWS)
    assert E.shape == (N_DRAWS, d, d)
    assert np.array_equal(E, np.swapaxes(E, 1, 2))
    var = E.var(axis=0)
    np.testing.assert_allclose(var, scale**2, rtol=VAR_RTOL)
    # means: sd of a mean of N draws is scale / sqrt(N); 5 sd
    assert np.all(np.abs(E.mean(axis=0)) < 5 * scale / math.sqrt(N_DRAWS))
    # distinct upper-triangle entries are independent: correlation sd ~ 1/sqrt(N)
    iu = np.triu_indices(d)
    flat = E[:, iu[0], iu[1]]
    corr = np.corrcoef(flat, rowvar=False)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    assert np.all(np.abs(off) < 5 / math.sqrt(N_DRAWS))


def test_wang_symmetric_noise_has_half_off_diagonal_variance():
    scale, d = 1.7, 3
    E = mech.wang_symmetric_noise(d, scale=scale, rng=np.random.default_rng(12), size=N_DRAWS)
    assert np.allclose(E, np.swapaxes(E, 1, 2), rtol=0, atol=1e-15)
    var = E.var(axis=0)
    diag = np.eye(d, dtype=bool)
    np.testing.assert_allclose(var[diag], scale**2, rtol=VAR_RTOL)
    np.testing.assert_allclose(var[~diag], scale**2 / 2, rtol=VAR_RTOL)


def test_full_noise_is_not_symmetric_and_iid():
    scale, d = 0.8, 3
    E = mech.full_noise(d, scale=scale, rng=np.random.default_rng(13), size=N_DRAWS)
    np.testing.assert_allclose(E.var(axis=0), scale**2, rtol=VAR_RTOL)
    # E[0,1] and E[1,0] are independent: their correlation is ~ 0 (sd 1/sqrt(N))
    r = np.corrcoef(E[:, 0, 1], E[:, 1, 0])[0, 1]
    assert abs(r) < 5 / math.sqrt(N_DRAWS)


def test_vector_and_laplace_noise_variances():
    v = mech.vector_noise(5, scale=3.0, rng=np.random.default_rng(14), size=N_DRAWS)
    assert v.shape == (N_DRAWS, 5)
    np.testing.assert_allclose(v.var(axis=0), 9.0, rtol=VAR_RTOL)
    b = 0.7
    lap = mech.laplace_noise((N_DRAWS, 4), scale=b, rng=np.random.default_rng(15))
    # Laplace(b): variance 2 b^2; kurtosis 6 so the variance estimate has
    # relative sd sqrt((kurt + 2)/N) = sqrt(8/N) = 0.02; 5 sd -> 0.1
    np.testing.assert_allclose(lap.var(axis=0), 2 * b * b, rtol=5 * math.sqrt(8 / N_DRAWS))
    # mean absolute value of Laplace(b) is b; its sd is b/sqrt(N)
    np.testing.assert_allclose(np.abs(lap).mean(axis=0), b, rtol=5 / math.sqrt(N_DRAWS))


@pytest.mark.parametrize(
    "draw",
    [mech.symmetric_noise, mech.wang_symmetric_noise, mech.full_noise, mech.vector_noise],
)
def test_draws_are_prefix_stable(draw):
    small = draw(4, scale=1.3, rng=np.random.default_rng(99), size=3)
    large = draw(4, scale=1.3, rng=np.random.default_rng(99), size=17)
    assert np.array_equal(small, large[:3])
    assert not np.array_equal(large[3], large[4])


def test_laplace_prefix_stable():
    small = mech.laplace_noise((3, 6), scale=0.5, rng=np.random.default_rng(5))
    large = mech.laplace_noise((10, 6), scale=0.5, rng=np.random.default_rng(5))
    assert np.array_equal(small, large[:3])


def test_draws_same_seed_identical_other_seed_differs():
    a = mech.symmetric_noise(3, scale=1.0, rng=np.random.default_rng(1), size=4)
    b = mech.symmetric_noise(3, scale=1.0, rng=np.random.default_rng(1), size=4)
    c = mech.symmetric_noise(3, scale=1.0, rng=np.random.default_rng(2), size=4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


# --------------------------------------------------------------------------
# one noise path and one release factory
# --------------------------------------------------------------------------
def test_normal_block_noise_lays_out_one_block_per_repeat():
    d, R = 3, 5
    kinds, scales = ("scalar", "symmetric", "vector"), (2.0, 3.0, 0.5)
    got = mech.normal_block_noise(kinds, scales, d, rng=np.random.default_rng(4), size=R)
    z = np.random.default_rng(4).standard_normal((R, 1 + 6 + 3))
    np.testing.assert_array_equal(got[0], 2.0 * z[:, 0])
    np.testing.assert_array_equal(got[1], mech.matrix_from_normals("symmetric", z[:, 1:7], d, 3.0))
    np.testing.assert_array_equal(got[2], 0.5 * z[:, 7:])
    # the first repeats do not change when more are drawn
    more = mech.normal_block_noise(kinds, scales, d, rng=np.random.default_rng(4), size=2 * R)
    for a, b in zip(got, more, strict=True):
        np.testing.assert_array_equal(a, b[:R])
    with pytest.raises(DPRegError, match="layout"):
        mech.normal_block_noise(("vector",), (1.0, 2.0), d, rng=np.random.default_rng(0), size=1)
    with pytest.raises(DPRegError, match="scale"):
        mech.normal_block_noise(("vector",), (-1.0,), d, rng=np.random.default_rng(0), size=1)


def test_raw_draw_helpers_follow_the_generator():
    np.testing.assert_array_equal(
        mech.standard_normals((4, 2), rng=np.random.default_rng(1)),
        np.random.default_rng(1).standard_normal((4, 2)),
    )
    np.testing.assert_array_equal(
        mech.gumbel_noise((3,), rng=np.random.default_rng(2)),
        np.random.default_rng(2).gumbel(size=3),
    )


def test_release_factories_validate_and_record():
    g = mech.gaussian_release(
        "XtX", sensitivity=1.0, sigma=2.0, epsilon=0.5, delta=1e-7, calibration="gdp", valid=True
    )
    assert (g.mechanism, g.mu) == ("gaussian", 0.5)
    lap = mech.laplace_release("q", sensitivity=2.0, b=4.0, epsilon=0.5)
    assert (lap.mechanism, lap.delta, mech.laplace_epsilon(lap)) == ("laplace", 0.0, 0.5)
    with pytest.raises(DPRegError, match="sensitivity"):
        mech.gaussian_release(
            "x", sensitivity=0.0, sigma=1.0, epsilon=1, delta=1e-6, calibration="c", valid=True
        )
    with pytest.raises(DPRegError):
        mech.laplace_release("x", sensitivity=1.0, b=float("nan"), epsilon=1.0)
    ext = mech.external_release("lib", epsilon=2.0)
    assert ext.mechanism == "external" and math.isnan(ext.scale)
    with pytest.raises(DPRegError, match="not Laplace"):
        mech.laplace_epsilon(ext)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: mech.symmetric_noise(3, scale=1.0, rng=rng, size=2),
        lambda rng: mech.wang_symmetric_noise(3, scale=1.0, rng=rng, size=2),
        lambda rng: mech.full_noise(3, scale=1.0, rng=rng, size=2),
        lambda rng: mech.vector_noise(3, scale=1.0, rng=rng, size=2),
        lambda rng: mech.normal_block_noise(("vector",), (1.0,), 3, rng=rng, size=2)[0],
        lambda rng: mech.laplace_noise((2, 3), scale=1.0, rng=rng),
        lambda rng: mech.objective_laplace_noise(3, scale=1.0, rng=rng, size=2)[1],
        lambda rng: mech.standard_normals((2, 3), rng=rng),
        lambda rng: mech.gumbel_noise((2, 3), rng=rng),
    ],
)
def test_draws_accept_every_rng_form_of_spec_7(draw):
    # an int or a SeedSequence seeds a new Generator; a Generator is used as it is
    ref = draw(np.random.default_rng(5))
    np.testing.assert_array_equal(draw(5), ref)
    np.testing.assert_array_equal(draw(np.random.SeedSequence(5)), ref)
    with pytest.raises(DPRegError, match="rng"):
        draw(1.5)
