"""External peer implementations run on the same folds as dpreg's algorithms.

``diffprivlib`` (IBM's Differential Privacy Library, Holohan et al. 2019)
is an optional dependency (``pip install dpreg[peers]``).  Its
``LinearRegression`` implements the functional mechanism (Zhang et al.
2012) on raw rows, so the peer needs the transformed training rows of each
fold, not only their sufficient statistics; it is fitted once per repeat
(the library has no batched interface).
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from typing import Any

import numpy as np

__all__ = ["PEERS", "diffprivlib_available", "fit_diffprivlib"]

log = logging.getLogger(__name__)

#: Peer names accepted in ``algorithms`` lists besides the registry.
PEERS = {"diffprivlib": "diffprivlib LinearRegression"}


def diffprivlib_available() -> bool:
    """Whether diffprivlib is importable (checked without importing it)."""
    return importlib.util.find_spec("diffprivlib") is not None


def fit_diffprivlib(
    X: np.ndarray, y: np.ndarray, *, epsilon: float, seeds: np.ndarray
) -> np.ndarray:
    """Fit ``diffprivlib.models.LinearRegression`` once per seed.

    ``X`` rows must lie in the unit ball and ``|y| <= 1`` (the transformed
    training rows); the bounds passed to the library are the public box
    ``[-1, 1]`` per feature and for ``y`` -- never taken from the data.
    Returns coefficients of shape ``(len(seeds), d)``.
    """
    from diffprivlib.models import LinearRegression

    d = X.shape[1]
    out = np.empty((len(seeds), d))
    bounds_x = (-np.ones(d), np.ones(d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the library warns on every fit about its own settings
        for i, s in enumerate(seeds):
            model = LinearRegression(
                epsilon=float(epsilon),
                bounds_X=bounds_x,
                bounds_y=(-1.0, 1.0),
                fit_intercept=False,
                random_state=int(s),
            )
            model.fit(X, y)
            out[i] = np.asarray(model.coef_, dtype=float).ravel()
    return out


def peer_ledger(name: str, epsilon: float) -> dict[str, Any]:
    """Ledger columns for a peer: pure epsilon-DP as the library states it."""
    return {
        "releases": f"{name}: functional mechanism (library-internal scales) @ ({epsilon:.6g},0)",
        "eps_basic": float(epsilon),
        "delta_basic": 0.0,
        "eps_exact": float(epsilon),
        "delta_exact": 0.0,
    }
