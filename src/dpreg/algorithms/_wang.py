"""Helpers shared by Wang (2018)'s objective- and output-perturbation families.

Releases whose privacy does not come from adding calibrated noise to a
statistic (objective perturbation, one posterior sample, noisy SGD) are
recorded as :class:`~dpreg.privacy.mechanisms.Release` objects with their own
``mechanism`` name (``"objpert"``, ``"ops"``, ``"noisysgd"``): their cost is
the ``(epsilon, delta)`` the method's analysis claims, and ``valid`` says
whether that claim is backed by a theorem for the run (see each family
module).  ``sensitivity`` holds the Lipschitz (gradient) bound the
calibration used and ``scale`` the standard deviation of the noise it adds
(where either changes from repeat to repeat, the largest value any repeat
can use, or the first step's; each family module says which).

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI; code
at github.com/yuxiangw/optimal_dp_linear_regression (``exp_uci.m``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from dpreg._validation import DPRegError, check_noise_scale, epsilon_too_small
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.kinds import Mechanism
from dpreg.privacy.mechanisms import Release

__all__ = ["C1", "CLAIMED_MECHANISMS", "calibration_guard", "claimed_release", "quadratic_root"]

#: Mechanism names of releases whose cost is the claimed (epsilon, delta).
CLAIMED_MECHANISMS = (Mechanism.OBJPERT, Mechanism.OPS, Mechanism.NOISYSGD)


def claimed_release(
    name: str,
    mechanism: str,
    *,
    sensitivity: float,
    scale: float,
    epsilon: float,
    delta: float,
    calibration: str,
    valid: bool,
    true_epsilon: float | None = None,
) -> Release:
    """A release whose cost is the ``(epsilon, delta)`` its analysis claims.

    Built by :func:`dpreg.privacy.mechanisms.stated_release` (the accountant takes the
    stated budget); ``mechanism`` is one of :data:`CLAIMED_MECHANISMS`.
    ``sensitivity`` and ``scale`` must be finite (the ledger prints them); a
    non-finite value inside a release function means its arithmetic
    overflowed.  ``true_epsilon``: the epsilon a theorem does give where the
    claim fails and the ledger can compute it (charged by the accountant).
    """
    if mechanism not in CLAIMED_MECHANISMS:
        raise ValueError(f"mechanism {mechanism!r} is not one of {CLAIMED_MECHANISMS}")
    if not (math.isfinite(scale) and math.isfinite(sensitivity)):
        # inside a release function a non-finite value comes from overflowing arithmetic
        raise epsilon_too_small(float(epsilon))
    scale = check_noise_scale(scale, epsilon=epsilon, name=f"{name} noise scale")
    sensitivity = check_noise_scale(sensitivity, epsilon=epsilon, name=f"{name} sensitivity")
    return mech.stated_release(
        name,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        calibration=calibration,
        sensitivity=sensitivity,
        scale=scale,
        valid=valid,
        true_epsilon=true_epsilon,
    )


def calibration_guard(fn: Callable) -> Callable:
    """Turn an overflow inside a release function into the one "epsilon too small" error.

    With huge bounds or an epsilon near the smallest double, Wang's closed
    forms divide by an underflowed ``eps**2`` or overflow; the caller then
    gets :func:`dpreg._validation.epsilon_too_small` instead of a traceback.
    """

    @functools.wraps(fn)
    def guarded(ctx):
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                return fn(ctx)
        except (ZeroDivisionError, OverflowError, FloatingPointError) as exc:
            raise epsilon_too_small(ctx.epsilon) from exc
        except ValueError as exc:
            if isinstance(exc, DPRegError):
                raise
            raise epsilon_too_small(ctx.epsilon) from exc

    return guarded


def C1(eps_bar: float, delta: float, d: int, rho: float = 0.05) -> float:
    """Wang's constant ``(d/2 + sqrt(d ln(1/rho)) + ln(1/rho)) ln(2/delta) / eps_bar^2``.

    Spec (W8); ``C1_fun`` in ``OPS_epsdelta_balanced.m`` and ``adaops.m``.
    """
    lr = math.log(1.0 / rho)
    return (d / 2.0 + math.sqrt(d * lr) + lr) * math.log(2.0 / delta) / eps_bar**2


def quadratic_root(a, b, c):
    """The root ``(-b + sqrt(b^2 - 4 a c)) / (2 a)`` of ``a x^2 + b x + c`` (elementwise).

    Computed in the cancellation-free form ``2 (-c) / (b + sqrt(b^2 - 4 a c))``
    when ``b > 0`` (equal in exact arithmetic).
    """
    a, b, c = (np.asarray(v, dtype=float) for v in (a, b, c))
    disc = np.sqrt(b * b - 4.0 * a * c)
    with np.errstate(divide="ignore", invalid="ignore"):
        stable = np.where(b > 0, -2.0 * c / (b + disc), (-b + disc) / (2.0 * a))
    return stable if stable.ndim else float(stable)
