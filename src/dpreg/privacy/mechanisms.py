"""Noise calibration and noise draws.

Calibrations (all keyword-only, all validated here):

* :func:`classical_sigma` -- the Gaussian mechanism of Dwork & Roth (2014),
  Theorem A.1: ``sigma = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon``,
  proven for ``epsilon < 1`` only.
* :func:`analytic_sigma` -- the analytic Gaussian mechanism of Balle & Wang
  (2018), "Improving the Gaussian mechanism for differential privacy",
  Theorem 8: the smallest ``sigma`` whose exact privacy profile meets
  ``delta``, valid for every ``epsilon > 0``.
* :func:`gdp_delta`, :func:`gdp_mu`, :func:`gdp_epsilon` (defined in
  :mod:`dpreg.privacy.accounting`) -- the exact
  (epsilon, delta) curve of mu-Gaussian differential privacy (Dong, Roth &
  Su 2019, "Gaussian differential privacy", Corollary 2.13).  A Gaussian
  release with sensitivity ``D`` and noise ``sigma`` is ``D/sigma``-GDP, and
  ``k`` such releases compose to ``sqrt(sum mu_i^2)``-GDP (their Corollary 3.3).

The analytic Gaussian profile and the GDP curve are the same function of
``mu = D / sigma``::

    delta(eps; mu) = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)

so one robust root finder serves both.

Releases and what they cost live in :mod:`dpreg.privacy.accounting` (re-exported
here): :class:`Release` and its factories record what was released, the
accountant :func:`compose` computes the cost from the releases themselves.

Draws: :func:`symmetric_noise` (upper triangle i.i.d., mirrored -- the
correction of Kalaja 2020, Algorithm 3), :func:`wang_symmetric_noise`
(``(G + G^T)/2`` as in Wang's public code: off-diagonal variance 1/2),
:func:`full_noise` (a non-symmetric i.i.d. matrix, Wang's SSP code),
:func:`vector_noise`, :func:`normal_block_noise` (several releases from one
block of normals) and :func:`laplace_noise`.  Every draw takes a
keyword-only ``rng`` and a repeat count ``size``, and lays the values out
repeat-major, so the first ``R`` repeats never change when ``size`` grows.
An optional ``release`` names the release a draw serves: while
:func:`dpreg.privacy.drawcheck.recording` is active the draw (family, shape and the
scale applied) is recorded for the fit-versus-release check; otherwise the
hook records nothing.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from numbers import Real
from typing import Literal

import numpy as np

from dpreg._validation import (
    DPRegError,
    check_bound,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_int,
)
from dpreg.privacy import drawcheck
from dpreg.privacy.accounting import (
    Release,
    compose,
    external_release,
    failure_release,
    gaussian_release,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    laplace_epsilon,
    laplace_release,
    stated_release,
)
from dpreg.seeding import as_generator

__all__ = [
    "CALIBRATIONS",
    "ClassicalCalibrationWarning",
    "Release",
    "analytic_sigma",
    "classical_sigma",
    "classical_valid",
    "compose",
    "MATRIX_KINDS",
    "full_noise",
    "matrix_from_normals",
    "noise_width",
    "gaussian_sigma",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "external_release",
    "failure_release",
    "gaussian_release",
    "laplace_epsilon",
    "gumbel_noise",
    "laplace_noise",
    "laplace_release",
    "normal_block_noise",
    "selection_release",
    "stated_release",
    "objective_laplace_noise",
    "standard_normals",
    "symmetric_noise",
    "vector_noise",
    "wang_symmetric_noise",
]

CALIBRATIONS = ("classical", "analytic")


class ClassicalCalibrationWarning(UserWarning):
    """Classical Gaussian calibration used with a per-release epsilon >= 1."""


# --------------------------------------------------------------------------
# calibrations
# --------------------------------------------------------------------------
def classical_valid(epsilon: float) -> bool:
    """Whether the classical bound is proven for this per-release epsilon (< 1)."""
    return epsilon < 1.0


def classical_sigma(*, epsilon: float, delta: float, sensitivity: float) -> float:
    """Classical Gaussian mechanism, ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon``.

    Dwork & Roth (2014), *The Algorithmic Foundations of Differential
    Privacy*, Theorem A.1 (proven for ``epsilon < 1``; see
    :func:`classical_valid`).  No warning is raised here; callers that
    apply it outside its validity flag the result.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    sens = check_bound(sensitivity, "sensitivity")
    return sens * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def analytic_sigma(*, epsilon: float, delta: float, sensitivity: float) -> float:
    """Analytic Gaussian mechanism (Balle & Wang 2018, Algorithm 1 / Theorem 8).

    The smallest ``sigma`` with
    ``Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D) <= delta``,
    i.e. ``sigma = D / gdp_mu(epsilon, delta)``; relative tolerance 1e-12
    (tighter than the 1e-9 the project promises).
    """
    sens = check_bound(sensitivity, "sensitivity")
    return sens / gdp_mu(epsilon=epsilon, delta=delta)


