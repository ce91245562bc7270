"""Coefficient error against a known answer: ``theta*`` in the fitted coordinates.

A synthetic dataset (:mod:`dpreg.data.synthetic`) knows its true
coefficients ``theta*`` in the prepared table's coordinates: ``y = b0 + x
theta* + noise`` (``b0 = 0``).  An algorithm fits ``theta`` in the
coordinates of the variant's fitted transform
(:class:`~dpreg.preprocess.FittedTransform`) of the training fold, where,
for ``scale: maxnorm`` (Kalaja 2020, Eqs. 3.3-3.6),

    x' = D (x - mean) / sd,   y' = (y - y_center) / y_scale,

with ``D`` the per-column factors (``1 / x_max``; the ones column of the
intercept forms appended after standardising).  Substituting ``y = b0 + x
theta*`` gives the exact linear model ``y' = x' theta'`` with

    theta'_j   = theta*_j sd_j x_max / y_scale                (features)
    theta'_int = (b0 + mean . theta* - y_center) / (y_scale c) (intercept column, factor c)

the inverse of :meth:`~dpreg.preprocess.FittedTransform.unstandardize`
(Eq. 3.7).  Without an intercept column the constant ``b0 + mean . theta* -
y_center`` has no coordinate; it vanishes when ``y`` is centred at its
training mean and the noise averages out.  Clipping (``clip_sigma``) leaves
the coordinates as they are (the map applies to clipped ``x``).  The
``rownorm`` scales divide each row by its own norm, which no fixed
``theta'`` undoes: their coefficient error is NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpreg._validation import DPRegError
from dpreg.preprocess import FittedTransform

__all__ = ["coef_errors", "mapped_theta"]


def mapped_theta(
    transform: FittedTransform, theta_star: Sequence[float] | np.ndarray, intercept: float = 0.0
) -> np.ndarray | None:
    """``theta*`` (raw coordinates, intercept ``b0``) in the fitted coordinates of ``transform``.

    Returns ``None`` when the variant's map is not affine in ``x`` (scales
    ``rownorm`` and ``rownorm-y``); otherwise an array of length
    ``transform.d_out``.

    Raises
    ------
    DPRegError
        If ``theta_star`` does not have one entry per raw feature.
    """
    theta = np.asarray(theta_star, dtype=float)
    d_raw = transform.x_mean.size
    if theta.shape != (d_raw,):
        raise DPRegError(
            f"theta_star has shape {theta.shape}; the data have {d_raw} features (one each)"
        )
    if transform.spec.scale != "maxnorm":
        return None
    factors = transform.column_factors()
    out = np.empty(transform.d_out)
    # x'_j = (x_j - mean_j) / sd_j * factor_j, so theta'_j = theta*_j sd_j / factor_j / y_scale
    out[:d_raw] = theta * transform.x_sd / factors[:d_raw] / transform.y_scale
    if transform.spec.has_intercept:
        offset = intercept + float(transform.x_mean @ theta) - transform.y_center
        out[d_raw] = offset / (transform.y_scale * factors[d_raw])
    return out


def coef_errors(theta: np.ndarray, target: np.ndarray | None, failed: np.ndarray) -> np.ndarray:
    """``||theta_r - target_r||`` per row of ``theta`` (R, d); NaN without a target.

    A failed row is scored as what the algorithm outputs, the trivial
    predictor theta = 0: its error is ``||0 - target_r|| = ||target_r||``.

    ``target`` is one mapped ``theta*`` (d,) shared by the rows, one per row
    (R, d), or ``None`` (no known answer, or a map that is not affine).
    """
    theta = np.atleast_2d(np.asarray(theta, dtype=float))
    out = np.full(theta.shape[0], np.nan)
    if target is None:
        return out
    failed = np.asarray(failed, dtype=bool)
    theta = np.where(failed[:, None], 0.0, theta)
    return np.linalg.norm(theta - np.asarray(target, dtype=float), axis=1)
