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
    "DPRegError",
    "check_bound",
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_finite_array",
    "check_positive_int",
]


class DPRegError(ValueError):
    """A user-facing error: bad parameter, bad config value or bad data."""


def _as_float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise DPRegError(f"{name} must be a real number, got {value!r}")
    return float(value)


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking ``0 < epsilon < inf``."""
    eps = _as_float(epsilon, name)
    if not (math.isfinite(eps) and eps > 0):
        raise DPRegError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return eps


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
