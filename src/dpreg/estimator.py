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
``bounds_X=(lower, upper)`` and ``bounds_y=(lo, hi)`` (diffprivlib's form);
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
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpreg._validation import DPRegError, check_bound, check_delta, check_epsilon
from dpreg.algorithms import get_algorithm
from dpreg.algorithms.base import Algorithm
from dpreg.budget import BudgetAccountant, default_accountant
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
    huge = np.isinf(norms)
    if huge.any():  # finite rows whose squared norm overflows: scale before squaring
        m = np.abs(out[huge]).max(axis=1)
        r = out[huge] / m[:, None]
        norms[huge] = m * np.sqrt(np.einsum("ij,ij->i", r, r))
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


def _finite_reals(value: object, name: str) -> np.ndarray:
    """``value`` as a float array of finite reals (a scalar or 1-D), or one DPRegError."""
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - any object numpy cannot read is the user's value
        arr = np.asarray(object())
    if arr.dtype.kind not in "iuf" or arr.ndim > 1 or arr.size == 0:
        raise DPRegError(
            f"{name} must be a finite real number or a 1-D array of them, got {value!r}"
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise DPRegError(f"{name} must be finite (no NaN or inf), got {value!r}")
    return arr


def _pair(value: object, name: str, form: str) -> tuple[Any, Any]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise DPRegError(f"{name} must be a pair {form}, got {value!r}")
    return value[0], value[1]


def _checked_box(
    bounds: object, bounds_X: object, bounds_y: object
) -> tuple[np.ndarray, np.ndarray, float, float] | None:
    """Per-feature bounds checked (shapes known later), or None for norm bounds."""
    if bounds_X is None and bounds_y is None:
        return None
    if bounds is not None:
        raise DPRegError(
            "give either norm bounds (bounds=(B_X, B_Y)) or per-feature bounds "
            "(bounds_X=(lower, upper) with bounds_y=(lo, hi)), not both; got "
            f"bounds={bounds!r}, bounds_X={bounds_X!r}, bounds_y={bounds_y!r}"
        )
    if bounds_X is None or bounds_y is None:
        missing, given = ("bounds_y", "bounds_X") if bounds_y is None else ("bounds_X", "bounds_y")
        raise DPRegError(
            f"{given} needs {missing}: per-feature bounds are given for X "
            "(bounds_X=(lower, upper)) and y (bounds_y=(lo, hi)) together"
        )
    lower_v, upper_v = _pair(bounds_X, "bounds_X", "(lower, upper)")
    lower = _finite_reals(lower_v, "bounds_X lower")
    upper = _finite_reals(upper_v, "bounds_X upper")
    if lower.ndim == upper.ndim == 1 and lower.shape != upper.shape:
        raise DPRegError(
            f"bounds_X lower and upper must have the same length, got {lower.size} and {upper.size}"
        )
    lb, ub = (np.atleast_1d(a) for a in np.broadcast_arrays(lower, upper))
    if np.any(lb > ub):
        j = int(np.argmax(lb > ub))
        raise DPRegError(
            f"bounds_X must have lower <= upper for every feature; feature {j} has "
            f"lower={lb[j]:g} > upper={ub[j]:g}"
        )
    lo_v, hi_v = _pair(bounds_y, "bounds_y", "(lo, hi)")
    lo = _finite_reals(lo_v, "bounds_y lo")
    hi = _finite_reals(hi_v, "bounds_y hi")
    if lo.ndim or hi.ndim:
        raise DPRegError(f"bounds_y must be a pair of numbers (lo, hi), got {bounds_y!r}")
    if lo > hi:
        raise DPRegError(f"bounds_y must have lo <= hi, got {bounds_y!r}")
    return lower, upper, float(lo), float(hi)


def _box_for(lower: np.ndarray, upper: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``lower`` and ``upper`` of shape ``(d,)``: scalars broadcast, arrays must have ``d``."""
    for arr, name in ((lower, "lower"), (upper, "upper")):
        if arr.ndim == 1 and arr.size != d:
            raise DPRegError(
                f"bounds_X {name} has {arr.size} values but X has {d} features; give one "
                "value per feature or a scalar for all"
            )
    return np.broadcast_to(lower, (d,)).copy(), np.broadcast_to(upper, (d,)).copy()


def box_norm_bounds(
    lower: np.ndarray, upper: np.ndarray, lo: float, hi: float
) -> tuple[float, float]:
    """The norm bounds ``(B_X, B_Y)`` of per-feature bounds.

    ``B_X = ||m||_2`` with ``m_j = max(|lower_j|, |upper_j|)`` and
    ``B_Y = max(|lo|, |hi|)``: the smallest balls centred at 0 that contain
    the box ``[lower, upper]`` and the interval ``[lo, hi]`` (every ``x`` in
    the box has ``|x_j| <= m_j``, and the corner ``x_j = +-m_j`` attains the
    bound).  The centre is 0, fixed in advance, never taken from the data.

    Raises :class:`DPRegError` naming ``bounds_X`` or ``bounds_y`` when a
    bound is 0 (every value fixed at 0) or overflows.
    """
    m = np.maximum(np.abs(np.asarray(lower, float)), np.abs(np.asarray(upper, float)))
    scale = float(m.max()) if m.size else 0.0
    # scaled so that squaring cannot overflow or underflow
    bx = scale * float(np.sqrt(np.sum((m / scale) ** 2))) if scale > 0 else 0.0
    by = max(abs(lo), abs(hi))
    if not (0 < bx < math.inf):
        raise DPRegError(
            f"bounds_X give the norm bound B_X = ||max(|lower|, |upper|)||_2 = {bx:g}; it "
            "must be a finite number > 0 (a box of zeros holds no information)"
        )
    if not by > 0:
        raise DPRegError(
            f"bounds_y give B_Y = max(|lo|, |hi|) = {by:g}; it must be > 0 (lo < hi or "
            "nonzero values)"
        )
    return bx, by


def _check_sensitivities(bx: float, by: float, source: str) -> None:
    """Refuse norm bounds whose sensitivities ``B_X^2`` or ``B_X B_Y`` leave double precision.

    The statistics' sensitivities must be finite and > 0 for any noise to be
    calibrated; outside that range the calibration would fail later with a
    message about a sensitivity the user never set.
    """
    for value, what in ((bx * bx, "B_X^2"), (bx * by, "B_X B_Y")):
        if not (np.finfo(float).tiny <= value < math.inf):
            raise DPRegError(
                f"{source} give B_X = {bx:g} and B_Y = {by:g}, so the sensitivity {what} = "
                f"{value:g} is outside the range of double precision (it must be finite and "
                "> 2.2e-308); rescale the data and the bounds by a fixed, public factor"
            )


def _check_inside_box(
    X: np.ndarray, y: np.ndarray, lower: np.ndarray, upper: np.ndarray, lo: float, hi: float
) -> None:
    """Raise naming ``bounds_X``/``bounds_y`` if a value lies outside its bounds."""
    outside = (X < lower) | (X > upper)
    if outside.any():
        i, j = (int(k) for k in np.argwhere(outside)[0])
        raise DPRegError(
            f"training row {i}, feature {j} is {float(X[i, j])!r}, outside "
            f"bounds_X=[{lower[j]:g}, {upper[j]:g}] ({int(outside.sum())} value(s) outside); "
            "values must lie inside the bounds before any private release (pass clip=True "
            "to clip them, or widen bounds_X from knowledge independent of the data)"
        )
    out_y = (y < lo) | (y > hi)
    if out_y.any():
        i = int(np.argmax(out_y))
        raise DPRegError(
            f"training row {i} has y = {float(y[i])!r}, outside bounds_y=[{lo:g}, {hi:g}] "
            f"({int(out_y.sum())} value(s) outside); pass clip=True to clip them"
        )


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
        Per-feature bounds, as in diffprivlib: ``lower`` and ``upper`` are
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
        if res.failed[0]:
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