def gaussian_sigma(
    *,
    epsilon: float,
    delta: float,
    sensitivity: float,
    calibration: Literal["classical", "analytic"] = "classical",
) -> float:
    """Noise standard deviation of a Gaussian release.

    Parameters
    ----------
    epsilon, delta : float
        Privacy parameters of this one release, ``epsilon > 0``,
        ``0 < delta < 1``.
    sensitivity : float
        L2 sensitivity of the released quantity.
    calibration : {"classical", "analytic"}
        ``"classical"`` (Dwork & Roth 2014, Thm A.1) or ``"analytic"``
        (Balle & Wang 2018).  Classical calibration with ``epsilon >= 1`` is
        computed, as the thesis does, but warns with
        :class:`ClassicalCalibrationWarning`.

    Returns
    -------
    float
        The noise standard deviation ``sigma``.
    """
    check_choice(calibration, "calibration", CALIBRATIONS)
    if calibration == "analytic":
        return analytic_sigma(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    sigma = classical_sigma(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    if not classical_valid(float(epsilon)):
        warnings.warn(
            f"classical Gaussian calibration is proven only for epsilon < 1 per release; "
            f"epsilon={epsilon} is outside its validity",
            ClassicalCalibrationWarning,
            stacklevel=2,
        )
    return sigma


# --------------------------------------------------------------------------
# draws
# --------------------------------------------------------------------------
def _check_draw(d: int, size: int, scale: float) -> float:
    check_positive_int(d, "d")
    check_positive_int(size, "size")
    if isinstance(scale, bool) or not isinstance(scale, Real):
        raise DPRegError(f"noise scale must be a real number, got {scale!r}")
    s = float(scale)
    if not (math.isfinite(s) and s >= 0):
        raise DPRegError(f"noise scale must be finite and >= 0, got {scale!r}")
    return s


@lru_cache(maxsize=256)
def _triu(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle indices of a d x d matrix (cached; read-only)."""
    iu = np.triu_indices(d)
    for a in iu:
        a.setflags(write=False)
    return iu


#: Matrix noise layouts: ``symmetric`` (upper triangle i.i.d., mirrored),
#: ``wang`` (``(G + G^T)/2``) and ``full`` (non-symmetric ``G``).
MATRIX_KINDS = ("symmetric", "wang", "full")


def noise_width(kind: str, d: int) -> int:
    """How many standard normals one draw of ``kind`` consumes."""
    if kind == "scalar":
        return 1
    if kind == "vector":
        return d
    if kind == "symmetric":
        return d * (d + 1) // 2
    if kind in ("wang", "full"):
        return d * d
    raise DPRegError(
        f"unknown noise kind {kind!r}; known: scalar, vector, {', '.join(MATRIX_KINDS)}"
    )


def matrix_from_normals(kind: str, z: np.ndarray, d: int, scale: float) -> np.ndarray:
    """``(size, d, d)`` noise matrices from standard normals ``z`` of shape ``(size, width)``.

    ``symmetric``: ``z`` fills the upper triangle (diagonal included) and is
    mirrored, so every entry has variance ``scale^2`` (Kalaja 2020,
    Algorithm 3).  ``wang``: ``scale (G + G^T)/2`` with ``G`` the reshaped
    ``z`` (diagonal variance ``scale^2``, off-diagonal ``scale^2/2``; Wang's
    code).  ``full``: ``scale G`` (Wang's SSP code, not symmetric).
    """
    size = z.shape[0]
    if kind == "symmetric":
        iu = _triu(d)
        out = np.empty((size, d, d))
        out[:, iu[0], iu[1]] = z
        out[:, iu[1], iu[0]] = z
        return out * scale
    g = z.reshape(size, d, d)
    if kind == "wang":
        return (g + np.swapaxes(g, 1, 2)) * (0.5 * scale)
    if kind == "full":
        return g * scale
    raise DPRegError(f"unknown matrix noise kind {kind!r}; known: {', '.join(MATRIX_KINDS)}")


def symmetric_noise(
    d: int, *, scale: float, rng: np.random.Generator, size: int, release: str | None = None
) -> np.ndarray:
    """``size`` symmetric ``d x d`` Gaussian matrices, every entry ``N(0, scale^2)``.

    The upper triangle (diagonal included) is drawn i.i.d. and mirrored
    below, so each entry -- diagonal and off-diagonal -- has variance
    ``scale^2`` (Kalaja 2020, Algorithm 3, step 4).  Shape ``(size, d, d)``.
    """
    rng = as_generator(rng)
    s = _check_draw(d, size, scale)
    drawcheck.record(release, "gaussian", s, (size, d, d))
    z = rng.standard_normal((size, noise_width("symmetric", d)))
    return matrix_from_normals("symmetric", z, d, s)


def wang_symmetric_noise(
    d: int, *, scale: float, rng: np.random.Generator, size: int, release: str | None = None
) -> np.ndarray:
    """``scale * (G + G^T) / 2`` with ``G`` i.i.d. ``N(0, 1)`` (Wang's AdaSSP code).

    The diagonal has variance ``scale^2``; the off-diagonal only
    ``scale^2 / 2``.  Shape ``(size, d, d)``.
    """
    rng = as_generator(rng)
    s = _check_draw(d, size, scale)
    drawcheck.record(release, "gaussian", s, (size, d, d))
    return matrix_from_normals("wang", rng.standard_normal((size, d * d)), d, s)


def full_noise(
    d: int, *, scale: float, rng: np.random.Generator, size: int, release: str | None = None
) -> np.ndarray:
    """A non-symmetric i.i.d. ``N(0, scale^2)`` ``d x d`` matrix per repeat (Wang's SSP code)."""
    rng = as_generator(rng)
    s = _check_draw(d, size, scale)
    drawcheck.record(release, "gaussian", s, (size, d, d))
    return matrix_from_normals("full", rng.standard_normal((size, d * d)), d, s)


def vector_noise(
    d: int, *, scale: float, rng: np.random.Generator, size: int, release: str | None = None
) -> np.ndarray:
    """``size`` i.i.d. ``N(0, scale^2 I_d)`` vectors, shape ``(size, d)``."""
    rng = as_generator(rng)
    s = _check_draw(d, size, scale)
    drawcheck.record(release, "gaussian", s, (size, d))
    return rng.standard_normal((size, d)) * s


def normal_block_noise(
    kinds: tuple[str, ...] | list[str],
    scales: tuple[float, ...] | list[float],
    d: int,
    *,
    rng: np.random.Generator,
    size: int,
    releases: tuple[str | None, ...] | list[str | None] | None = None,
) -> list[np.ndarray]:
    """Gaussian noise of several releases from one block of standard normals per repeat.

    Each repeat consumes ``[part 1 | part 2 | ...]`` contiguously, one part
    per release of layout ``kinds[i]`` (``scalar``, ``vector`` or a matrix
    kind of :func:`matrix_from_normals`) multiplied by ``scales[i]``.  One
    call, repeat-major: the first ``R`` repeats do not change when ``size``
    grows, and runs with the same ``kinds`` consume the same normals
    (common random numbers).  Returns ``(size,)``, ``(size, d)`` or
    ``(size, d, d)`` arrays.  ``releases`` names the release each part
    serves (for :mod:`dpreg.privacy.drawcheck`; ``None`` for a part scaled later).
    """
    rng = as_generator(rng)
    if len(kinds) != len(scales):
        raise DPRegError(f"noise layout {tuple(kinds)} does not match {len(scales)} scales")
    check_positive_int(size, "size")
    checked = [_check_draw(max(int(d), 1), 1, s) for s in scales]
    widths = [noise_width(k, d) for k in kinds]
    if drawcheck.active():
        names = list(releases) if releases is not None else [None] * len(kinds)
        for name, s, w in zip(names, checked, widths, strict=True):
            drawcheck.record(name, "gaussian", s, (int(size), w))
    z = rng.standard_normal((int(size), sum(widths)))
    out = []
    lo = 0
    for kind, width, s in zip(kinds, widths, checked, strict=True):
        part = z[:, lo : lo + width]
        lo += width
        if kind == "scalar":
            out.append(part[:, 0] * s)
        elif kind == "vector":
            out.append(part * s)
        else:
            out.append(matrix_from_normals(kind, part, d, s))
    return out


def standard_normals(shape: tuple[int, ...], *, rng: np.random.Generator) -> np.ndarray:
    """i.i.d. ``N(0, 1)`` draws of the given shape (leading axis = repeats).

    For algorithms that scale their normals themselves (e.g. per-step
    gradient noise); the scale they apply must come from their releases.
    """
    rng = as_generator(rng)
    return rng.standard_normal(tuple(int(k) for k in shape))


def gumbel_noise(shape: tuple[int, ...], *, rng: np.random.Generator) -> np.ndarray:
    """i.i.d. standard Gumbel draws (the exponential mechanism by the Gumbel-max trick)."""
    rng = as_generator(rng)
    return rng.gumbel(size=tuple(int(k) for k in shape))


def laplace_noise(
    shape: tuple[int, ...],
    *,
    scale: float,
    rng: np.random.Generator,
    release: str | None = None,
) -> np.ndarray:
    """i.i.d. Laplace(0, scale) noise of the given shape (leading axis = repeats)."""
    rng = as_generator(rng)
    s = _check_draw(1, 1, scale)
    drawcheck.record(release, "laplace", s, shape)
    return rng.laplace(0.0, 1.0, size=shape) * s


def objective_laplace_noise(
    d: int, *, scale: float, rng: np.random.Generator, size: int, release: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Laplace noise on the coefficients of a quadratic objective, mapped to statistics.

    The squared-loss objective ``theta^T M theta - 2 beta^T theta`` has
    ``d(d+1)/2`` quadratic monomial coefficients (``M_jj`` and ``2 M_jl``,
    ``j < l``) and ``d`` linear ones (``-2 beta_j``).  Each coefficient gets
    i.i.d. ``Laplace(scale)`` noise (Zhang et al. 2012, Algorithm 1); one
    block of ``d(d+1)/2 + d`` variables per repeat, repeat-major.

    Returns
    -------
    E : ndarray, shape (size, d, d)
        The equivalent symmetric noise on ``M`` (off-diagonal halved, since
        the coefficient is ``2 M_jl``).
    v : ndarray, shape (size, d)
        The equivalent noise on ``beta`` (halved for the same reason).

    References
    ----------
    Zhang, J., Zhang, Z., Xiao, X., Yang, Y. & Winslett, M. (2012).
    Functional mechanism: regression analysis under differential privacy.
    PVLDB 5(11), Section 4.
    """
    rng = as_generator(rng)
    m = d * (d + 1) // 2
    with drawcheck.serving(release):  # laplace_noise records its draw under this name
        lap = laplace_noise((int(size), m + d), scale=scale, rng=rng)
    iu = _triu(d)
    quad = lap[:, :m].copy()
    quad[:, iu[0] != iu[1]] *= 0.5
    return matrix_from_normals("symmetric", quad, d, 1.0), 0.5 * lap[:, m:]


def selection_release(
    name: str, *, mean: float, candidates: int, epsilon: float, delta: float, calibration: str
) -> Release:
    """The selection of the best of ``K ~ Poisson(mean)`` runs among ``candidates`` (PS22).

    Wraps the releases named ``c<j>/...`` (``j = 1 .. candidates``) of the same
    list: they are one run of the base mechanism for each candidate, and
    :func:`~dpreg.privacy.accounting.compose` charges them through :func:`dpreg.privacy.selection.selection_cost`
    (Papernot & Steinke 2022, Theorem 6).  Mechanism ``"poisson-selection"``;
    ``scale`` is ``mean``, ``copies`` the number of candidates, ``(epsilon,
    delta)`` the protocol's nominal budget; it has no sensitivity of its own.
    """
    mu_k = float(mean)
    if not (mu_k > 0 and math.isfinite(mu_k)):
        raise DPRegError(f"selection {name!r}: mean must be a finite number > 0, got {mean!r}")
    if int(candidates) < 1:
        raise DPRegError(f"selection {name!r}: candidates must be >= 1, got {candidates!r}")
    return Release(
        str(name),
        "poisson-selection",
        math.nan,
        mu_k,
        float(epsilon),
        float(delta),
        calibration,
        True,
        None,
        int(candidates),
    )
