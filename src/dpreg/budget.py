"""A privacy budget tallied across fits: :class:`BudgetAccountant`.

Every private fit spends part of a privacy budget, and fits on the same
private rows compose: a grid search that fits 3 folds x 4 candidates and
then refits the best one makes 13 releases of the same data.  A
:class:`BudgetAccountant` holds a total ``(epsilon, delta)``; every
:class:`~dpreg.PrivateLinearRegression` fit given the accountant (its
``accountant`` parameter, or the accountant of an enclosing ``with`` block)
is *charged* before any noise is drawn, and a fit that would take the
total past the budget is refused with :class:`BudgetExceededError`.

What a fit costs
----------------
A fit is the list of its releases (:class:`dpreg.privacy.accounting.Release`).  The
cost of one release is the budget it is *guaranteed* to meet:

* a release whose calibration covers its nominal budget (``valid``) costs
  its nominal ``(epsilon_i, delta_i)``;
* a Gaussian release outside its calibration's theorem (e.g. the classical
  calibration at ``epsilon_i >= 1``, or Wang's scales) costs its exact
  ``(epsilon, delta_i)`` computed from ``mu_i = D_i / sigma_i`` on the Gaussian
  privacy profile (Balle & Wang 2018, Theorem 8), whichever side of the
  unproven nominal epsilon it falls (Wang's SSP scales at a nominal 1.0 cost
  2.26; the classical scales at a nominal 10 happen to meet 9.17);
* a Laplace release outside its theorem costs ``D_i / b_i`` (Dwork & Roth
  2014, Theorem 3.6);
* any other release outside its theorem (objective or posterior sampling
  with a scale that does not meet its stated budget) has no computable cost,
  and charging it is refused: a tally that took its stated budget at face
  value would be wrong;
* a non-private fit (a baseline) costs ``epsilon = inf``: it fits only under
  an unlimited budget (``epsilon=math.inf``).

Composition
-----------
``composition="basic"`` (default): the costs add up, ``sum epsilon_i`` and
``sum delta_i`` (Dwork & Roth 2014, Theorem 3.16); valid for any releases,
also when each fit is chosen after seeing the earlier ones (adaptive
composition, Dwork & Roth 2014, Section 3.5).

``composition="gdp"``: Gaussian releases compose exactly in Gaussian
differential privacy: ``k`` releases with ``mu_i = D_i / sigma_i`` are
``sqrt(sum mu_i^2)``-GDP (Dong, Roth & Su 2019, Corollary 3.3, adaptive
composition), converted to ``(epsilon, delta)`` on the exact curve
``delta(eps; mu) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``
(their Corollary 2.13) at the budget's ``delta``, less the deltas of the
non-Gaussian releases, which compose by the basic rule and add their
epsilons.  The spent epsilon is the smallest epsilon for which all charges
together are ``(epsilon, delta_total)``-DP, so once a Gaussian release is
charged ``spent[1]`` equals the budget's delta (the whole delta is where
the Gaussian part is converted).  For many Gaussian fits it admits far more
fits than the basic sum.

Rounding: a total within a relative ``1e-9`` of the budget is accepted, so
that ten fits at ``epsilon=0.1`` fit in ``epsilon=1`` whatever the rounding
of their shares (the excess is below ``1e-9 * epsilon``, far below any
meaningful change of the guarantee).

Scope and limits
----------------
The accountant tallies fits, not everything computed from the private rows:
the scores :class:`~sklearn.model_selection.GridSearchCV` computes on
held-out private rows to pick the best candidate are not private and are
not charged.  ``clone`` and :func:`copy.deepcopy` share the accountant
(a tally must not fork); a pickled copy (a joblib worker process, a saved
model) is *detached*: it keeps the charges made so far for reading but
refuses new ones, because charges there would never reach the original.
So fit in the process that holds the accountant (``n_jobs=1`` or a
threading backend).  The ``with`` default is process-wide (a stack shared
by threads) and does not reach worker processes: there, only fits given
``accountant=`` are refused rather than silently spent.

References
----------
Dwork, C. & Roth, A. (2014). The Algorithmic Foundations of Differential
Privacy (Theorem 3.6, Laplace; Theorem 3.16, composition).
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B
(Corollary 2.13, the exact profile; Corollary 3.3, composition).
Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism for
differential privacy: analytical calibration and optimal denoising. ICML.
Holohan, N. et al. (2019). Diffprivlib: the IBM differential privacy
library. arXiv:1907.02444 (a budget accountant for scikit-learn-style
estimators).

Examples
--------
>>> import numpy as np
>>> from dpreg import BudgetAccountant, PrivateLinearRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(500, 2)) / np.sqrt(2)
>>> y = np.clip(X @ [0.5, -0.2], -1, 1)
>>> acc = BudgetAccountant(epsilon=1.0, delta=1e-5)
>>> for seed in range(2):
...     _ = PrivateLinearRegression(epsilon=0.5, accountant=acc, random_state=seed).fit(X, y)
>>> acc.spent
(1.0, 2e-06)
>>> len(acc.charges)
2
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_choice
from dpreg.privacy.accounting import Release, gdp_epsilon, laplace_epsilon

__all__ = [
    "COMPOSITIONS",
    "BudgetAccountant",
    "BudgetExceededError",
    "Charge",
    "default_accountant",
    "release_cost",
]

#: The composition rules an accountant can apply.
COMPOSITIONS = ("basic", "gdp")

#: Relative slack when comparing a total with the budget (rounding of sums).
BUDGET_RTOL = 1e-9


class BudgetExceededError(DPRegError):
    """A fit would take the spent budget past the accountant's total; nothing was fitted."""


