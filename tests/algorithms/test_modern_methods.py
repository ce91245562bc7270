"""TukeyEM, Gaussian-sketch OLS, Iterative Hessian Mixing and DP-GD.

Closed forms of every noise scale, the calibrations against the results
they compose, the sketch-Gram identity (exactly and in law), the depth
machinery of TukeyEM against brute force, its safety test on small and
large data, and each method's limit as epsilon grows where it has one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sps

from dpreg._validation import DPRegError
from dpreg.algorithms import _tukey_depth as tukey_depth
from dpreg.algorithms import gd, get_algorithm, sketch, tukey
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech

DELTA = 1e-6


def rows(n, d, seed, noise=0.05, by=1.0):
    """Rows with ||x|| <= 1 and |y| <= by (a clear linear signal)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = X @ np.linspace(1.0, -0.6, d) + noise * rng.normal(size=n) / math.sqrt(d)
    y *= by / np.abs(y).max()
    return X, y


def stats_of(X, y, by=1.0):
    return SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=by)


def ols(X, y):
    return np.linalg.lstsq(X, y, rcond=None)[0]


# --------------------------------------------------------------------------
# TukeyEM
# --------------------------------------------------------------------------
def test_tukey_m_rule_and_refusals():
    assert tukey.resolve_m("auto", 22000, 11) == 1000  # the authors' smallest m
    assert tukey.resolve_m(50, 1000, 5) == 50
    assert tukey.resolve_m("n/d", 1003, 5) == 200 and tukey.resolve_m("n/4d", 1003, 5) == 50
    assert get_algorithm("tukey-em-n1d").hyperparameters["m"] == "n/d"
    with pytest.raises(DPRegError, match=r"m=300 .*n/m >= d"):
        tukey.resolve_m(300, 1000, 5)
    for bad in ("many", "n/0d", 2.5):
        with pytest.raises(DPRegError, match="integer >= 4, 'auto' or a rule like 'n/4d'"):
            tukey.resolve_m(bad, 1000, 5)
    alg = get_algorithm("tukey-em")
    with pytest.raises(DPRegError, match="has no hyperparameter 'k'"):
        alg.resolve_params({"k": 3})


def test_batched_fits_equal_lstsq_including_rank_deficient_batches():
    """Gram-matrix solves where well conditioned, minimum-norm SVD where not."""
    rng = np.random.default_rng(12)
    Xb = rng.normal(size=(2, 5, 12, 4))
    Xb[1, 2, :, 3] = Xb[1, 2, :, 0]  # duplicated column: singular Gram matrix
    Xb[0, 4, :, 1] = Xb[0, 4, :, 2] * (1 + 1e-9)  # nearly collinear
    yb = rng.normal(size=(2, 5, 12))
    got = tukey._batched_lstsq(Xb, yb)
    for r in range(2):
        for i in range(5):
            ref = np.linalg.lstsq(Xb[r, i], yb[r, i], rcond=None)[0]
            np.testing.assert_allclose(got[r, i], ref, rtol=1e-7, atol=1e-9)


def _depths(models: np.ndarray, point: np.ndarray) -> int:
    below = (models <= point).sum(axis=0)
    above = (models >= point).sum(axis=0)
    return int(np.minimum(below, above).min())


