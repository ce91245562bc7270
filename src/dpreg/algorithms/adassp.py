"""AdaSSP: SSP with a data-adaptive ridge parameter from a noisy ``lambda_min``.

With ``sigma_l`` the noise scale of the ``lambda_min`` release (Wang 2018,
Algorithm 2, written through ``sigma_l``)::

    lam_tilde = max(lambda_min(X^T X + c I) + sigma_l z - shift * sigma_l, 0)
    lam = max(0, sqrt(d ln(2 d^2 / rho)) sigma_l - lam_tilde)
    theta = (X^T X + c I + E + lam I)^{-1} (X^T y + e)

``shift`` is ``sqrt(ln(6/delta))`` in Wang's code and ``sqrt(2 ln(3.75/delta))``
in Kalaja's Algorithm 3; the three releases (``lambda_min``, ``XtX``, ``Xty``)
have sensitivities ``B_X^2``, ``B_X^2`` and ``B_X B_Y``.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI
(Algorithm 2 "AdaSSP"; public code ``AdaSSP.m``).
Kalaja, E. (2020). MSc thesis, Univ. Helsinki (Algorithm 3, fixed AdaSSP).
Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism for
differential privacy: analytical calibration and optimal denoising. ICML
(Theorem 8, the ``analytic`` calibration).
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

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
from dpreg.algorithms.ssp import gdp_releases, split_releases
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy.mechanisms import Release

__all__ = ["ENTRIES", "adassp_lambda"]


def _names(ctx: ReleaseContext) -> tuple[tuple[str, float], ...]:
    bx, by = ctx.bound_x, ctx.bound_y
    return (("lambda_min", bx * bx), ("XtX", bx * bx), ("Xty", bx * by))


def _releases_wang(ctx: ReleaseContext) -> list[Release]:
    """Wang's ``AdaSSP.m``: ``sigma = sqrt(ln(6/delta)) / (eps/3) * sensitivity``."""
    s = math.sqrt(math.log(6.0 / ctx.delta)) / (ctx.epsilon / 3)
    return split_releases(
        _names(ctx), epsilon=ctx.epsilon, delta=ctx.delta, calibration="wang", unit_sigma=s
    )


def _releases_classical(ctx: ReleaseContext) -> list[Release]:
    """Kalaja's Algorithm 3: classical Gaussian mechanism at ``(eps/3, delta/3)``."""
    return split_releases(
        _names(ctx), epsilon=ctx.epsilon, delta=ctx.delta, calibration="classical"
    )


def _releases_analytic(ctx: ReleaseContext) -> list[Release]:
    """The analytic Gaussian mechanism at ``(eps/3, delta/3)`` (Balle & Wang 2018, Thm 8)."""
    return split_releases(_names(ctx), epsilon=ctx.epsilon, delta=ctx.delta, calibration="analytic")


def _releases_gdp(ctx: ReleaseContext) -> list[Release]:
    return gdp_releases(_names(ctx), ctx.epsilon, ctx.delta)


def adassp_lambda(lam_noisy: np.ndarray, sigma_l: float, shift: float, d: int, rho: float):
    """AdaSSP's ridge parameter from the released ``lambda_min`` (post-processing).

    ``lam = max(0, sqrt(d ln(2 d^2/rho)) sigma_l - max(lam_noisy - shift sigma_l, 0))``
    (Wang 2018, Algorithm 2, steps 2-3).
    """
    lam_tilde = np.maximum(lam_noisy - shift * sigma_l, 0.0)
    return np.maximum(0.0, math.sqrt(d * math.log(2.0 * d * d / rho)) * sigma_l - lam_tilde)


def _fit_adassp(
    stats: SuffStats,
    rel: list[Release],
    opts: FitOptions,
    *,
    shift: Callable[[float], float],
) -> FitResult | PendingSolve:
    d = stats.d
    sigma_l = rel[0].scale
    delta = 3.0 * rel[0].delta  # every AdaSSP release carries delta / 3
    z_l, E, e = draw_noise(opts.noise_kinds, rel, d, rng=opts.rng, size=opts.size)  # type: ignore[arg-type]
    lam_noisy = stats.lambda_min(opts.xtx_offset) + z_l  # the released lambda_min
    lam = adassp_lambda(lam_noisy, sigma_l, shift(delta), d, opts.rho)
    xtx = stats.xtx + E
    xty = stats.xty + e
    A = add_to_diagonal(xtx.copy() if opts.capture else xtx, opts.xtx_offset + lam)
    released = {"lambda_min": lam_noisy, "XtX": xtx, "Xty": xty}
    return finish(A, xty, lam, opts, released)


def _wang_shift(delta: float) -> float:
    """Wang's code: ``L = ln(6/delta)``; the shift ``L/(eps/3) B^2`` equals ``sqrt(L) sigma``."""
    return math.sqrt(math.log(6.0 / delta))


def _kalaja_shift(delta: float) -> float:
    """Kalaja's Algorithm 3: ``L' = 2 ln(3.75/delta)`` replaces ``L`` everywhere."""
    return math.sqrt(2.0 * math.log(3.75 / delta))


def _fit(shift: Callable[[float], float]):
    """The fit function of an AdaSSP entry with this shift (noise layout from the entry)."""

    def fit(stats: SuffStats, rel: list[Release], opts: FitOptions):
        return _fit_adassp(stats, rel, opts, shift=shift)

    return fit


_SYM = ("scalar", "symmetric", "vector")
_WANG = ("scalar", "wang", "vector")

ENTRIES = [
    Algorithm(
        "adassp-wang",
        "AdaSSP (Wang's code)",
        private=True,
        calibration="wang",
        release_fn=_releases_wang,
        fit_fn=_fit(_wang_shift),
        stacks_runs=True,
        noise_kinds=_WANG,
        has_lambda=True,
        reproduction=True,
        style=Style("tab:orange", ":", "o"),
        reference="Wang (2018) Alg. 2 as in AdaSSP.m: (G+Gᵀ)/2 noise, s = sqrt(ln(6/δ))/(ε/3)",
    ),
    Algorithm(
        "adassp",
        "AdaSSP (fixed)",
        private=True,
        calibration="classical",
        release_fn=_releases_classical,
        fit_fn=_fit(_kalaja_shift),
        stacks_runs=True,
        noise_kinds=_SYM,
        has_lambda=True,
        style=Style("tab:blue", "--", "o"),
        reference="Kalaja (2020) Alg. 3: classical Gaussian at (ε/3, δ/3)",
    ),
    Algorithm(
        "adassp-analytic",
        "AdaSSP (analytic)",
        private=True,
        calibration="analytic",
        release_fn=_releases_analytic,
        fit_fn=_fit(_wang_shift),
        stacks_runs=True,
        noise_kinds=_SYM,
        has_lambda=True,
        style=Style("tab:purple", "-.", "o"),
        reference="AdaSSP with the analytic Gaussian at (ε/3, δ/3) (Balle & Wang 2018)",
    ),
    Algorithm(
        "adassp-gdp",
        "AdaSSP (GDP)",
        private=True,
        calibration="gdp",
        release_fn=_releases_gdp,
        fit_fn=_fit(_wang_shift),
        stacks_runs=True,
        noise_kinds=_SYM,
        has_lambda=True,
        style=Style("tab:cyan", "-", "h"),
        reference="AdaSSP with exact μ-GDP accounting (Dong, Roth & Su 2019)",
    ),
]
