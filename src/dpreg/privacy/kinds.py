"""The closed vocabularies of the privacy layer, defined once.

A release's *mechanism* decides how the accountant (:mod:`dpreg.privacy.accounting`)
charges it, and an algorithm's *neighbour relation* decides what its guarantee
means; a misspelt value would otherwise be accepted and charged as something
else.  Both are :class:`enum.StrEnum`, so their members compare equal to the
plain strings the ledger writes, and :class:`~dpreg.privacy.accounting.Release`
and :class:`~dpreg.algorithms.base.Algorithm` refuse any other value.  A new
kind of mechanism is added here together with how :func:`~dpreg.privacy.accounting.compose`
charges it.
"""

from __future__ import annotations

from enum import StrEnum

from dpreg._validation import DPRegError

__all__ = ["Mechanism", "Neighbouring", "check_kind"]


class Mechanism(StrEnum):
    """What kind of release a :class:`~dpreg.privacy.accounting.Release` is."""

    GAUSSIAN = "gaussian"  #: N(0, sigma^2) noise, charged exactly through its privacy profile
    LAPLACE = "laplace"  #: Lap(b) noise, pure epsilon = sensitivity / b
    NONE = "none"  #: a statistic taken without noise (not private)
    GAUSSIAN_MIXING = "gaussian-mixing"  #: Gaussian sketch rows (IHM), charged in Renyi DP
    FAILURE = "failure"  #: the failure probability of a margin or test: cost (0, p)
    EXTERNAL = "external"  #: an outside library's release whose cost it states
    EXPONENTIAL = "exponential"  #: an exponential mechanism: cost stated (or its true epsilon)
    RENYI_MIXING = "renyi-mixing"  #: a stated Renyi-DP cost of a mixing step
    SHEFFET_JL = "sheffet-jl"  #: Sheffet's Johnson-Lindenstrauss release: cost stated
    OBJPERT = "objpert"  #: objective perturbation (Wang's methods): cost its analysis claims
    OPS = "ops"  #: one posterior sample (Wang's methods): cost its analysis claims
    NOISYSGD = "noisysgd"  #: noisy SGD (Wang's methods): cost its analysis claims
    POISSON_SELECTION = "poisson-selection"  #: best of Poisson-many runs (dpreg.privacy.selection)


class Neighbouring(StrEnum):
    """The neighbour relation a guarantee holds under."""

    ADD_REMOVE = "add/remove"  #: one dataset has one row more than the other
    REPLACE_ONE = "replace-one"  #: the datasets differ in the value of one row


def check_kind(value: object, kind: type[StrEnum], what: str) -> str:
    """``value`` as a plain string when it is a member of ``kind``, else one DPRegError."""
    # every release passes here: a dict lookup (a non-string, e.g. a list, is refused first)
    if not isinstance(value, str) or value not in kind._value2member_map_:
        allowed = ", ".join(m.value for m in kind)
        raise DPRegError(f"{what} {value!r} is not one of {allowed}")
    return str(value)
