"""Tight entries: AdaSSP, SSP, DP-GD and IHM at exactly the target (epsilon, delta).

Each entry is its counterpart's registry entry -- the same fit function,
noise layout, hyperparameters and neighbouring relation (add/remove) -- with
every noise scale multiplied by one factor ``z``, chosen by
:func:`dpreg.privacy.calibrate.calibrate_multiplier` so that the exact
privacy profile of all the run's releases composed meets the target
``(epsilon, delta)``: the ledger's ``eps_exact`` equals ``epsilon`` within
0.01% (never above it) and ``delta_exact`` is the profile's delta at it.
The counterpart's split of the budget between its releases (its ratios of
noise to sensitivity) is kept; only the overall level changes, so
``z`` is the ratio of the tight entry's noise to the counterpart's.

``adassp-tight`` and ``ssp-tight`` (counterparts ``adassp``, Kalaja's fixed AdaSSP, and ``ssp``)
    Gaussian releases only: exact Gaussian DP, ``mu = sqrt(sum (D_i /
    sigma_i)^2)`` at ``delta`` (Dong, Roth & Su 2019, Corollaries 2.13 and
    3.3).  Every release gets the same ``mu_i = mu / sqrt(k)``, so the noise
    equals that of ``adassp-gdp``/``ssp-gdp``, which reach the same budget in
    closed form; the tight entries use the fixed AdaSSP's fit (its shift of
    the noisy ``lambda_min``) so they differ from ``adassp`` in the scales only.
``dp-gd-tight`` (``dp-gd``)
    ``T`` Gaussian gradient sums of add/remove sensitivity ``B_X B_Y``,
    composed exactly in Gaussian DP instead of zCDP's conversion (Bun &
    Steinke 2016, Prop. 1.3), which is loose.  Under replace-one the same
    noise is ``2 mu``-GDP (see :mod:`dpreg.privacy.calibrate`).
``ihm-tight`` (``ihm``)
    The noisy ``lambda_min`` and the ``T`` gradients (Gaussian) and the ``T``
    sketches of ``k`` rows (Gaussian mixing with covariance floor ``gamma
    B_X^2 = sqrt(k) sigma_l``) composed together in Renyi DP with the optimal
    conversion (Canonne, Kamath & Steinke 2020), the tightest method the
    accountant has for the mixing sketch, instead of IHM's basic composition
    of ``(eps/2, 3 delta/4)`` and ``(eps/2, delta/4)``.  The sketch floor holds
    unless the noisy ``lambda_min`` overshoots by more than ``tau`` noise
    scales, probability ``Phi(-tau)``, which the sketches' release carries as
    its delta.  ``z`` multiplies ``sigma_l`` (hence ``gamma``) and the
    gradients' ``sigma_g``.

TukeyEM has no add/remove guarantee (see :mod:`dpreg.algorithms.tukey`), so
it has no tight entry under the comparisons' relation.

References
----------
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
Canonne, C., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS.
Wang, Y.-X. (2018); Kalaja, E. (2020); Brown et al. (2024); Lev et al. (2026):
see the counterparts' modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from dpreg._validation import DPRegError
from dpreg.algorithms import adassp, gd, sketch, ssp
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import ReleaseContext
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.accounting import mixing_release
from dpreg.privacy.calibrate import calibrate_multiplier
from dpreg.privacy.mechanisms import Release

__all__ = ["COUNTERPARTS", "ENTRIES", "tight_multiplier"]

#: tight entry -> the entry whose fit and noise split it keeps
COUNTERPARTS = {
    "adassp-tight": "adassp",
    "ssp-tight": "ssp",
    "dp-gd-tight": "dp-gd",
    "ihm-tight": "ihm",
}

CALIBRATION = "tight"


def _scaled_gaussian(r: Release, z: float) -> Release:
    return mech.gaussian_release(
        r.name,
        sensitivity=r.sensitivity,
        sigma=r.scale * z,
        epsilon=r.epsilon,
        delta=r.delta,
        calibration=CALIBRATION,
        valid=True,
    )


def _scale_gaussians(base: list[Release], z: float, ctx: ReleaseContext) -> list[Release]:
    """Every (Gaussian) release of ``base`` with its scale times ``z``."""
    for r in base:
        if r.mechanism != "gaussian":
            raise DPRegError(f"release {r.name!r} is {r.mechanism}, not Gaussian")
    return [_scaled_gaussian(r, z) for r in base]


def _scale_ihm(base: list[Release], z: float, ctx: ReleaseContext) -> list[Release]:
    """IHM's releases with ``sigma_l`` and ``sigma_g`` times ``z``; the sketches in Renyi DP.

    ``base`` is ``[lambda_min, hessian_sketches, grad_1..T]`` of ``ihm``; its
    fit reads ``k`` and ``tau`` from ``4 * lambda_min.delta`` and the floor
    ``gamma B_X^2 = sqrt(k) sigma_l`` from ``lambda_min.scale``, so the
    sketches' floor scale is ``sqrt(z)`` times ``ihm``'s.
    """
    lam, sk, *grads = base
    k, tau, _ = sketch.ihm_sizes(ctx.d, 4.0 * lam.delta, len(grads))
    lam_t = _scaled_gaussian(lam, z)
    floor = math.sqrt(math.sqrt(k) * lam_t.scale)  # sqrt(gamma B_X^2)
    sketches = mixing_release(
        sk.name,
        sensitivity=lam.sensitivity,  # ||x||^2 <= B_X^2: the rank-one change
        scale=floor,
        copies=len(grads) * k,
        epsilon=sk.epsilon,
        delta=0.5 * math.erfc(tau / math.sqrt(2.0)),  # P(z > tau): the floor fails
        calibration=CALIBRATION,
    )
    return [lam_t, sketches, *(_scaled_gaussian(g, z) for g in grads)]


def _tight(
    base_fn: Callable[[ReleaseContext], list[Release]],
    scale_fn: Callable[[list[Release], float, ReleaseContext], list[Release]],
) -> Callable[[ReleaseContext], list[Release]]:
    """The release function of a tight entry: ``base_fn``'s releases at the tight ``z``."""

    def release_fn(ctx: ReleaseContext) -> list[Release]:
        base = base_fn(ctx)
        z = calibrate_multiplier(
            lambda m: scale_fn(base, m, ctx), epsilon=ctx.epsilon, delta=ctx.delta
        )
        return scale_fn(base, z, ctx)

    return release_fn


