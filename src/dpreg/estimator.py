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

Per-feature bounds: instead of ``bounds=(B_X, B_Y)``, give
``bounds_X=(lower, upper)`` and ``bounds_y=(lo, hi)`` (IBM's DP library's form);
they are translated to the norm bounds of the smallest balls centred at 0
that hold the box, ``B_X = ||max(|lower|, |upper|)||_2`` and
``B_Y = max(|lo|, |hi|)`` (:func:`box_norm_bounds`), and ``clip=True`` clips
each feature to its range.  An intercept (``fit_intercept=True``) is the
coefficient of a public constant column ``c``, which widens ``B_X`` to
``sqrt(B_X^2 + c^2)``.

Several fits of the same rows compose: a :class:`dpreg.BudgetAccountant`
(``accountant=``, or a ``with`` block) tallies them and refuses, before any
noise is drawn, the fit that would exceed its total budget
(:mod:`dpreg.budget`).

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
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpreg._validation import DPRegError, check_bound, check_delta, check_epsilon
from dpreg.algorithms import get_algorithm
from dpreg.algorithms.base import Algorithm
from dpreg.bounds import (
    _as_dpreg_error,
    _box_for,
    _check_inside_box,
    _check_sensitivities,
    _checked_box,
    _real,
    box_norm_bounds,
    clip_rows,
)
from dpreg.budget import BudgetAccountant, default_accountant
from dpreg.fitguard import numeric_guard
from dpreg.preprocess.stats import SuffStats, check_rows_within_bounds
from dpreg.seeding import as_generator

__all__ = [
    "NonPrivateWarning",
    "PrivateLinearRegression",
    "RowNormClipper",
    "box_norm_bounds",
    "clip_rows",
]


class NonPrivateWarning(UserWarning):
    """A non-private algorithm (a baseline) was fitted: nothing about it is private."""


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


class _Checked(NamedTuple):
    """The checked parameters of one fit."""

    alg: Algorithm
    eps: float
    dlt: float
    bx: float  # NaN with per-feature bounds (known once the width of X is)
    by: float
    box: tuple[np.ndarray, np.ndarray, float, float] | None
    scaling: float | None
    rho: float
    offset: float
    params: dict


