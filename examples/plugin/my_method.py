"""AdaSSP with an uneven budget split: a worked dpreg plug-in in one file.

AdaSSP (Wang 2018, Algorithm 2) makes three Gaussian releases -- the
smallest eigenvalue ``lambda_min`` of ``X^T X``, ``X^T X`` and ``X^T y`` --
and splits ``(epsilon, delta)`` equally among them.  ``lambda_min`` only
tunes the ridge parameter, so this variant spends a smaller share of
epsilon on it (``lambda_share``, default 0.1) and splits the rest equally
between ``X^T X`` and ``X^T y``; delta is split equally.  Every release is
calibrated with the analytic Gaussian mechanism (Balle & Wang 2018,
Theorem 8) at its own ``(epsilon_i, delta / 3)``, so the three compose to
``(epsilon, delta)`` by basic composition.

Run it through the pipeline with ``plugins: [my_method.py]`` in the config
(see README.md here and docs/tutorials/add-a-method.md).

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI.
Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism for
differential privacy: analytical calibration and optimal denoising. ICML.
"""

from __future__ import annotations

import math

import numpy as np

from dpreg.algorithms.adassp import adassp_lambda
from dpreg.algorithms.base import Algorithm
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
from dpreg.privacy.mechanisms import Release


def releases(ctx: ReleaseContext) -> list[Release]:
    """``lambda_min``, ``XtX`` and ``Xty`` at (share * eps, delta/3), ((1-share)/2 * eps, delta/3) x 2.

    Sensitivities ``B_X^2``, ``B_X^2`` and ``B_X B_Y`` (add/remove one row with
    ``||x|| <= B_X``, ``|y| <= B_Y``; Wang 2018).
    """
    share = float(ctx.param("lambda_share"))
    if not 0.0 < share < 1.0:
        raise ValueError(f"adassp-skew: lambda_share must lie in (0, 1), got {share!r}")
    bx, by = ctx.bound_x, ctx.bound_y
    parts = [
        ("lambda_min", bx * bx, share * ctx.epsilon),
        ("XtX", bx * bx, (1.0 - share) / 2.0 * ctx.epsilon),
        ("Xty", bx * by, (1.0 - share) / 2.0 * ctx.epsilon),
    ]
    d_i = ctx.delta / 3.0
    return [
        mech.gaussian_release(
            name,
            sensitivity=sens,
            sigma=mech.analytic_sigma(epsilon=e_i, delta=d_i, sensitivity=sens),
            epsilon=e_i,
            delta=d_i,
            calibration="analytic",
            valid=True,
        )
        for name, sens, e_i in parts
    ]


def fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult | PendingSolve:
    """AdaSSP's steps with the scales read from the releases (never recomputed)."""
    d = stats.d
    sigma_l = rel[0].scale
    shift = math.sqrt(math.log(6.0 / (3.0 * rel[0].delta)))  # Wang's code: sqrt(ln(6/delta))
    z_l, E, e = draw_noise(opts.noise_kinds, rel, d, rng=opts.rng, size=opts.size)
    lam_noisy = stats.lambda_min(opts.xtx_offset) + z_l  # the released lambda_min
    lam = adassp_lambda(lam_noisy, sigma_l, shift, d, opts.rho)
    xtx = stats.xtx + E
    xty = stats.xty + e
    A = add_to_diagonal(xtx.copy() if opts.capture else xtx, opts.xtx_offset + lam)
    released = {"lambda_min": lam_noisy, "XtX": xtx, "Xty": xty}
    return finish(A, xty, np.asarray(lam, dtype=float), opts, released)


ENTRIES = [
    Algorithm(
        "adassp-skew",
        "AdaSSP (10% of ε on λ_min)",
        private=True,
        calibration="analytic",
        release_fn=releases,
        fit_fn=fit,
        # one block of standard normals per release: lambda_min, X^T X, X^T y
        noise_kinds=("scalar", "symmetric", "vector"),
        has_lambda=True,
        stacks_runs=True,
        hyperparameters={"lambda_share": 0.1},
        reference="Wang (2018) Alg. 2 with an uneven budget split; analytic Gaussian "
        "(Balle & Wang 2018)",
        # no style: the registry gives it a colour no other private algorithm has
    )
]
