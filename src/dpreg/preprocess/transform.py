"""The fitted affine map of one variant on one fold (Kalaja 2020, Sections 3.3-3.4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dpreg._validation import DPRegError
from dpreg.preprocess.spec import VariantSpec
from dpreg.preprocess.stats import ScoreStats, SuffStats, check_rows_within_bounds
from dpreg.privacy.mechanisms import Release

__all__ = ["FittedTransform", "FoldData"]


def _safe_sd(sd: np.ndarray) -> np.ndarray:
    """Constant columns (sd = 0, or vanishing relative to float precision) get sd := 1."""
    return np.where(sd > 0, sd, 1.0)


def _safe_norm(Z: np.ndarray) -> np.ndarray:
    nrm = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    return np.where(nrm > 0, nrm, 1.0)


# --------------------------------------------------------------------------
# fitted transform
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class FittedTransform:
    """A variant fitted on one fold's statistics rows.

    Attributes hold every statistic taken from the data (listed in the
    ledger as non-private releases): clipping thresholds, column means and
    sds, the y centre and scale, ``x_max`` or ``y_max2``, and the shared
    evaluation scale ``(t_center, t_scale)``.
    """

    spec: VariantSpec
    clip_tau: np.ndarray | None
    x_mean: np.ndarray
    x_sd: np.ndarray
    y_center: float
    y_scale: float
    x_max: float
    y_max2: float
    t_center: float
    t_scale: float
    d_out: int = field(default=0)

    def _features(self, X: np.ndarray, *, clip: bool) -> np.ndarray:
        if clip and self.clip_tau is not None:
            X = np.minimum(X, self.clip_tau)
        Z = (X - self.x_mean) / self.x_sd
        if self.spec.has_intercept:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
        return Z

    def column_factors(self, x_max: float | None = None) -> np.ndarray:
        """Per output column, the ``maxnorm`` divisor's effect: ``1 / x_max``.

        With the thesis' intercept (Eq. 3.6) the ones column keeps factor 1.
        ``x_max`` defaults to the fitted one.
        """
        x = self.x_max if x_max is None else float(x_max)
        out = np.full(self.d_out, 1.0 / x)
        if self.spec.intercept_form == "thesis":
            out[-1] = 1.0
        return out

    def feature_norms(self, Z: np.ndarray) -> np.ndarray:
        """Row norms that ``x_max`` is the maximum of: all columns of ``Z``, except
        the ones column of the thesis' intercept, which is not divided by ``x_max``."""
        if self.spec.intercept_form == "thesis":
            Z = Z[:, :-1]
        return np.sqrt(np.einsum("ij,ij->i", Z, Z))

    def _map(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mapped rows and the per-row factor turning ``x' theta`` into scaled ``y``."""
        if self.spec.scale == "maxnorm":
            return Z * self.column_factors(), np.ones(Z.shape[0])
        nrm = _safe_norm(Z)
        Zn = Z / nrm[:, None]
        if self.spec.scale == "rownorm":
            return Zn, np.ones(Z.shape[0])
        return Zn, nrm * self.y_max2  # rownorm-y

    def transform_train(
        self, X: np.ndarray, y: np.ndarray, *, check: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Training rows mapped into the ball of radius ``spec.row_bound``; raises if a
        row breaks the bound (``|y| <= 1`` is checked too).

        ``check=False`` only where the rows go straight into
        :meth:`SuffStats.from_arrays`, which runs the same check.
        """
        Z = self._features(X, clip=True)
        Xm, factor = self._map(Z)
        ym = (y - self.y_center) / self.y_scale / factor
        if check:
            check_rows_within_bounds(Xm, ym, bound_x=self.spec.row_bound, bound_y=1.0)
        return Xm, ym

    def transform_test(
        self, X: np.ndarray, y: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Test rows as ``(U, r, t)`` for :class:`~dpreg.preprocess.stats.ScoreStats`.

        The prediction of ``theta`` in the shared target scale
        ``t = (y - t_center) / t_scale`` is ``o + U theta`` with the constant
        ``o = (y_center - t_center) / t_scale``; ``r = t - o``.
        """
        Z = self._features(X, clip=self.spec.clip_test)
        Xm, factor = self._map(Z)
        U = Xm * (factor * (self.y_scale / self.t_scale))[:, None]
        t = (y - self.t_center) / self.t_scale
        o = (self.y_center - self.t_center) / self.t_scale
        return U, t - o, t

    def predict(self, X: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """Predictions in the original units of ``y`` for raw rows ``X``; ``theta`` (R, d)."""
        Z = self._features(np.asarray(X, dtype=float), clip=self.spec.clip_test)
        Xm, factor = self._map(Z)
        return self.y_center + self.y_scale * (factor[:, None] * (Xm @ np.atleast_2d(theta).T)).T

    def unstandardize(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coefficients in raw units (Kalaja 2020, Eq. 3.7): ``y ~ b0 + x b``.

        Only defined for ``maxnorm`` (the other mappings are not affine in
        ``x``).  With clipping the formula applies to clipped ``x``.
        Returns ``(intercepts (R,), coefficients (R, d_raw))``.
        """
        if self.spec.scale != "maxnorm":
            raise DPRegError(
                f"unstandardised coefficients need scale 'maxnorm'; variant uses {self.spec.scale!r}"
            )
        theta = np.atleast_2d(theta)
        d_raw = self.x_mean.size
        coef = self.y_scale * theta[:, :d_raw] / (self.x_sd * self.x_max)
        b0 = self.y_center - coef @ self.x_mean
        if self.spec.has_intercept:
            b0 = b0 + self.y_scale * theta[:, d_raw] * self.column_factors()[d_raw]
        return b0, coef


@dataclass(frozen=True)
class FoldData:
    """Everything a fold's trials need: transform, training and test statistics.

    ``releases`` are the noisy releases the pre-processing itself made for
    these statistics (private-stats variants; empty otherwise) and
    ``released`` their released values by name (what the end-to-end audit
    observes).
    """

    fold: int
    transform: FittedTransform
    train: SuffStats
    test: ScoreStats
    releases: tuple[Release, ...] = ()
    released: Mapping[str, np.ndarray] | None = None
