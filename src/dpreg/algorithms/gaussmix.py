"""Gaussian Mixing ("linear mixing"): OLS on one noisy Gaussian sketch of ``[X y]``.

Lev, Srinivasan, Shenfeld, Ligett, Sekhari & Wilson (NeurIPS 2025), as in
their code ``omrilev1/GaussMix`` (``Code_LinearRegression.py``, the "Linear
mixing (ours)" block; ``utils_linear_mixing.py``: ``objective_func_full``,
``solve_sigma_renyi_full``).  Formulas (G1)-(G5) of
``SPEC-frontier-methods.md`` section 1; ``A = [X y]``, ``B^2 = B_X^2 + B_Y^2``:

(G1) ``k = max(floor(2.5 d), floor(2.5 ln(1/rho)))``, ``rho = 1e-10`` (57 for ``d <= 23``).
(G2) ``gamma``: the smallest value with ``min_{1 < alpha < gamma/B^2} E(alpha, gamma) <= epsilon``::

        E = (k alpha / (2 (alpha-1))) ln(1 - B^2/gamma) - (k / (2 (alpha-1))) ln(1 - alpha B^2/gamma)
            + [ln(3/delta) + (alpha-1) ln(1 - 1/alpha) - ln alpha] / (alpha - 1)
            + sqrt(2 ln(3.75/delta)) sqrt(k) / gamma

    (Renyi DP of the mixing mechanism, its conversion at ``delta/3`` by
    Canonne, Kamath & Steinke 2020, and the classical Gaussian cost of
    ``lambda_min`` at ``delta/3``).  :func:`gaussmix_gamma`.

(G3) ``tau = sqrt(2 ln(3/delta))``.

(G4) ``gamma <= tau``: ``s^2 = gamma``; otherwise
     ``lam~ = max(0, lambda_min(A^T A) - sigma_l (tau - z))`` and ``s^2 = max(0, gamma - lam~)``.

(G5) ``A~ = S A + s N`` (``k x (d+1)``), ``theta = (X~^T X~)^{-1} X~^T y~``.  The
     Gram matrix of ``A~`` is drawn exactly in law from ``A^T A`` by
     :func:`dpreg.algorithms.sketch.sketch_gram` (the sketch fact of that module).

Privacy (add/remove): the RDP of ``A~`` given ``lambda_min(A^T A) + s^2 >=
gamma`` converted at ``delta/3``, the ``lambda_min`` release at
``(eps_l, delta/3)`` and ``P(lam~ > lambda_min) <= delta/3`` -- the three
epsilon terms of (G2).  The ledger lists the ``lambda_min`` release as a
Gaussian release (so its exact cost is computed from its scale), the
sketch as a stated ``renyi-mixing`` release carrying ``epsilon - eps_l`` at
``delta/3`` (the RDP conversion), and the third term as a ``failure``
release ``lambda_min_margin`` (:func:`dpreg.privacy.mechanisms.failure_release`,
as AdaOPS does).  It is a safety margin, not part of the conversion: (G4)
subtracts ``tau`` noise scales from the released ``lambda_min``, so ``lam~ >
lambda_min(A^T A)`` (``lambda_min >= 0``) exactly when the noise exceeds ``tau``
scales, with probability ``Phi(-tau)`` (:func:`margin_failure_probability`);
the spec adds it as its own ``delta/3`` term beside the other two, so the
ledger counts it on its own, at its exact value ``Phi(-tau)`` (2.4e-8 at
``delta = 1e-6``, below the ``delta/3`` the spec sets aside).  Where ``gamma
<= tau`` (G4) takes ``s^2 = gamma`` without ``lam~`` and nothing can fail:
the failure release is then ``(0, 0)``.

The two entries
---------------
``gaussmix`` (the fixed calibration)
    ``sigma_l = B^2 gamma / sqrt(k)``: ``lambda_min(A^T A)`` moves by up to
    ``B^2`` when a row is added (Weyl), so this is the classical Gaussian
    mechanism at ``eps_l = sqrt(2 ln(3.75/delta)) sqrt(k) / gamma``, the last
    term of (G2); ``gamma`` is unchanged.  The classical bound is proven for
    ``eps_l < 1`` only; beyond, the release counts as valid where the exact
    Gaussian profile of ``sigma_l`` meets ``(eps_l, delta/3)`` (as ``ihm`` does):
    up to ``epsilon ~ 43`` at ``delta = 1e-6``, ``d <= 23``; beyond, the
    ledger flags it outside validity (exact epsilon 1.4 % above nominal at 100).
``gaussmix-code`` (the released code)
    Two departures from its own accounting: (a) the ``lambda_min`` noise has
    standard deviation ``sqrt(gamma / sqrt(k))`` instead of ``gamma /
    sqrt(k)`` (3.8 instead of 14.2 at ``epsilon = 1``, ``delta = 1e-6``,
    ``d <= 23``); (b) (G2)'s last term assumes sensitivity 1 where it is
    ``B^2 = 2``.  Its ``lambda_min`` release is recorded with its true
    sensitivity ``B^2`` and the code's scale, and marked invalid: the
    ledger's exact epsilon (:func:`dpreg.privacy.mechanisms.compose`: the sketch's
    stated share plus the exact Gaussian epsilon of ``lambda_min`` at the
    delta the sketch and the margin leave, ``2 delta/3 - Phi(-tau)``) is the
    guarantee the code actually has (:func:`code_true_epsilon`; 3.07 at a
    claimed 1, 0.80 at 0.1 and 14.9 at 10, ``delta = 1e-6``, ``d <= 23``).
    A reproduction: not reported as private.

No ridge term: ``xtx_offset`` is not used (the authors fit plain OLS on the sketch).

References
----------
Lev, O., Srinivasan, V., Shenfeld, M., Ligett, K., Sekhari, A. & Wilson,
A. C. (2025). The Gaussian mixing mechanism: Renyi differential privacy via
Gaussian sketches. NeurIPS (arXiv 2505.24603); code ``omrilev1/GaussMix`` @746a96b.
Canonne, C., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS (Renyi DP to (eps, delta)).
Dwork, C. & Roth, A. (2014). Theorem A.1 (the classical Gaussian mechanism).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, PendingSolve, ReleaseContext, finish
from dpreg.algorithms.sketch import SHEFFET_RHO, _lambda_cost, ihm_epsilon, sketch_gram
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = [
    "ENTRIES",
    "augmented_gram",
    "code_true_epsilon",
    "gaussmix_epsilon",
    "gaussmix_gamma",
    "gaussmix_k",
    "gaussmix_tau",
    "lambda_cost",
    "margin_failure_probability",
]


def gaussmix_k(d: int) -> int:
    """(G1) ``k = max(floor(2.5 d), floor(2.5 ln(1/1e-10)))`` sketch rows."""
    return max(int(2.5 * d), int(2.5 * math.log(1.0 / SHEFFET_RHO)))


def gaussmix_tau(delta: float) -> float:
    """(G3) ``tau = sqrt(2 ln(3/delta))``: ``P(N(0,1) > tau) <= delta/3``."""
    return math.sqrt(2.0 * math.log(3.0 / delta))


def margin_failure_probability(gamma: float, delta: float) -> float:
    """``P(lam~ > lambda_min(A^T A))`` of (G4): ``Phi(-tau)``, or 0 where ``gamma <= tau``.

    ``lam~ = max(0, lambda_min - sigma_l (tau - z))`` exceeds ``lambda_min >= 0``
    exactly when ``z > tau`` (Gaussian upper tail ``P(N(0, 1) > tau) = Phi(-tau)
    <= delta/3``, (G3)); with ``gamma <= tau`` (G4) does not use ``lam~``.
    """
    from scipy.special import ndtr  # on first use: importing the registry skips scipy

    tau = gaussmix_tau(delta)
    return 0.0 if gamma <= tau else float(ndtr(-tau))


def lambda_cost(gamma: float, k: int, delta: float) -> float:
    """(G2)'s last term: ``sqrt(2 ln(3.75/delta)) sqrt(k) / gamma``.

    The classical Gaussian epsilon at ``delta/3`` of a release with
    sensitivity-to-noise ratio ``sqrt(k)/gamma`` (``1.25/(delta/3) = 3.75/delta``).
    """
    return _lambda_cost(gamma, k, delta / 3.0)


def gaussmix_epsilon(gamma: float, k: int, delta: float, b2: float) -> float:
    """(G2): ``min_{1 < alpha < gamma/B^2} E(alpha, gamma)``.

    The Renyi term is ``k D_alpha(N(0, g) || N(0, g - 1))`` with ``g =
    gamma / B^2`` (:func:`dpreg.algorithms.sketch.mixing_rdp`); the minimum
    over ``alpha`` of it plus the conversion at ``delta/3`` is
    :func:`dpreg.algorithms.sketch.ihm_epsilon` with one step, whose
    ``lambda_min`` term (written for ``B^2 = 1``) is replaced by (G2)'s.
    """
    g = gamma / b2
    if g <= 1.0:
        return math.inf
    value, _ = ihm_epsilon(g, k, delta / 3.0, 1)
    return value - _lambda_cost(g, k, delta / 3.0) + lambda_cost(gamma, k, delta)


@lru_cache(maxsize=4096)
def gaussmix_gamma(epsilon: float, delta: float, k: int, b2: float) -> float:
    """(G2): the smallest ``gamma`` with :func:`gaussmix_epsilon` ``<= epsilon``.

    ``E`` decreases in ``gamma``; Brent's method on ``ln(gamma/B^2 - 1)``
    to a relative tolerance of 1e-10 (the authors bisect to an absolute
    1e-6).  Solved once per ``(epsilon, delta, k, B^2)`` (cached).
    Values at ``k = 57``, ``delta = 1e-6``, ``B^2 = 2``: 973.8, 107.3 and
    13.15 at ``epsilon = 0.1, 1, 10`` (SPEC-frontier (G2)).
    """
    from scipy.optimize import brentq  # here: costly to import, needed only here

    def f(v: float) -> float:
        return gaussmix_epsilon(b2 * (1.0 + math.exp(v)), k, delta, b2) - epsilon

    lo, hi = -20.0, 1.0
    while f(hi) > 0:
        hi += 1.0
        if hi > 200:  # pragma: no cover - E -> 0 as gamma grows
            raise DPRegError(f"gaussmix: no noise level meets epsilon={epsilon}")
    while f(lo) <= 0:  # pragma: no cover - a tiny gamma is never private
        lo -= 5.0
    v = brentq(f, lo, hi, xtol=1e-12, rtol=1e-10, maxiter=500)
    return b2 * (1.0 + math.exp(v))


def _parts(ctx: ReleaseContext) -> tuple[int, float, float, float]:
    """``(k, B^2, gamma, eps_l)`` of one run."""
    k = gaussmix_k(ctx.d)
    b2 = ctx.bound_x**2 + ctx.bound_y**2
    gamma = gaussmix_gamma(ctx.epsilon, ctx.delta, k, b2)
    return k, b2, gamma, lambda_cost(gamma, k, ctx.delta)


def code_sigma_lambda(gamma: float, k: int) -> float:
    """The released code's ``lambda_min`` noise: ``sqrt(gamma / sqrt(k))`` (departure a)."""
    return math.sqrt(gamma / math.sqrt(k))


