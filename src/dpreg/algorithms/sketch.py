"""Gaussian-sketch regression: Sheffet's sketched OLS and Iterative Hessian Mixing.

Both release Gaussian sketches ``S M + s N`` of a data matrix ``M`` (with
``S`` and ``N`` standard normal) and use them only through their Gram
matrix.  The rows of ``S M + s N`` are i.i.d. ``N(0, M^T M + s^2 I)``, so

    (S M + s N)^T (S M + s N) ~ Wishart_p(k, M^T M + s^2 I),

and the Gram matrix is drawn *exactly in law* from the sufficient statistic
``M^T M`` as ``C^{1/2} G^T G C^{1/2}`` with ``C = M^T M + s^2 I`` and ``G``
a ``k x p`` standard normal matrix (:func:`sketch_gram`): ``O(k p^2 + p^3)``
per repeat instead of ``O(k n p)``.  Neither algorithm releases anything
else about the sketch, so this is the same algorithm, not an approximation.

``sketch-ols`` (Sheffet 2017, as re-implemented by Lev et al. 2025)
-------------------------------------------------------------------
``A = [X y]``, ``B^2`` a bound on the squared row norm of ``A``,
``k = max(floor(2.5 d), floor(2.5 ln(1/rho_s)))`` with ``rho_s = 1e-10``,
``w^2 = (4 B^2 / eps) (sqrt(2 k ln(8/delta)) + ln(8/delta))``.  With
``Z ~ Lap(4 B^2 / eps)``: if ``lambda_min(A^T A) > w^2 + Z + 4 B^2 ln(1/delta) / eps``
the sketch is ``S A``, otherwise ``S A + w N``; the output is OLS on the
sketch.  ``sketch-ols`` uses ``B^2 = B_X^2 + B_Y^2``.  ``sketch-ols-lev``
is Lev et al.'s code, which sets ``B^2 = 1`` on data with ``B_X = B_Y = 1``
and says this compensates a factor 2 between zero-out and add/remove
neighbours: here ``B^2 = (B_X^2 + B_Y^2) / 2``.  *Doubts*: that factor, and
Sheffet's constants (``ln(8/delta)``, the factor 4), could not be checked
against the paper; the variant is marked as a reproduction whose privacy the
project does not claim.  Sheffet's Algorithm 1 appends ``w I`` rows to
``A`` before sketching; ``S [A; w I] = S A + w S_2`` with ``S_2`` a fresh
``k x p`` standard normal block, which is the code's ``S A + w N`` exactly
in law.

Ledger: the Laplace test (L1 sensitivity ``B_X^2 + B_Y^2``, Weyl) at its
own scale, and the sketch as an externally calibrated release carrying the
rest of Sheffet's ``(eps, delta)`` (the split is the test's ``eps/4`` and the
sketch's ``3 eps/4``; Sheffet's own split was not checked).

``ihm`` (Lev, Shenfeld, Srinivasan, Ligett & Wilson 2026)
---------------------------------------------------------
``T = 3`` Newton-sketch steps from ``theta_0 = 0``: ``theta_t = theta_{t-1} +
H_t^{-1} g_t`` with ``H_t = (S_t X + s N_t)^T (S_t X + s N_t) / k`` and
``g_t = X^T clip(y - X theta_{t-1}, -C, C) + sigma_g xi_t``, ``C = B_Y``.
Calibration (authors' code ``omrilev1/HessianMix`` at 3765136): ``rho =
delta/10``, ``k = max(floor(6 d), floor(6 ln(4T/rho)))``, ``delta' = delta/4``,
``tau = sqrt(2 ln max(4/delta, 4/rho))``; ``gamma`` is the smallest value with
``min_{1 < alpha < gamma/B_X^2} E(alpha, gamma) < eps/2`` (:func:`ihm_epsilon`,
:func:`ihm_gamma`); ``sigma_l = gamma / sqrt(k)``;
``lam~ = max(0, lambda_min(X^T X) - sigma_l (tau - z))``;
``s^2 = max(0, gamma - lam~)``; ``sigma_g = sqrt(T) sigma_aG(eps/2, delta';
B_X C)`` (analytic Gaussian mechanism).  The sketches and ``lambda_min`` get
``(eps/2, 3 delta/4)``, the gradients ``(eps/2, delta/4)``; basic composition
gives ``(eps, delta)`` under add/remove (one row changes ``X^T X`` by a rank-one
``x x^T``).  *Doubts*: the theorem numbers of the paper and whether its v2
differs were not checked; the classical-Gaussian cost of ``lambda_min``
(``sqrt(2 ln(1.25/delta')) B_X^2 / sigma_l``) is proven for a cost below 1
only; the release is marked valid where the exact Gaussian privacy profile
of ``sigma_l`` meets that cost (Balle & Wang 2018, Theorem 8); it does up
to epsilon of a few tens at delta = 1e-6 (not at epsilon = 1000).

Both assume add/remove neighbours, like SSP/AdaSSP, so no conversion is
needed in a common figure.

References
----------
Sheffet, O. (2017). Differentially private ordinary least squares. ICML
(Algorithm 1).  Blocki, J., Blum, A., Datta, A. & Sheffet, O. (2012). The
Johnson-Lindenstrauss transform itself preserves differential privacy. FOCS.
Lev, O. et al. (2025). The Gaussian mixing mechanism (arXiv 2505.24603);
code ``omrilev1/GaussMix``.
Lev, O., Shenfeld, M., Srinivasan, V., Ligett, K. & Wilson, A. C. (2026).
Iterative Hessian mixing (arXiv 2601.07545); code ``omrilev1/HessianMix``.
Canonne, C., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS (their conversion from Renyi DP to (eps, delta)).
Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism. ICML.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import (
    FitOptions,
    FitResult,
    PendingSolve,
    ReleaseContext,
    finish,
    solve_batched,
)
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.privacy.renyi import mixing_rdp, rdp_to_dp

__all__ = [
    "ENTRIES",
    "ihm_epsilon",
    "ihm_gamma",
    "ihm_sizes",
    "mixing_rdp",
    "rdp_to_dp",
    "sheffet_sizes",
    "sketch_gram",
]

#: Failure probability of Sheffet's sketch size (Lev et al.'s setting).
SHEFFET_RHO = 1e-10


# --------------------------------------------------------------------------
# the sketch-Gram identity
# --------------------------------------------------------------------------
def sketch_gram(eig: tuple[np.ndarray, np.ndarray], s2: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Gram matrices of Gaussian sketches ``S M + s N``, drawn from ``M^T M``.

    Parameters
    ----------
    eig : (w, V)
        Eigen-decomposition of ``M^T M`` (``p`` eigenvalues, ``p x p``).
    s2 : ndarray, shape (R,)
        Noise variance ``s^2`` of each repeat.
    G : ndarray, shape (R, k, p)
        Standard normals.

    Returns
    -------
    ndarray, shape (R, p, p)
        ``C_r^{1/2} G_r^T G_r C_r^{1/2}`` with ``C_r = M^T M + s2_r I``, which
        has the law ``Wishart_p(k, C_r)`` of the sketch's Gram matrix.
    """
    w, V = eig
    root = np.sqrt(np.maximum(w, 0.0)[None, :] + np.asarray(s2)[:, None])  # (R, p)
    GV = G @ V  # (R, k, p): the rows of G V are again i.i.d. standard normal in law
    W = GV * root[:, None, :]
    inner = np.einsum("rki,rkj->rij", W, W)
    return V @ inner @ V.T


