"""scikit-learn estimators: private linear regression and a data-free row clipper.

:class:`PrivateLinearRegression` runs any algorithm of the registry
(:data:`dpreg.algorithms.ALGORITHMS`) on user-supplied norm bounds;
:class:`RowNormClipper` makes rows respect such a bound without looking at
the data, so it can sit in a :class:`~sklearn.pipeline.Pipeline` before the
estimator.

Choosing bounds
---------------
The privacy guarantee holds only if every training row satisfies
``||x_i||_2 <= B_X`` and ``|y_i| <= B_Y``, and the noise grows with the
bounds (``X^T X`` has sensitivity ``B_X^2``, ``X^T y`` has ``B_X B_Y``).
Bounds must come from knowledge that does not depend on the private rows:

* physical or recorded ranges of each feature (a sensor's range, a
  questionnaire's scale, a clipped dollar amount): with per-feature ranges
  ``|x_j| <= r_j``, ``B_X = sqrt(sum_j r_j^2)``; rescale features by a fixed,
  public factor first so that one feature does not dominate the norm;
* a public, similar data set, or an earlier release that already paid for
  its privacy;
* a deliberate choice below the worst case, accepting that the few larger
  rows are clipped (:class:`RowNormClipper`, or ``clip=True``): clipping
  biases the fit through the clipped rows, while a smaller bound lowers the
  noise on every statistic.

Never take ``max ||x_i||`` or ``max |y_i|`` of the private rows, and never fit
a :class:`~sklearn.preprocessing.StandardScaler` (or any scaler whose
statistics come from the rows) on them: either leaks the data outside the
guarantee.  :mod:`dpreg.preprocess` has the private alternative (statistics
released with noise, from declared public ranges).

Clipping the target: pass ``clip=True`` to :class:`PrivateLinearRegression`
(rows and targets are clipped to ``bounds`` before the statistics are
computed), or wrap it in :class:`~sklearn.compose.TransformedTargetRegressor`
with ``func=lambda y: np.clip(y, -B_Y, B_Y)``, ``inverse_func=lambda y: y``
and ``check_inverse=False``.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI
(the bounds ``||x|| <= B_X``, ``|y| <= B_Y`` that its sensitivities assume).
Holohan, N. et al. (2019). Diffprivlib: the IBM differential privacy library.
arXiv:1907.02444 (``bounds_X``/``bounds_y`` given by the user).
Abadi, M. et al. (2016). Deep learning with differential privacy. CCS.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpreg._validation import DPRegError, check_bound, check_delta, check_epsilon
from dpreg.algorithms import get_algorithm
from dpreg.preprocess.stats import SuffStats
from dpreg.seeding import as_generator

__all__ = ["NonPrivateWarning", "PrivateLinearRegression", "RowNormClipper", "clip_rows"]


class NonPrivateWarning(UserWarning):
    """A non-private algorithm (a baseline) was fitted: nothing about it is private."""


def clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Scale every row with ``||x_i||_2 > bound`` onto the sphere of radius ``bound``.

    ``x_i <- x_i * min(1, bound / ||x_i||_2)``: each row is mapped on its
    own, with a bound fixed in advance, so one person's row never changes
    another's and the map can precede any private algorithm (it is the
    clipping of diffprivlib, and of per-example gradients in Abadi et al.
    2016, Algorithm 1).
    Rows inside the ball are returned unchanged (bit for bit).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Finite rows.
    bound : float
        ``B_X > 0``.

    Returns
    -------
    ndarray of shape (n, d)
        A new float64 array.
    """
    B = check_bound(bound, "bound")
    out = np.array(X, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    over = norms > B
    if over.any():
        # a clipped norm may round to B (1 + 2**-52): within the bound check's
        # tolerance (dpreg.preprocess.stats.BOUND_RTOL)
        out[over] *= (B / norms[over])[:, None]
    return out


def _real(value: object, name: str, allowed: str, ok: Callable[[float], bool]) -> float:
    """``value`` as a float if it is a real number with ``ok(value)``; else one DPRegError."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DPRegError(f"{name} must be {allowed}, got {value!r}")
    if not ok(float(value)):
        raise DPRegError(f"{name} must be {allowed}, got {value!r}")
    return float(value)


def _as_dpreg_error(err: ValueError) -> DPRegError:
    """scikit-learn's input errors as one-line DPRegErrors (same words)."""
    return DPRegError(" ".join(str(err).split()))


class RowNormClipper(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Clip each row to L2 norm ``bound``, with no statistic taken from the data.

    A stateless transformer for a :class:`~sklearn.pipeline.Pipeline` placed
    before :class:`PrivateLinearRegression` with ``bounds[0] == bound``:
    ``fit`` records only the number of features, ``transform`` applies
    :func:`clip_rows`.  See the module docstring for choosing ``bound`` from
    domain knowledge.

    Parameters
    ----------
    bound : float
        ``B_X > 0``, chosen without looking at the private rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from dpreg import PrivateLinearRegression, RowNormClipper
    >>> X = np.array([[3.0, 4.0], [0.3, 0.4]])
    >>> RowNormClipper(bound=1.0).fit_transform(X)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    >>> model = make_pipeline(
    ...     RowNormClipper(bound=1.0),
    ...     PrivateLinearRegression(epsilon=1.0, bounds=(1.0, 1.0), clip=True, random_state=0),
    ... )
    """

    def __init__(self, bound: float = 1.0) -> None:
        self.bound = bound

    def fit(self, X: Any, y: Any = None) -> RowNormClipper:
        """Check ``bound`` and the shape of ``X``; nothing is learnt from its values."""
        check_bound(self.bound, "bound")
        try:
            validate_data(self, X, dtype=np.float64)
        except ValueError as err:
            raise _as_dpreg_error(err) from None
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Rows of ``X`` clipped to norm ``bound`` (float64)."""
        try:
            X = validate_data(self, X, dtype=np.float64, reset=False)
        except ValueError as err:
            raise _as_dpreg_error(err) from None
        return clip_rows(X, self.bound)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.requires_fit = False  # stateless: transform needs nothing from fit
        return tags


class PrivateLinearRegression(RegressorMixin, BaseEstimator):
    """Differentially private linear regression on user-supplied bounds.

    The training rows must satisfy ``||x_i||_2 <= bounds[0]`` and
    ``|y_i| <= bounds[1]``: :meth:`fit` refuses rows that break them (a
    violated bound voids the guarantee) unless ``clip=True``, which clips
    them first.  Bounds are never taken from the data; see the module
    docstring for choosing them.  Predictions are ``X @ coef_`` (no
    intercept: append a constant column within the bound if you need one).

    Parameters
    ----------
    algorithm : str, default="adassp"
        Any name of :data:`dpreg.algorithms.ALGORITHMS`.  Non-private
        baselines (``ols``, ``ridge``, ``trivial``) fit with a
        :class:`NonPrivateWarning`.
    epsilon, delta : float
        Privacy budget of the whole fit (keyword-only).
    bounds : (float, float), default=(1.0, 1.0)
        ``(B_X, B_Y)``.
    clip : bool, default=False
        Clip rows to norm ``B_X`` (:func:`clip_rows`) and targets to
        ``[-B_Y, B_Y]`` instead of refusing them.
    rho : float, default=0.05
        AdaSSP failure probability (Wang 2018, Algorithm 2).
    xtx_offset : float, default=1.0
        ``c`` in ``A = X^T X + c I`` (Wang's code: 1; 0 for textbook forms).
    params : dict, optional
        Hyperparameters of the algorithm overriding its registry defaults.
    random_state : None, int, SeedSequence, BitGenerator or Generator
        Normalised once per :meth:`fit` by :func:`dpreg.seeding.as_generator`
        (SPEC 7); an int gives the same model on every fit.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features_in_,)
    intercept_ : float
        Always 0.0 (the model has no intercept term).
    lambda_ : float
        The ridge parameter used (NaN where the algorithm has none).
    releases_ : list of dpreg.privacy.mechanisms.Release
        What the fit released, with sensitivities and noise scales (the
        privacy ledger of this fit; empty for a non-private algorithm).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` had string column names.

    References
    ----------
    Wang, Y.-X. (2018). Revisiting differentially private linear regression:
    optimal and adaptive prediction & estimation in unbounded domain. UAI.
    Kalaja, E. (2020). Adaptive algorithm in differential privacy:
    comparative analysis of pre-processing methods. MSc thesis, University
    of Helsinki.

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
        clip: bool = False,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
        params: Mapping[str, Any] | None = None,
        random_state: Any = None,
    ) -> None:
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.clip = clip
        self.rho = rho
        self.xtx_offset = xtx_offset
        self.params = params
        self.random_state = random_state

    def _checked_params(self) -> tuple[Any, float, float, float, float, float, float, dict]:
        """Every parameter checked (one DPRegError naming it), before data is read."""
        alg = get_algorithm(self.algorithm)
        eps = check_epsilon(self.epsilon)
        dlt = check_delta(self.delta)
        if not isinstance(self.bounds, tuple | list) or len(self.bounds) != 2:
            raise DPRegError(f"bounds must be a pair (B_X, B_Y), got {self.bounds!r}")
        bx = check_bound(self.bounds[0], "bounds[0] (B_X)")
        by = check_bound(self.bounds[1], "bounds[1] (B_Y)")
        rho = _real(self.rho, "rho", "a number in (0, 1)", lambda v: 0.0 < v < 1.0)
        offset = _real(
            self.xtx_offset, "xtx_offset", "a finite number >= 0", lambda v: 0.0 <= v < math.inf
        )
        if not isinstance(self.clip, bool | np.bool_):
            raise DPRegError(f"clip must be True or False, got {self.clip!r}")
        params = dict(self.params or {})
        alg.resolve_params(params)  # unknown hyperparameters are named here
        return alg, eps, dlt, bx, by, rho, offset, params

    def fit(self, X: Any, y: Any) -> PrivateLinearRegression:
        """Fit on rows that respect ``bounds``; raises before any release otherwise.

        A fit that returns no estimate (a singular noisy system, a failed
        safety test) raises :class:`DPRegError` after its noise was drawn:
        refitting is a new release that spends its own ``(epsilon, delta)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            At least one row; finite values.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        alg, eps, dlt, bx, by, rho, offset, params = self._checked_params()
        try:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        except ValueError as err:
            raise _as_dpreg_error(err) from None
        if self.clip:
            X = clip_rows(X, bx)
            y = np.clip(y, -by, by)
        stats = SuffStats.from_arrays(X, y, bound_x=bx, bound_y=by)
        # the releases first: a calibration that fails (e.g. epsilon too small)
        # stops before any noise is drawn
        releases = alg.releases(
            epsilon=eps,
            delta=dlt,
            d=stats.d,
            bound_x=bx,
            bound_y=by,
            rho=rho,
            n=stats.n,
            params=params,
        )
        if not alg.private:
            warnings.warn(
                f"algorithm {self.algorithm!r} is not private: it adds no noise, so the "
                "model reveals its training data; epsilon and delta are ignored",
                NonPrivateWarning,
                stacklevel=2,
            )
        res = alg.fit(
            stats,
            epsilon=eps,
            delta=dlt,
            rng=as_generator(self.random_state, "random_state"),
            size=1,
            rho=rho,
            xtx_offset=offset,
            params=params,
            rows=(X, y) if alg.needs_rows else None,
        )
        if res.failed[0]:
            raise DPRegError(
                f"{self.algorithm}: the fit returned no estimate (a singular or non-finite "
                "noisy system, or a failed safety test); a refit with another random_state "
                "spends another (epsilon, delta); a larger epsilon or more rows help"
            )
        self.coef_ = np.asarray(res.theta[0], dtype=np.float64)
        self.intercept_ = 0.0
        self.lambda_ = float(res.lam[0])
        self.releases_ = releases
        return self

    def predict(self, X: Any) -> np.ndarray:
        """``X @ coef_``; ``X`` must be finite with ``n_features_in_`` columns."""
        check_is_fitted(self)
        try:
            X = validate_data(self, X, dtype=np.float64, reset=False)
        except ValueError as err:
            raise _as_dpreg_error(err) from None
        return np.asarray(X @ self.coef_)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # noise is the point: on small or noisy data the fit may be poor
        tags.regressor_tags.poor_score = True
        return tags
