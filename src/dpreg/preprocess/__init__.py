"""Pre-processing variants (SPEC section 4), fitted per cross-validation fold.

A variant is a frozen :class:`VariantSpec`.  For one fold it is *fitted*
on its statistics rows -- all rows (``stats: global``, Wang 2018) or the
training rows only (``stats: train``, Kalaja 2020 Section 4.2) -- into a
:class:`FittedTransform`, which maps training rows into the unit ball (and
checks that it did) and maps test rows so that predictions land in the
target scale shared by every variant of a dataset.

Steps, in order (Kalaja 2020, Sections 3.3-3.4):

1. clip each raw column from above at ``mean + c sd`` (Eq. 3.8; Honkela et
   al. 2018), training rows always, test rows when ``clip_test`` (Eq. 3.9);
   means and sds of step 4 are recomputed after clipping;
2. centre ``y`` (optional), then ``y <- y / y_max``, ``y_max = max |y|``;
3. standardise ``X`` column-wise (a constant column gets ``sd := 1``);
4. optionally append an intercept column of ones;
5. map to the unit ball: ``rownorm`` (Eq. 3.3, each row divided by its own
   norm), ``rownorm-y`` (Eq. 3.4, ``y_i`` also divided by ``||x_i||`` and
   rescaled by ``y_max2``) or ``maxnorm`` (Eq. 3.5, every row divided by the
   largest training row norm).

Modules: :mod:`~dpreg.preprocess.spec` (variant specification, row
sources), :mod:`~dpreg.preprocess.transform` (the fitted map),
:mod:`~dpreg.preprocess.folds` (per-fold fitting and statistics) and
:mod:`~dpreg.preprocess.private` (statistics released with noise).

Everything is computed in chunked passes over a :class:`RowSource`, so a
table larger than memory is handled by the same code: memory is
``O(chunk x d + K d^2)``.  Statistics used without noise (means, sds,
maxima, thresholds) are the thesis' option 2 and are listed as non-private
releases in the ledger.
"""

from dpreg.preprocess.folds import fold_rows, fold_statistics
from dpreg.preprocess.private import algorithm_budget, private_fold_data, private_stat_releases
from dpreg.preprocess.private_runs import private_fold_data_runs
from dpreg.preprocess.ranges import PublicRanges, RawMoments, raw_fold_moments
from dpreg.preprocess.spec import (
    INTERCEPTS,
    SCALES,
    STATS_SOURCES,
    VARIANT_KEYS,
    ArraySource,
    PrivateStatsSpec,
    RowSource,
    VariantSpec,
    nonprivate_statistics,
)
from dpreg.preprocess.transform import FittedTransform, FoldData

__all__ = [
    "INTERCEPTS",
    "SCALES",
    "STATS_SOURCES",
    "VARIANT_KEYS",
    "ArraySource",
    "FittedTransform",
    "FoldData",
    "PrivateStatsSpec",
    "PublicRanges",
    "RawMoments",
    "RowSource",
    "VariantSpec",
    "fold_rows",
    "fold_statistics",
    "nonprivate_statistics",
    "algorithm_budget",
    "private_fold_data",
    "private_fold_data_runs",
    "private_stat_releases",
    "raw_fold_moments",
]