def tight_multiplier(name: str, **kw) -> float:
    """``z`` of a tight entry: its first release's scale over its counterpart's.

    Takes the keyword arguments of :meth:`Algorithm.releases`.
    """
    from dpreg.algorithms.registry import get_algorithm

    ours = get_algorithm(name).releases(**kw)
    theirs = get_algorithm(COUNTERPARTS[name]).releases(**kw)
    return ours[0].scale / theirs[0].scale


def _entry(module, name: str, label: str, style: Style, scale_fn, note: str) -> Algorithm:
    base = {a.name: a for a in module.ENTRIES}[COUNTERPARTS[name]]
    return replace(
        base,
        name=name,
        label=label,
        calibration=CALIBRATION,
        release_fn=_tight(base.release_fn, scale_fn),
        reproduction=False,
        style=style,
        reference=f"{base.label} with every noise scale times one factor: {note}",
    )


ENTRIES = [
    _entry(
        adassp,
        "adassp-tight",
        "AdaSSP (tight)",
        Style("navy", "-", "o"),
        _scale_gaussians,
        "exact GDP at (ε, δ) (Dong, Roth & Su 2019)",
    ),
    _entry(
        ssp,
        "ssp-tight",
        "SSP (tight)",
        Style("forestgreen", "-.", "+"),
        _scale_gaussians,
        "exact GDP at (ε, δ) (Dong, Roth & Su 2019)",
    ),
    _entry(
        gd,
        "dp-gd-tight",
        "DP-GD (tight, T=3, η=0.25)",
        Style("darkmagenta", "-.", "x"),
        _scale_gaussians,
        "exact GDP at (ε, δ) over the T steps (Dong, Roth & Su 2019)",
    ),
    _entry(
        sketch,
        "ihm-tight",
        "IHM (tight)",
        Style("firebrick", "-", "d"),
        _scale_ihm,
        "Renyi DP of all releases, optimal conversion (Canonne, Kamath & Steinke 2020)",
    ),
]
