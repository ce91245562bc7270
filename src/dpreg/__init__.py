"""dpreg: differentially private linear regression benchmarks.

Sufficient-statistics perturbation (SSP) and AdaSSP (Wang 2018), their
corrected versions (Kalaja 2020), analytic and Gaussian-DP calibrations,
pre-processing variants and a cross-validated sweep engine.

The top-level names are loaded on first use (PEP 562), so ``import dpreg``
and light submodules such as :mod:`dpreg.joblog` stay cheap.
"""

from importlib import import_module
from typing import Any

from dpreg._version import __version__

_LAZY = {
    "BudgetAccountant": "dpreg.budget",
    "BudgetExceededError": "dpreg.budget",
    "DPRegError": "dpreg._validation",
    "NonPrivateWarning": "dpreg.estimator",
    "PrivateLinearRegression": "dpreg.estimator",
    "RowNormClipper": "dpreg.estimator",
    "SuffStats": "dpreg.preprocess.stats",
    "gaussian_sigma": "dpreg.privacy.mechanisms",
}

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "DPRegError",
    "NonPrivateWarning",
    "PrivateLinearRegression",
    "RowNormClipper",
    "SuffStats",
    "__version__",
    "gaussian_sigma",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpreg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
