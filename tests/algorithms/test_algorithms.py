"""Sufficient statistics and the regression algorithms (SPEC section 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS, get_algorithm, solve_batched
from dpreg.preprocess.stats import ScoreStats, SuffStats
from dpreg.privacy import mechanisms as mech

DELTA = 1e-6
#: The SSP/AdaSSP/functional families this file covers (closed forms, limits);
#: the other families have their own test files, and tests/algorithms/test_registry.py
#: holds every entry to the shared contract.
_FAMILIES = ("dpreg.algorithms.ssp", "dpreg.algorithms.adassp", "dpreg.algorithms.functional")
PRIVATE = [
    name for name, alg in ALGORITHMS.items() if alg.private and alg.fit_fn.__module__ in _FAMILIES
]
GAUSSIAN_PRIVATE = [n for n in PRIVATE if n != "functional"]
ADASSP = ["adassp-wang", "adassp", "adassp-analytic", "adassp-gdp"]
SSP = ["ssp-wang", "ssp", "ssp-gdp"]


@pytest.fixture(scope="module")
def data(make_data):
    return make_data()


@pytest.fixture(scope="module")
def stats(data):
    return SuffStats.from_arrays(*data)


# --------------------------------------------------------------------------
# SuffStats / ScoreStats
# --------------------------------------------------------------------------
def test_suffstats_from_arrays_matches_direct(data):
    X, y = data
    s = SuffStats.from_arrays(X, y)
    assert s.n == X.shape[0] and s.d == X.shape[1]
    np.testing.assert_allclose(s.xtx, X.T @ X, rtol=1e-13)
    np.testing.assert_allclose(s.xty, X.T @ y, rtol=1e-13)
    assert s.yty == pytest.approx(float(y @ y), rel=1e-13)
    # hand-computed 2x2 example
    s = SuffStats.from_arrays(np.array([[0.6, 0.0], [0.0, -0.8]]), np.array([0.5, -1.0]))
    np.testing.assert_allclose(s.xtx, [[0.36, 0.0], [0.0, 0.64]], atol=1e-15)
    np.testing.assert_allclose(s.xty, [0.3, 0.8], atol=1e-15)
    assert s.yty == pytest.approx(1.25)


def test_suffstats_total_minus_fold_equals_rest(data):
    X, y = data
    mask = np.zeros(len(y), dtype=bool)
    mask[::7] = True
    total = SuffStats.from_arrays(X, y)
    fold = SuffStats.from_arrays(X[mask], y[mask])
    rest = SuffStats.from_arrays(X[~mask], y[~mask])
    diff = total - fold
    assert diff.n == rest.n
    np.testing.assert_allclose(diff.xtx, rest.xtx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(diff.xty, rest.xty, rtol=1e-12, atol=1e-12)
    assert diff.yty == pytest.approx(rest.yty, rel=1e-12)
    both = fold + rest
    np.testing.assert_allclose(both.xtx, total.xtx, rtol=1e-12, atol=1e-12)
    with pytest.raises(DPRegError):
        _ = fold - total


def test_suffstats_lambda_min(stats):
    ev = np.linalg.eigvalsh(stats.xtx)[0]
    assert stats.lambda_min() == pytest.approx(ev, rel=1e-12)
    assert stats.lambda_min(1.0) == pytest.approx(ev + 1.0, rel=1e-12)


def test_suffstats_rejects_rows_breaking_bounds(data):
    X, y = data
    X = X.copy()
    X[5] *= 1.5 / np.linalg.norm(X[5])
    with pytest.raises(DPRegError, match="bound_x") as info:
        SuffStats.from_arrays(X, y)
    assert "row 5" in str(info.value)
    # the same rows pass with a bound that covers them
    assert SuffStats.from_arrays(X, y, bound_x=1.5).bound_x == 1.5
    X2, y2 = data
    y2 = y2.copy()
    y2[3] = -1.01
    with pytest.raises(DPRegError, match="bound_y"):
        SuffStats.from_arrays(X2, y2)


def test_suffstats_accepts_rows_at_the_bound_up_to_rounding():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # norms 1 +- 1 ulp
    y = np.clip(rng.normal(size=50), -1, 1)
    assert SuffStats.from_arrays(X, y).n == 50


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_suffstats_rejects_non_finite(data, bad):
    X, y = (a.copy() for a in data)
    X[2, 1] = bad
    with pytest.raises(DPRegError, match="X"):
        SuffStats.from_arrays(X, y)
    X, y = (a.copy() for a in data)
    y[0] = bad
    with pytest.raises(DPRegError, match="y"):
        SuffStats.from_arrays(X, y)


def test_suffstats_rejects_bad_bounds_and_shapes(data):
    X, y = data
    with pytest.raises(DPRegError, match="bound_x"):
        SuffStats.from_arrays(X, y, bound_x=0.0)
    with pytest.raises(DPRegError, match="bound_y"):
        SuffStats.from_arrays(X, y, bound_y=-1.0)
    with pytest.raises(DPRegError):
        SuffStats.from_arrays(X, y[:-1])
    with pytest.raises(DPRegError):
        SuffStats.from_arrays(X[:, 0], y)


def test_suffstats_refuses_to_combine_different_bounds(data):
    X, y = data
    a = SuffStats.from_arrays(X, y)
    b = SuffStats.from_arrays(X, y, bound_x=2.0)
    with pytest.raises(DPRegError):
        _ = a + b


def test_scorestats_mse_and_r2_equal_direct_computation():
    rng = np.random.default_rng(7)
    m, d = 40, 3
    U = rng.normal(size=(m, d))
    t = rng.normal(size=m)
    o = 0.3
    r = t - o
    sc = ScoreStats.from_arrays(U, r, t)
    thetas = rng.normal(size=(6, d))
    pred = o + thetas @ U.T  # (6, m)
    mse = ((t - pred) ** 2).mean(axis=1)
    r2 = 1 - ((t - pred) ** 2).sum(axis=1) / ((t - t.mean()) ** 2).sum()
    np.testing.assert_allclose(sc.mse(thetas), mse, rtol=1e-10)
    np.testing.assert_allclose(sc.r2(thetas), r2, rtol=1e-10)
    # chunks add up
    half = ScoreStats.from_arrays(U[:15], r[:15], t[:15]) + ScoreStats.from_arrays(
        U[15:], r[15:], t[15:]
    )
    np.testing.assert_allclose(half.mse(thetas), mse, rtol=1e-10)


# --------------------------------------------------------------------------
# non-private algorithms
# --------------------------------------------------------------------------
def test_trivial_is_zero(stats):
    res = ALGORITHMS["trivial"].fit(
        stats, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), size=4
    )
    assert res.theta.shape == (4, stats.d)
    assert np.all(res.theta == 0.0)
    assert not res.failed.any()


def test_ols_is_least_squares(data, stats):
    X, y = data
    expected = np.linalg.lstsq(X, y, rcond=None)[0]
    res = ALGORITHMS["ols"].fit(
        stats, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), size=3
    )
    np.testing.assert_allclose(res.theta, np.tile(expected, (3, 1)), rtol=1e-9, atol=1e-12)
    assert not res.failed.any()


def test_ridge_is_unit_ridge_whatever_the_offset(data, stats):
    X, y = data
    expected = np.linalg.inv(X.T @ X + np.eye(X.shape[1])) @ (X.T @ y)
    for c in (0.0, 1.0, 5.0):
        res = ALGORITHMS["ridge"].fit(
            stats, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), size=2, xtx_offset=c
        )
        np.testing.assert_allclose(res.theta, np.tile(expected, (2, 1)), rtol=1e-10)
        np.testing.assert_array_equal(res.lam, 1.0)


# --------------------------------------------------------------------------
# closed-form noise scales
# --------------------------------------------------------------------------
def closed_form_scales(name, eps, delta, d, bx, by):
    """Per-release scale by SPEC section 3, in release order."""
    sxx, sxy = bx * bx, bx * by
    if name == "ssp-wang":
        s = math.sqrt(math.log(4 / delta)) / eps
        return [s * sxx, s * sxy]
    if name == "ssp":
        s = math.sqrt(2 * math.log(2.5 / delta)) * 2 / eps
        return [s * sxx, s * sxy]
    if name == "ssp-gdp":
        mu = mech.gdp_mu(epsilon=eps, delta=delta)
        return [sxx * math.sqrt(2) / mu, sxy * math.sqrt(2) / mu]
    if name == "adassp-wang":
        s = math.sqrt(math.log(6 / delta)) / (eps / 3)
        return [s * sxx, s * sxx, s * sxy]
    if name == "adassp":
        s = math.sqrt(2 * math.log(3.75 / delta)) / (eps / 3)
        return [s * sxx, s * sxx, s * sxy]
    if name == "adassp-analytic":
        mu = mech.gdp_mu(epsilon=eps / 3, delta=delta / 3)
        return [sxx / mu, sxx / mu, sxy / mu]
    if name == "adassp-gdp":
        mu = mech.gdp_mu(epsilon=eps, delta=delta)
        return [sxx * math.sqrt(3) / mu, sxx * math.sqrt(3) / mu, sxy * math.sqrt(3) / mu]
    if name == "functional":
        return [(d * bx * bx + 2 * math.sqrt(d) * bx * by) / eps]
    if name in ("adassp-tight", "ssp-tight"):  # equal mu per release, exact GDP: as -gdp
        return closed_form_scales(name.replace("-tight", "-gdp"), eps, delta, d, bx, by)
    raise AssertionError(name)


@pytest.mark.parametrize("name", PRIVATE)
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_releases_equal_closed_forms(name, eps):
    d, bx, by = 4, 2.0, 0.5
    rel = ALGORITHMS[name].releases(epsilon=eps, delta=DELTA, d=d, bound_x=bx, bound_y=by)
    expected = closed_form_scales(name, eps, DELTA, d, bx, by)
    assert [r.scale for r in rel] == pytest.approx(expected, rel=1e-12)
    # the nominal per-release budgets add up to the total
    assert sum(r.epsilon for r in rel) == pytest.approx(eps, rel=1e-12)
    assert sum(r.delta for r in rel) == pytest.approx(
        0.0 if name == "functional" else DELTA, rel=1e-12
    )


@pytest.mark.parametrize("name", ["trivial", "ols", "ridge"])
def test_non_private_algorithms_release_nothing(name):
    assert ALGORITHMS[name].releases(epsilon=1.0, delta=DELTA, d=3) == []


def test_release_validity_flags():
    # classical calibrations are proven for per-release epsilon < 1
    for name, k in (("ssp", 2), ("adassp", 3)):
        alg = ALGORITHMS[name]
        below = alg.releases(epsilon=0.999 * k, delta=DELTA, d=3)
        at = alg.releases(epsilon=1.0 * k, delta=DELTA, d=3)
        assert all(r.valid for r in below)
        assert not any(r.valid for r in at)
    for name in ("adassp-analytic", "adassp-gdp", "ssp-gdp"):
        assert all(r.valid for r in ALGORITHMS[name].releases(epsilon=50.0, delta=DELTA, d=3))


def test_outside_validity_thresholds():
    def outside(name, eps):
        return ALGORITHMS[name].outside_validity(epsilon=eps, delta=DELTA, d=3)

    # classical calibration: proven while the per-release epsilon is < 1
    assert not outside("ssp", 1.999)
    assert outside("ssp", 2.0) and outside("ssp", 10.0)
    assert not outside("adassp", 2.999)
    assert outside("adassp", 3.0) and outside("adassp", 10.0)
    for name in ("adassp-analytic", "adassp-gdp", "ssp-gdp", "functional", "ridge", "trivial"):
        assert not outside(name, 1e6)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_outside_validity_is_the_ledgers_release_validity(name):
    """One definition of validity: the flag equals 'some release misses its budget'."""
    alg = ALGORITHMS[name]
    for eps in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0):
        rel = alg.releases(epsilon=eps, delta=DELTA, d=5, n=1000)
        assert alg.outside_validity(epsilon=eps, delta=DELTA, d=5, n=1000) == (
            not all(r.valid for r in rel)
        )


def test_unknown_algorithm_lists_known_names():
    with pytest.raises(DPRegError, match="algorithm") as info:
        get_algorithm("adasp")
    msg = str(info.value)
    assert "'adasp'" in msg
    for name in ALGORITHMS:
        assert name in msg


# --------------------------------------------------------------------------
# private algorithms: limits, determinism, prefix stability
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", PRIVATE)
@pytest.mark.parametrize("c", [0.0, 1.0])
def test_huge_epsilon_tends_to_non_private_solution(name, c, data, stats):
    X, y = data
    d = X.shape[1]
    A = X.T @ X + c * np.eye(d)
    expected = np.linalg.solve(A, X.T @ y)
    eps = 1e8
    res = ALGORITHMS[name].fit(
        stats, epsilon=eps, delta=DELTA, rng=np.random.default_rng(1), size=5, xtx_offset=c
    )
    assert not res.failed.any()
    if ALGORITHMS[name].has_lambda:
        # lambda -> 0 on well-conditioned data (lambda_min(A) >> noise)
        np.testing.assert_array_equal(res.lam, 0.0)
    # first-order perturbation: theta - expected = A^{-1}(e - E theta) with entries
    # of e, E of sd <= sigma_max (Laplace: sd = sqrt(2) b); 10 sd per entry is ample
    sig = max(closed_form_scales(name, eps, DELTA, d, 1.0, 1.0)) * math.sqrt(2)
    tol = 10 * sig * d * (1 + np.linalg.norm(expected)) / np.linalg.eigvalsh(A)[0]
    assert tol < 1e-3  # the comparison is meaningful
    np.testing.assert_allclose(res.theta, np.tile(expected, (5, 1)), rtol=0, atol=tol)


@pytest.mark.parametrize("name", PRIVATE)
def test_repeats_differ_at_small_epsilon(name, stats):
    res = ALGORITHMS[name].fit(
        stats, epsilon=0.1, delta=DELTA, rng=np.random.default_rng(2), size=6
    )
    th = res.theta[~res.failed]
    assert len(th) >= 2
    assert len({tuple(row) for row in th}) == len(th)


@pytest.mark.parametrize("name", [*PRIVATE, "trivial", "ols", "ridge"])
def test_same_seed_bit_identical(name, stats):
    kw = dict(epsilon=0.5, delta=DELTA, size=7)
    a = ALGORITHMS[name].fit(stats, rng=np.random.default_rng(123), **kw)
    b = ALGORITHMS[name].fit(stats, rng=np.random.default_rng(123), **kw)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.lam, b.lam)
    np.testing.assert_array_equal(a.failed, b.failed)
    if ALGORITHMS[name].private:
        c = ALGORITHMS[name].fit(stats, rng=np.random.default_rng(124), **kw)
        assert not np.array_equal(a.theta, c.theta)


@pytest.mark.parametrize("name", PRIVATE)
def test_first_repeats_unchanged_when_size_grows(name, stats):
    kw = dict(epsilon=0.7, delta=DELTA)
    small = ALGORITHMS[name].fit(stats, rng=np.random.default_rng(5), size=4, **kw)
    large = ALGORITHMS[name].fit(stats, rng=np.random.default_rng(5), size=25, **kw)
    np.testing.assert_array_equal(small.theta, large.theta[:4])
    np.testing.assert_array_equal(small.lam, large.lam[:4])
    np.testing.assert_array_equal(small.failed, large.failed[:4])


# --------------------------------------------------------------------------
# private algorithms rebuilt by hand from SPEC section 3 and the same streams
# --------------------------------------------------------------------------
def _matrix_by_hand(name: str, z: np.ndarray, d: int, scale: float) -> np.ndarray:
    """Noise matrices from each repeat's normals, written out entry by entry."""
    out = np.empty((z.shape[0], d, d))
    for r in range(z.shape[0]):
        if MATRIX_NOISE[name] is mech.symmetric_noise:
            k = 0
            for i in range(d):
                for j in range(i, d):  # upper triangle, row by row, mirrored
                    out[r, i, j] = out[r, j, i] = z[r, k]
                    k += 1
        else:
            G = z[r].reshape(d, d)
            out[r] = G if MATRIX_NOISE[name] is mech.full_noise else (G + G.T) / 2
    return out * scale


