"""Input validation in one place.

Every error a user can cause (a parameter, a config value, a data column)
is raised here as :class:`DPRegError` (a :class:`ValueError`) with one
message that names the offending key or value and says what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real

import numpy as np

__all__ = [
    "EPSILON_MIN",
    "DPRegError",
    "check_bound",
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_finite_array",
    "check_noise_scale",
    "check_positive_int",
    "epsilon_too_small",
]

#: Smallest epsilon any calibration accepts.  Noise scales are
#: ``sensitivity * c / epsilon`` with ``c`` at most a few units, so below this
#: value (or for a share ``epsilon / k`` of it) the scale overflows to
#: infinity in double precision, and the privacy profile of the release
#: (``sensitivity / sigma``) underflows to zero.
EPSILON_MIN = 1e-300


class DPRegError(ValueError):
    """A user-facing error: bad parameter, bad config value or bad data."""


def _as_float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise DPRegError(f"{name} must be a real number, got {value!r}")
    return float(value)


def epsilon_too_small(epsilon: float, name: str = "epsilon") -> DPRegError:
    """The one message for an epsilon whose noise calibration overflows.

    Raised by :func:`check_epsilon` below :data:`EPSILON_MIN` and by the
    release constructors of :mod:`dpreg.privacy.mechanisms` when a calibrated scale
    is infinite, so the estimator and the pipeline say the same thing.
    """
    return DPRegError(
        f"{name}={epsilon:.3g} is too small to calibrate: the noise scale overflows to "
        f"infinity in double precision; use a larger {name} (at least {EPSILON_MIN:g}) "
        "or smaller bounds"
    )


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking ``EPSILON_MIN <= epsilon < inf``."""
    eps = _as_float(epsilon, name)
    if not (math.isfinite(eps) and eps > 0):
        raise DPRegError(f"{name} must be a finite number > 0, got {epsilon!r}")
    if eps < EPSILON_MIN:
        raise epsilon_too_small(eps, name)
    return eps


def check_noise_scale(scale: object, *, epsilon: float, name: str = "sigma") -> float:
    """Return a calibrated noise scale after checking ``0 < scale < inf``.

    An infinite scale means the calibration overflowed for this ``epsilon``
    (the message of :func:`epsilon_too_small`); any other bad value is a
    plain range error naming ``name``.
    """
    s = _as_float(scale, name)
    if s == math.inf:
        raise epsilon_too_small(float(epsilon))
    if not (math.isfinite(s) and s > 0):
        raise DPRegError(f"{name} must be a finite number > 0, got {scale!r}")
    return s


def check_delta(delta: object, name: str = "delta") -> float:
    """Return ``delta`` as a float after checking ``0 < delta < 1``."""
    d = _as_float(delta, name)
    if not (0.0 < d < 1.0):
        raise DPRegError(f"{name} must lie in the open interval (0, 1), got {delta!r}")
    return d


def check_bound(bound: object, name: str) -> float:
    """Return a norm bound as a float after checking ``0 < bound < inf``."""
    b = _as_float(bound, name)
    if not (math.isfinite(b) and b > 0):
        raise DPRegError(f"{name} must be a finite number > 0, got {bound!r}")
    return b


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """Return ``value`` as int after checking it is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise DPRegError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise DPRegError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value: object, name: str, choices: Iterable[str]) -> str:
    """Check that ``value`` is one of ``choices``; the message lists them."""
    options = sorted(choices)
    if not isinstance(value, str) or value not in options:
        raise DPRegError(f"unknown {name} {value!r}; known: {', '.join(options)}")
    return value


def check_finite_array(a: np.ndarray, name: str) -> np.ndarray:
    """Raise if ``a`` holds NaN or infinite values (counting them)."""
    arr = np.asarray(a, dtype=float)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise DPRegError(f"{name} holds {int(bad.sum())} non-finite value(s) (NaN or inf)")
    return arr