@dataclass(frozen=True)
class Charge:
    """One fit charged to an accountant.

    Attributes
    ----------
    index : int
        1 for the first charge of the accountant, 2 for the next, ...
    label : str
        What was fitted (the estimator, its algorithm and budget, the rows).
    epsilon, delta : float
        The fit's own cost: the sum of :func:`release_cost` over its
        releases (``inf`` for a non-private fit).
    releases : tuple of Release
        What the fit released; the ``"gdp"`` composition recomputes the
        total from them.
    """

    index: int
    label: str
    epsilon: float
    delta: float
    releases: tuple[Release, ...]


def release_cost(release: Release) -> tuple[float, float]:
    """The ``(epsilon, delta)`` one release is guaranteed to meet.

    Its nominal budget if its calibration covers it; otherwise its exact
    cost where the release records enough to compute one (Gaussian: the
    exact profile at its own ``delta``; Laplace: ``D / b``).  Raises
    :class:`~dpreg.DPRegError` for a release with no computable guarantee.
    """
    if release.mechanism == "none":
        return math.inf, 0.0
    if release.valid:
        return release.epsilon, release.delta
    if release.mechanism == "gaussian":
        if release.delta <= 0:
            return math.inf, 0.0
        return gdp_epsilon(mu=release.mu, delta=release.delta), release.delta
    if release.mechanism == "laplace":
        return laplace_epsilon(release), 0.0
    raise DPRegError(
        f"release {release.name!r} ({release.mechanism}, calibration {release.calibration!r}) "
        f"does not meet its nominal budget epsilon={release.epsilon:.6g}, "
        f"delta={release.delta:.3g}, and its true cost cannot be computed from what it "
        "records, so a BudgetAccountant cannot charge it; choose an algorithm whose "
        "calibration covers its budget (Algorithm.outside_validity is False)"
    )


def _fits(spent: float, total: float) -> bool:
    return spent <= total or spent <= total * (1.0 + BUDGET_RTOL)


#: Accountants of the enclosing ``with`` blocks, innermost last (process-wide).
_DEFAULTS: list[BudgetAccountant] = []
_DEFAULTS_LOCK = threading.Lock()


def default_accountant() -> BudgetAccountant | None:
    """The accountant of the innermost enclosing ``with accountant:`` block, if any."""
    with _DEFAULTS_LOCK:
        return _DEFAULTS[-1] if _DEFAULTS else None