def _width(name: str, d: int) -> int:
    return d * (d + 1) // 2 if MATRIX_NOISE[name] is mech.symmetric_noise else d * d


MATRIX_NOISE = {
    "ssp-wang": mech.full_noise,
    "ssp": mech.symmetric_noise,
    "ssp-gdp": mech.symmetric_noise,
    "adassp-wang": mech.wang_symmetric_noise,
    "adassp": mech.symmetric_noise,
    "adassp-analytic": mech.symmetric_noise,
    "adassp-gdp": mech.symmetric_noise,
}


def adassp_lambda_by_hand(name, lam_min, z, eps, delta, d, bx, rho):
    """Steps 2-3 of AdaSSP as SPEC section 3 writes them for each variant."""
    if name == "adassp-wang":
        L = math.log(6 / delta)
        s = math.sqrt(L) / (eps / 3)
        lam_t = np.maximum(lam_min + s * bx**2 * z - (L / (eps / 3)) * bx**2, 0.0)
        return np.maximum(
            0.0, math.sqrt(d * L * math.log(2 * d * d / rho)) * bx**2 / (eps / 3) - lam_t
        )
    if name == "adassp":
        Lp = 2 * math.log(3.75 / delta)
        s = math.sqrt(Lp) / (eps / 3)
        lam_t = np.maximum(lam_min + s * bx**2 * z - (Lp / (eps / 3)) * bx**2, 0.0)
        return np.maximum(
            0.0, math.sqrt(d * Lp * math.log(2 * d * d / rho)) * bx**2 / (eps / 3) - lam_t
        )
    sigma_l = closed_form_scales(name, eps, delta, d, bx, 1.0)[0]
    lam_t = np.maximum(lam_min + sigma_l * z - math.sqrt(math.log(6 / delta)) * sigma_l, 0.0)
    return np.maximum(0.0, math.sqrt(d * math.log(2 * d * d / rho)) * sigma_l - lam_t)


