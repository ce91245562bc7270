"""What releases cost: the exact Gaussian privacy profile and the accountant.

A :class:`Release` records what one noisy release of a run *is* -- the
statistic's name, the mechanism, its sensitivity and noise scale, and the
nominal budget its scale was calibrated for -- and is built only by the
factories :func:`gaussian_release`, :func:`laplace_release`,
:func:`external_release` and :func:`stated_release`.  What a list of
releases *costs* is computed by the accountant :func:`compose` from the
releases themselves (the split dp_accounting makes between events and
accountants).  :mod:`dpreg.privacy.mechanisms` re-exports every name here.

The exact (epsilon, delta) curve of mu-Gaussian differential privacy (Dong,
Roth & Su 2019, Corollary 2.13) is also the analytic Gaussian mechanism's
profile (Balle & Wang 2018, Theorem 8) with ``mu = sensitivity / sigma``::

    delta(eps; mu) = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)

References
----------
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism for
differential privacy: analytical calibration and optimal denoising. ICML.
Dwork, C. & Roth, A. (2014). The Algorithmic Foundations of Differential
Privacy (Theorem 3.6, Laplace; Theorem 3.16, basic composition).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from dpreg._validation import DPRegError, check_bound, check_delta, check_epsilon, check_noise_scale
from dpreg.privacy.kinds import Mechanism, check_kind

__all__ = [
    "Release",
    "compose",
    "external_release",
    "failure_release",
    "gaussian_release",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "laplace_epsilon",
    "laplace_release",
    "mixing_release",
    "stated_cost",
    "stated_release",
]


# --------------------------------------------------------------------------
# exact privacy profile of the Gaussian mechanism / mu-GDP
# --------------------------------------------------------------------------
def gdp_delta(epsilon: float, mu: float) -> float:
    """Exact ``delta(epsilon)`` of a ``mu``-GDP mechanism.

    ``delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``
    (Dong, Roth & Su 2019, Corollary 2.13; Balle & Wang 2018, Theorem 8 with
    ``mu = sensitivity / sigma``).  The second term is evaluated in log space
    so that large ``epsilon`` does not overflow.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, ``>= 0``.
    mu : float
        GDP parameter, ``> 0``.
    """
    if not (mu > 0 and math.isfinite(mu)):
        raise DPRegError(f"mu must be a finite number > 0, got {mu!r}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise DPRegError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    from scipy.special import log_ndtr, ndtr  # on first use: jobs that never compose skip scipy

    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    value = float(ndtr(a)) - math.exp(epsilon + float(log_ndtr(b)))
    return max(value, 0.0)


def gdp_mu(*, epsilon: float, delta: float) -> float:
    """The largest ``mu`` such that ``mu``-GDP implies ``(epsilon, delta)``-DP.

    ``gdp_delta(epsilon, mu)`` increases strictly in ``mu``; the root of
    ``gdp_delta(epsilon, mu) = delta`` is found by Brent's method on
    ``log mu`` to a relative tolerance of 1e-12.
    """
    return _gdp_mu(check_epsilon(epsilon), check_delta(delta))


@lru_cache(maxsize=4096)
def _gdp_mu(eps: float, dlt: float) -> float:
    """:func:`gdp_mu` of checked arguments; a pure function, so each ``(eps, delta)`` is
    solved once per process (a sweep asks for the same few values thousands of times)."""
    from scipy.optimize import brentq  # imported on first use: ~0.1-0.4 s, not needed to import

    def f(log_mu: float) -> float:
        return gdp_delta(eps, math.exp(log_mu)) - dlt

    lo, hi = -30.0, 1.0
    while f(hi) < 0:
        hi += 1.0
        if hi > 30:  # pragma: no cover - delta < 1 always brackets
            raise DPRegError(f"no mu found for epsilon={eps}, delta={dlt}")
    root = brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return math.exp(root)


def gdp_epsilon(*, mu: float, delta: float) -> float:
    """The smallest ``epsilon`` with ``gdp_delta(epsilon, mu) <= delta``."""
    dlt = check_delta(delta)
    if not (mu > 0 and math.isfinite(mu)):
        raise DPRegError(f"mu must be a finite number > 0, got {mu!r}")
    return _gdp_epsilon(float(mu), dlt)


@lru_cache(maxsize=4096)
def _gdp_epsilon(mu: float, dlt: float) -> float:
    """:func:`gdp_epsilon` of checked arguments, solved once per ``(mu, delta)`` (see
    :func:`_gdp_mu`; the ledger composes the same releases in every fold and run)."""
    from scipy.optimize import brentq  # imported on first use (see _gdp_mu)

    if gdp_delta(0.0, mu) <= dlt:
        return 0.0

    def f(eps: float) -> float:
        return gdp_delta(eps, mu) - dlt

    hi = max(1.0, mu * mu)
    while f(hi) > 0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))


# --------------------------------------------------------------------------
# releases and their composition (the ledger's unit)
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Release:
    """One noisy release made by an algorithm.

    Attributes
    ----------
    name : str
        What is released (``"XtX"``, ``"Xty"``, ``"lambda_min"``, ...).
    mechanism : str
        A :class:`~dpreg.privacy.kinds.Mechanism` value: ``"gaussian"``,
        ``"laplace"``, ``"none"`` (a non-private statistic),
        ``"gaussian-mixing"`` (:func:`mixing_release`), ``"failure"``, or a
        mechanism whose cost is stated (:func:`stated_release`); any other
        value is refused.
    sensitivity : float
        L2 (Gaussian) or L1 (Laplace) sensitivity under add/remove-one-row.
    scale : float
        Gaussian ``sigma`` or Laplace ``b``.
    epsilon, delta : float
        The nominal per-release budget this scale was calibrated for.
    calibration : str
        ``classical``, ``wang``, ``analytic``, ``gdp``, ``laplace`` or ``none``.
    valid : bool
        Whether this release meets its nominal budget: for a proven
        calibration, whether its theorem covers the per-release epsilon
        (classical: ``epsilon_i < 1``); for Wang's scales, which come with no
        proof, whether the exact Gaussian privacy profile meets
        ``(epsilon_i, delta_i)``.
    true_epsilon : float or None
        For a release whose cost is stated (not Gaussian or Laplace): the
        epsilon a theorem does give it at ``delta`` when that differs from the
        nominal one (e.g. the smallest epsilon whose sufficient conditions the
        constants meet, or the generic bound of a mechanism whose nominal
        share rests on an unchecked claim).  The accountant :func:`compose`
        charges it instead of ``epsilon`` in its exact accounting; ``None``:
        the nominal epsilon is the cost.
    copies : int
        Number of i.i.d. copies the release is made of (the sketch rows of a
        Gaussian-mixing release, :func:`mixing_release`); 1 otherwise.
    """

    name: str
    mechanism: str
    sensitivity: float
    scale: float
    epsilon: float
    delta: float
    calibration: str
    valid: bool
    true_epsilon: float | None = None
    copies: int = 1

    def __post_init__(self) -> None:
        check_kind(self.mechanism, Mechanism, f"release {self.name!r}: mechanism")

    @property
    def mu(self) -> float:
        """GDP parameter ``sensitivity / sigma`` of a Gaussian release."""
        if self.mechanism != "gaussian":
            raise DPRegError(f"release {self.name!r} is not Gaussian; mu is undefined")
        return self.sensitivity / self.scale

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def gaussian_release(
    name: str,
    *,
    sensitivity: float,
    sigma: float,
    epsilon: float,
    delta: float,
    calibration: str,
    valid: bool,
) -> Release:
    """A Gaussian release: ``N(0, sigma^2)`` noise on a statistic of L2 sensitivity ``D``.

    The one constructor of Gaussian releases (regression, private
    pre-processing, audit targets); ``epsilon``, ``delta`` and ``valid`` are
    the nominal budget the scale was calibrated for -- what the release
    *costs* is computed from ``sensitivity / sigma`` by :func:`compose`.

    References
    ----------
    Dwork, C. & Roth, A. (2014). The Algorithmic Foundations of Differential
    Privacy, Appendix A.  Dong, J., Roth, A. & Su, W. (2019). Gaussian
    differential privacy, Corollary 2.13.
    """
    sens = check_bound(sensitivity, "sensitivity")
    scale = check_noise_scale(sigma, epsilon=epsilon, name="sigma")
    return Release(
        str(name), "gaussian", sens, scale, float(epsilon), float(delta), calibration, bool(valid)
    )


def laplace_release(
    name: str,
    *,
    sensitivity: float,
    b: float,
    epsilon: float,
    calibration: str = "laplace",
    valid: bool = True,
) -> Release:
    """A Laplace release: ``Laplace(b)`` noise on a statistic of L1 sensitivity ``D``.

    It is ``(D / b)``-DP (Dwork & Roth 2014, Theorem 3.6); ``epsilon`` is the
    nominal budget ``b`` was calibrated for (``b = D / epsilon``).
    """
    sens = check_bound(sensitivity, "sensitivity")
    scale = check_noise_scale(b, epsilon=epsilon, name="b")
    return Release(str(name), "laplace", sens, scale, float(epsilon), 0.0, calibration, bool(valid))


def external_release(
    name: str, *, epsilon: float, delta: float = 0.0, calibration: str = "library"
) -> Release:
    """A release calibrated inside an external library that states only its budget.

    Its sensitivity and scale are not visible (NaN); its cost is the
    ``(epsilon, delta)`` the library claims, which the ledger takes at face
    value and labels as such (``mechanism = "external"``).
    """
    return Release(
        str(name), "external", math.nan, math.nan, float(epsilon), float(delta), calibration, True
    )


def stated_release(
    name: str,
    *,
    mechanism: str,
    epsilon: float,
    delta: float,
    calibration: str,
    sensitivity: float = math.nan,
    scale: float = math.nan,
    valid: bool = True,
    true_epsilon: float | None = None,
) -> Release:
    """A release whose guarantee is stated by its own theorem, not by a scale.

    For mechanisms such as objective perturbation or noisy gradient descent
    the ledger cannot compute the cost from one sensitivity and one scale;
    :func:`compose` takes the stated ``(epsilon, delta)``, or
    ``(true_epsilon, delta)`` when the ledger knows a larger proven epsilon
    (see :class:`Release`).  ``sensitivity`` and ``scale`` are recorded when
    they mean something.
    """
    if mechanism in ("gaussian", "laplace", "none"):
        raise DPRegError(
            f"release {name!r}: use gaussian_release or laplace_release for a {mechanism} release"
        )
    return Release(
        str(name),
        str(mechanism),
        float(sensitivity),
        float(scale),
        float(epsilon),
        float(delta),
        calibration,
        bool(valid),
        None if true_epsilon is None else float(true_epsilon),
    )


def mixing_release(
    name: str,
    *,
    sensitivity: float,
    scale: float,
    copies: int,
    epsilon: float,
    delta: float,
    calibration: str,
) -> Release:
    """Gaussian-mixing sketch rows whose cost the accountant computes in Renyi DP.

    ``copies`` rows ``S_i M + s N_i`` whose covariance ``M^T M + s^2 I`` is at
    least ``scale^2 I`` whenever the guarantee holds, while one row changes
    ``M^T M`` by at most a rank-one ``x x^T`` with ``||x||^2 <= sensitivity``:
    the rows are ``copies * D_alpha(N(0, g) || N(0, g - 1))``-RDP with ``g =
    scale^2 / sensitivity`` (:func:`dpreg.privacy.renyi.mixing_rdp`).
    ``delta`` is the probability that the covariance floor fails (a margin's
    tail); ``epsilon`` the nominal share.  Mechanism ``"gaussian-mixing"``.
    """
    sens = check_bound(sensitivity, "sensitivity")
    sc = check_noise_scale(scale, epsilon=epsilon, name="scale")
    if int(copies) < 1:
        raise DPRegError(f"release {name!r}: copies must be an integer >= 1, got {copies!r}")
    return Release(
        str(name),
        "gaussian-mixing",
        sens,
        sc,
        float(epsilon),
        float(delta),
        calibration,
        True,
        None,
        int(copies),
    )


def failure_release(name: str, *, probability: float, calibration: str, valid: bool) -> Release:
    """The failure probability of a safety margin, test or tail bound, as a delta term.

    A mechanism that is ``(epsilon, delta)``-DP whenever an event of
    probability at least ``1 - p`` holds (a noisy lower bound really lying
    below the statistic, a propose-test-release test not passing an unsafe
    dataset) is ``(epsilon, delta + p)``-DP: the failure costs ``(0, p)``
    and :func:`compose` adds ``p`` to the delta (mechanism ``"failure"``).
    ``valid`` says whether the entry's claimed budget leaves room for it.
    """
    p = float(probability)
    if not (0.0 <= p <= 1.0):
        raise DPRegError(f"failure probability of {name!r} must lie in [0, 1], got {probability!r}")
    return Release(str(name), "failure", math.nan, math.nan, 0.0, p, calibration, bool(valid))


def stated_cost(release: Release) -> float:
    """Epsilon the accountant charges a stated release: ``true_epsilon`` if known, else nominal."""
    return release.epsilon if release.true_epsilon is None else release.true_epsilon


def laplace_epsilon(release: Release) -> float:
    """Pure epsilon of a Laplace release from what was released: ``sensitivity / b``."""
    if release.mechanism != "laplace":
        raise DPRegError(f"release {release.name!r} is not Laplace")
    return release.sensitivity / release.scale


def _with_gaussian_part(
    mu: float, *, all_gaussian: bool, delta: float, basic_eps: float, pure: float, pure_delta: float
) -> tuple[float | None, float | None]:
    """``(exact_epsilon, exact_delta)`` of releases with a ``mu``-GDP Gaussian part.

    All Gaussian: the GDP epsilon at ``delta`` and the GDP delta at the basic
    epsilon.  Mixed: the GDP epsilon at what is left of ``delta`` after the
    other releases' stated deltas, plus their pure epsilons (None when
    nothing is left); ``delta = 0``: infinity.
    """
    if delta == 0:
        return math.inf, None
    if all_gaussian:
        return gdp_epsilon(mu=mu, delta=delta), gdp_delta(basic_eps, mu)
    if delta > pure_delta:
        return pure + gdp_epsilon(mu=mu, delta=delta - pure_delta), None
    return None, None


#: mechanisms composed in Renyi DP (with the Gaussian ones) when present
_RENYI = ("gaussian-mixing",)


def _renyi_part(
    private: list[Release],
    gauss: list[Release],
    basic_eps: float,
    delta: float,
    pure: float,
    pure_delta: float,
) -> dict[str, float | None]:
    """``gdp_mu``, ``exact_epsilon`` and ``exact_delta`` of releases with a mixing part.

    The Gaussian and mixing releases compose in Renyi DP and convert at what
    is left of ``delta`` after the other releases' deltas (and the mixing
    releases' own failure deltas); pure epsilons add.  ``exact_delta`` is the
    converted delta at ``basic_eps`` minus the pure epsilons, plus those deltas.
    """
    from dpreg.privacy.renyi import exact_profile

    mixing = [(r.scale**2 / r.sensitivity, r.copies) for r in private if r.mechanism in _RENYI]
    fixed = pure_delta + float(sum(r.delta for r in private if r.mechanism in _RENYI))
    mu2 = float(sum(r.mu**2 for r in gauss))
    eps, dlt = exact_profile(mu2, mixing, delta=delta, pure=pure, fixed=fixed, at=basic_eps)
    return {"gdp_mu": math.sqrt(mu2) if gauss else None, "exact_epsilon": eps, "exact_delta": dlt}


def compose(releases: list[Release], *, delta: float) -> dict[str, float | bool | None]:
    """What a list of releases costs in total (the accountant of the ledger).

    Two accountants over the same releases:

    * basic composition of the nominal per-release budgets (sum of the
      epsilons and deltas; Dwork & Roth 2014, Theorem 3.16 -- what the
      thesis uses);
    * the exact accounting computed from the releases themselves, not from
      their nominal budgets: Gaussian releases compose in Gaussian DP,
      ``mu = sqrt(sum (D_i / sigma_i)^2)`` (Dong, Roth & Su 2019,
      Corollary 3.3), whose exact epsilon at ``delta`` and exact delta at the
      basic epsilon are returned; Laplace releases cost ``sum D_i / b_i`` at
      delta 0; any other release (``external``, or a mechanism whose
      guarantee is its own theorem) costs its stated budget -- its
      ``true_epsilon`` where the ledger knows one -- and a ``failure``
      release (:func:`failure_release`) costs ``(0, p)``.  When kinds are mixed
      the exact epsilon is the GDP epsilon of the Gaussian part at
      ``delta`` plus the pure epsilons of the rest (exact per kind, basic
      across kinds; ``exact_delta`` is then None).  With a Gaussian-mixing
      release (:func:`mixing_release`) the Gaussian and mixing releases are
      composed in Renyi DP instead, with the optimal conversion
      (:mod:`dpreg.privacy.renyi`), and ``exact_delta`` is that conversion's
      delta at the basic epsilon plus the other deltas.  A selection release
      (:func:`dpreg.privacy.mechanisms.selection_release`) and its candidates' releases are charged by
      Papernot & Steinke's bound (:mod:`dpreg.privacy.selection`).

    Returns
    -------
    dict
        ``basic_epsilon``, ``basic_delta``, ``all_valid``, ``gdp_mu`` (None
        without Gaussian releases), ``exact_epsilon``, ``exact_delta``.
    """
    # delta = 0 is allowed here: pure-DP releases cost their epsilon, Gaussian ones infinity
    dlt = 0.0 if delta == 0 else check_delta(delta)
    private = [r for r in releases if r.mechanism != "none"]
    basic_eps = float(sum(r.epsilon for r in private))
    out: dict[str, float | bool | None] = {
        "basic_epsilon": basic_eps,
        "basic_delta": float(sum(r.delta for r in private)),
        "all_valid": all(r.valid for r in private),
        "gdp_mu": None,
        "exact_epsilon": None,
        "exact_delta": None,
    }
    if not private:
        return out
    if any(r.mechanism == "poisson-selection" for r in private):
        from dpreg.privacy.selection import selection_cost

        out.update(selection_cost(private, delta=dlt))
        return out
    gauss = [r for r in private if r.mechanism == "gaussian"]
    pure = float(sum(laplace_epsilon(r) for r in private if r.mechanism == "laplace"))
    # releases whose cost is argued by their own theorem (external libraries, objective
    # perturbation, posterior sampling, ...): their stated budget, taken at face value
    external = [r for r in private if r.mechanism not in ("gaussian", "laplace", *_RENYI)]
    pure += float(sum(stated_cost(r) for r in external))
    ext_delta = float(sum(r.delta for r in external))
    if any(r.mechanism == "gaussian-mixing" for r in private):
        out.update(_renyi_part(private, gauss, basic_eps, dlt, pure, ext_delta))
    elif gauss:
        mu = math.sqrt(sum(r.mu**2 for r in gauss))
        out["gdp_mu"] = mu
        out["exact_epsilon"], out["exact_delta"] = _with_gaussian_part(
            mu,
            all_gaussian=len(gauss) == len(private),
            delta=dlt,
            basic_eps=basic_eps,
            pure=pure,
            pure_delta=ext_delta,
        )
    else:
        out["exact_epsilon"] = pure
        out["exact_delta"] = ext_delta
    return out
