"""The functional mechanism for the squared loss (Laplace noise on the objective).

The objective ``theta^T M theta - 2 beta^T theta`` with ``M = X^T X``,
``beta = X^T y`` has monomial coefficients ``M_jj``, ``2 M_jl`` (``j < l``) and
``-2 beta_j``.  Each gets i.i.d. ``Laplace(b)`` noise, ``b = sensitivity /
epsilon``; the noisy minimiser solves ``(M~ + c I) theta = beta~`` (``c =
xtx_offset`` keeps it comparable with the SSP family).

References
----------
Zhang, J., Zhang, Z., Xiao, X., Yang, Y. & Winslett, M. (2012). Functional
mechanism: regression analysis under differential privacy. PVLDB 5(11)
(Algorithm 1; Lemma 1 for the sensitivity).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import (
    FitOptions,
    FitResult,
    PendingSolve,
    ReleaseContext,
    add_to_diagonal,
    finish,
)
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = ["ENTRIES", "functional_sensitivity"]


def functional_sensitivity(d: int, bound_x: float, bound_y: float) -> float:
    """L1 sensitivity of the functional mechanism's coefficients.

    The degree-2 coefficients (``x_ij x_il``) change by at most
    ``sum_{j,l} |x_j x_l| = ||x||_1^2 <= d B_X^2`` and the degree-1 ones
    (``2 y_i x_ij``) by at most ``2 B_Y sqrt(d) B_X`` when one row with
    ``||x|| <= B_X``, ``|y| <= B_Y`` is added or removed (Zhang et al. 2012,
    Lemma 1, with L2-bounded rows).
    """
    return d * bound_x**2 + 2.0 * math.sqrt(d) * bound_x * bound_y


def _releases(ctx: ReleaseContext) -> list[Release]:
    sens = functional_sensitivity(ctx.d, ctx.bound_x, ctx.bound_y)
    return [
        mech.laplace_release(
            "objective_coefficients", sensitivity=sens, b=sens / ctx.epsilon, epsilon=ctx.epsilon
        )
    ]


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult | PendingSolve:
    E, v = mech.objective_laplace_noise(
        stats.d,
        scale=rel[0].scale,
        rng=as_generator(opts.rng),
        size=opts.size,
        release=rel[0].name,
    )
    xtx = stats.xtx + E
    xty = stats.xty + v
    A = add_to_diagonal(xtx.copy() if opts.capture else xtx, opts.xtx_offset)
    # the released coefficients, mapped back to (M, beta)
    released = {"objective_coefficients": np.concatenate([xtx.reshape(opts.size, -1), xty], 1)}
    return finish(A, xty, np.full(opts.size, np.nan), opts, released)


ENTRIES = [
    Algorithm(
        "functional",
        "functional mechanism",
        private=True,
        calibration="laplace",
        release_fn=_releases,
        fit_fn=_fit,
        style=Style("tab:pink", "-.", "p"),
        reference="Zhang et al. (2012), Laplace noise on the objective's coefficients",
    ),
]