@pytest.fixture(scope="module")
def wide_stats(make_data):
    X, y = make_data(n=300, d=3, seed=4, bx=2.0, by=1.5)
    return SuffStats.from_arrays(X, y, bound_x=2.0, bound_y=1.5)


@pytest.mark.parametrize("name", ADASSP)
def test_adassp_lambda_and_theta_by_hand(name, wide_stats):
    st = wide_stats
    d, bx, by, rho, c, R = st.d, 2.0, 1.5, 0.05, 1.0, 40
    A = st.xtx + c * np.eye(d)
    lam_min = np.linalg.eigvalsh(A)[0]
    seen_zero = seen_positive = seen_clipped_tilde = False
    for eps in (0.5, 5.0, 20.0, 60.0, 200.0):
        res = ALGORITHMS[name].fit(
            st,
            epsilon=eps,
            delta=DELTA,
            rng=np.random.default_rng(77),
            size=R,
            rho=rho,
            xtx_offset=c,
        )
        # one block of normals per repeat: [lambda | XtX | Xty]
        w = _width(name, d)
        Z = np.random.default_rng(77).standard_normal((R, 1 + w + d))
        z = Z[:, 0]
        lam = adassp_lambda_by_hand(name, lam_min, z, eps, DELTA, d, bx, rho)
        np.testing.assert_allclose(res.lam, lam, rtol=1e-9, atol=1e-9)
        seen_zero |= bool(np.any(lam == 0))
        seen_positive |= bool(np.any(lam > 0))
        sig = closed_form_scales(name, eps, DELTA, d, bx, by)
        sigma_l = sig[0]
        shift = (
            math.sqrt(2 * math.log(3.75 / DELTA))
            if name == "adassp"
            else math.sqrt(math.log(6 / DELTA))
        )
        seen_clipped_tilde |= bool(
            np.any(lam_min + sigma_l * z - shift * sigma_l < 0) and np.any(lam > 0)
        )
        E = _matrix_by_hand(name, Z[:, 1 : 1 + w], d, sig[1])
        e = Z[:, 1 + w :] * sig[2]
        theta = np.stack(
            [np.linalg.solve(A + E[r] + lam[r] * np.eye(d), st.xty + e[r]) for r in range(R)]
        )
        np.testing.assert_allclose(res.theta, theta, rtol=1e-8, atol=1e-10)
    # the grid exercises both branches of the max()
    assert seen_zero and seen_positive and seen_clipped_tilde


