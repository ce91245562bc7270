"""Bounds for the estimator: norm bounds from per-feature boxes, their checks,
and clipping rows onto the ball ``||x|| <= B`` (the pieces of
:class:`dpreg.estimator.PrivateLinearRegression` that know about bounds).

References
----------
Holohan, N. et al. (2019). Diffprivlib: the IBM differential privacy library.
arXiv:1907.02444 (per-feature ``bounds_X``/``bounds_y`` given by the user).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_bound

__all__ = ["box_norm_bounds", "clip_rows"]


def _real(value: object, name: str, allowed: str, ok: Callable[[float], bool]) -> float:
    """``value`` as a float if it is a real number with ``ok(value)``; else one DPRegError."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DPRegError(f"{name} must be {allowed}, got {value!r}")
    if not ok(float(value)):
        raise DPRegError(f"{name} must be {allowed}, got {value!r}")
    return float(value)


def _as_dpreg_error(err: ValueError) -> DPRegError:
    """scikit-learn's input errors as one-line DPRegErrors (same words)."""
    return DPRegError(" ".join(str(err).split()))


def clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Scale every row with ``||x_i||_2 > bound`` onto the sphere of radius ``bound``.

    ``x_i <- x_i * min(1, bound / ||x_i||_2)``: each row is mapped on its
    own, with a bound fixed in advance, so one person's row never changes
    another's and the map can precede any private algorithm (it is the
    clipping of IBM's DP library, and of per-example gradients in Abadi et al.
    2016, Algorithm 1).
    Rows inside the ball are returned unchanged (bit for bit).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Finite rows.
    bound : float
        ``B_X > 0``.

    Returns
    -------
    ndarray of shape (n, d)
        A new float64 array.
    """
    B = check_bound(bound, "bound")
    out = np.array(X, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    huge = np.isinf(norms)
    if huge.any():  # finite rows whose squared norm overflows: scale before squaring
        m = np.abs(out[huge]).max(axis=1)
        r = out[huge] / m[:, None]
        norms[huge] = m * np.sqrt(np.einsum("ij,ij->i", r, r))
    over = norms > B
    if over.any():
        # a clipped norm may round to B (1 + 2**-52): within the bound check's
        # tolerance (dpreg.preprocess.stats.BOUND_RTOL)
        out[over] *= (B / norms[over])[:, None]
    return out


def _finite_reals(value: object, name: str) -> np.ndarray:
    """``value`` as a float array of finite reals (a scalar or 1-D), or one DPRegError."""
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - any object numpy cannot read is the user's value
        arr = np.asarray(object())
    if arr.dtype.kind not in "iuf" or arr.ndim > 1 or arr.size == 0:
        raise DPRegError(
            f"{name} must be a finite real number or a 1-D array of them, got {value!r}"
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise DPRegError(f"{name} must be finite (no NaN or inf), got {value!r}")
    return arr


def _pair(value: object, name: str, form: str) -> tuple[Any, Any]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise DPRegError(f"{name} must be a pair {form}, got {value!r}")
    return value[0], value[1]


def _checked_box(
    bounds: object, bounds_X: object, bounds_y: object
) -> tuple[np.ndarray, np.ndarray, float, float] | None:
    """Per-feature bounds checked (shapes known later), or None for norm bounds."""
    if bounds_X is None and bounds_y is None:
        return None
    if bounds is not None:
        raise DPRegError(
            "give either norm bounds (bounds=(B_X, B_Y)) or per-feature bounds "
            "(bounds_X=(lower, upper) with bounds_y=(lo, hi)), not both; got "
            f"bounds={bounds!r}, bounds_X={bounds_X!r}, bounds_y={bounds_y!r}"
        )
    if bounds_X is None or bounds_y is None:
        missing, given = ("bounds_y", "bounds_X") if bounds_y is None else ("bounds_X", "bounds_y")
        raise DPRegError(
            f"{given} needs {missing}: per-feature bounds are given for X "
            "(bounds_X=(lower, upper)) and y (bounds_y=(lo, hi)) together"
        )
    lower_v, upper_v = _pair(bounds_X, "bounds_X", "(lower, upper)")
    lower = _finite_reals(lower_v, "bounds_X lower")
    upper = _finite_reals(upper_v, "bounds_X upper")
    if lower.ndim == upper.ndim == 1 and lower.shape != upper.shape:
        raise DPRegError(
            f"bounds_X lower and upper must have the same length, got {lower.size} and {upper.size}"
        )
    lb, ub = (np.atleast_1d(a) for a in np.broadcast_arrays(lower, upper))
    if np.any(lb > ub):
        j = int(np.argmax(lb > ub))
        raise DPRegError(
            f"bounds_X must have lower <= upper for every feature; feature {j} has "
            f"lower={lb[j]:g} > upper={ub[j]:g}"
        )
    lo_v, hi_v = _pair(bounds_y, "bounds_y", "(lo, hi)")
    lo = _finite_reals(lo_v, "bounds_y lo")
    hi = _finite_reals(hi_v, "bounds_y hi")
    if lo.ndim or hi.ndim:
        raise DPRegError(f"bounds_y must be a pair of numbers (lo, hi), got {bounds_y!r}")
    if lo > hi:
        raise DPRegError(f"bounds_y must have lo <= hi, got {bounds_y!r}")
    return lower, upper, float(lo), float(hi)


def _box_for(lower: np.ndarray, upper: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``lower`` and ``upper`` of shape ``(d,)``: scalars broadcast, arrays must have ``d``."""
    for arr, name in ((lower, "lower"), (upper, "upper")):
        if arr.ndim == 1 and arr.size != d:
            raise DPRegError(
                f"bounds_X {name} has {arr.size} values but X has {d} features; give one "
                "value per feature or a scalar for all"
            )
    return np.broadcast_to(lower, (d,)).copy(), np.broadcast_to(upper, (d,)).copy()


