"""DP gradient descent for least squares, with Lev et al.'s benchmark settings.

From ``theta_0 = 0``, ``T`` full-batch steps

    theta_t = theta_{t-1} + (eta / n) (sum_i x_i clip(y_i - x_i^T theta_{t-1}, -C, C) + sigma xi_t),

``xi_t ~ N(0, I_d)``.  Clipping the residual to ``[-C, C]`` bounds each row's
gradient by ``gamma = B_X C`` (Lev et al.'s baseline; Brown et al. clip the
per-example gradient to norm ``gamma`` instead, which for rows with
``||x|| <= B_X`` and ``|residual| <= C`` is never active).  The ``T`` noisy
sums are Gaussian releases composed in zero-concentrated DP:
``rho_z = (sqrt(eps + ln(1/delta)) - sqrt(ln(1/delta)))^2`` implies
``(eps, delta)``-DP (Bun & Steinke 2016, Proposition 1.3), and ``T`` steps of
sensitivity ``Delta`` and noise ``sigma`` are ``T Delta^2 / (2 sigma^2)``-zCDP,
so ``sigma = Delta sqrt(T / (2 rho_z))``.

Benchmark settings (Lev et al. 2026, ``omrilev1/HessianMix``): ``T = 3``
(the number of IHM iterations), step size ``eta = 0.25`` (tuned offline by the
authors without privacy -- labelled as such), ``C = B_Y`` (1 on their
normalised data), ``theta_0 = 0``.  With rows of norm <= 1 three steps of
0.25 move little from zero; that is reported, not re-tuned here.

Neighbouring relation and the two entries
-----------------------------------------
``dp-gd-lev``
    Lev et al.'s and Brown et al.'s calibration ``sigma_mean^2 = 2 T gamma^2 /
    (rho_z n^2)`` (spec M16): the mean gradient has sensitivity ``2 gamma / n``
    when one row is *replaced*, so this is ``(eps, delta)``-DP under
    replace-one neighbours.
``dp-gd``
    The same algorithm converted to add/remove neighbours, the relation of
    SSP, AdaSSP, sketch OLS and IHM, so all of them are compared at the same
    ``(eps, delta)``: the noisy *sum* has sensitivity ``gamma`` when a row is
    added or removed, so ``sigma = gamma sqrt(T / (2 rho_z))`` on the sum (half
    of ``dp-gd-lev``'s noise), and the division by ``n`` uses the training
    fold's size, treated as public (the cross-validation protocol fixes it).

The script ``compare_with_tukey.py`` of Brown et al.'s repository calibrates
with about 8x less noise variance than M16; that is not reproduced.

References
----------
Brown, G., Dvijotham, K., Evans, G., Liu, D., Smith, A. & Thakurta, A.
(2024). Private gradient descent for linear regression: tighter error bounds
and instance-specific uncertainty estimation. ICML (PMLR 235:4561); code
``gavinrbrown1/DPGD-for-regression``.
Bun, M. & Steinke, T. (2016). Concentrated differential privacy:
simplifications, extensions, and lower bounds. TCC (Propositions 1.3 and 1.6,
and their composition lemma).
Lev, O., Shenfeld, M., Srinivasan, V., Ligett, K. & Wilson, A. C. (2026).
Iterative Hessian mixing (arXiv 2601.07545); code ``omrilev1/HessianMix``.
"""

from __future__ import annotations