# --------------------------------------------------------------------------
# Sheffet's sketch
# --------------------------------------------------------------------------
def sheffet_sizes(d: int, epsilon: float, delta: float, b2: float) -> tuple[int, float]:
    """Sketch size ``k`` and appended-noise variance ``w^2`` of Sheffet's Algorithm 1.

    ``k = max(floor(2.5 d), floor(2.5 ln(1/1e-10)))`` (Lev et al. 2025's
    setting) and ``w^2 = (4 B^2/eps)(sqrt(2 k ln(8/delta)) + ln(8/delta))``.
    """
    k = max(int(2.5 * d), int(2.5 * math.log(1.0 / SHEFFET_RHO)))
    L = math.log(8.0 / delta)
    return k, 4.0 * b2 / epsilon * (math.sqrt(2.0 * k * L) + L)


def _sheffet_b2(ctx: ReleaseContext, lev: bool) -> float:
    full = ctx.bound_x**2 + ctx.bound_y**2
    return full / 2.0 if lev else full


def _releases_sheffet(ctx: ReleaseContext, *, lev: bool) -> list[Release]:
    eps, delta = ctx.epsilon, ctx.delta
    b2 = _sheffet_b2(ctx, lev)
    sens = ctx.bound_x**2 + ctx.bound_y**2  # L1 sensitivity of lambda_min(A^T A), add/remove
    b = 4.0 * b2 / eps
    test = mech.laplace_release(
        "lambda_min_test",
        sensitivity=sens,
        b=b,
        epsilon=eps / 4.0,
        calibration="sheffet-lev" if lev else "laplace",
        valid=sens / b <= eps / 4.0 * (1 + 1e-12),
    )
    _, w2 = sheffet_sizes(ctx.d, eps, delta, b2)
    # the sketch: its cost is Sheffet's claimed share (mechanism "sheffet-jl",
    # sensitivity = squared row-norm bound, scale = the appended noise level w)
    sk = mech.stated_release(
        "sketch",
        mechanism="sheffet-jl",
        epsilon=3.0 * eps / 4.0,
        delta=delta,
        calibration="sheffet-lev" if lev else "sheffet",
        sensitivity=b2,
        scale=math.sqrt(w2),
        valid=not lev,
    )
    return [test, sk]


