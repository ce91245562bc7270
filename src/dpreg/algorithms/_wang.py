"""Helpers shared by Wang (2018)'s objective- and output-perturbation families.

Releases whose privacy does not come from adding calibrated noise to a
statistic (objective perturbation, one posterior sample, noisy SGD) are
recorded as :class:`~dpreg.mechanisms.Release` objects with their own
``mechanism`` name (``"objpert"``, ``"ops"``, ``"noisysgd"``): their cost is
the ``(epsilon, delta)`` the method's analysis claims, and ``valid`` says
whether that claim is backed by a theorem for the run (see each family
module).  ``sensitivity`` holds the Lipschitz (gradient) bound the
calibration used and ``scale`` the standard deviation of the noise it adds,
NaN where either changes from repeat to repeat.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI; code
at github.com/yuxiangw/optimal_dp_linear_regression (``exp_uci.m``).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg.mechanisms import Release

__all__ = ["C1", "CLAIMED_MECHANISMS", "claimed_release", "quadratic_root"]

#: Mechanism names of releases whose cost is the claimed (epsilon, delta).
CLAIMED_MECHANISMS = ("objpert", "ops", "noisysgd")


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
) -> Release:
    """A release whose cost is the ``(epsilon, delta)`` its analysis claims.

    ``mechanism`` is one of :data:`CLAIMED_MECHANISMS`; ``sensitivity`` and
    ``scale`` may be NaN when they are data- or repeat-dependent.
    """
    if mechanism not in CLAIMED_MECHANISMS:
        raise ValueError(f"mechanism {mechanism!r} is not one of {CLAIMED_MECHANISMS}")
    return Release(
        str(name),
        mechanism,
        float(sensitivity),
        float(scale),
        float(epsilon),
        float(delta),
        calibration,
        bool(valid),
    )


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
