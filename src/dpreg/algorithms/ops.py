"""One posterior sample (OPS) of ridge regression, with Wang's four rules for lambda.

Every entry releases one draw (spec W5)::

    H = X^T X + (c + lam) I,   theta_hat = H^{-1} X^T y,
    theta = theta_hat + (noise with covariance Sigma) / sqrt(gamma)

where ``lam`` and ``gamma`` depend only on ``(n, d, eps, delta)`` and the
bounds.  Wang's code draws ``R^{-T} z`` with ``H = R^T R`` (``chol``), whose
covariance is ``(R R^T)^{-1}``, not the posterior's ``H^{-1}`` (same spectrum,
other eigenvectors); the ``-post`` entries draw ``L^{-T} z`` with ``H = L
L^T``, covariance ``H^{-1}``.

Calibration (spec W6-W8; ``ell = ln(2/delta)``, ``rho = 0.05``)::

    eps = gamma L^2 / (lam + B_X^2) + sqrt(gamma) L sqrt(ell / lam) + (1 + ell) B_X^2 / (2 lam)
    L = B_X (B_X theta_b + B_Y),  theta_b = min(sqrt(n) B_Y / sqrt(2 lam), n B_X B_Y / lam)

solved for ``sqrt(gamma)`` (positive root).  The rules for ``lam``
(``lam_0 = (1 + ell) B_X^2 / eps``, ``eps_bar = min(eps/2, sqrt(eps/2))``):

* balanced: ``max((C1(eps_bar, delta, d) B_X^4 B_Y^2 n / 2)^{1/3}, lam_0)``;
* diffused: ``lam_0``;
* worstcase (``OPS_epsdelta_conservative.m``): ``max(sqrt(C1 B_X^2), lam_0)``;
* concentrated: ``gamma = 1`` and ``lam`` the positive root of ``eps lam^2 -
  (sqrt(2 gamma n ell) B_X^2 B_Y + (1 + ell) B_X^2 / 2) lam - 2 n B_X^4 B_Y^2``;
  if ``lam > n B_X^2 / 2``, ``L = 2 B_X B_Y`` and ``sqrt(lam)`` is the positive
  root of ``eps s^2 - sqrt(gamma L^2 ell) s + c'``.  Wang's file writes
  ``c' = -gamma*L&2/2 - ...``, which Matlab evaluates as a logical AND
  (``c' = 1``); ``ops-concentrated-fixed`` uses the intended ``c' = -gamma L^2
  / 2 - (1 + ell) B_X^2 / 2`` and samples from the posterior.

Privacy: each run is one release, mechanism ``"ops"``, claiming ``(eps,
delta)`` through the relation above.  The relation is Wang's and could not be
checked against the theorem of his paper here; it is a statement about
sampling from the posterior, so the entries that sample with covariance
``(R R^T)^{-1}`` are marked outside validity, as is the concentrated rule when
its buggy fallback fires (its ``lam`` is then smaller than the relation
requires).

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression. UAI
(OPS baselines; code ``OPS_epsdelta_{balanced,concentrated,diffused,
conservative}.m``).
Wang, Y.-X., Fienberg, S. & Smola, A. (2015). Privacy for free: posterior
sampling and stochastic gradient Monte Carlo. ICML (one posterior sample).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpreg.algorithms._wang import C1, calibration_guard, claimed_release, quadratic_root
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = ["ENTRIES", "ops_calibration", "ops_lambda", "ops_sqrt_gamma", "sample_ops"]


def _lam0(eps: float, delta: float, bx: float) -> float:
    return (1.0 + math.log(2.0 / delta)) * bx**2 / eps


def ops_lipschitz(lam: float, n: int, bx: float, by: float) -> float:
    """``L = B_X (B_X theta_b + B_Y)`` with ``theta_b = min(sqrt(n) B_Y / sqrt(2 lam), n B_X B_Y / lam)`` (W7)."""
    theta_b = min(math.sqrt(n) * by / math.sqrt(2.0 * lam), n * bx * by / lam)
    return bx * (bx * theta_b + by)


def ops_sqrt_gamma(eps: float, delta: float, lam: float, L: float, bx: float) -> float:
    """Positive root ``sqrt(gamma)`` of the privacy relation (W6) at ``(eps, delta)``."""
    ell = math.log(2.0 / delta)
    a = L**2 / (lam + bx**2)
    b = L * math.sqrt(ell / lam)
    c = (1.0 + ell) * bx**2 / (2.0 * lam) - eps
    if c >= 0:
        raise ValueError(f"OPS: lam={lam:g} is too small for eps={eps:g} (no positive root)")
    return float(quadratic_root(a, b, c))


def ops_lambda(
    rule: str, eps: float, delta: float, n: int, d: int, bx: float, by: float, rho: float = 0.05
) -> tuple[float, float | None, bool]:
    """Wang's ridge parameter for ``rule``; returns ``(lam, sqrt_gamma_or_None, fallback)``.

    ``rule`` is ``balanced``, ``diffused``, ``worstcase``, ``concentrated`` or
    ``concentrated-fixed``.  For the concentrated rules ``gamma = 1`` is
    returned; ``fallback`` says whether their second branch fired.
    """
    ell = math.log(2.0 / delta)
    lam0 = _lam0(eps, delta, bx)
    eps_bar = min(eps / 2.0, math.sqrt(eps / 2.0))
    if rule == "balanced":
        return (
            max((C1(eps_bar, delta, d, rho) * bx**4 * by**2 * n / 2.0) ** (1 / 3), lam0),
            None,
            False,
        )
    if rule == "diffused":
        return lam0, None, False
    if rule == "worstcase":
        return max(math.sqrt(C1(eps_bar, delta, d, rho) * bx**2), lam0), None, False
    if rule in ("concentrated", "concentrated-fixed"):
        gamma = 1.0
        a = eps
        b = -math.sqrt(gamma * 2.0 * n * bx**4 * by**2 * ell) - (1.0 + ell) * bx**2 / 2.0
        c = -2.0 * n * bx**4 * by**2
        lam = float(quadratic_root(a, b, c))
        if lam <= n * bx**2 / 2.0:
            return lam, 1.0, False
        L = 2.0 * bx * by
        b2 = -math.sqrt(gamma * L**2 * ell)
        if rule == "concentrated":
            c2 = 1.0  # Matlab: -gamma*L&2/2 - ... is a logical AND, i.e. 1
        else:
            c2 = -gamma * L**2 / 2.0 - (1.0 + ell) * bx**2 / 2.0
        s = float(quadratic_root(eps, b2, c2))
        return s * s, 1.0, True
    raise ValueError(f"unknown OPS rule {rule!r}")


def ops_calibration(
    rule: str, eps: float, delta: float, n: int, d: int, bx: float, by: float, rho: float = 0.05
) -> dict[str, float | bool]:
    """``lam``, ``sqrt_gamma``, Lipschitz bound ``L`` and whether the fallback fired."""
    lam, sg, fallback = ops_lambda(rule, eps, delta, n, d, bx, by, rho)
    if sg is None:
        L = ops_lipschitz(lam, n, bx, by)
        sg = ops_sqrt_gamma(eps, delta, lam, L, bx)
    else:
        # fallback: the file's L = 2 B_X B_Y; main branch: the L its quadratic
        # implies (W6 with gamma = 1, lam + B_X^2 -> lam, L = B_X^2 B_Y sqrt(2n/lam))
        L = 2.0 * bx * by if fallback else bx**2 * by * math.sqrt(2.0 * n / lam)
    return {"lam": lam, "sqrt_gamma": sg, "L": L, "fallback": fallback}


def sample_ops(
    H: np.ndarray, xty: np.ndarray, z: np.ndarray, *, posterior: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``theta_hat + noise`` for a batch of standard-normal rows ``z`` (already scaled).

    Parameters
    ----------
    H : ndarray, shape (d, d)
        Positive definite ``X^T X + (c + lam) I``.
    xty : ndarray, shape (d,)
    z : ndarray, shape (R, d)
        ``N(0, I / gamma)`` draws.
    posterior : bool
        True: ``L^{-T} z`` with ``H = L L^T`` (covariance ``H^{-1} / gamma``);
        False: Wang's ``R^{-T} z`` with ``R = L^T`` (covariance ``(R R^T)^{-1} / gamma``).

    Returns
    -------
    theta : ndarray, shape (R, d)
    theta_hat : ndarray, shape (d,)
    """
    from scipy.linalg import cho_solve, solve_triangular  # lazy: scipy.linalg costs ~0.2 s

    Lc = np.linalg.cholesky(H)
    theta_hat = cho_solve((Lc, True), xty)
    if posterior:
        noise = solve_triangular(Lc.T, z.T, lower=False)
    else:
        noise = solve_triangular(Lc, z.T, lower=True)
    return theta_hat[None, :] + noise.T, theta_hat