def _fit_sheffet(
    stats: SuffStats, rel: list[Release], opts: FitOptions, *, lev: bool
) -> FitResult | PendingSolve:
    d = stats.d
    p = d + 1
    eps = 4.0 * rel[0].epsilon
    delta = rel[1].delta
    b2 = rel[0].scale * eps / 4.0  # the B^2 this release was calibrated with
    k, w2 = sheffet_sizes(d, eps, delta, b2)
    AtA = np.empty((p, p))
    AtA[:d, :d] = stats.xtx
    AtA[:d, d] = AtA[d, :d] = stats.xty
    AtA[d, d] = stats.yty
    eig = np.linalg.eigh(AtA)
    lam_min = float(eig[0][0])
    R = opts.size
    rngs = opts.rng.spawn(R)  # type: ignore[union-attr]
    Z = np.concatenate(
        [mech.laplace_noise((1,), scale=rel[0].scale, rng=g, release=rel[0].name) for g in rngs]
    )
    G = np.stack([mech.standard_normals((k, p), rng=g) for g in rngs])
    noisy_test = lam_min - Z
    test_margin = 4.0 * b2 * math.log(1.0 / delta) / eps
    # the noise-free branch needs lambda_min(A^T A) > w^2: the margin, in Laplace scales
    drawcheck.margin("sketch", test_margin / rel[0].scale, tail="laplace")
    clean = noisy_test > w2 + test_margin
    w = math.sqrt(w2)
    drawcheck.record("sketch", "gaussian", w, (R, k, p))
    gram = sketch_gram(eig, np.where(clean, 0.0, w * w), G)
    released = {"lambda_min_test": noisy_test, "sketch": gram}
    return finish(gram[:, :d, :d], gram[:, :d, d], np.full(R, np.nan), opts, released)


