"""dpreg: differentially private linear regression benchmarks.

Sufficient-statistics perturbation (SSP) and AdaSSP (Wang 2018), their
corrected versions (Kalaja 2020), analytic and Gaussian-DP calibrations,
pre-processing variants and a cross-validated sweep engine.
"""

from dpreg._validation import DPRegError
from dpreg.estimator import PrivateLinearRegression
from dpreg.mechanisms import gaussian_sigma
from dpreg.stats import SuffStats

__version__ = "0.1.0"

__all__ = [
    "DPRegError",
    "PrivateLinearRegression",
    "SuffStats",
    "__version__",
    "gaussian_sigma",
]