def test_ptr_distance_is_the_largest_certified_k_by_brute_force():
    rng = np.random.default_rng(0)
    R, d, m, eps2 = 6, 3, 200, 2.0
    models = rng.standard_t(3, size=(R, m, d)) * 0.1
    P = np.sort(models.transpose(0, 2, 1), axis=2)
    logV = tukey_depth.depth_log_volumes(P, m // 2)
    t = (m // 2) // 2
    thr = math.log(DELTA / (8 * math.exp(eps2)))
    got = tukey_depth.ptr_distance(logV, t, eps2, DELTA)
    for r in range(R):
        best = -1
        for k in range(-1, t - 1):
            vals = [
                logV[r, t - k - 2] - logV[r, t + k + g] - eps2 * g / 2
                for g in range(1, m // 2 - t - k)
            ]
            if vals and min(vals) <= thr:
                best = k
        assert got[r] == best
    # the released code's search returns k_hat + 1 (depths up to ceil(m/2) - 1)
    code = tukey_depth.code_distance(tukey_depth.depth_log_volumes(P, (m + 1) // 2), t, eps2, DELTA)
    ref = tukey_depth.ptr_distance(logV[:, : (m + 1) // 2 - 1], t, eps2, DELTA)
    np.testing.assert_array_equal(code, np.where(ref >= 0, np.minimum(ref + 1, t - 1), -1))
    assert (got >= 0).all(), "this synthetic case certifies some k"


def test_sampler_returns_points_of_exactly_the_chosen_depth():
    rng = np.random.default_rng(1)
    R, d, m = 400, 3, 40
    models = rng.normal(size=(R, m, d))
    P = np.sort(models.transpose(0, 2, 1), axis=2)
    q = rng.integers(5, m // 2 + 1, size=R)
    theta = tukey_depth.sample_depth_region(
        P, q, gumbel=rng.gumbel(size=(R, d)), u=rng.random((R, d + 1))
    )
    assert all(_depths(models[r], theta[r]) == q[r] for r in range(R))


def test_safety_test_fails_on_small_n_and_passes_on_large_n():
    """The test needs t ~ m/4 above ln(1/(2 delta))/eps2 (26.2 at eps = 1)."""
    alg = get_algorithm("tukey-em")
    X, y = rows(600, 3, seed=2)  # m = 100, t = 25: k_hat <= 23 < 26.2
    res = alg.fit(
        stats_of(X, y),
        epsilon=1.0,
        delta=DELTA,
        rng=np.random.default_rng(4),
        size=40,
        rows=(X, y),
        capture=True,
    )
    thr = math.log(1 / (2 * DELTA)) / 0.5
    np.testing.assert_array_equal(res.failed, res.released["ptr_distance"] <= thr)
    assert res.failed.mean() >= 0.8  # P(Lap(2) > 3.2) = 0.1 per trial
    assert np.isnan(res.theta[res.failed]).all()
    X, y = rows(40000, 3, seed=2)  # m = 6666, t = 1666
    res = alg.fit(
        stats_of(X, y), epsilon=1.0, delta=DELTA, rng=np.random.default_rng(4), size=4, rows=(X, y)
    )
    assert not res.failed.any()
    rel = np.linalg.norm(res.theta - ols(X, y), axis=1) / np.linalg.norm(ols(X, y))
    assert rel.max() < 0.05


def test_tukey_tends_to_the_deepest_region_as_epsilon_grows():
    """At huge epsilon the mechanism picks the deepest level: a box around the
    coordinate-wise median of the models, within the models' spread of OLS."""
    X, y = rows(20000, 3, seed=3, noise=0.01)
    res = get_algorithm("tukey-em").fit(
        stats_of(X, y), epsilon=1e4, delta=DELTA, rng=np.random.default_rng(0), size=5, rows=(X, y)
    )
    rel = np.linalg.norm(res.theta - ols(X, y), axis=1) / np.linalg.norm(ols(X, y))
    assert not res.failed.any() and rel.max() < 0.01


def test_tukey_code_variant_noises_its_test_with_scale_eps_over_2():
    rel = get_algorithm("tukey-code").releases(epsilon=1.0, delta=DELTA, d=3)
    assert rel[0].scale == pytest.approx(0.5) and not rel[0].valid
    # issue 21: the depth step is charged its generic 2 eps2 = 1.0 (McSherry & Talwar 2007,
    # Theorem 6), not the claimed eps2 = 0.5: test 1/eps2 = 2.0 plus 1.0
    assert mech.compose(rel, delta=DELTA)["exact_epsilon"] == pytest.approx(2.0 + 1.0)
    pub = get_algorithm("tukey-em").releases(epsilon=1.0, delta=DELTA, d=3)
    assert pub[0].scale == pytest.approx(2.0) and pub[0].valid
    # eps2 = 0.5 for the test plus 2 eps2 = 1.0 for the depth step
    assert mech.compose(pub, delta=DELTA)["exact_epsilon"] == pytest.approx(1.5)
    assert get_algorithm("tukey-em").neighbouring == "replace-one"


# --------------------------------------------------------------------------
# the sketch-Gram identity
# --------------------------------------------------------------------------
def test_sketch_gram_equals_the_gram_of_the_mixed_sketch():
    """Exactly: C^{1/2} G^T G C^{1/2} is the Gram matrix of G C^{1/2}."""
    rng = np.random.default_rng(0)
    M = rng.normal(size=(50, 4))
    eig = np.linalg.eigh(M.T @ M)
    G = rng.normal(size=(2, 30, 4))
    s2 = np.array([0.0, 2.5])
    got = sketch.sketch_gram(eig, s2, G)
    for r in range(2):
        w, V = eig
        root = V @ np.diag(np.sqrt(w + s2[r])) @ V.T
        W = G[r] @ root
        np.testing.assert_allclose(got[r], W.T @ W, rtol=1e-10, atol=1e-10)


def test_statistics_drawn_sketch_matches_a_row_level_sketch_in_law():
    """Mean and variance of every Gram entry: drawn from M^T M vs sketched from rows.

    Both are Wishart_p(k, C) with C = M^T M + s^2 I, so each entry has mean
    k C_ij and variance k (C_ij^2 + C_ii C_jj).  With N = 4000 draws per side
    the difference of the means has standard error sqrt(2 var / N); a
    Bonferroni bound over the 10 entries at family level 1e-4 gives 4.6 SE.
    Sample variances are compared with a 12% tolerance (their relative
    standard error is sqrt(2/N) * sqrt(kurtosis factor) < 4% here).
    """
    rng = np.random.default_rng(11)
    n, p, k, s2, N = 60, 4, 12, 0.7, 4000
    M = rng.normal(size=(n, p)) / 3
    C = M.T @ M + s2 * np.eye(p)
    eig = np.linalg.eigh(M.T @ M)
    drawn = sketch.sketch_gram(eig, np.full(N, s2), rng.standard_normal((N, k, p)))
    S = rng.standard_normal((N, k, n))
    noise = rng.standard_normal((N, k, p))
    A = S @ M + math.sqrt(s2) * noise
    rowlevel = np.einsum("rki,rkj->rij", A, A)
    var = k * (C**2 + np.outer(np.diag(C), np.diag(C)))
    iu = np.triu_indices(p)
    z = (drawn.mean(0) - rowlevel.mean(0))[iu] / np.sqrt(2 * var / N)[iu]
    assert np.abs(z).max() < 4.6
    np.testing.assert_allclose(
        drawn.mean(0)[iu], k * C[iu], atol=(4.6 * np.sqrt(var / N))[iu].max()
    )
    np.testing.assert_allclose(drawn.var(0)[iu], var[iu], rtol=0.12)
    np.testing.assert_allclose(rowlevel.var(0)[iu], var[iu], rtol=0.12)


# --------------------------------------------------------------------------
# Gaussian-sketch OLS
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name, half", [("sketch-ols", False), ("sketch-ols-lev", True)])
def test_sheffet_scales_equal_the_closed_forms(name, half):
    bx, by, eps, d = 1.0, 2.0, 0.7, 5
    rel = get_algorithm(name).releases(epsilon=eps, delta=DELTA, d=d, bound_x=bx, bound_y=by)
    B2 = (bx**2 + by**2) / (2 if half else 1)
    k = max(int(2.5 * d), int(2.5 * math.log(1e10)))
    assert k == 57
    L = math.log(8 / DELTA)
    w2 = 4 * B2 / eps * (math.sqrt(2 * k * L) + L)
    assert rel[0].mechanism == "laplace" and rel[0].scale == pytest.approx(4 * B2 / eps)
    assert rel[0].sensitivity == pytest.approx(bx**2 + by**2)
    assert rel[1].scale ** 2 == pytest.approx(w2)
    assert rel[0].epsilon + rel[1].epsilon == pytest.approx(eps)
    assert rel[0].valid is (not half)


def test_sheffet_takes_the_noise_free_branch_as_epsilon_grows():
    """Large epsilon: the test passes and the sketch is S A (no added noise), whose
    OLS differs from OLS only through the residual (y = X beta exactly would make
    A^T A singular and the test fail; 0.1% noise keeps lambda_min positive)."""
    X, y = rows(3000, 4, seed=5, noise=1e-3)
    alg = get_algorithm("sketch-ols")
    res = alg.fit(
        stats_of(X, y), epsilon=1e7, delta=DELTA, rng=np.random.default_rng(0), size=6, capture=True
    )
    k, w2 = sketch.sheffet_sizes(4, 1e7, DELTA, 2.0)
    thr = w2 + 4 * 2.0 * math.log(1 / DELTA) / 1e7
    assert (res.released["lambda_min_test"] > thr).all()
    rel = np.linalg.norm(res.theta - ols(X, y), axis=1) / np.linalg.norm(ols(X, y))
    assert rel.max() < 5e-3
    small = alg.fit(stats_of(X, y), epsilon=0.1, delta=DELTA, rng=np.random.default_rng(0), size=6)
    assert np.linalg.norm(small.theta - ols(X, y), axis=1).min() > 1e-3


# --------------------------------------------------------------------------
# Iterative Hessian Mixing
# --------------------------------------------------------------------------
@pytest.mark.parametrize("alpha, gamma", [(1.5, 4.0), (3.0, 20.0), (30.0, 500.0)])
def test_mixing_rdp_is_the_renyi_divergence_of_the_two_gaussians(alpha, gamma):
    """k D_alpha(N(0, gamma) || N(0, gamma - 1)) by numerical integration."""
    p, q = sps.norm(scale=math.sqrt(gamma)), sps.norm(scale=math.sqrt(gamma - 1))

    def integrand(x):
        return math.exp(alpha * p.logpdf(x) + (1 - alpha) * q.logpdf(x))

    lim = 60 * math.sqrt(gamma)
    val = integrate.quad(integrand, -lim, lim, limit=400, epsabs=0, epsrel=1e-12)[0]
    k = 7
    assert sketch.mixing_rdp(alpha, gamma, k) == pytest.approx(
        k * math.log(val) / (alpha - 1), rel=1e-7
    )


@pytest.mark.parametrize("sigma", [0.8, 3.0, 20.0])
def test_rdp_conversion_bounds_the_exact_gaussian_epsilon(sigma):
    """On the Gaussian mechanism's RDP curve alpha/(2 sigma^2), the conversion of
    Canonne, Kamath & Steinke is an upper bound on the exact epsilon, and close."""
    alphas = np.exp(np.linspace(np.log(1.001), np.log(1e4), 4000))
    conv = min(sketch.rdp_to_dp(a, a / (2 * sigma**2), DELTA) for a in alphas)
    exact = mech.gdp_epsilon(mu=1 / sigma, delta=DELTA)
    assert exact <= conv <= 1.35 * exact + 1e-3


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_ihm_gamma_is_the_smallest_noise_meeting_half_the_budget(eps):
    T, dp = 3, DELTA / 4
    k, tau, rho = sketch.ihm_sizes(4, DELTA, T)
    assert rho == DELTA / 10 and k == max(24, int(6 * math.log(4 * T / rho)))
    assert tau == pytest.approx(math.sqrt(2 * math.log(4 / rho)))
    g = sketch.ihm_gamma(eps / 2, dp, k, T)
    E, alpha = sketch.ihm_epsilon(g, k, dp, T)
    assert E == pytest.approx(eps / 2, rel=1e-8)
    assert sketch.ihm_epsilon(g * (1 - 1e-6), k, dp, T)[0] > eps / 2
    # E is the sum of the closed forms it composes, at the minimising alpha
    parts = (
        T * sketch.mixing_rdp(alpha, g, k)
        + sketch.rdp_to_dp(alpha, 0.0, dp)
        + math.sqrt(2 * math.log(1.25 / dp)) * math.sqrt(k) / g
    )
    assert parts == pytest.approx(E, rel=1e-9)


def test_ihm_releases_compose_to_the_budget():
    eps, bx, by, d, T = 1.0, 2.0, 0.5, 4, 3
    rel = get_algorithm("ihm").releases(epsilon=eps, delta=DELTA, d=d, bound_x=bx, bound_y=by)
    k, _, _ = sketch.ihm_sizes(d, DELTA, T)
    lam, sk, grads = rel[0], rel[1], rel[2:]
    g1 = sketch.ihm_gamma(eps / 2, DELTA / 4, k, T)
    assert lam.scale == pytest.approx(bx**2 * g1 / math.sqrt(k))
    # the lambda_min share is the classical Gaussian mechanism's epsilon for that scale
    assert mech.classical_sigma(
        epsilon=lam.epsilon, delta=DELTA / 4, sensitivity=bx**2
    ) == pytest.approx(lam.scale)
    assert lam.epsilon + sk.epsilon == pytest.approx(eps / 2)
    assert len(grads) == T and all(r.sensitivity == pytest.approx(bx * by) for r in grads)
    # T gradient releases jointly: exactly the analytic Gaussian at (eps/2, delta/4)
    assert mech.compose(grads, delta=DELTA / 4)["exact_epsilon"] == pytest.approx(eps / 2, rel=1e-6)
    assert sum(r.epsilon for r in rel) == pytest.approx(eps)
    assert sum(r.delta for r in rel) == pytest.approx(DELTA)


def test_ihm_tends_to_ols_as_epsilon_grows_with_enough_iterations():
    """Newton sketch: each step contracts the error by about sqrt(d/k); with T = 40
    iterations and negligible noise the output is OLS (T = 3 need not converge)."""
    X, y = rows(5000, 4, seed=6, by=1.0)
    st = stats_of(X, y)
    alg = get_algorithm("ihm")
    res = alg.fit(
        st,
        epsilon=1e5,
        delta=DELTA,
        rng=np.random.default_rng(0),
        size=4,
        rows=(X, y),
        params={"T": 40},
    )
    ref = ols(X, y)
    rel = np.linalg.norm(res.theta - ref, axis=1) / np.linalg.norm(ref)
    assert rel.max() < 1e-3
    with pytest.raises(DPRegError, match="T must be an integer >= 1"):
        alg.releases(epsilon=1.0, delta=DELTA, d=4, params={"T": 0})


# --------------------------------------------------------------------------
# DP-GD
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_dpgd_scales_equal_the_closed_forms(eps):
    rho = gd.zcdp_rho(eps, DELTA)
    assert rho + 2 * math.sqrt(rho * math.log(1 / DELTA)) == pytest.approx(eps)
    bx, by, n, T = 1.5, 0.5, 1000, 3
    gamma = bx * by
    lev = get_algorithm("dp-gd-lev").releases(
        epsilon=eps, delta=DELTA, d=3, bound_x=bx, bound_y=by, n=n
    )
    ar = get_algorithm("dp-gd").releases(epsilon=eps, delta=DELTA, d=3, bound_x=bx, bound_y=by, n=n)
    # spec M16 on the mean gradient: sigma^2 = 2 T gamma^2 / (rho n^2) (replace-one)
    assert (lev[0].scale / n) ** 2 == pytest.approx(2 * T * gamma**2 / (rho * n**2))
    assert ar[0].scale == pytest.approx(lev[0].scale / 2)  # add/remove: sensitivity gamma
    assert len(ar) == T and sum(r.epsilon for r in ar) == pytest.approx(eps)
    # T steps compose in zCDP to rho: sum of Delta^2 / (2 sigma^2)
    assert sum(r.sensitivity**2 / (2 * r.scale**2) for r in ar) == pytest.approx(rho)


def test_dpgd_tends_to_clipped_gradient_descent_as_epsilon_grows():
    X, y = rows(2000, 3, seed=7)
    st = stats_of(X, y)
    eta = 2000 / np.linalg.eigvalsh(X.T @ X)[-1]  # step 1/lambda_max of the mean loss
    # at eps = 1e14 the noise on theta is about (eta/n) sqrt(T/(2 eps)) sqrt(T) ~ 2e-8
    res = get_algorithm("dp-gd").fit(
        st,
        epsilon=1e14,
        delta=DELTA,
        rng=np.random.default_rng(0),
        size=3,
        rows=(X, y),
        params={"T": 60, "eta": eta},
    )
    theta = np.zeros(3)
    for _ in range(60):
        theta = theta + eta / 2000 * X.T @ np.clip(y - X @ theta, -1.0, 1.0)
    np.testing.assert_allclose(res.theta, np.tile(theta, (3, 1)), rtol=0, atol=1e-6)
    # and that iterate is OLS here (well conditioned; residuals never reach the clip)
    assert np.linalg.norm(theta - ols(X, y)) < 1e-3 * np.linalg.norm(ols(X, y))


def test_failed_safety_tests_are_counted_in_the_sweep_and_summary():
    """A failed trial reaches the trial table as failed with theta = 0's error and
    the summary counts it and scores it with that error."""
    import warnings

    from dpreg.engine.sweep import sweep_arrays
    from dpreg.report.summary import summarise

    X, y = rows(3000, 3, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sweep's notes on algorithms outside validity
        trials = sweep_arrays(
            X,
            y,
            dataset="toy",
            seed=1,
            folds=2,
            variants={"maxnorm": {"stats": "train", "scale": "maxnorm"}},
            epsilons=[0.1, 20.0],
            delta=DELTA,
            algorithms=["tukey-em"],
            repeats=5,
        )
    failed = trials.groupby("epsilon")["failed"].sum()
    assert failed[0.1] == 10 and failed[20.0] == 0  # m = 250, t = 62: 262 > t at eps 0.1
    # a failed trial (bottom) is scored as theta = 0: a finite MSE and R^2, both kept
    bottom = trials.loc[trials["failed"]]
    assert np.isfinite(bottom[["mse", "r2"]].to_numpy()).all()
    summary = summarise(trials, experiment="toy", resamples=200).set_index("epsilon")
    assert summary.loc[0.1, "failed"] == 10 and summary.loc[0.1, "trials"] == 10
    # every trial failed at eps 0.1, and the table scores them: the trivial errors' median
    assert summary.loc[0.1, "excluded"] == 0
    assert summary.loc[0.1, "mse_median"] == np.median(bottom.loc[bottom["epsilon"] == 0.1, "mse"])
    assert summary.loc[20.0, "failed"] == 0 and np.isfinite(summary.loc[20.0, "mse_median"])


def test_sweep_partitions_once_per_fold_and_shares_it_across_epsilon(monkeypatch):
    """The partition and batch fits (TukeyEM's cost) do not depend on epsilon: the sweep
    fits them once per (variant, fold) and every epsilon's trials start from the same
    models, while the Laplace/Gumbel draws differ per epsilon."""
    import warnings

    from dpreg.engine.sweep import sweep_arrays

    calls, seen = [], []
    real = tukey.partition_models

    def counting(X, y, m, *, rngs):
        calls.append(m)
        out = real(X, y, m, rngs=rngs)
        seen.append(out)
        return out

    monkeypatch.setattr(tukey, "partition_models", counting)
    X, y = rows(3000, 3, seed=8)
    kw = dict(
        dataset="toy",
        seed=1,
        folds=2,
        variants={"maxnorm": {"stats": "train", "scale": "maxnorm"}},
        delta=DELTA,
        algorithms=["tukey-em"],
        repeats=3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = sweep_arrays(X, y, epsilons=[20.0, 50.0], **kw)
        alone = sweep_arrays(X, y, epsilons=[50.0], **kw)
    assert len(calls) == 2 + 2, "one partition per fold and sweep, not per epsilon"
    # the same models whichever other epsilons are swept: the trials at 50 are equal
    np.testing.assert_array_equal(
        both.loc[both["epsilon"] == 50.0, "mse"].to_numpy(), alone["mse"].to_numpy()
    )
    np.testing.assert_array_equal(seen[0], seen[2])  # fold 0 of both sweeps
    # the privacy noise is still per epsilon: the two epsilons' answers differ
    a = both.loc[both["epsilon"] == 20.0, "mse"].to_numpy()
    b = both.loc[both["epsilon"] == 50.0, "mse"].to_numpy()
    assert not np.array_equal(a, b)
