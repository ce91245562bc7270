"""Simultaneous bands over epsilon for a curve of ratios, from its bootstrap replicates.

A curve is the ratio r_e = stat(a) / stat(b) of two cells at each epsilon e
of a grid.  Its per-point intervals (:func:`dpreg.inference.intervals.paired_ratios`,
the ``ratio_lo``/``ratio_hi`` of ``claims.csv``) each cover their own r_e with
the nominal probability; the whole curve is covered much less often (ten
correlated points at 95% each cover all ten in roughly 70-80% of samples).
The band here covers the whole curve at once with probability about 1 - alpha
(the ``band_low``/``band_high`` columns of ``claims.csv`` and the shaded region
of the ratio figures).  It is description, like the per-point intervals: the
decision of a claim is its pooled effect (:mod:`dpreg.inference.pooled`).

The band: max abs t (studentised sup-t)
---------------------------------------
On the log scale, with estimates theta_e = log r_e and bootstrap replicates
theta*_be (the same replicate matrix, B x points, the per-point intervals
come from), the studentised deviation of replicate b at point e is

    t_be = (theta*_be - theta_e) / s_e,

and the band is theta_e +- c s_e, where c is the (1 - alpha') quantile over
the replicates of ``max_e abs(t_be)`` (Davison & Hinkley 1997, ch. 5; the sup-t band
of Montiel Olea & Plagborg-Moller 2019).  Two choices make the band extend
the per-point intervals rather than sit beside them:

- s_e is taken per side from the point's own percentile interval
  [lo_e, hi_e]: s_e = log hi_e - theta_e above and theta_e - log lo_e below.
  For a normal bootstrap distribution this is z * se_e (so the studentisation
  is the textbook one up to a constant common to all points); for a skewed
  one it keeps the percentile interval's asymmetry.  Then ``abs(t_be) <= 1`` exactly
  when replicate b lies in the point's interval, and the band at point e is
  [theta_e - c (theta_e - log lo_e), theta_e + c (log hi_e - theta_e)].
- alpha' is the tail mass of the per-point intervals (the expanded alpha of
  :func:`dpreg.inference.bootstrap.expanded_alpha`, for the same reason: few
  top-level units).  The sup over points is at least any one point's ``abs(t)``, so
  c >= 1 up to the interpolation of the quantile; c is floored at 1, hence
  the band contains every per-point interval.  With one point there is no
  multiplicity and the band is that point's interval.

Coverage (``tests/inference/test_bands.py``: 300 curves of 10 points with
AR(1) correlation 0.7, true ratio 1, 400 replicates): 0.94 of the curves are
covered whole by the 95% band with 200 resampled units, 0.93 with 100 and
0.89 with 40, against 0.67-0.70 for the per-point intervals; the bootstrap
under-estimates the tail of the max with few units (the design bootstrap's
per-point intervals err wide, which partly offsets it with K = 10 folds); the
band is description, not a test.

A replicate that is not finite at some point is left out of that point's
deviation (the sup runs over the points where it is finite); a point whose
interval is NaN has a NaN band and takes no part in the sup.  A point whose
estimate lies on or outside its own interval on one side (possible for a
median) has that side's band at the interval's limit.

References
----------
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their
Application*. Cambridge University Press, chapter 5 (confidence intervals;
studentised bootstrap).
Montiel Olea, J. L. & Plagborg-Moller, M. (2019). Simultaneous confidence
bands: theory, implementation, and an application to SVARs. *Journal of
Applied Econometrics* 34(1), 1-17.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpreg.inference.bootstrap import _percentile_interval, check_level, expanded_alpha
from dpreg.inference.intervals import PairedDesigns

__all__ = ["CURVE_BAND_COLUMNS", "Band", "curve_bands", "simultaneous_band"]


class Band(NamedTuple):
    """A curve's per-point intervals and its simultaneous band (arrays over the points)."""

    low: np.ndarray
    high: np.ndarray
    band_low: np.ndarray
    band_high: np.ndarray
    critical: float  # c, in units of the per-point half-width on the log scale