def _releases(ctx: ReleaseContext, *, rule: str, posterior: bool) -> list[Release]:
    n = ctx.need_n(f"ops-{rule}")
    cal = ops_calibration(rule, ctx.epsilon, ctx.delta, n, ctx.d, ctx.bound_x, ctx.bound_y, ctx.rho)
    valid = posterior and not (rule == "concentrated" and cal["fallback"])
    return [
        claimed_release(
            "theta",
            "ops",
            sensitivity=float(cal["L"]),
            scale=1.0 / float(cal["sqrt_gamma"]),
            epsilon=ctx.epsilon,
            delta=ctx.delta,
            calibration="ops-wang",
            valid=valid,
        )
    ]


def _fit(
    stats: SuffStats, rel: list[Release], opts: FitOptions, *, rule: str, posterior: bool
) -> FitResult:
    r0 = rel[0]
    lam, _, _ = ops_lambda(
        rule, r0.epsilon, r0.delta, stats.n, stats.d, stats.bound_x, stats.bound_y, opts.rho
    )
    z = mech.vector_noise(stats.d, scale=r0.scale, rng=opts.rng, size=opts.size, release=r0.name)  # type: ignore[arg-type]
    H = stats.offset_xtx(opts.xtx_offset + lam)
    try:
        theta, _ = sample_ops(H, stats.xty, z, posterior=posterior)
        failed = ~np.all(np.isfinite(theta), axis=1)
    except np.linalg.LinAlgError:
        theta = np.full((opts.size, stats.d), np.nan)
        failed = np.ones(opts.size, dtype=bool)
    theta[failed] = np.nan
    return FitResult(
        theta, np.full(opts.size, lam), failed, {"theta": theta.copy()} if opts.capture else None
    )