def box_norm_bounds(
    lower: np.ndarray, upper: np.ndarray, lo: float, hi: float
) -> tuple[float, float]:
    """The norm bounds ``(B_X, B_Y)`` of per-feature bounds.

    ``B_X = ||m||_2`` with ``m_j = max(|lower_j|, |upper_j|)`` and
    ``B_Y = max(|lo|, |hi|)``: the smallest balls centred at 0 that contain
    the box ``[lower, upper]`` and the interval ``[lo, hi]`` (every ``x`` in
    the box has ``|x_j| <= m_j``, and the corner ``x_j = +-m_j`` attains the
    bound).  The centre is 0, fixed in advance, never taken from the data.

    Raises :class:`DPRegError` naming ``bounds_X`` or ``bounds_y`` when a
    bound is 0 (every value fixed at 0) or overflows.
    """
    m = np.maximum(np.abs(np.asarray(lower, float)), np.abs(np.asarray(upper, float)))
    scale = float(m.max()) if m.size else 0.0
    # scaled so that squaring cannot overflow or underflow
    bx = scale * float(np.sqrt(np.sum((m / scale) ** 2))) if scale > 0 else 0.0
    by = max(abs(lo), abs(hi))
    if not (0 < bx < math.inf):
        raise DPRegError(
            f"bounds_X give the norm bound B_X = ||max(|lower|, |upper|)||_2 = {bx:g}; it "
            "must be a finite number > 0 (a box of zeros holds no information)"
        )
    if not by > 0:
        raise DPRegError(
            f"bounds_y give B_Y = max(|lo|, |hi|) = {by:g}; it must be > 0 (lo < hi or "
            "nonzero values)"
        )
    return bx, by


def _check_sensitivities(bx: float, by: float, source: str) -> None:
    """Refuse norm bounds whose sensitivities ``B_X^2`` or ``B_X B_Y`` leave double precision.

    The statistics' sensitivities must be finite and > 0 for any noise to be
    calibrated; outside that range the calibration would fail later with a
    message about a sensitivity the user never set.
    """
    for value, what in ((bx * bx, "B_X^2"), (bx * by, "B_X B_Y")):
        if not (np.finfo(float).tiny <= value < math.inf):
            raise DPRegError(
                f"{source} give B_X = {bx:g} and B_Y = {by:g}, so the sensitivity {what} = "
                f"{value:g} is outside the range of double precision (it must be finite and "
                "> 2.2e-308); rescale the data and the bounds by a fixed, public factor"
            )


def _check_inside_box(
    X: np.ndarray, y: np.ndarray, lower: np.ndarray, upper: np.ndarray, lo: float, hi: float
) -> None:
    """Raise naming ``bounds_X``/``bounds_y`` if a value lies outside its bounds."""
    outside = (X < lower) | (X > upper)
    if outside.any():
        i, j = (int(k) for k in np.argwhere(outside)[0])
        raise DPRegError(
            f"training row {i}, feature {j} is {float(X[i, j])!r}, outside "
            f"bounds_X=[{lower[j]:g}, {upper[j]:g}] ({int(outside.sum())} value(s) outside); "
            "values must lie inside the bounds before any private release (pass clip=True "
            "to clip them, or widen bounds_X from knowledge independent of the data)"
        )
    out_y = (y < lo) | (y > hi)
    if out_y.any():
        i = int(np.argmax(out_y))
        raise DPRegError(
            f"training row {i} has y = {float(y[i])!r}, outside bounds_y=[{lo:g}, {hi:g}] "
            f"({int(out_y.sum())} value(s) outside); pass clip=True to clip them"
        )
