"""Sufficient statistics perturbation (SSP): noisy ``X^T X`` and ``X^T y``, then solve.

``A = X^T X + c I + E``, ``b = X^T y + e``, ``theta = A^{-1} b`` with
``c = xtx_offset`` (Wang's code adds ``I``); ``E`` and ``e`` are Gaussian with
sensitivities ``B_X^2`` and ``B_X B_Y`` under add/remove-one-row.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI
(Algorithm 1 "SSP"; his public code ``SSP.m``).
Kalaja, E. (2020). Adaptive algorithm in differential privacy: comparative
analysis of pre-processing methods. MSc thesis, Univ. Helsinki (Algorithm 1).
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B
(Corollary 2.13 and 3.3, used by the ``gdp`` calibration).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import (
    FitOptions,
    FitResult,
    PendingSolve,
    ReleaseContext,
    add_to_diagonal,
    draw_noise,
    finish,
)
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release, gaussian_release

__all__ = ["ENTRIES", "gdp_releases", "split_releases", "wang_valid"]


def wang_valid(eps_i: float, delta_i: float, s: float) -> bool:
    """Whether Wang's scale ``sigma = s * sensitivity`` meets ``(eps_i, delta_i)``.

    Wang's scales come with no proof; a release counts as valid when the exact
    Gaussian privacy profile (``mu = sensitivity / sigma = 1 / s``) meets its
    nominal budget (Balle & Wang 2018, Theorem 8).
    """
    return mech.gdp_delta(eps_i, 1.0 / s) <= delta_i


def split_releases(
    names: tuple[tuple[str, float], ...],
    *,
    epsilon: float,
    delta: float,
    calibration: str,
    unit_sigma: float | None = None,
) -> list[Release]:
    """``k`` Gaussian releases (name, sensitivity) sharing ``(epsilon, delta)`` equally.

    Every release is calibrated for ``(epsilon / k, delta / k)``:

    * ``classical``: ``sigma = D sqrt(2 ln(1.25 / delta_i)) / epsilon_i`` (Dwork &
      Roth 2014, Thm A.1), valid while ``epsilon_i < 1``;
    * ``analytic``: ``sigma = D / mu`` with ``mu`` the exact Gaussian profile's
      parameter at ``(epsilon_i, delta_i)`` (Balle & Wang 2018, Thm 8);
    * ``wang``: ``sigma = unit_sigma * D`` as in Wang's code, valid where the
      exact profile meets ``(epsilon_i, delta_i)`` (:func:`wang_valid`);
    * ``gdp``: every release gets ``mu / sqrt(k)`` with ``mu = gdp_mu(epsilon,
      delta)``, so the ``k`` releases compose to exactly ``(epsilon, delta)``
      (Dong, Roth & Su 2019, Corollary 3.3); the nominal shares are reported.
    """
    k = len(names)
    e_i, d_i = epsilon / k, delta / k
    if calibration == "classical":
        valid = mech.classical_valid(e_i)

        def sigma(sens: float) -> float:
            return mech.classical_sigma(epsilon=e_i, delta=d_i, sensitivity=sens)
    elif calibration == "analytic":
        mu_i = mech.gdp_mu(epsilon=e_i, delta=d_i)
        valid = True

        def sigma(sens: float) -> float:
            return sens / mu_i
    elif calibration == "wang":
        if unit_sigma is None:
            raise DPRegError("Wang's calibration needs unit_sigma")
        s = float(unit_sigma)
        valid = wang_valid(e_i, d_i, s)

        def sigma(sens: float) -> float:
            return s * sens
    elif calibration == "gdp":
        mu = mech.gdp_mu(epsilon=epsilon, delta=delta)
        valid = True

        def sigma(sens: float) -> float:
            return sens * math.sqrt(k) / mu
    else:
        raise DPRegError(f"unknown calibration {calibration!r}")
    return [
        gaussian_release(
            n,
            sensitivity=sens,
            sigma=sigma(sens),
            epsilon=e_i,
            delta=d_i,
            calibration=calibration,
            valid=valid,
        )
        for n, sens in names
    ]


def gdp_releases(names: tuple[tuple[str, float], ...], eps: float, delta: float) -> list[Release]:
    """:func:`split_releases` with exact GDP accounting."""
    return split_releases(names, epsilon=eps, delta=delta, calibration="gdp")


def _names(ctx: ReleaseContext) -> tuple[tuple[str, float], ...]:
    return (("XtX", ctx.bound_x**2), ("Xty", ctx.bound_x * ctx.bound_y))


def _releases_ssp_wang(ctx: ReleaseContext) -> list[Release]:
    """Wang's ``SSP.m``: ``sigma = sqrt(ln(4/delta))/eps * sensitivity`` per release."""
    s = math.sqrt(math.log(4.0 / ctx.delta)) / ctx.epsilon
    return split_releases(
        _names(ctx), epsilon=ctx.epsilon, delta=ctx.delta, calibration="wang", unit_sigma=s
    )


def _releases_ssp(ctx: ReleaseContext) -> list[Release]:
    """Kalaja's Algorithm 1: the classical Gaussian mechanism at ``(eps/2, delta/2)``."""
    return split_releases(
        _names(ctx), epsilon=ctx.epsilon, delta=ctx.delta, calibration="classical"
    )


def _releases_ssp_gdp(ctx: ReleaseContext) -> list[Release]:
    return gdp_releases(_names(ctx), ctx.epsilon, ctx.delta)


def _fit_ssp(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult | PendingSolve:
    """Noisy ``X^T X`` and ``X^T y`` in the entry's noise layout, then one solve per repeat."""
    E, e = draw_noise(opts.noise_kinds, rel, stats.d, rng=opts.rng, size=opts.size)  # type: ignore[arg-type]
    xtx = stats.xtx + E  # the released statistics, exactly as used below
    xty = stats.xty + e
    A = add_to_diagonal(xtx.copy() if opts.capture else xtx, opts.xtx_offset)
    return finish(A, xty, np.full(opts.size, np.nan), opts, {"XtX": xtx, "Xty": xty})


ENTRIES = [
    Algorithm(
        "ssp-wang",
        "SSP (Wang's code)",
        private=True,
        calibration="wang",
        release_fn=_releases_ssp_wang,
        fit_fn=_fit_ssp,
        stacks_runs=True,
        noise_kinds=("full", "vector"),
        reproduction=True,
        style=Style("tab:red", "-", "+"),
        reference="Wang (2018) SSP.m: non-symmetric noise, s = sqrt(ln(4/δ))/ε",
    ),
    Algorithm(
        "ssp",
        "SSP (fixed)",
        private=True,
        calibration="classical",
        release_fn=_releases_ssp,
        fit_fn=_fit_ssp,
        stacks_runs=True,
        noise_kinds=("symmetric", "vector"),
        style=Style("tab:green", "--", "+"),
        reference="Kalaja (2020) Alg. 1: classical Gaussian at (ε/2, δ/2), symmetric noise",
    ),
    Algorithm(
        "ssp-gdp",
        "SSP (GDP)",
        private=True,
        calibration="gdp",
        release_fn=_releases_ssp_gdp,
        fit_fn=_fit_ssp,
        stacks_runs=True,
        noise_kinds=("symmetric", "vector"),
        style=Style("tab:olive", ":", "+"),
        reference="SSP with exact μ-GDP accounting (Dong, Roth & Su 2019)",
    ),
]
