"""BoostedAdaSSP: gradient boosting with AdaSSP as the weak learner.

Tang, Aydore, Kearns, Rho, Roth, Wang, Wang & Wu (SaTML 2024, arXiv
2303.03451), as in their code ``amazon-science/boostedadassp``
(``BoostedAdaSSP.py``) and in Dick, Gillenwater & Joseph's re-implementation
(google-research ``private_kendall/boosted_adassp.py``).  Formulas (B1)-(B5)
of ``SPEC-frontier-methods.md`` section 2; hyperparameters ``T`` (rounds,
default 100, the code's) and the shrinkage ``eta`` (``"1"``, ``"1/t"`` or
``"1/sqrt(t)"``; default ``"1"``)::

    (B1) rows clipped to ||x|| <= B_X -- here the rows are already inside the
         bounds of the statistics, so clipping is the identity.
    (B2) mu with delta(eps; mu) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
         = delta (Dong, Roth & Su 2022): dpreg.privacy.mechanisms.gdp_mu;
         mu(1, 1e-6) = 0.2367.
    (B3) H, lambda_min and the T rounds get mu/sqrt(3) each, each round
         mu/sqrt(3T): sigma_H = sigma_l = sqrt(3) B_X^2 / mu,
         sigma_g = sqrt(3T) B_X B_Y / mu.
    (B4) H^ = X^T X + sigma_H Z (symmetric Z); lam~ = lambda_min(X^T X) +
         sigma_l z, lam_lb = max(0, lam~ - 1.96 sigma_l), lam = max(0,
         1.96 sqrt(d) sigma_H - lam_lb), H = H^ + lam I.
    (B5) theta_0 = 0; r = clip(y - X theta_{t-1}, -B_Y, B_Y), g_t = X^T r +
         sigma_g xi_t, theta_t = theta_{t-1} + eta_t H^{-1} g_t; output theta_T.

Privacy: ``T + 2`` Gaussian releases, the rounds chosen adaptively; GDP
composes adaptively (Dong, Roth & Su 2022, Corollary 3.3), so the run is
``sqrt(mu^2/3 + mu^2/3 + T mu^2/(3T)) = mu``-GDP, hence exactly
``(epsilon, delta)``-DP under add/remove.  The ledger composes the releases
from their scales (:func:`dpreg.privacy.mechanisms.compose`).

The three entries
-----------------
``bas``
    (B1)-(B5) with (B3)'s calibration.
``bas-google``
    Dick et al.'s re-implementation (cited there as Algorithm 1 of
    arXiv 2303.03451): the split of (B3) but ``H = X^T X + (sqrt(3)/mu) Z`` with
    ``Z`` a full non-symmetric matrix, plus ``lam~ I`` where ``lam~ =
    max(0, lambda_min(X^T X)) + (sqrt(3)/mu) z`` (no 1.96 rule, no clamp), and
    ``pinv(H)``.  Its ``mu`` (:func:`google_mu`) is the first point of a
    1000-point grid on ``[mu0/2, mu0]`` with ``delta(eps; mu) > delta`` -- just
    above the root, so the run is ``(epsilon, delta')`` with ``delta'``
    slightly above ``delta`` (:func:`google_excess`: ``mu`` at most 1/999 too
    large for ``epsilon`` in [0.1, 10], 9.3e-4 near 1.52; 9.4e-5 at 1, where
    ``delta`` is exceeded by 0.19 %; its releases are marked invalid and the
    ledger's exact epsilon is slightly above the nominal one).  Above
    ``epsilon ~ 10.4`` the starting point ``mu0`` already exceeds twice the
    root and the grid cannot come back: at ``epsilon = 20`` ``mu`` is 2.2
    times too large and the run is 58.5-DP at ``delta = 1e-6``.
    The code takes sensitivity 1 for every release with clip norms 1; here
    the sensitivities are ``B_X^2`` and ``B_X B_Y`` (the same at unit bounds,
    the spec's setting).
``bas-amazon-code``
    The released code: the noise standard deviations are ``B_X^2 mu``,
    ``B_X^2 mu`` and ``B_X B_Y mu`` -- ``mu`` multiplies where a ``mu``-GDP
    release divides -- and the budget is not split over the ``T + 2``
    releases.  Each release is then ``(1/mu)``-GDP and the run
    ``sqrt(T + 2)/mu``-GDP (:func:`amazon_code_mu`: 42.7 at ``epsilon = 1``,
    ``T = 100``), not ``(epsilon, delta)``-DP; its releases are recorded with
    the code's scales and the nominal shares ``(epsilon, delta)/(T + 2)``,
    marked invalid, and the ledger's exact epsilon is the true one
    (:func:`amazon_code_epsilon`: 1112 at ``delta = 1e-6``).  Since ``mu``
    grows with ``epsilon``, its noise *shrinks* as ``epsilon`` does (noise-free
    as ``epsilon -> 0``): the true epsilon is 4.8e6 at a claimed 0.01 and, the
    other way round, 4.8 at a claimed 100.  A reproduction: not reported as private.

Predictions are made by the sweep on the test rows as they are (the code
clips them to ``B_X``; with rows inside the bounds that is the identity).

References
----------
Tang, S., Aydore, S., Kearns, M., Rho, S., Roth, A., Wang, Y., Wang, Y.-X.
& Wu, Z. S. (2024). Improved differentially private regression via
gradient boosting. SaTML (arXiv 2303.03451); code
``amazon-science/boostedadassp`` @f644481.
Dick, T., Gillenwater, J. & Joseph, M. (2023). Better private linear
regression through better private feature selection. NeurIPS (arXiv
2306.00920); code google-research ``private_kendall/boosted_adassp.py``.
Dong, J., Roth, A. & Su, W. (2022). Gaussian differential privacy. JRSS-B
(Corollary 2.13, the (eps, delta) curve; Corollary 3.3, composition).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpreg._validation import DPRegError, epsilon_too_small
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext
from dpreg.algorithms.residuals import ClippedGradient
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = [
    "ENTRIES",
    "SHRINKAGE",
    "amazon_code_epsilon",
    "amazon_code_mu",
    "bas_fit",
    "bas_releases",
    "bas_sigmas",
    "boost",
    "google_excess",
    "google_mu",
]

#: The shrinkage schedules ``eta_t`` of the authors' code.
SHRINKAGE = {
    "1": lambda t: 1.0,
    "1/t": lambda t: 1.0 / t,
    "1/sqrt(t)": lambda t: 1.0 / math.sqrt(t),
}
#: The normal quantile of the ridge rule (B4).
Z975 = 1.96


def _check_T(T: object) -> int:
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or int(T) < 1:
        raise DPRegError(f"bas: hyperparameter T must be an integer >= 1, got {T!r}")
    return int(T)


def _check_eta(eta: object) -> str:
    if eta not in SHRINKAGE:
        raise DPRegError(f"bas: hyperparameter eta must be one of {sorted(SHRINKAGE)}, got {eta!r}")
    return str(eta)


def bas_sigmas(mu: float, T: int, bound_x: float, bound_y: float) -> tuple[float, float]:
    """(B3): ``(sigma_H = sigma_l, sigma_g) = (sqrt(3) B_X^2 / mu, sqrt(3T) B_X B_Y / mu)``."""
    return math.sqrt(3.0) * bound_x**2 / mu, math.sqrt(3.0 * T) * bound_x * bound_y / mu


@lru_cache(maxsize=1024)
def google_mu(epsilon: float, delta: float) -> float:
    """Dick et al.'s ``dp_to_gdp``: a grid search for ``mu`` from above.

    ``mu0 = eps^2 / (2 ln(1.25/delta))``, doubled until ``delta(eps; mu0) >
    delta``; then the first of ``linspace(mu0/2, mu0, 1000)`` with
    ``delta(eps; mu) > delta`` -- the smallest grid point above the exact
    root, never below it.
    """
    mu = epsilon**2 / (2.0 * math.log(1.25 / delta))
    if not mu > 0:  # eps^2 underflows: the code's loop would never end
        raise epsilon_too_small(epsilon)
    while True:
        if delta < mech.gdp_delta(epsilon, mu):
            for m in np.linspace(mu / 2.0, mu, 1000):
                if delta < mech.gdp_delta(epsilon, float(m)):
                    return float(m)
        mu *= 2.0


def google_excess(epsilon: float, delta: float) -> tuple[float, float]:
    """How far ``bas-google`` misses: ``(mu_google / mu - 1, delta(eps; mu_google) / delta)``."""
    exact = mech.gdp_mu(epsilon=epsilon, delta=delta)
    mu_g = google_mu(epsilon, delta)
    return mu_g / exact - 1.0, mech.gdp_delta(epsilon, mu_g) / delta


def amazon_code_mu(epsilon: float, delta: float, T: int) -> float:
    """GDP parameter of the released code's run: ``sqrt(T + 2) / mu`` (bounds cancel).

    Each of the ``T + 2`` releases has sensitivity ``D`` and noise ``D mu``,
    so it is ``(1/mu)``-GDP; they compose to ``sqrt(T + 2)/mu``.
    """
    return math.sqrt(T + 2.0) / mech.gdp_mu(epsilon=epsilon, delta=delta)


def amazon_code_epsilon(epsilon: float, delta: float, T: int) -> float:
    """The exact epsilon at ``delta`` of the released code claiming ``(epsilon, delta)``."""
    return mech.gdp_epsilon(mu=amazon_code_mu(epsilon, delta, T), delta=delta)


def bas_releases(ctx: ReleaseContext, *, variant: str) -> list[Release]:
    """The ``T + 2`` releases of one run.

    ``variant``: ``bas``, ``google`` (Dick et al.'s grid ``mu``),
    ``google-exact`` (their algorithm with the exact ``mu``; used after
    DPKendall selection by :mod:`dpreg.algorithms.kendall`) or ``amazon-code``.
    """
    T = _check_T(ctx.param("T"))
    _check_eta(ctx.param("eta"))
    eps, delta = ctx.epsilon, ctx.delta
    bx2, bxy = ctx.bound_x**2, ctx.bound_x * ctx.bound_y
    if variant == "amazon-code":
        mu = mech.gdp_mu(epsilon=eps, delta=delta)
        s_h, s_g = bx2 * mu, bxy * mu  # the code: sigma = sensitivity * mu, no split
        shares = [(eps / (T + 2), delta / (T + 2))] * (T + 2)
        calibration = "bas-amazon-code"
    else:
        mu = google_mu(eps, delta) if variant == "google" else mech.gdp_mu(epsilon=eps, delta=delta)
        s_h, s_g = bas_sigmas(mu, T, ctx.bound_x, ctx.bound_y)
        # nominal shares of the GDP split (the exact cost is composed from the scales)
        shares = [(eps / 3, delta / 3)] * 2 + [(eps / (3 * T), delta / (3 * T))] * T
        calibration = "bas-google" if variant == "google" else "gdp"  # google-exact: gdp
    specs = [("XtX", bx2, s_h), ("lambda_min", bx2, s_h)]
    specs += [(f"grad_{t + 1}", bxy, s_g) for t in range(T)]
    # the whole run is mu_run-GDP; valid iff that meets the claimed (epsilon, delta)
    mu_run = math.sqrt(sum((D / s) ** 2 for _, D, s in specs))
    valid = mech.gdp_delta(eps, mu_run) <= delta * (1 + 1e-9)
    return [
        mech.gaussian_release(
            name,
            sensitivity=D,
            sigma=s,
            epsilon=e_i,
            delta=d_i,
            calibration=calibration,
            valid=valid,
        )
        for (name, D, s), (e_i, d_i) in zip(specs, shares, strict=True)
    ]


def boost(
    stats: SuffStats,
    X: np.ndarray,
    y: np.ndarray,
    H: np.ndarray,
    noise: np.ndarray,
    *,
    clip: float,
    row_norm: float,
    eta: str,
    pinv: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B5) for ``R`` repeats: ``theta_t = theta_{t-1} + eta_t H^{-1} (X^T r_t + noise_t)``.

    Parameters
    ----------
    stats : SuffStats
        The fold's statistics; they hold the cache of the rows' ``X^T X`` and
        ``X^T y`` (:class:`dpreg.algorithms.residuals.ClippedGradient`).
    H : ndarray, shape (R, d, d)
        The regularised noisy Gram matrices.
    noise : ndarray, shape (R, T, d)
        The scaled noise of each round's ``X^T r``.
    clip : float
        ``B_Y``: residuals are clipped to ``[-B_Y, B_Y]``.
    row_norm : float
        B_X, the bound on every row norm: round t's clip implies the
        sensitivity ``B_X B_Y`` of its release ``grad_t`` (recorded for
        :mod:`dpreg.privacy.drawcheck`).

    Returns
    -------
    theta, failed, grads
        The fits, which repeats failed, and the released ``g_t`` of shape (R, T, d).
    """
    R, T, d = noise.shape
    failed = np.zeros(R, dtype=bool)
    if pinv:
        Hinv = np.linalg.pinv(H)
    else:
        Hinv = np.full((R, d, d), np.nan)
        for r in range(R):
            try:
                Hinv[r] = np.linalg.inv(H[r])
            except np.linalg.LinAlgError:
                failed[r] = True
    theta = np.zeros((R, d))
    grads = np.empty((R, T, d))
    step = SHRINKAGE[eta]
    gradient = ClippedGradient(stats, X, y, R, clip=clip, row_norm=row_norm)
    for t in range(T):
        g = gradient(theta, release=f"grad_{t + 1}") + noise[:, t]
        grads[:, t] = g
        with np.errstate(invalid="ignore", over="ignore"):
            theta = theta + step(t + 1) * np.einsum("rij,rj->ri", Hinv, g)
    failed |= ~np.all(np.isfinite(theta), axis=1)
    theta[failed] = np.nan
    return theta, failed, grads


def bas_fit(stats: SuffStats, rel: list[Release], opts: FitOptions, *, variant: str) -> FitResult:
    X, y = opts.rows  # type: ignore[misc]
    d = stats.d
    T = _check_T(opts.params["T"])
    eta = _check_eta(opts.params["eta"])
    R = opts.size
    google = variant.startswith("google")
    kinds = ("full" if google else "symmetric", "scalar", *["vector"] * T)
    # one repeat-major block of normals: [H noise | lambda_min noise | T round noises]
    parts = mech.normal_block_noise(
        kinds,
        [r.scale for r in rel],
        d,
        rng=opts.rng,  # type: ignore[arg-type]
        size=R,
        releases=[r.name for r in rel],
    )
    E, z_l = parts[0], parts[1]
    xi = np.stack(parts[2:], axis=1)  # (R, T, d)
    H_hat = stats.xtx + E  # the released X^T X
    sigma_h, sigma_l = rel[0].scale, rel[1].scale
    lam_min = stats.lambda_min()
    idx = np.arange(d)
    if google:
        lam_noisy = max(0.0, lam_min) + z_l  # added to the diagonal as is
        lam = lam_noisy
    else:
        lam_noisy = lam_min + z_l
        lam_lb = np.maximum(0.0, lam_noisy - Z975 * sigma_l)
        lam = np.maximum(0.0, Z975 * math.sqrt(d) * sigma_h - lam_lb)
    H = H_hat.copy()
    H[:, idx, idx] += lam[:, None]
    theta, failed, grads = boost(
        stats, X, y, H, xi, clip=stats.bound_y, eta=eta, pinv=google, row_norm=stats.bound_x
    )
    released = None
    if opts.capture:
        released = {"XtX": H_hat, "lambda_min": lam_noisy}
        released.update({f"grad_{t + 1}": grads[:, t] for t in range(T)})
    return FitResult(theta, lam, failed, released)


def _entry_fns(variant: str):
    def releases(ctx: ReleaseContext) -> list[Release]:
        return bas_releases(ctx, variant=variant)

    def fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
        return bas_fit(stats, rel, opts, variant=variant)

    return releases, fit


_BAS = _entry_fns("bas")
_GOOGLE = _entry_fns("google")
_AMAZON = _entry_fns("amazon-code")
_PARAMS = {"T": 100, "eta": "1"}

ENTRIES = [
    Algorithm(
        "bas",
        "BoostedAdaSSP",
        private=True,
        calibration="gdp",
        release_fn=_BAS[0],
        fit_fn=_BAS[1],
        needs_rows=True,
        has_lambda=True,
        hyperparameters=_PARAMS,
        style=Style("deeppink", "-", "<"),
        reference="Tang et al. (SaTML 2024) BoostedAdaSSP, T = 100; μ-GDP split over "
        "its T + 2 releases (H, λ_min: μ/√3; each round μ/√(3T))",
    ),
    Algorithm(
        "bas-google",
        "BoostedAdaSSP (Dick et al.'s code)",
        private=True,
        calibration="bas-google",
        release_fn=_GOOGLE[0],
        fit_fn=_GOOGLE[1],
        needs_rows=True,
        has_lambda=True,
        reproduction=True,
        hyperparameters=_PARAMS,
        style=Style("hotpink", ":", "<"),
        reference="google-research private_kendall/boosted_adassp.py: full noise on XᵀX, "
        "noisy λ_min added, pinv; μ from a grid just above the root",
    ),
    Algorithm(
        "bas-amazon-code",
        "BoostedAdaSSP (authors' code)",
        private=True,
        calibration="bas-amazon-code",
        release_fn=_AMAZON[0],
        fit_fn=_AMAZON[1],
        needs_rows=True,
        has_lambda=True,
        reproduction=True,
        hyperparameters=_PARAMS,
        style=Style("palevioletred", "--", "<"),
        reference="amazon-science/boostedadassp @f644481 as released: noise × μ, no split "
        "over T + 2 releases (√(T+2)/μ-GDP, not private as claimed)",
    ),
]