def simultaneous_band(ratio: np.ndarray, reps: np.ndarray, *, level: float, clusters: int) -> Band:
    """Per-point intervals and the simultaneous (level) band of a curve of ratios.

    Parameters
    ----------
    ratio : array (E,)
        The estimated ratios r_e (positive; a non-finite or non-positive one
        gives a NaN band at that point).
    reps : array (B, E)
        Bootstrap replicates of the ratios, one row per replicate (NaN where
        a replicate ratio is not finite), as
        :meth:`dpreg.inference.intervals.PairedDesigns.ratio_replicates` returns.
    level : float
        Coverage of the band (and of the per-point intervals), in (0, 1).
    clusters : int
        Top-level resampling units (folds): the per-point intervals are the
        expanded percentile intervals for this many units, and the band's
        quantile is taken at the same tail mass.

    Returns
    -------
    Band
        ``low``, ``high``: the per-point intervals (identical to
        :func:`dpreg.inference.bootstrap._percentile_interval`'s);
        ``band_low``, ``band_high``: the band; ``critical``: c (NaN when no
        point has a finite interval).
    """
    level = check_level(level)
    ratio = np.asarray(ratio, dtype=float)
    reps = np.asarray(reps, dtype=float)
    if reps.ndim != 2 or reps.shape[1] != ratio.shape[0]:
        raise ValueError(f"replicates of shape {reps.shape} do not match {ratio.shape[0]} points")
    lo, hi = _percentile_interval(reps, level, clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.log(ratio)
        log_lo, log_hi = np.log(lo), np.log(hi)
        log_reps = np.log(reps)
    ok = np.isfinite(theta) & np.isfinite(log_lo) & np.isfinite(log_hi)
    up = np.where(ok, np.maximum(log_hi - theta, 0.0), np.nan)
    down = np.where(ok, np.maximum(theta - log_lo, 0.0), np.nan)
    critical = _critical(theta, log_reps, up, down, ok, expanded_alpha(level, clusters))
    if ok.sum() == 1:
        critical = 1.0  # one point: no multiplicity, the band is the point's interval
    band_low = np.full(ratio.shape, np.nan)
    band_high = np.full(ratio.shape, np.nan)
    if critical == 1.0:  # the intervals themselves (no round trip through the log)
        band_low[ok], band_high[ok] = lo[ok], hi[ok]
    elif np.isfinite(critical):
        band_low[ok] = np.minimum(np.exp(theta[ok] - critical * down[ok]), lo[ok])
        band_high[ok] = np.maximum(np.exp(theta[ok] + critical * up[ok]), hi[ok])
    return Band(lo, hi, band_low, band_high, float(critical))


def _critical(theta, log_reps, up, down, ok, alpha: float) -> float:
    """c: the (1 - alpha) quantile of the replicates' max |t| over the points, >= 1."""
    if not ok.any():
        return float("nan")
    dev = log_reps[:, ok] - theta[ok]
    scale = np.where(dev >= 0, up[ok], down[ok])
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(dev) / scale
    # a side of zero width (the estimate on its interval's limit) takes no part
    t = np.where((scale > 0) & np.isfinite(t), t, np.nan)
    t = np.where(np.isnan(dev), np.nan, t)
    has = ~np.isnan(t).all(axis=1)
    if not has.any():
        return 1.0
    sup = np.nanmax(t[has], axis=1)
    return max(1.0, float(np.quantile(sup, 1.0 - alpha)))


def curve_bands(
    trials: pd.DataFrame,
    comparisons: Sequence[tuple[tuple[str, str], tuple[str, str]]],
    *,
    statistic: str,
    seed: int,
    level: float,
    resamples: int,
    median_cache: dict[tuple, tuple[float, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Paired per-point intervals and simultaneous bands of ratio curves (for the figures).

    Parameters
    ----------
    trials : pandas.DataFrame
        Trials of any number of datasets (the columns of
        :data:`dpreg.inference.bootstrap.BOOTSTRAP_TRIAL_COLUMNS`).
    comparisons : sequence of ((variant, algorithm), (variant, algorithm))
        Each curve a / b; a pair missing on a dataset is skipped there.
    statistic, seed, level, resamples
        As for :func:`dpreg.inference.intervals.paired_ratios` (a failed trial
        counts with its recorded error, the trivial predictor's, as in the
        summary tables and the claims).
    median_cache : dict, optional
        The replicate medians the summary computed from the same trials
        (:func:`dpreg.report.summary.summarise`'s ``median_cache``): reused,
        not recomputed.

    Returns
    -------
    pandas.DataFrame
        ``dataset, variant, algorithm, epsilon`` (of a), ``ratio, ratio_lo,
        ratio_hi`` (the paired per-point interval), ``band_low, band_high``.
    """
    rows = []
    cells = sorted({side for pair in comparisons for side in pair})
    for dataset, part in trials.groupby("dataset", observed=True, sort=True):
        designs = PairedDesigns(
            part, cells, seed=seed, resamples=resamples, median_cache=median_cache
        )
        eps = sorted(set(part["epsilon"].astype(float)))
        for a, b in comparisons:
            found = designs.ratio_replicates(a, b, eps, statistic=statistic)
            if found is None or not found[1]:
                continue
            boot, pairs, est_a, est_b, reps = found
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = est_a / est_b
            band = simultaneous_band(ratio, reps, level=level, clusters=boot.clusters)
            for j, (e, _, _) in enumerate(pairs):
                rows.append(
                    (str(dataset), a[0], a[1], e, ratio[j], band.low[j], band.high[j],
                     band.band_low[j], band.band_high[j])
                )  # fmt: skip
    return pd.DataFrame(rows, columns=CURVE_BAND_COLUMNS)


#: Columns of :func:`curve_bands`.
CURVE_BAND_COLUMNS = [
    "dataset", "variant", "algorithm", "epsilon",
    "ratio", "ratio_lo", "ratio_hi", "band_low", "band_high",
]  # fmt: skip
