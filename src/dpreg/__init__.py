"""dpreg: differentially private linear regression benchmarks.

Sufficient-statistics perturbation (SSP) and AdaSSP (Wang 2018), their
corrected versions (Kalaja 2020), analytic and Gaussian-DP calibrations,
pre-processing variants and a cross-validated sweep engine.
"""

from dpreg._validation import DPRegError

__version__ = "0.1.0"

__all__ = ["DPRegError", "__version__"]