def _entry_fns(rule: str, posterior: bool) -> tuple[Callable, Callable]:
    @calibration_guard
    def releases(ctx: ReleaseContext) -> list[Release]:
        return _releases(ctx, rule=rule, posterior=posterior)

    def fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
        return _fit(stats, rel, opts, rule=rule, posterior=posterior)

    releases.__doc__ = f"OPS-{rule} (posterior sampling: {posterior})."
    return releases, fit


def _entry(name: str, label: str, rule: str, posterior: bool, style: Style, ref: str) -> Algorithm:
    rel, fit = _entry_fns(rule, posterior)
    return Algorithm(
        name,
        label,
        private=True,
        calibration="ops-wang",
        release_fn=rel,
        fit_fn=fit,
        has_lambda=True,
        reproduction=not posterior,
        style=style,
        reference=ref,
    )


_CODE = "Wang (2018) {f}: λ rule {r}, sample θ̂ + R⁻ᵀz/√γ (covariance (RRᵀ)⁻¹)"
_POST = "OPS-{r} with Wang's λ and γ, posterior sample θ̂ + L⁻ᵀz/√γ (covariance H⁻¹)"

ENTRIES = [
    _entry(
        "ops-balanced",
        "OPS-balanced (Wang's code)",
        "balanced",
        False,
        Style("darkcyan", "-", "H"),
        _CODE.format(f="OPS_epsdelta_balanced.m", r="balanced"),
    ),
    _entry(
        "ops-balanced-post",
        "OPS-balanced (posterior)",
        "balanced",
        True,
        Style("mediumturquoise", "--", "H"),
        _POST.format(r="balanced"),
    ),
    _entry(
        "ops-concentrated",
        "OPS-concentrated (Wang's code)",
        "concentrated",
        False,
        Style("midnightblue", "-", "s"),
        _CODE.format(f="OPS_epsdelta_concentrated.m", r="concentrated"),
    ),
    _entry(
        "ops-concentrated-fixed",
        "OPS-concentrated (fixed)",
        "concentrated-fixed",
        True,
        Style("royalblue", "--", "s"),
        "OPS-concentrated with the fallback's constant -γL²/2 - (1+ℓ)B_X²/2 and a posterior sample",
    ),
    _entry(
        "ops-diffused",
        "OPS-diffused (Wang's code)",
        "diffused",
        False,
        Style("slateblue", "-", "D"),
        _CODE.format(f="OPS_epsdelta_diffused.m", r="diffused"),
    ),
    _entry(
        "ops-diffused-post",
        "OPS-diffused (posterior)",
        "diffused",
        True,
        Style("mediumpurple", "--", "D"),
        _POST.format(r="diffused"),
    ),
    _entry(
        "ops-worstcase",
        "OPS-worstcase (Wang's code)",
        "worstcase",
        False,
        Style("maroon", "-", "P"),
        _CODE.format(f="OPS_epsdelta_conservative.m", r="worstcase"),
    ),
    _entry(
        "ops-worstcase-post",
        "OPS-worstcase (posterior)",
        "worstcase",
        True,
        Style("indianred", "--", "P"),
        _POST.format(r="worstcase"),
    ),
]