@pytest.mark.parametrize("name", SSP)
@pytest.mark.parametrize("c", [0.0, 1.0])
def test_ssp_theta_by_hand(name, c, wide_stats):
    st = wide_stats
    d, bx, by, R, eps = st.d, 2.0, 1.5, 20, 3.0
    res = ALGORITHMS[name].fit(
        st, epsilon=eps, delta=DELTA, rng=np.random.default_rng(8), size=R, xtx_offset=c
    )
    # one block of normals per repeat: [XtX | Xty]
    w = _width(name, d)
    Z = np.random.default_rng(8).standard_normal((R, w + d))
    sig = closed_form_scales(name, eps, DELTA, d, bx, by)
    E = _matrix_by_hand(name, Z[:, :w], d, sig[0])
    e = Z[:, w:] * sig[1]
    A = st.xtx + c * np.eye(d)
    theta = np.stack([np.linalg.solve(A + E[r], st.xty + e[r]) for r in range(R)])
    np.testing.assert_allclose(res.theta, theta, rtol=1e-8, atol=1e-10)
    # Wang's SSP perturbs XtX with a non-symmetric matrix, the fixed versions symmetrically
    assert np.array_equal(E, np.swapaxes(E, 1, 2)) == (name != "ssp-wang")


def test_functional_theta_by_hand(wide_stats):
    """Laplace(b) on each objective coefficient: M_jj, 2 M_jl (j < l), -2 beta_j."""
    st = wide_stats
    d, bx, by, R, eps, c = st.d, 2.0, 1.5, 15, 2.0, 1.0
    res = ALGORITHMS["functional"].fit(
        st, epsilon=eps, delta=DELTA, rng=np.random.default_rng(9), size=R, xtx_offset=c
    )
    b = (d * bx * bx + 2 * math.sqrt(d) * bx * by) / eps
    # one block of Laplace variables per repeat: [quadratic coefficients | linear ones]
    iu = np.triu_indices(d)
    L = np.random.default_rng(9).laplace(0.0, 1.0, size=(R, iu[0].size + d)) * b
    nm, nv = L[:, : iu[0].size], L[:, iu[0].size :]
    theta = []
    for r in range(R):
        M = st.xtx + c * np.eye(d)
        for k, (i, j) in enumerate(zip(*iu, strict=True)):
            if i == j:
                M[i, i] += nm[r, k]
            else:  # noise on the coefficient 2 M_ij of theta_i theta_j
                M[i, j] += nm[r, k] / 2
                M[j, i] += nm[r, k] / 2
        theta.append(np.linalg.solve(M, st.xty + nv[r] / 2))
    np.testing.assert_allclose(res.theta, np.array(theta), rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------
# failed trials
# --------------------------------------------------------------------------
def test_solve_batched_marks_singular_and_non_finite_repeats():
    A = np.array([np.eye(2), [[1.0, 1.0], [1.0, 1.0]], 2 * np.eye(2), [[1e-310, 0.0], [0.0, 1.0]]])
    b = np.array([[1.0, 2.0], [1.0, 1.0], [2.0, 4.0], [1e10, 1.0]])
    theta, failed = solve_batched(A, b)
    np.testing.assert_array_equal(failed, [False, True, False, True])
    assert np.all(np.isnan(theta[failed]))
    np.testing.assert_allclose(theta[~failed], [[1.0, 2.0], [1.0, 2.0]])


def test_singular_noisy_system_counts_failed_trials(monkeypatch):
    """Forced singular case: rank-deficient X, c = 0 and zero noise on even repeats."""
    X = np.array([[0.5, 0.5], [0.5, 0.5], [-0.5, -0.5]])
    y = np.array([0.5, 0.4, -0.3])
    st = SuffStats.from_arrays(X, y)
    assert np.linalg.matrix_rank(st.xtx) == 1

    def fake_laplace(shape, *, scale, rng):
        out = np.zeros(shape)
        out[1::2] = 0.3  # odd repeats get noise, even repeats none
        return out

    monkeypatch.setattr(mech, "laplace_noise", fake_laplace)
    res = ALGORITHMS["functional"].fit(
        st, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), size=6, xtx_offset=0.0
    )
    np.testing.assert_array_equal(res.failed, [True, False] * 3)
    assert np.all(np.isnan(res.theta[0::2]))
    assert np.all(np.isfinite(res.theta[1::2]))
    # the solved repeats equal the hand solution of (XtX + E) theta = Xty + e/2
    M = st.xtx + np.array([[0.3, 0.15], [0.15, 0.3]])
    np.testing.assert_allclose(res.theta[1], np.linalg.solve(M, st.xty + 0.15), rtol=1e-12)