def _releases(ctx: ReleaseContext, *, code: bool) -> list[Release]:
    k, b2, gamma, eps_l = _parts(ctx)
    dp = ctx.delta / 3.0
    sigma_l = code_sigma_lambda(gamma, k) if code else b2 * gamma / math.sqrt(k)
    lam = mech.gaussian_release(
        "lambda_min",
        sensitivity=b2,  # Weyl: adding a row moves lambda_min(A^T A) by at most ||a||^2 <= B^2
        sigma=sigma_l,
        epsilon=eps_l,
        delta=dp,
        calibration="gaussmix-code" if code else "classical",
        # classical bound proven for eps_l < 1; beyond, the exact profile decides
        valid=mech.gdp_delta(eps_l, b2 / sigma_l) <= dp * (1 + 1e-9),
    )
    sketch = mech.stated_release(
        "sketch",
        mechanism="renyi-mixing",
        epsilon=ctx.epsilon - eps_l,
        delta=dp,  # RDP->DP at delta/3
        calibration="renyi-mixing",
        sensitivity=b2,
        scale=math.sqrt(gamma),  # the largest noise level s
    )
    # P(lam~ > lambda_min): the spec's own delta/3 term, counted at its exact value
    p_fail = margin_failure_probability(gamma, ctx.delta)
    fail = mech.failure_release(
        "lambda_min_margin",
        probability=p_fail,
        calibration="gaussian-tail",
        valid=p_fail <= dp,
    )
    return [lam, sketch, fail]