import math

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext
from dpreg.algorithms.residuals import ClippedGradient
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = ["ENTRIES", "dpgd_sigma", "zcdp_rho"]


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ``rho`` for which ``rho``-zCDP implies ``(epsilon, delta)``-DP here.

    ``rho = (sqrt(eps + ln(1/delta)) - sqrt(ln(1/delta)))^2``, the inverse of
    ``eps = rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke 2016, Prop. 1.3).
    """
    L = math.log(1.0 / delta)
    # the same value as (sqrt(eps + L) - sqrt(L))^2 without cancellation at tiny eps
    return (epsilon / (math.sqrt(epsilon + L) + math.sqrt(L))) ** 2


def dpgd_sigma(*, epsilon: float, delta: float, sensitivity: float, T: int) -> float:
    """Noise std of each of ``T`` Gaussian steps that compose to ``zcdp_rho(eps, delta)``.

    ``sigma = sensitivity * sqrt(T / (2 rho_z))`` (each step is
    ``sensitivity^2 / (2 sigma^2)``-zCDP and zCDP composes additively; Bun & Steinke 2016).
    """
    L = math.log(1.0 / delta)
    # = sensitivity sqrt(T / (2 rho_z)) with 1/sqrt(rho_z) = (sqrt(eps + L) + sqrt(L)) / eps,
    # which stays finite where rho_z itself underflows (tiny eps); an infinite scale is
    # then refused with the one "epsilon too small" message by the release factory
    with np.errstate(over="ignore"):
        return float(
            sensitivity * math.sqrt(T / 2.0) * ((math.sqrt(epsilon + L) + math.sqrt(L)) / epsilon)
        )


def _params(ctx_or_params) -> tuple[int, float]:
    get = ctx_or_params.param if isinstance(ctx_or_params, ReleaseContext) else ctx_or_params.get
    T, eta = get("T"), get("eta")
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or int(T) < 1:
        raise DPRegError(f"dp-gd: hyperparameter T must be an integer >= 1, got {T!r}")
    if isinstance(eta, bool) or not isinstance(eta, int | float) or not (0 < eta < math.inf):
        raise DPRegError(f"dp-gd: hyperparameter eta must be a number > 0, got {eta!r}")
    return int(T), float(eta)


def _clip(params) -> float:
    """The residual clip in units of ``B_Y`` (1 unless a tuner's candidate sets ``clip``)."""
    c = params.get("clip", 1.0)
    if isinstance(c, bool) or not isinstance(c, int | float) or not (0 < c < math.inf):
        raise DPRegError(f"dp-gd: clip must be a number > 0 (units of B_Y), got {c!r}")
    return float(c)


def _releases(ctx: ReleaseContext, *, replace_one: bool) -> list[Release]:
    """``T`` Gaussian releases of the clipped gradient sum (sensitivity ``gamma`` or ``2 gamma``)."""
    T, _ = _params(ctx)
    gamma = ctx.bound_x * ctx.bound_y * _clip(dict(ctx.params))
    sens = 2.0 * gamma if replace_one else gamma
    sigma = dpgd_sigma(epsilon=ctx.epsilon, delta=ctx.delta, sensitivity=sens, T=T)
    return [
        mech.gaussian_release(
            f"grad_{t + 1}",
            sensitivity=sens,
            sigma=sigma,
            epsilon=ctx.epsilon / T,
            delta=ctx.delta / T,
            calibration="zcdp",
            valid=True,
        )
        for t in range(T)
    ]


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    X, y = opts.rows  # type: ignore[misc]
    n, d = X.shape
    T, eta = _params(opts.params)
    C = stats.bound_y * _clip(opts.params)
    R = opts.size
    sigma = rel[0].scale
    xi = mech.standard_normals((R, T * d), rng=opts.rng).reshape(R, T, d)  # type: ignore[arg-type]
    theta = np.zeros((R, d))
    sums = np.empty((R, T, d))
    gradient = ClippedGradient(stats, X, y, R, clip=C, row_norm=stats.bound_x)
    for t in range(T):
        name = f"grad_{t + 1}"
        sums[:, t] = gradient(theta, release=name) + drawcheck.scaled(xi[:, t], sigma, release=name)
        theta = theta + (eta / n) * sums[:, t]
    failed = ~np.all(np.isfinite(theta), axis=1)
    theta[failed] = np.nan
    released = {f"grad_{t + 1}": sums[:, t] for t in range(T)} if opts.capture else None
    return FitResult(theta, np.full(R, np.nan), failed, released)


def _releases_add_remove(ctx: ReleaseContext) -> list[Release]:
    return _releases(ctx, replace_one=False)


def _releases_replace_one(ctx: ReleaseContext) -> list[Release]:
    return _releases(ctx, replace_one=True)


_HYPER = {"T": 3, "eta": 0.25}

ENTRIES = [
    Algorithm(
        "dp-gd",
        "DP-GD (T=3, η=0.25)",
        private=True,
        calibration="zcdp",
        release_fn=_releases_add_remove,
        fit_fn=_fit,
        needs_rows=True,
        hyperparameters=_HYPER,
        tuned_nonprivately=("eta",),
        style=Style("magenta", "-", "x"),
        reference="Brown et al. (2024) DP-GD, Lev et al. (2026) settings, add/remove calibration",
    ),
    Algorithm(
        "dp-gd-lev",
        "DP-GD (Lev et al., replace-one)",
        private=True,
        calibration="zcdp",
        release_fn=_releases_replace_one,
        fit_fn=_fit,
        needs_rows=True,
        hyperparameters=_HYPER,
        tuned_nonprivately=("eta",),
        neighbouring="replace-one",
        style=Style("orchid", "--", "x"),
        reference="HessianMix baseline: σ² = 2Tγ²/(ρ_z n²) on the mean gradient (replace-one)",
    ),
]