# --------------------------------------------------------------------------
# argument checking
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "word"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"rho": 0.0}, "rho"),
        ({"rho": 1.5}, "rho"),
        ({"xtx_offset": -1.0}, "xtx_offset"),
        ({"xtx_offset": float("inf")}, "xtx_offset"),
    ],
)
def test_fit_rejects_bad_arguments(stats, kw, word):
    args = dict(epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), size=2)
    args.update(kw)
    with pytest.raises(DPRegError, match=word):
        ALGORITHMS["adassp"].fit(stats, **args)


def test_fit_requires_suffstats(data):
    X, y = data
    with pytest.raises(DPRegError, match="SuffStats"):
        ALGORITHMS["ssp"].fit((X, y), epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0))


def test_wang_release_validity_follows_the_exact_profile():
    """Wang's scales have no proof: a release is valid iff the exact profile meets it.

    SSP's scale misses its nominal per-release delta at every epsilon and so
    does the whole algorithm.  AdaSSP's releases meet (eps/3, delta/3) at small
    epsilon only, yet composed exactly the algorithm meets (eps, delta) at
    every epsilon of the grid (Dong, Roth & Su 2019, Corollary 3.3).
    """
    for eps in (0.01, 0.1, 1.0, 5.0, 10.0):
        for name in ("ssp-wang", "adassp-wang"):
            rel = ALGORITHMS[name].releases(epsilon=eps, delta=DELTA, d=4)
            for r in rel:
                exact = mech.gdp_delta(r.epsilon, r.sensitivity / r.scale)
                assert r.valid == (exact <= r.delta)
            total = mech.compose(rel, delta=DELTA)
            if name == "ssp-wang":
                assert not any(r.valid for r in rel)
                assert total["exact_delta"] > DELTA
            else:
                assert total["exact_delta"] <= 1e-10 < DELTA
    assert all(r.valid for r in ALGORITHMS["adassp-wang"].releases(epsilon=0.1, delta=DELTA, d=4))
    assert not any(
        r.valid for r in ALGORITHMS["adassp-wang"].releases(epsilon=5.0, delta=DELTA, d=4)
    )
