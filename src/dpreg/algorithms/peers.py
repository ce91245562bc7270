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

from dpreg.privacy import mechanisms as mech
from dpreg.privacy.ledger import release_columns
from dpreg.privacy.mechanisms import Release, compose

__all__ = [
    "PEERS",
    "diffprivlib_available",
    "fit_diffprivlib",
    "peer_entry",
    "peer_ledger",
    "peer_releases",
]

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
    from diffprivlib.models import LinearRegression  # optional dependency (dpreg[peers])

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


def peer_releases(name: str, epsilon: float) -> list[Release]:
    """The releases of a peer run: one externally calibrated pure epsilon-DP release.

    The library calibrates its noise internally; the ledger takes the
    budget it states at face value (:func:`dpreg.privacy.mechanisms.external_release`).
    """
    return [
        mech.external_release(
            name, epsilon=epsilon, delta=0.0, calibration="functional mechanism (library-internal)"
        )
    ]


def peer_ledger(name: str, epsilon: float, *, delta: float = 1e-6) -> dict[str, Any]:
    """Ledger columns for a peer (pure epsilon-DP as the library states it)."""
    return release_columns(peer_releases(name, epsilon), delta=delta)


def peer_entry(name: str, epsilon: float, *, delta: float) -> dict[str, Any]:
    """The provenance ledger record of a peer run."""
    rel = peer_releases(name, epsilon)
    return {
        "algorithm": name,
        "epsilon": float(epsilon),
        "delta": 0.0,
        "private": True,
        "reproduction": False,
        "calibration": "external",
        # sensitivity and scale are internal to the library: None (not NaN) in JSON
        "releases": [
            {k: (None if k in ("sensitivity", "scale") else v) for k, v in r.as_dict().items()}
            for r in rel
        ],
        "total": compose(rel, delta=delta),
    }
