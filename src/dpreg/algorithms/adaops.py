"""AdaOPS: one posterior sample of ridge with a data-adaptive ridge parameter.

Wang's ``adaops.m`` (spec section 3; ``ell6 = ln(6/delta)``, budget ``eps/4``
for ``lambda_min``, ``eps/4`` for the Lipschitz release, ``eps/2`` for the
sample, ``delta/3`` each)::

    lam_tilde = max(lambda_min(X^T X + c I) + B_X^2 sqrt(ell6)/(eps/4) z1 - ell6/(eps/4), 0)   (W9)
    lam_tgt   = max(2 B_X^2 (1 + ell6) / eps - lam_tilde, 0)                                  (W10)
    eps_bar   = (sqrt(1 + ell6 eps / 2) - 1) / ell6;  C1 = C1(eps_bar, delta/3, d);
    C2 = ell6 / (eps/4)                                                                      (W11)
    lam = argmin_{t >= lam_tgt} C1 B_X^4 (1 + B_X^2/(t + lam_tilde))^{2 C2} / (t + lam_tilde) + t  (W12)
    H = X^T X + (c + lam) I,  theta_hat = H^{-1} X^T y,  h = lam + lam_tilde                (W13)
    sigma_D = ln(1 + B_X^2/h) / (eps/4)
    D = ln(B_Y + B_X ||theta_hat||) + sigma_D sqrt(ell6) z2 + sigma_D ell6                   (W14)
    L = B_X min(e^D, B_Y + B_X sqrt(2 sqrt(n B_Y) / h))                                      (W15)
    sqrt(gamma): eps/2 = gamma L^2/(2(h + B_X^2)) + sqrt(gamma) L sqrt(ell6/h)
                         + (1 + ell6) B_X^2 / (2h)                                            (W16)
    theta = theta_hat + R^{-T} z3 / sqrt(gamma),  H = R^T R                                  (W17)

The objective of (W12) is convex in ``t`` with ``f(t) >= t``, so its
minimiser lies in ``[lam_tgt, max(lam_tgt, f(lam_tgt))]``; it is found for all
repeats at once by bisection on the sign of ``f'`` in log space (``C2 ~
62/eps`` makes ``f`` overflow in floating point).  ``theta_hat`` and
``||theta_hat||`` cost ``O(d^2)`` per repeat through the cached
eigendecomposition of ``X^T X``.

Entries:

* ``adaops`` -- Wang's code: the cap in (W15), sampling covariance ``(R
  R^T)^{-1}`` (one batched Cholesky per repeat).
* ``adaops-post`` -- the same, but the posterior sample ``H^{-1/2} z3``
  (``Q diag((Lambda + c + lam)^{-1/2}) z3``).
* ``adaops-cap`` -- posterior sampling and a worst-case cap on
  ``||theta_hat||``: ``min(sqrt(n) B_Y / (2 sqrt(c + lam)), n B_X B_Y / h)``.

Privacy: basic composition of three releases.  ``lambda_min`` and the log
Lipschitz estimate ``D`` are Gaussian releases with Wang's ``sqrt(ell6) /
eps_i`` scales (the ``adassp-wang`` style, validity from the exact Gaussian
profile); ``D``'s sensitivity ``ln(1 + B_X^2/h)`` is data-dependent, so its
release is recorded in units of it (sensitivity 1).  The sample is an
``"ops"`` release whose (eps/2, delta/3) rests on (W16) holding with ``L`` an
upper bound on the Lipschitz constant: it is outside validity when the cap
of (W15) can understate it (``adaops``, ``adaops-post``); its recorded
sensitivity and scale are the largest any repeat can use
(:func:`sample_bounds`).

Safety margins, counted in delta.  The sample's guarantee needs two noisy
quantities to err on the safe side: ``lam_tilde <= lambda_min(X^T X + c I)``
(W9) and ``D >= ln(B_Y + B_X ||theta_hat||)`` (W14).  Each holds unless its
Gaussian noise exceeds the margin subtracted (added) for it:

* (W9) subtracts ``ell6 / (eps/4)`` from a release of noise sd ``B_X^2
  sqrt(ell6) / (eps/4)``: a margin of ``sqrt(ell6) / B_X^2`` sds, failing
  with probability ``Phi(-sqrt(ell6) / B_X^2)`` (Wang's code omits ``B_X^2``
  in the shift, so the margin shrinks when ``B_X > 1``);
* (W14) adds ``sigma_D ell6`` to noise of sd ``sigma_D sqrt(ell6)``: a margin
  of ``sqrt(ell6)`` sds, failing with probability ``Phi(-sqrt(ell6))``.

A mechanism that is ``(eps, delta)``-DP whenever an event of probability
``>= 1 - p`` holds is ``(eps, delta + p)``-DP, so each failure probability is
a ``"failure"`` release of cost ``(0, p)``
(:func:`dpreg.privacy.mechanisms.failure_release`;
:func:`margin_failure_probabilities`).  At ``delta = 1e-6`` and ``B_X = 1``
each is ``Phi(-sqrt(ln 6e6)) = 3.93e-5``: the composed delta is ``1e-6 +
7.87e-5``, about 80 times the claim, so every AdaOPS entry at every epsilon
is outside validity (the claimed split ``delta/3`` per release leaves no room
for them; the margin releases carry ``valid = False``).

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression. UAI
(AdaOPS; code ``adaops.m``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpreg.algorithms._wang import C1, calibration_guard, claimed_release, quadratic_root
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext
from dpreg.algorithms.ssp import wang_valid
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = [
    "ENTRIES",
    "adaops_constants",
    "adaops_lambda",
    "adaops_objective",
    "sample_bounds",
    "margin_failure_probabilities",
    "margin_failure_probability",
]

_KINDS = ("scalar", "scalar", "vector")


def adaops_constants(eps: float, delta: float, d: int, rho: float = 0.05) -> dict[str, float]:
    """``ell6``, ``eps_bar``, ``C1`` and ``C2`` of (W11)."""
    ell6 = math.log(6.0 / delta)
    eps_bar = (math.sqrt(1.0 + ell6 * eps / 2.0) - 1.0) / ell6
    return {
        "ell6": ell6,
        "eps_bar": eps_bar,
        "C1": C1(eps_bar, delta / 3.0, d, rho),
        "C2": ell6 / (eps / 4.0),
    }


def margin_failure_probability(delta: float, *, bound_x: float = 1.0) -> float:
    """``Phi(-sqrt(ln(6/delta)) / B_X^2)``: chance the ``lambda_min`` margin (W9) fails.

    At ``B_X = 1`` it is also the chance the Lipschitz margin (W14) fails
    (whose margin, ``sqrt(ell6)`` sds, does not depend on ``B_X``); see
    :func:`margin_failure_probabilities`.  Gaussian upper tail:
    ``P(N(0, 1) > z) = Phi(-z)``.
    """
    from scipy.special import ndtr  # on first use: importing the registry skips scipy

    return float(ndtr(-math.sqrt(math.log(6.0 / delta)) / bound_x**2))


def margin_failure_probabilities(delta: float, bound_x: float = 1.0) -> dict[str, float]:
    """Failure probability of each safety margin, by the release it protects.

    ``lambda_min``: the noise of sd ``B_X^2 sqrt(ell6)/(eps/4)`` exceeds the
    shift ``ell6/(eps/4)`` of (W9), ``Phi(-sqrt(ell6) / B_X^2)``;
    ``log_lipschitz``: the noise of sd ``sigma_D sqrt(ell6)`` falls below
    ``-sigma_D ell6`` in (W14), ``Phi(-sqrt(ell6))``.  Neither depends on
    epsilon.
    """
    return {
        "lambda_min": margin_failure_probability(delta, bound_x=bound_x),
        "log_lipschitz": margin_failure_probability(delta),
    }


def _log_g(s: np.ndarray, c1: float, c2: float, bx: float) -> np.ndarray:
    """``ln(C1 B_X^4 (1 + B_X^2/s)^{2 C2} / s)``."""
    return math.log(c1 * bx**4) + 2.0 * c2 * np.log1p(bx**2 / s) - np.log(s)


def adaops_objective(t, lam_tilde, c1: float, c2: float, bx: float):
    """``f(t)`` of (W12) (may overflow to ``inf`` for small ``t + lam_tilde``)."""
    s = np.asarray(t, dtype=float) + np.asarray(lam_tilde, dtype=float)
    with np.errstate(over="ignore"):
        return np.exp(_log_g(s, c1, c2, bx)) + np.asarray(t, dtype=float)


def adaops_lambda(
    lam_tilde: np.ndarray, lam_tgt: np.ndarray, c1: float, c2: float, bx: float, *, iters: int = 200
) -> np.ndarray:
    """The minimiser of (W12) over ``t >= lam_tgt``, for every repeat at once.

    With ``s = t + lam_tilde`` and ``g(s) = C1 B_X^4 (1 + B_X^2/s)^{2 C2} / s``,
    ``f'(t) = 1 + g'(s)`` and ``-g'(s) = g(s) k(s)``, ``k(s) = 1/s + 2 C2 B_X^2 /
    (s (s + B_X^2))``; ``ln g + ln k`` decreases in ``s``, so ``f' >= 0`` exactly
    on ``[t*, inf)``.  Bisection on ``ln s`` between ``s_lo = lam_tgt +
    lam_tilde`` and ``s_hi = lam_tilde + max(lam_tgt, f(lam_tgt))`` (``f(t) >=
    t`` and ``f(t*) <= f(lam_tgt)``) to full double precision.
    """
    lam_tilde = np.asarray(lam_tilde, dtype=float)
    lam_tgt = np.broadcast_to(np.asarray(lam_tgt, dtype=float), lam_tilde.shape)

    def slope_sign(s: np.ndarray) -> np.ndarray:  # ln(-g'(s)): f' >= 0 iff this <= 0
        k = 1.0 / s + 2.0 * c2 * bx**2 / (s * (s + bx**2))
        return _log_g(s, c1, c2, bx) + np.log(k)

    s_lo = lam_tgt + lam_tilde
    if np.any(s_lo <= 0):
        raise ValueError("AdaOPS: t + lam_tilde must be positive at the lower end")
    log_f_lo = np.logaddexp(_log_g(s_lo, c1, c2, bx), np.log(np.maximum(lam_tgt, 1e-300)))
    log_hi_t = np.maximum(np.log(np.maximum(lam_tgt, 1e-300)), log_f_lo)
    # s_hi = lam_tilde + exp(log_hi_t), in log space
    log_s_hi = np.logaddexp(np.log(np.maximum(lam_tilde, 1e-300)), log_hi_t)
    at_bound = slope_sign(s_lo) <= 0
    a = np.log(s_lo)
    b = np.maximum(log_s_hi, a)
    # a repeat stops once its bracket is at double precision (frozen, so its
    # answer does not depend on the other repeats of the batch)
    done = b - a <= 1e-15 * np.maximum(1.0, np.abs(b))
    for _ in range(iters):
        if np.all(done):
            break
        m = 0.5 * (a + b)
        up = slope_sign(np.exp(m)) > 0  # still decreasing: minimiser further right
        a = np.where(up & ~done, m, a)
        b = np.where(up | done, b, m)
        done |= b - a <= 1e-15 * np.maximum(1.0, np.abs(b))
    s_star = np.exp(0.5 * (a + b))
    return np.where(at_bound, lam_tgt, np.maximum(s_star - lam_tilde, lam_tgt))


def sample_bounds(
    eps: float, delta: float, n: int, bx: float, by: float, *, cap: bool
) -> tuple[float, float]:
    """The largest Lipschitz bound ``L`` and sample scale ``1/sqrt(gamma)`` any repeat can use.

    Every repeat has ``h >= h_min = 2 B_X^2 (1 + ell6) / eps`` (W10) and ``L``
    at most its cap at ``h_min`` (W15; with ``cap`` the bound ``n B_X B_Y / h``).
    The root ``sqrt(gamma)`` of (W16) increases with ``h`` and decreases with
    ``L``, so ``1/sqrt(gamma)`` is largest at ``(L_max, h_min)``.
    """
    ell6 = math.log(6.0 / delta)
    h = 2.0 * bx**2 * (1.0 + ell6) / eps
    if cap:
        L = bx * (by + bx * n * bx * by / h)
    else:
        L = bx * (by + bx * math.sqrt(2.0 * math.sqrt(n * by) / h))
    a = L**2 / (2.0 * (h + bx**2))
    b = L * math.sqrt(ell6 / h)
    c = (1.0 + ell6) * bx**2 / (2.0 * h) - eps / 2.0
    return L, 1.0 / float(quadratic_root(a, b, c))


def _releases(ctx: ReleaseContext, *, cap: bool) -> list[Release]:
    eps, delta = ctx.epsilon, ctx.delta
    ell6 = math.log(6.0 / delta)
    L_max, scale_max = sample_bounds(
        eps, delta, ctx.need_n("adaops"), ctx.bound_x, ctx.bound_y, cap=cap
    )
    s = math.sqrt(ell6) / (eps / 4.0)
    ok = wang_valid(eps / 4.0, delta / 3.0, s)
    out = [
        mech.gaussian_release(
            "lambda_min",
            sensitivity=ctx.bound_x**2,
            sigma=s * ctx.bound_x**2,
            epsilon=eps / 4.0,
            delta=delta / 3.0,
            calibration="wang",
            valid=ok,
        ),
        mech.gaussian_release(
            "log_lipschitz",
            sensitivity=1.0,  # in units of its data-dependent sensitivity ln(1 + B_X^2/h)
            sigma=s,
            epsilon=eps / 4.0,
            delta=delta / 3.0,
            calibration="wang",
            valid=ok,
        ),
        claimed_release(
            "theta",
            "ops",
            # L and 1/sqrt(gamma) are set per repeat from the two releases above;
            # recorded: the largest values any repeat can use
            sensitivity=L_max,
            scale=scale_max,
            epsilon=eps / 2.0,
            delta=delta / 3.0,
            calibration="ops-wang",
            valid=cap,
        ),
    ]
    # the two safety margins fail with these probabilities: delta terms the claimed
    # split (delta/3 per release) leaves no room for
    fails = margin_failure_probabilities(delta, ctx.bound_x)
    room = delta - sum(r.delta for r in out) - sum(fails.values()) >= 0.0
    return [
        *out,
        *(
            mech.failure_release(
                f"{name}_margin", probability=p, calibration="gaussian-tail", valid=room
            )
            for name, p in fails.items()
        ),
    ]


def _fit(
    stats: SuffStats, rel: list[Release], opts: FitOptions, *, posterior: bool, cap: bool
) -> FitResult:
    eps = 4.0 * rel[0].epsilon
    delta = 3.0 * rel[0].delta
    bx, by, n, d, size = stats.bound_x, stats.bound_y, stats.n, stats.d, opts.size
    c = opts.xtx_offset
    k = adaops_constants(eps, delta, d, opts.rho)
    ell6 = k["ell6"]
    z1, z2, z3 = mech.normal_block_noise(
        _KINDS,
        [rel[0].scale, rel[1].scale, 1.0],
        d,
        rng=opts.rng,  # type: ignore[arg-type]
        size=size,
        releases=("lambda_min", "log_lipschitz", None),
    )
    evals, Q = stats.eigh()
    evals = np.maximum(evals, 0.0)
    # (W9): released lambda_min, then Wang's shift ell6/(eps/4) (without B_X^2)
    lam_noisy = float(evals[0]) + c + z1
    shift = ell6 / (eps / 4.0)
    drawcheck.margin("lambda_min_margin", shift / rel[0].scale)  # in noise sds
    lam_tilde = np.maximum(lam_noisy - shift, 0.0)
    lam_tgt = np.maximum(2.0 * bx**2 * (1.0 + ell6) / eps - lam_tilde, 0.0)  # (W10)
    lam = adaops_lambda(lam_tilde, lam_tgt, k["C1"], k["C2"], bx)  # (W12)
    # (W13) theta_hat through X^T X = Q diag(evals) Q^T
    qy = Q.T @ stats.xty
    den = evals[None, :] + c + lam[:, None]  # (R, d) eigenvalues of H
    coef = qy[None, :] / den
    theta_hat = coef @ Q.T
    tnorm = np.sqrt(np.einsum("ij,ij->i", coef, coef))
    h = lam + lam_tilde
    # (W14): z2 already carries sqrt(ell6)/(eps/4); multiply by the sensitivity
    sens_d = np.log1p(bx**2 / h)
    sigma_d = sens_d / (eps / 4.0)
    # the margin sigma_D ell6 against noise of sd sens_D * (release scale)
    drawcheck.margin("log_lipschitz_margin", sigma_d * ell6 / (sens_d * rel[1].scale))
    D = np.log(by + bx * tnorm) + sens_d * z2 + sigma_d * ell6
    if cap:
        theta_b = np.minimum(math.sqrt(n) * by / (2.0 * np.sqrt(c + lam)), n * bx * by / h)
        L = bx * np.minimum(np.exp(D), by + bx * theta_b)
    else:
        L = bx * np.minimum(np.exp(D), by + bx * np.sqrt(2.0 * math.sqrt(n * by) / h))  # (W15)
    # (W16)
    a = L**2 / (2.0 * (h + bx**2))
    b = L * np.sqrt(ell6 / h)
    cc = (1.0 + ell6) * bx**2 / (2.0 * h) - eps / 2.0
    sqrt_gamma = quadratic_root(a, b, cc)
    # the release declares the largest 1/sqrt(gamma) any repeat can use
    zs = drawcheck.scaled(z3, 1.0 / sqrt_gamma, release="theta", bound=True)
    if posterior:
        noise = ((Q.T @ zs.T).T / np.sqrt(den)) @ Q.T
    else:
        H = np.broadcast_to(stats.xtx, (size, d, d)).copy()
        idx = np.arange(d)
        H[:, idx, idx] += (c + lam)[:, None]
        Lc = np.linalg.cholesky(H)  # H = Lc Lc^T, Wang's R = Lc^T
        noise = np.linalg.solve(Lc, zs[..., None])[..., 0]  # R^{-T} z = Lc^{-1} z
    theta = theta_hat + noise
    failed = ~np.all(np.isfinite(theta), axis=1)
    theta[failed] = np.nan
    released = None
    if opts.capture:
        released = {"lambda_min": lam_noisy, "log_lipschitz": D, "theta": theta.copy()}
    return FitResult(theta, lam, failed, released)


def _fn(posterior: bool, cap: bool) -> tuple[Callable, Callable]:
    @calibration_guard
    def releases(ctx: ReleaseContext) -> list[Release]:
        return _releases(ctx, cap=cap)

    def fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
        return _fit(stats, rel, opts, posterior=posterior, cap=cap)

    return releases, fit


def _entry(name: str, label: str, posterior: bool, cap: bool, style: Style, ref: str) -> Algorithm:
    rel, fit = _fn(posterior, cap)
    return Algorithm(
        name,
        label,
        private=True,
        calibration="wang",
        release_fn=rel,
        fit_fn=fit,
        has_lambda=True,
        reproduction=True,
        style=style,
        reference=ref,
    )


ENTRIES = [
    _entry(
        "adaops",
        "AdaOPS (Wang's code)",
        False,
        False,
        Style("darkgreen", "-", "*"),
        "Wang (2018) adaops.m: noisy λ_min, convex λ choice, noisy Lipschitz bound, R⁻ᵀz sample",
    ),
    _entry(
        "adaops-post",
        "AdaOPS (posterior)",
        True,
        False,
        Style("seagreen", "--", "*"),
        "adaops.m with a posterior sample H^{-1/2}z",
    ),
    _entry(
        "adaops-cap",
        "AdaOPS (posterior, valid cap)",
        True,
        True,
        Style("limegreen", "-.", "*"),
        "adaops.m with a posterior sample and the cap min(√n B_Y/(2√(c+λ)), n B_X B_Y/h)",
    ),
]