class BudgetAccountant:
    """A total privacy budget ``(epsilon, delta)`` that every fit is charged against.

    Parameters
    ----------
    epsilon : float
        Total epsilon, ``> 0``; ``math.inf`` tallies without a limit.
    delta : float, default=0.0
        Total delta in ``[0, 1)``; 0 admits pure-DP fits only.
    composition : {"basic", "gdp"}, default="basic"
        How charges add up (see the module docstring): ``"basic"`` sums the
        epsilons and deltas; ``"gdp"`` composes the Gaussian releases
        exactly in Gaussian DP.

    Attributes
    ----------
    charges : list of Charge
        Every fit charged so far, in order (a copy).
    spent, remaining : (float, float)
        ``(epsilon, delta)`` spent and left under the composition rule.

    Examples
    --------
    >>> acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    >>> acc
    BudgetAccountant(epsilon=2, delta=1e-05, composition='basic')
    >>> acc.spent, acc.remaining
    ((0.0, 0.0), (2.0, 1e-05))
    >>> with acc:  # fits inside the block are charged to acc by default
    ...     pass
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, composition: str = "basic") -> None:
        self.epsilon = _total(
            epsilon, "epsilon", lambda v: v > 0, "a number > 0 (math.inf: no limit)"
        )
        self.delta = _total(delta, "delta", lambda v: 0 <= v < 1, "a number in [0, 1)")
        self.composition = check_choice(composition, "composition", COMPOSITIONS)
        self._charges: list[Charge] = []
        self._lock = threading.Lock()
        self._detached = False

    # ------------------------------------------------------------------ state
    def __repr__(self) -> str:
        return (
            f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r})"
        )

    @property
    def charges(self) -> list[Charge]:
        with self._lock:
            return list(self._charges)

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent by every charge so far."""
        with self._lock:
            return self._total_of(self._charges)

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available (0 when exhausted; inf for no limit)."""
        eps, dlt = self.spent
        left_eps = math.inf if self.epsilon == math.inf else max(self.epsilon - eps, 0.0)
        return left_eps, max(self.delta - dlt, 0.0)

    def _total_of(self, charges: Sequence[Charge]) -> tuple[float, float]:
        if self.composition == "basic" or not charges:
            return (
                math.fsum(c.epsilon for c in charges),
                math.fsum(c.delta for c in charges),
            )
        mu_sq: list[float] = []
        other_eps: list[float] = []
        other_delta: list[float] = []
        for c in charges:
            for r in c.releases:
                if r.mechanism == "gaussian":
                    mu_sq.append(r.mu**2)
                else:
                    e, d = release_cost(r)
                    other_eps.append(e)
                    other_delta.append(d)
        pure, pure_delta = math.fsum(other_eps), math.fsum(other_delta)
        if not mu_sq:
            return pure, pure_delta
        left = self.delta - pure_delta
        if left <= 0:  # nothing left of delta to convert the Gaussian part at
            return math.inf, self.delta
        return pure + gdp_epsilon(mu=math.sqrt(math.fsum(mu_sq)), delta=left), self.delta

    # ---------------------------------------------------------------- charging
    def charge(self, releases: Sequence[Release], label: str, *, private: bool = True) -> Charge:
        """Charge one fit's releases, or raise :class:`BudgetExceededError` leaving nothing charged.

        Call it before drawing any noise: a refused fit then releases nothing.

        Parameters
        ----------
        releases : sequence of Release
            What the fit will release.
        label : str
            Names the fit in :attr:`charges` and in the error.
        private : bool, default=True
            False for a non-private fit: it costs ``epsilon = inf``.
        """
        if self._detached:
            raise DPRegError(
                f"{self!r} is a copy made by pickling (a joblib worker process or a saved "
                "model): charges made on it would never reach the original accountant, so "
                "the budget would be spent silently; fit in the process that holds the "
                "accountant (n_jobs=1 or a threading backend)"
            )
        rels = tuple(releases)
        if private:
            costs = [release_cost(r) for r in rels]
            eps = math.fsum(c[0] for c in costs)
            dlt = math.fsum(c[1] for c in costs)
        else:
            eps, dlt = math.inf, 0.0
        with self._lock:
            index = len(self._charges) + 1
            charge = Charge(index, str(label), eps, dlt, rels)
            if not private:
                # a non-private fit has no releases to compose; mark it by a pseudo-release
                charge = Charge(index, str(label), eps, dlt, (_unlimited(label),))
            before = self._total_of(self._charges)
            after = self._total_of([*self._charges, charge])
            if not (_fits(after[0], self.epsilon) and _fits(after[1], self.delta)):
                raise BudgetExceededError(
                    f"privacy budget exceeded: {self!r} has spent epsilon={before[0]:.6g}, "
                    f"delta={before[1]:.3g} in {index - 1} charge(s); charge #{index}, {label}, "
                    f"costs epsilon={eps:.6g}, delta={dlt:.3g} and would bring the total to "
                    f"epsilon={after[0]:.6g}, delta={after[1]:.3g} ({self.composition} "
                    "composition); it was refused before fitting (no noise drawn); use a new "
                    "accountant only for new, disjoint private data"
                )
            self._charges.append(charge)
        return charge

    # ------------------------------------------------------- with-block default
    def __enter__(self) -> BudgetAccountant:
        with _DEFAULTS_LOCK:
            _DEFAULTS.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _DEFAULTS_LOCK:
            for i in range(len(_DEFAULTS) - 1, -1, -1):
                if _DEFAULTS[i] is self:
                    del _DEFAULTS[i]
                    break

    # --------------------------------------------- copies share, pickles detach
    def __copy__(self) -> BudgetAccountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> BudgetAccountant:
        return self

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = {k: v for k, v in self.__dict__.items() if k != "_lock"}
            state["_charges"] = list(self._charges)
        state["_detached"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _unlimited(label: str) -> Release:
    """The pseudo-release of a non-private fit: no guarantee at all."""
    return Release(
        f"non-private fit: {label}", "none", math.nan, math.nan, math.inf, 0.0, "none", True
    )


def _total(value: object, name: str, ok: Callable[[float], bool], allowed: str) -> float:
    """A total of the budget as a float, or one DPRegError naming it."""
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise DPRegError(f"BudgetAccountant {name} must be {allowed}, got {value!r}")
    v = float(value)
    if math.isnan(v) or not ok(v):
        raise DPRegError(f"BudgetAccountant {name} must be {allowed}, got {value!r}")
    return v