# --------------------------------------------------------------------------
# Iterative Hessian Mixing: calibration
# --------------------------------------------------------------------------
def _lambda_cost(gamma: float, k: int, delta: float) -> float:
    """Classical-Gaussian epsilon of ``lambda_min`` with ``sigma_l = gamma/sqrt(k)``."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) * math.sqrt(k) / gamma


def ihm_epsilon(gamma: float, k: int, delta_prime: float, T: int) -> tuple[float, float]:
    """``min_alpha E(alpha, gamma)`` and the minimising ``alpha`` (``B_X = 1``).

    ``E = T * mixing_rdp(alpha) + conversion(alpha, delta') + lambda cost``;
    the minimum over ``1 < alpha < gamma`` is found on a logarithmic grid of
    ``alpha - 1`` refined by a bounded scalar search around the best point.
    """
    from scipy.optimize import minimize_scalar  # here: costly to import, needed only by ihm

    if gamma <= 1.0:
        return math.inf, math.nan
    lam = _lambda_cost(gamma, k, delta_prime)

    def f(u: float) -> float:
        a = 1.0 + math.exp(u)
        if a >= gamma:
            return math.inf
        return T * mixing_rdp(a, gamma, k) + rdp_to_dp(a, 0.0, delta_prime)

    hi = math.log(gamma - 1.0) - 1e-9
    lo = min(math.log(1e-8), hi - 1.0)
    grid = np.linspace(lo, hi, 400)
    vals = np.array([f(u) for u in grid])
    i = int(np.argmin(vals))
    a_, b_ = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(f, bounds=(a_, b_), method="bounded", options={"xatol": 1e-12})
    u_best, v_best = (res.x, res.fun) if res.fun < vals[i] else (grid[i], vals[i])
    return float(v_best + lam), 1.0 + math.exp(u_best)


@lru_cache(maxsize=4096)
def ihm_gamma(epsilon_half: float, delta_prime: float, k: int, T: int) -> float:
    """The smallest ``gamma`` with ``min_alpha E(alpha, gamma) <= epsilon_half`` (``B_X = 1``).

    ``E`` decreases in ``gamma``; the root of ``E - epsilon_half`` is found by
    Brent's method on ``ln(gamma - 1)`` to a relative tolerance of 1e-10
    (the authors' code bisects to an absolute 1e-6).  Solved once per
    ``(epsilon, delta, k, T)`` (cached); scale by ``B_X^2`` for other bounds.
    """

    from scipy.optimize import brentq  # here: costly to import, needed only by ihm

    def g(v: float) -> float:
        return ihm_epsilon(1.0 + math.exp(v), k, delta_prime, T)[0] - epsilon_half

    lo, hi = -20.0, 1.0
    while g(hi) > 0:
        hi += 1.0
        if hi > 200:  # pragma: no cover - E -> 0 as gamma grows
            raise DPRegError(f"ihm: no noise level meets epsilon/2={epsilon_half}")
    while g(lo) <= 0:  # pragma: no cover - tiny gamma is never private
        lo -= 5.0
    v = brentq(g, lo, hi, xtol=1e-12, rtol=1e-10, maxiter=500)
    return 1.0 + math.exp(v)


def ihm_sizes(d: int, delta: float, T: int, k_factor: float = 6.0) -> tuple[int, float, float]:
    """``(k, tau, rho)`` of IHM: ``rho = delta/10``, ``k = max(floor(f d), floor(f ln(4T/rho)))``,
    ``tau = sqrt(2 ln max(4/delta, 4/rho))``."""
    rho = delta / 10.0
    k = max(int(k_factor * d), int(k_factor * math.log(4.0 * T / rho)))
    tau = math.sqrt(2.0 * math.log(max(4.0 / delta, 4.0 / rho)))
    return k, tau, rho


def _check_T(T: object) -> int:
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or int(T) < 1:
        raise DPRegError(f"ihm: hyperparameter T must be an integer >= 1, got {T!r}")
    return int(T)


def _releases_ihm(ctx: ReleaseContext) -> list[Release]:
    eps, delta = ctx.epsilon, ctx.delta
    T = _check_T(ctx.param("T"))
    k, _, _ = ihm_sizes(ctx.d, delta, T)
    dp = delta / 4.0
    bx2 = ctx.bound_x**2
    gamma1 = ihm_gamma(eps / 2.0, dp, k, T)
    eps_lam = _lambda_cost(gamma1, k, dp)
    sigma_l = bx2 * gamma1 / math.sqrt(k)
    out = [
        mech.gaussian_release(
            "lambda_min",
            sensitivity=bx2,
            sigma=sigma_l,
            epsilon=eps_lam,
            delta=dp,
            calibration="classical",
            # the classical bound is proven for eps < 1 only; beyond, the exact
            # Gaussian profile decides whether sigma_l meets (eps_lam, delta')
            valid=mech.gdp_delta(eps_lam, bx2 / sigma_l) <= dp * (1 + 1e-9),
        ),
        # the T sketches: cost from the Renyi bound (mechanism "renyi-mixing",
        # sensitivity = the rank-one change bound B_X^2, scale = sqrt(gamma), the
        # largest noise level s); RDP->DP at delta' plus delta' for lam~ > lambda_min
        mech.stated_release(
            "hessian_sketches",
            mechanism="renyi-mixing",
            epsilon=eps / 2.0 - eps_lam,
            delta=2.0 * dp,
            calibration="renyi-mixing",
            sensitivity=bx2,
            scale=math.sqrt(bx2 * gamma1),
        ),
    ]
    sens_g = ctx.bound_x * ctx.bound_y
    sigma_g = math.sqrt(T) * mech.analytic_sigma(epsilon=eps / 2.0, delta=dp, sensitivity=sens_g)
    out += [
        mech.gaussian_release(
            f"grad_{t + 1}",
            sensitivity=sens_g,
            sigma=sigma_g,
            epsilon=eps / (2.0 * T),
            delta=dp / T,
            calibration="gdp",
            valid=True,
        )
        for t in range(T)
    ]
    return out


def _fit_ihm(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    X, y = opts.rows  # type: ignore[misc]
    d = stats.d
    T = _check_T(opts.params["T"])
    delta = 4.0 * rel[0].delta
    k, tau, _ = ihm_sizes(d, delta, T)
    sigma_l = rel[0].scale
    gamma = sigma_l * math.sqrt(k)  # B_X^2 gamma_1
    C = stats.bound_y
    sigma_g = rel[2].scale
    R = opts.size
    # one repeat-major block of normals: [z0 | T sketches (k d) | T gradients (d)]
    z = mech.standard_normals((R, 1 + T * k * d + T * d), rng=opts.rng)  # type: ignore[arg-type]
    z0 = z[:, 0]
    Gs = z[:, 1 : 1 + T * k * d].reshape(R, T, k, d)
    xi = z[:, 1 + T * k * d :].reshape(R, T, d)
    lam_noisy = stats.lambda_min() + drawcheck.scaled(z0, sigma_l, release="lambda_min")
    # lam~ <= lambda_min fails with probability Phi(-tau), inside the sketches' delta
    drawcheck.margin("hessian_sketches", tau)
    lam_t = np.maximum(0.0, lam_noisy - sigma_l * tau)
    s2 = np.maximum(0.0, gamma - lam_t)
    # the release declares the largest noise level sqrt(gamma)
    drawcheck.record("hessian_sketches", "gaussian", np.sqrt(s2), (R, T, k, d), bound=True)
    eig = stats.eigh()
    theta = np.zeros((R, d))
    failed = np.zeros(R, dtype=bool)
    hessians = np.empty((R, T, d, d))
    grads = np.empty((R, T, d))
    for t in range(T):
        H = sketch_gram(eig, s2, Gs[:, t]) / k
        name = f"grad_{t + 1}"
        resid = drawcheck.clip(y[:, None] - X @ theta.T, C, release=name, row_norm=stats.bound_x)
        g = (X.T @ resid).T + drawcheck.scaled(xi[:, t], sigma_g, release=name)
        hessians[:, t], grads[:, t] = H, g
        step, bad = solve_batched(H, g)
        failed |= bad
        theta = theta + np.where(bad[:, None], 0.0, step)
    theta[failed] = np.nan
    released = None
    if opts.capture:
        released = {"lambda_min": lam_noisy, "hessian_sketches": hessians}
        released.update({f"grad_{t + 1}": grads[:, t] for t in range(T)})
    return FitResult(theta, np.full(R, np.nan), failed, released)


def _sheffet(lev: bool):
    def releases(ctx: ReleaseContext) -> list[Release]:
        return _releases_sheffet(ctx, lev=lev)

    def fit(stats: SuffStats, rel: list[Release], opts: FitOptions):
        return _fit_sheffet(stats, rel, opts, lev=lev)

    return releases, fit


_SHEFFET = _sheffet(False)
_SHEFFET_LEV = _sheffet(True)

ENTRIES = [
    Algorithm(
        "sketch-ols",
        "Gaussian-sketch OLS",
        private=True,
        calibration="sheffet",
        release_fn=_SHEFFET[0],
        fit_fn=_SHEFFET[1],
        style=Style("olivedrab", "-", "^"),
        reference="Sheffet (2017) Alg. 1 as in Lev et al. (2025), B² = B_X² + B_Y²",
    ),
    Algorithm(
        "sketch-ols-lev",
        "Gaussian-sketch OLS (Lev et al.'s code)",
        private=True,
        calibration="sheffet-lev",
        release_fn=_SHEFFET_LEV[0],
        fit_fn=_SHEFFET_LEV[1],
        reproduction=True,
        style=Style("yellowgreen", "--", "^"),
        reference="omrilev1/GaussMix: Sheffet's sketch with B² = 1 on unit-bounded rows",
    ),
    Algorithm(
        "ihm",
        "Iterative Hessian Mixing",
        private=True,
        calibration="renyi-mixing",
        release_fn=_releases_ihm,
        fit_fn=_fit_ihm,
        needs_rows=True,
        hyperparameters={"T": 3},
        style=Style("crimson", "--", "d"),
        reference="Lev et al. (2026) IHM, T = 3, k = 6 max(d, ln(4T/ρ)), ρ = δ/10 (HessianMix)",
    ),
]
