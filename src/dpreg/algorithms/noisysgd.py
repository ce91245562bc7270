"""NoisySGD as in Wang's ``noisySGD.m`` (spec section 4): two passes of noisy minibatch SGD.

With ``ell = ln(2/delta)``, ``T = n``, ``B = 1`` and ``base = 1`` (spec W18-W20)::

    sz = floor(eps n / (2 ell base sqrt(2T)));  if sz < 1: sz = 1, base = eps n / (2 ell sqrt(2T))
    each step: I = sz indices drawn uniformly with replacement, L_t = 1 + ||theta||
      (for rows inside general bounds: B_X (B_X ||theta|| + B_Y), the gradient bound),
      sigma_t = sqrt(ell) L_t / base,  eta_t = B / (sqrt(2T) sqrt(sigma_t^2 ell + L_t^2)),
      g = X_I^T (X_I theta - y_I) - theta + sigma_t xi
    phase 1 (T steps): theta <- theta - eta_t g
    phase 2 (T steps): theta <- theta - (eta_t / sz) g, output the running mean of phase 2.

The repeats run as independent chains, one ``(R, d)`` array updated in place;
each chain draws its indices and noise from its own child generator
(``rng.spawn``), in chunks of steps, so a repeat does not change when more
repeats are drawn.  The ``-theta`` term
(anti-ridge, the file calls it a regulariser), the missing ``1/sz`` in phase
1 and sampling with replacement are kept.  The file is not run by Wang's
``exp_uci.m`` and its last line would fail, so it has no published numbers.

Privacy: the file's comments take each step as ``(2 sz base / n)``-DP after
subsampling and the total as ``eps = 2 sqrt(2T) (sz/n) base ell``, conceding
that this understates the composition.  It is not a proven ``(eps, delta)``
bound, so the single ``"noisysgd"`` release is always marked outside validity.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression. UAI
(code ``noisySGD.m``).
Bassily, R., Smith, A. & Thakurta, A. (2014). Private empirical risk
minimization: efficient algorithms and tight error bounds. FOCS (the noisy
SGD this adapts).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg._validation import epsilon_too_small
from dpreg.algorithms._wang import calibration_guard, claimed_release
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = ["ENTRIES", "sgd_schedule"]

#: Steps whose indices and noise are drawn in one call (fewer when a chunk's
#: gathered rows would exceed ``_CHUNK_ELEMENTS`` numbers).
_CHUNK = 256
_CHUNK_ELEMENTS = 4_000_000


def sgd_schedule(eps: float, delta: float, n: int) -> tuple[int, float]:
    """Minibatch size ``sz`` and ``base`` of (W18)."""
    ell = math.log(2.0 / delta)
    T = n
    base = 1.0
    sz = math.floor(eps * n / (2.0 * ell * base * math.sqrt(2.0 * T)))
    if sz < 1:
        sz = 1
        base = eps * n / (2.0 * ell * math.sqrt(2.0 * T))
    return int(sz), float(base)


@calibration_guard
def _releases(ctx: ReleaseContext) -> list[Release]:
    """One claimed release; sensitivity and scale are the first step's (``theta = 0``).

    Later steps use ``L_t = B_X (B_X ||theta|| + B_Y)`` and ``sigma_t =
    sqrt(ell) L_t / base``.
    """
    _, base = sgd_schedule(ctx.epsilon, ctx.delta, ctx.need_n("noisysgd"))
    ell = math.log(2.0 / ctx.delta)
    L0 = ctx.bound_x * ctx.bound_y
    scale = math.sqrt(ell) * L0 / base
    if not math.isfinite(scale * scale * ell):  # the step size needs sigma^2 ell
        raise epsilon_too_small(ctx.epsilon)
    return [
        claimed_release(
            "theta",
            "noisysgd",
            sensitivity=L0,
            scale=scale,
            epsilon=ctx.epsilon,
            delta=ctx.delta,
            calibration="wang-sgd",
            valid=False,
        )
    ]


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    X, y = opts.rows  # type: ignore[misc]
    n, d, R = stats.n, stats.d, opts.size
    bx, by = stats.bound_x, stats.bound_y
    eps, delta = rel[0].epsilon, rel[0].delta
    ell = math.log(2.0 / delta)
    sz, base = sgd_schedule(eps, delta, n)
    T = n
    step_c = 1.0 / math.sqrt(2.0 * T)  # B / sqrt(2T) with B = 1
    # one child generator per chain: repeat r's draws do not depend on R
    chains = opts.rng.spawn(R)  # type: ignore[union-attr]
    theta = np.zeros((R, d))
    mean = np.zeros((R, d))
    for phase in (1, 2):
        done = 0
        while done < T:
            k = min(_CHUNK, T - done, max(1, _CHUNK_ELEMENTS // (R * sz * d)))
            # minibatch indices (sampling, not noise), then the Gaussian noise
            idx = np.stack([g.integers(0, n, size=(k, sz)) for g in chains], axis=1)
            xi = np.stack([mech.vector_noise(d, scale=1.0, rng=g, size=k) for g in chains], axis=1)
            for j in range(k):
                Xi = X[idx[j]]  # (R, sz, d)
                resid = np.einsum("rsd,rd->rs", Xi, theta) - y[idx[j]]
                L = bx * (bx * np.sqrt(np.einsum("rd,rd->r", theta, theta)) + by)
                sigma = math.sqrt(ell) * L / base
                eta = step_c / np.sqrt(sigma**2 * ell + L**2)
                # sigma follows the step's Lipschitz bound L: the ratio is the release's
                noise = drawcheck.scaled(xi[j], sigma, release="theta", sensitivity=L)
                g = np.einsum("rsd,rs->rd", Xi, resid) - theta + noise
                if phase == 1:
                    theta -= eta[:, None] * g
                else:
                    theta -= (eta / sz)[:, None] * g
                    t = done + j + 1
                    mean *= (t - 1) / t
                    mean += theta / t
            done += k
    failed = ~np.all(np.isfinite(mean), axis=1)
    mean[failed] = np.nan
    return FitResult(
        mean, np.full(R, np.nan), failed, {"theta": mean.copy()} if opts.capture else None
    )


ENTRIES = [
    Algorithm(
        "noisysgd",
        "NoisySGD (Wang's code)",
        private=True,
        calibration="wang-sgd",
        release_fn=_releases,
        fit_fn=_fit,
        needs_rows=True,
        reproduction=True,
        style=Style("darkkhaki", ":", "h"),
        reference="Wang (2018) noisySGD.m: two passes of noisy minibatch SGD, averaged second pass",
    ),
]