class PrivateLinearRegression(RegressorMixin, BaseEstimator):
    """Differentially private linear regression on user-supplied bounds.

    The training rows must respect the bounds -- norm bounds
    ``||x_i||_2 <= B_X``, ``|y_i| <= B_Y`` (``bounds``), or per-feature
    bounds ``lower_j <= x_ij <= upper_j``, ``lo <= y_i <= hi``
    (``bounds_X``, ``bounds_y``): :meth:`fit` refuses rows that break them
    (a violated bound voids the guarantee) unless ``clip=True``, which clips
    them first.  Bounds are never taken from the data; see the module
    docstring for choosing them.  Predictions are ``X @ coef_ + intercept_``.

    Parameters
    ----------
    algorithm : str, default="adassp"
        Any name of :data:`dpreg.algorithms.ALGORITHMS`.  Non-private
        baselines (``ols``, ``ridge``, ``trivial``) fit with a
        :class:`NonPrivateWarning`.
    epsilon, delta : float
        Privacy budget of the whole fit (keyword-only).
    bounds : (float, float), optional
        Norm bounds ``(B_X, B_Y)``.  When neither ``bounds`` nor
        ``bounds_X``/``bounds_y`` is given, ``(1.0, 1.0)``.
    bounds_X : (lower, upper), optional
        Per-feature bounds, as in IBM's DP library: ``lower`` and ``upper`` are
        scalars (the same for every feature) or arrays of shape
        ``(n_features,)``, finite, with ``lower <= upper``.  The algorithms
        need a norm bound; the box is inside the ball of radius
        ``B_X = ||m||_2`` with ``m_j = max(|lower_j|, |upper_j|)``, since
        ``|x_ij| <= m_j`` for every ``x_i`` in the box gives
        ``||x_i||_2^2 = sum_j x_ij^2 <= sum_j m_j^2``; the bound is attained at
        the box's corner of largest norm, so no smaller ball contains it.
        The ball is centred at 0, not at a point taken from the data.
        Requires ``bounds_y``; refused together with ``bounds``.
    bounds_y : (lo, hi), optional
        Target bounds, finite, ``lo <= hi``; ``B_Y = max(|lo|, |hi|)`` (the
        same argument in one dimension).  Requires ``bounds_X``.
    clip : bool, default=False
        Clip instead of refusing: with ``bounds``, rows to norm ``B_X``
        (:func:`clip_rows`) and targets to ``[-B_Y, B_Y]``; with
        ``bounds_X``/``bounds_y``, each feature to ``[lower_j, upper_j]`` and
        targets to ``[lo, hi]``.
    fit_intercept : bool, default=False
        Fit ``y ~ X @ coef_ + intercept_``.  The intercept is fitted privately
        as the coefficient of an extra column of constant value ``c``
        (``intercept_scaling``), appended to every row after the bounds are
        checked (or the rows clipped): the augmented rows satisfy
        ``||(x_i, c)||_2 = sqrt(||x_i||^2 + c^2) <= sqrt(B_X^2 + c^2)``, so the
        algorithm runs with ``B_X`` widened to ``sqrt(B_X^2 + c^2)`` (its
        sensitivities, e.g. ``B_X^2`` for ``X^T X``, grow accordingly) and
        ``d + 1`` features.  The guarantee is unchanged: ``c`` is public and
        the same for every row, so adding or removing one row changes the
        augmented statistics by no more than the widened bound allows.
        ``intercept_ = c * theta_c``.  As with scikit-learn's
        ``intercept_scaling``, the intercept is regularised like the other
        coefficients (by ``xtx_offset`` and AdaSSP's ridge): a larger ``c``
        shrinks it less but widens the bound more.  Default False (no
        intercept, the behaviour and results of earlier versions).
    intercept_scaling : float, optional
        ``c > 0``, the constant column's value; default ``B_X`` (the widened
        bound is then ``sqrt(2) B_X``).  Used only with ``fit_intercept=True``.
    rho : float, default=0.05
        AdaSSP failure probability (Wang 2018, Algorithm 2).
    xtx_offset : float, default=1.0
        ``c`` in ``A = X^T X + c I`` (Wang's code: 1; 0 for textbook forms).
    params : dict, optional
        Hyperparameters of the algorithm overriding its registry defaults.
    accountant : BudgetAccountant, optional
        Charged with every fit before any noise is drawn; a fit that would
        exceed its budget raises :class:`~dpreg.budget.BudgetExceededError`
        and fits nothing.  Default: the accountant of the innermost enclosing
        ``with accountant:`` block, if any; otherwise no tally.  Shared, not
        copied, by :func:`~sklearn.base.clone`, so every fit of a grid search
        is charged to it.
    random_state : None, int, SeedSequence, BitGenerator or Generator
        Normalised once per :meth:`fit` by :func:`dpreg.seeding.as_generator`
        (SPEC 7); an int gives the same model on every fit.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        The private intercept with ``fit_intercept=True``; 0.0 otherwise.
    lambda_ : float
        The ridge parameter used (NaN where the algorithm has none).
    norm_bounds_ : (float, float)
        The ``(B_X, B_Y)`` the algorithm ran with: from ``bounds`` or
        translated from ``bounds_X``/``bounds_y``, with ``B_X`` widened by the
        intercept column.
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
    Holohan, N. et al. (2019). Diffprivlib: the IBM differential privacy
    library. arXiv:1907.02444 (``bounds_X``, ``bounds_y``, ``accountant``).

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

    Per-feature bounds and an intercept: the box ``[0, 1]^3`` lies in the
    ball of radius ``sqrt(3)``, widened to ``sqrt(3 + 3) = sqrt(6)`` by the
    constant column ``c = sqrt(3)``:

    >>> model = PrivateLinearRegression(
    ...     epsilon=1.0, bounds_X=(0.0, 1.0), bounds_y=(-2.0, 2.0), fit_intercept=True,
    ...     random_state=0,
    ... ).fit((X + 1) / 2, y)
    >>> [round(b, 6) for b in model.norm_bounds_]
    [2.44949, 2.0]
    """

    def __init__(
        self,
        algorithm: str = "adassp",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        bounds: tuple[float, float] | None = None,
        bounds_X: tuple[Any, Any] | None = None,
        bounds_y: tuple[float, float] | None = None,
        clip: bool = False,
        fit_intercept: bool = False,
        intercept_scaling: float | None = None,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
        params: Mapping[str, Any] | None = None,
        accountant: BudgetAccountant | None = None,
        random_state: Any = None,
    ) -> None:
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.clip = clip
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.rho = rho
        self.xtx_offset = xtx_offset
        self.params = params
        self.accountant = accountant
        self.random_state = random_state

    def _checked_params(self) -> _Checked:
        """Every parameter checked (one DPRegError naming it), before data is read."""
        alg = get_algorithm(self.algorithm)
        eps = check_epsilon(self.epsilon)
        dlt = check_delta(self.delta)
        box = _checked_box(self.bounds, self.bounds_X, self.bounds_y)
        if box is None:
            bounds = (1.0, 1.0) if self.bounds is None else self.bounds
            if not isinstance(bounds, tuple | list) or len(bounds) != 2:
                raise DPRegError(f"bounds must be a pair (B_X, B_Y), got {self.bounds!r}")
            bx = check_bound(bounds[0], "bounds[0] (B_X)")
            by = check_bound(bounds[1], "bounds[1] (B_Y)")
        else:
            bx = by = math.nan  # known once the number of features is
        rho = _real(self.rho, "rho", "a number in (0, 1)", lambda v: 0.0 < v < 1.0)
        offset = _real(
            self.xtx_offset, "xtx_offset", "a finite number >= 0", lambda v: 0.0 <= v < math.inf
        )
        if not isinstance(self.clip, bool | np.bool_):
            raise DPRegError(f"clip must be True or False, got {self.clip!r}")
        if not isinstance(self.fit_intercept, bool | np.bool_):
            raise DPRegError(f"fit_intercept must be True or False, got {self.fit_intercept!r}")
        scaling = None
        if self.intercept_scaling is not None:
            scaling = check_bound(self.intercept_scaling, "intercept_scaling")
        if self.accountant is not None and not isinstance(self.accountant, BudgetAccountant):
            raise DPRegError(
                f"accountant must be a dpreg.BudgetAccountant or None, got {self.accountant!r}"
            )
        params = dict(self.params or {})
        alg.resolve_params(params)  # unknown hyperparameters are named here
        return _Checked(alg, eps, dlt, bx, by, box, scaling, rho, offset, params)

    def fit(self, X: Any, y: Any) -> PrivateLinearRegression:
        """Fit on rows that respect the bounds; raises before any release otherwise.

        With an accountant (``accountant=`` or an enclosing ``with`` block)
        the fit is charged after the rows are checked and the releases
        calibrated, before any noise is drawn; a fit that would exceed the
        budget raises :class:`~dpreg.budget.BudgetExceededError` and
        changes nothing.

        A fit that returns no estimate (a singular noisy system, a failed
        safety test) raises :class:`DPRegError` after its noise was drawn:
        refitting is a new release that spends its own ``(epsilon, delta)``
        (and is charged again).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            At least one row; finite values.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        chk = self._checked_params()
        alg, eps, dlt = chk.alg, chk.eps, chk.dlt
        try:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        except ValueError as err:
            raise _as_dpreg_error(err) from None
        bx, by = chk.bx, chk.by
        if chk.box is None:
            if self.clip:
                X = clip_rows(X, bx)
                y = np.clip(y, -by, by)
        else:
            lower, upper = _box_for(chk.box[0], chk.box[1], X.shape[1])
            lo, hi = chk.box[2], chk.box[3]
            bx, by = box_norm_bounds(lower, upper, lo, hi)
            if self.clip:
                X = np.clip(X, lower, upper)
                y = np.clip(y, lo, hi)
            else:
                _check_inside_box(X, y, lower, upper, lo, hi)
        source = "bounds" if chk.box is None else "bounds_X and bounds_y"
        if self.fit_intercept:
            c = bx if chk.scaling is None else chk.scaling
            check_rows_within_bounds(X, y, bound_x=bx, bound_y=by)  # named by the user's B_X
            bx = math.hypot(bx, c)
            source += f" with the intercept column c={c:g}"
            _check_sensitivities(bx, by, source)
            X = np.hstack([X, np.full((X.shape[0], 1), c)])
        _check_sensitivities(bx, by, source)
        stats = SuffStats.from_arrays(X, y, bound_x=bx, bound_y=by)
        # the releases first: a calibration that fails (e.g. epsilon too small)
        # stops before any noise is drawn
        with numeric_guard(self.algorithm, eps, dlt):
            releases = alg.releases(
                epsilon=eps,
                delta=dlt,
                d=stats.d,
                bound_x=bx,
                bound_y=by,
                rho=chk.rho,
                n=stats.n,
                params=chk.params,
            )
        rng = as_generator(self.random_state, "random_state")  # checked before any charge
        accountant = self.accountant if self.accountant is not None else default_accountant()
        if accountant is not None:
            label = (
                f"{type(self).__name__}(algorithm={self.algorithm!r}, epsilon={eps:g}, "
                f"delta={dlt:g}) on {stats.n} rows"
            )
            if not alg.private:
                label += " (not private)"
            accountant.charge(releases, label, private=alg.private)
        if not alg.private:
            warnings.warn(
                f"algorithm {self.algorithm!r} is not private: it adds no noise, so the "
                "model reveals its training data; epsilon and delta are ignored",
                NonPrivateWarning,
                stacklevel=2,
            )
        with numeric_guard(self.algorithm, eps, dlt):
            res = alg.fit(
                stats,
                epsilon=eps,
                delta=dlt,
                rng=rng,
                size=1,
                rho=chk.rho,
                xtx_offset=chk.offset,
                params=chk.params,
                rows=(X, y) if alg.needs_rows else None,
            )
        if res.failed[0] or not np.isfinite(res.theta[0]).all():
            raise DPRegError(
                f"{self.algorithm}: the fit returned no estimate (a singular or non-finite "
                "noisy system, or a failed safety test); a refit with another random_state "
                "spends another (epsilon, delta); a larger epsilon or more rows help"
            )
        theta = np.asarray(res.theta[0], dtype=np.float64)
        if self.fit_intercept:
            self.coef_ = theta[:-1].copy()
            self.intercept_ = float(theta[-1] * c)
        else:
            self.coef_ = theta
            self.intercept_ = 0.0
        self.lambda_ = float(res.lam[0])
        self.norm_bounds_ = (bx, by)
        self.releases_ = releases
        return self

    def predict(self, X: Any) -> np.ndarray:
        """``X @ coef_ + intercept_``; ``X`` must be finite with ``n_features_in_`` columns."""
        check_is_fitted(self)
        try:
            X = validate_data(self, X, dtype=np.float64, reset=False)
        except ValueError as err:
            raise _as_dpreg_error(err) from None
        return np.asarray(X @ self.coef_ + self.intercept_)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # noise is the point: on small or noisy data the fit may be poor
        tags.regressor_tags.poor_score = True
        return tags
