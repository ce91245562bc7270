"""A scikit-learn-style estimator for DP linear regression without the pipeline."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_bound, check_delta, check_epsilon
from dpreg.algorithms import get_algorithm
from dpreg.stats import SuffStats

__all__ = ["PrivateLinearRegression"]


class PrivateLinearRegression:
    """Differentially private linear regression on user-supplied bounds.

    The data must already satisfy ``||x_i||_2 <= bounds[0]`` and
    ``|y_i| <= bounds[1]``; bounds are never taken from the data (that would
    leak it), and :meth:`fit` refuses rows that break them.

    Parameters
    ----------
    algorithm : str
        A name from :data:`dpreg.algorithms.ALGORITHMS` (default ``"adassp"``).
    epsilon, delta : float
        Privacy budget of the whole fit (keyword-only).
    bounds : tuple of float
        ``(B_X, B_Y)``.
    rho : float
        AdaSSP failure probability.
    xtx_offset : float
        ``c`` in ``A = X^T X + c I`` (Wang's code: 1; 0 for textbook forms).
    random_state : None, int, SeedSequence or Generator
        Normalised once with :func:`numpy.random.default_rng`.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
    lambda_ : float
        The ridge parameter used (NaN where the algorithm has none).
    releases_ : list of dpreg.mechanisms.Release
        What the fit released, with its noise scales (the privacy ledger).

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import PrivateLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(1000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [0.5, -0.2, 0.1], -1, 1)
    >>> model = PrivateLinearRegression(epsilon=1.0, delta=1e-6, random_state=0).fit(X, y)
    >>> model.coef_.shape
    (3,)
    """

    def __init__(
        self,
        algorithm: str = "adassp",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        bounds: tuple[float, float] = (1.0, 1.0),
        rho: float = 0.05,
        xtx_offset: float = 1.0,
        random_state: Any = None,
    ) -> None:
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.rho = rho
        self.xtx_offset = xtx_offset
        self.random_state = random_state

    _PARAMS = ("algorithm", "epsilon", "delta", "bounds", "rho", "xtx_offset", "random_state")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._PARAMS}

    def set_params(self, **params: Any) -> PrivateLinearRegression:
        for key, value in params.items():
            if key not in self._PARAMS:
                raise DPRegError(f"unknown parameter {key!r}; known: {', '.join(self._PARAMS)}")
            setattr(self, key, value)
        return self

    def fit(self, X: np.ndarray, y: np.ndarray) -> PrivateLinearRegression:
        """Fit on rows that respect ``bounds``; raises before any release otherwise."""
        alg = get_algorithm(self.algorithm)
        eps = check_epsilon(self.epsilon)
        dlt = check_delta(self.delta)
        if not isinstance(self.bounds, tuple | list) or len(self.bounds) != 2:
            raise DPRegError(f"bounds must be a pair (B_X, B_Y), got {self.bounds!r}")
        bx = check_bound(self.bounds[0], "bounds[0] (B_X)")
        by = check_bound(self.bounds[1], "bounds[1] (B_Y)")
        stats = SuffStats.from_arrays(np.asarray(X), np.asarray(y), bound_x=bx, bound_y=by)
        rng = np.random.default_rng(self.random_state)
        res = alg.fit(
            stats, epsilon=eps, delta=dlt, rng=rng, size=1, rho=self.rho, xtx_offset=self.xtx_offset
        )
        if res.failed[0]:
            raise DPRegError(
                f"{self.algorithm}: the noisy system was singular; refit with another random_state"
            )
        self.coef_ = res.theta[0]
        self.lambda_ = float(res.lam[0])
        self.releases_ = alg.releases(
            epsilon=eps, delta=dlt, d=stats.d, bound_x=bx, bound_y=by, rho=self.rho
        )
        self.n_features_in_ = stats.d
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise DPRegError("this PrivateLinearRegression is not fitted yet; call fit first")
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise DPRegError(f"X must have shape (m, {self.n_features_in_}), got {X.shape}")
        return X @ self.coef_

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        """R^2 of the predictions."""
        y = np.asarray(y, dtype=float)
        resid = y - self.predict(X)
        return float(1.0 - resid @ resid / ((y - y.mean()) @ (y - y.mean())))