def code_true_epsilon(epsilon: float, delta: float, d: int, b2: float = 2.0) -> float:
    """The exact epsilon at ``delta`` of ``gaussmix-code`` claiming ``(epsilon, delta)``.

    The sketch's stated share ``epsilon - eps_l`` at ``delta/3`` plus the
    exact Gaussian epsilon (Balle & Wang 2018; Dong, Roth & Su 2019) of the
    code's ``lambda_min`` release, sensitivity ``B^2``, noise
    ``sqrt(gamma/sqrt(k))``, at the delta that is left, ``2 delta/3`` minus
    the margin's failure probability (:func:`margin_failure_probability`).
    """
    ctx = ReleaseContext(epsilon, delta, d, math.sqrt(b2 / 2.0), math.sqrt(b2 / 2.0))
    rel = _releases(ctx, code=True)
    return float(mech.compose(rel, delta=delta)["exact_epsilon"])  # type: ignore[arg-type]


def augmented_gram(stats: SuffStats) -> np.ndarray:
    """``A^T A`` for ``A = [X y]``: ``[[X^T X, X^T y], [y^T X, y^T y]]``."""
    d = stats.d
    AtA = np.empty((d + 1, d + 1))
    AtA[:d, :d] = stats.xtx
    AtA[:d, d] = AtA[d, :d] = stats.xty
    AtA[d, d] = stats.yty
    return AtA


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult | PendingSolve:
    """(G4)-(G5) for ``opts.size`` repeats; scales read from the releases."""
    d = stats.d
    p = d + 1
    k = gaussmix_k(d)
    sigma_l = rel[0].scale
    gamma = rel[1].scale ** 2
    tau = gaussmix_tau(3.0 * rel[0].delta)
    eig = np.linalg.eigh(augmented_gram(stats))
    R = opts.size
    # one repeat-major block of normals per repeat: [z | G (k x p)]
    z = mech.standard_normals((R, 1 + k * p), rng=opts.rng)  # type: ignore[arg-type]
    # the released lambda_min
    lam_noisy = float(eig[0][0]) + drawcheck.scaled(z[:, 0], sigma_l, release="lambda_min")
    if gamma <= tau:
        s2 = np.full(R, gamma)
    else:
        shift = sigma_l * tau
        # lam~ > lambda_min when the noise exceeds the shift: the failure release
        drawcheck.margin("lambda_min_margin", shift / sigma_l)  # in noise sds
        s2 = np.maximum(0.0, gamma - np.maximum(0.0, lam_noisy - shift))
    # the sketch's noise level s per repeat; the release declares the largest, sqrt(gamma)
    drawcheck.record("sketch", "gaussian", np.sqrt(s2), (R, k, p), bound=True)
    gram = sketch_gram(eig, s2, z[:, 1:].reshape(R, k, p))
    released = {"lambda_min": lam_noisy, "sketch": gram}
    return finish(gram[:, :d, :d], gram[:, :d, d], np.full(R, np.nan), opts, released)


def _releases_fixed(ctx: ReleaseContext) -> list[Release]:
    return _releases(ctx, code=False)


def _releases_code(ctx: ReleaseContext) -> list[Release]:
    return _releases(ctx, code=True)


ENTRIES = [
    Algorithm(
        "gaussmix",
        "Gaussian Mixing (fixed)",
        private=True,
        calibration="renyi-mixing",
        release_fn=_releases_fixed,
        fit_fn=_fit,
        style=Style("teal", "-", "p"),
        reference="Lev et al. (NeurIPS 2025) linear mixing, GaussMix @746a96b; "
        "λ_min noise B²γ/√k (sensitivity B² = B_X² + B_Y²)",
    ),
    Algorithm(
        "gaussmix-code",
        "Gaussian Mixing (authors' code)",
        private=True,
        calibration="gaussmix-code",
        release_fn=_releases_code,
        fit_fn=_fit,
        reproduction=True,
        style=Style("cadetblue", "--", "p"),
        reference="omrilev1/GaussMix @746a96b as released: λ_min noise √(γ/√k), "
        "sensitivity taken as 1 (not private as claimed)",
    ),
]
