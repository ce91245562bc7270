"""Bootstrap intervals of every cell, and paired ratios of two cells.

:func:`bootstrap_intervals` gives the interval of the mean and of the median
test MSE of every (dataset, variant, algorithm, epsilon) of a trial table;
:func:`paired_ratios` (with :class:`PairedDesigns`, the designs of several
cell pairs resampled once per dataset) the interval of the ratio of a
statistic of two cells, paired by (partition, fold, repeat).  The resampling design and
its reasons are in :mod:`dpreg.inference.bootstrap`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.inference.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    STATISTICS,
    DesignBootstrap,
    _percentile_interval,
    _sorted_codes,
    cell_codes,
    check_level,
    check_resamples,
)
from dpreg.io.tables import GROUP_KEYS, INTERVAL_COLUMNS

__all__ = ["PairedDesigns", "bootstrap_intervals", "paired_ratios"]


# --------------------------------------------------------------------------
# intervals of every cell
# --------------------------------------------------------------------------
def bootstrap_intervals(
    trials: pd.DataFrame,
    *,
    seed: int,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    median_cache: dict[tuple, tuple[float, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Confidence intervals for the mean and median test MSE of every cell.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trial table (any number of datasets) with the columns
        ``dataset, variant, algorithm, epsilon, partition, fold, repeat, mse, failed``
        (without ``partition``: one partition).
    seed : int
        Root seed of the configuration (the replicates derive from it).
    level : float
        Confidence level in (0, 1).
    resamples : int
        Bootstrap replicates per dataset.
    median_cache : dict, optional
        Shared by the designs (see :class:`DesignBootstrap`): filled here, it
        lets later bootstraps of the same trials reuse the replicate medians.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, variant, algorithm, epsilon`` and
        :data:`dpreg.io.tables.INTERVAL_COLUMNS`, sorted by the keys.  A
        failed trial counts with its recorded error (the trivial
        predictor's); an interval is NaN only when no trial of the cell has a
        finite error.
    """
    level = check_level(level)
    resamples = check_resamples(resamples)
    parts = []
    for _, part in _by_repeat_count(trials):
        boot = DesignBootstrap(part, seed=seed, resamples=resamples, median_cache=median_cache)
        out = boot.cells.copy()
        for stat in STATISTICS:
            _, reps = boot.statistic(stat)
            out[f"mse_{stat}_lo"], out[f"mse_{stat}_hi"] = _percentile_interval(
                reps, level, boot.clusters
            )
        parts.append(out)
    if not parts:
        return pd.DataFrame(columns=[*GROUP_KEYS, *INTERVAL_COLUMNS])
    out = pd.concat(parts, ignore_index=True).sort_values(GROUP_KEYS, kind="mergesort")
    return out[[*GROUP_KEYS, *INTERVAL_COLUMNS]].reset_index(drop=True)


def _by_repeat_count(trials: pd.DataFrame):
    """Trials split by (dataset, number of repeats of the cell), in sorted order.

    An experiment may run some algorithms with more noise repeats than
    others; each design is bootstrapped with its own (K, R).  A cell's
    number of repeats is its largest repeat index + 1; the parts keep the
    trials' row order.
    """
    if trials.empty:
        return
    cell, cells = cell_codes(trials)
    top = np.full(len(cells), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, cell, trials["repeat"].to_numpy(dtype=np.int64))
    dataset = pd.factorize(cells["dataset"], sort=True)[0]  # cells are sorted by dataset
    shift = top - top.min()
    groups = dataset * (int(shift.max()) + 1) + shift  # (dataset, repeats) in sorted order
    row_group = groups[cell]
    for g in np.unique(groups):
        yield g, trials.loc[row_group == g]


def paired_ratios(
    trials: pd.DataFrame,
    a: tuple[str, str],
    b: tuple[str, str],
    epsilons: Sequence[float],
    *,
    statistic: str,
    seed: int,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    cache: dict[int, DesignBootstrap] | None = None,
    also: Sequence[tuple[str, str]] | None = None,
) -> pd.DataFrame:
    """Ratio stat(a) / stat(b) per epsilon, bootstrapped with (partition, fold, repeat) pairing.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trials of ONE dataset holding both cells.
    a, b : (variant, algorithm)
        The two cells compared.
    epsilons : sequence of float
        Epsilons to compare (those missing for either cell are skipped).
    statistic : {"mean", "median"}
    seed, level, resamples
        As for :func:`bootstrap_intervals`.
    cache : dict, optional
        Designs already built from the same ``trials``, keyed by the shared
        repeat count; filled as designs are built (several comparisons on
        one dataset then resample and sort each cell once).
    also : sequence of (variant, algorithm), optional
        Further cells to put into a design that is built (for later
        comparisons reusing ``cache``).

    Returns
    -------
    pandas.DataFrame
        ``epsilon, a_value, b_value, ratio, ratio_lo, ratio_hi``; the
        interval is the expanded percentile interval of the replicate
        ratios.  Both cells are restricted to the repeats they share, and
        every replicate resamples the same (partition, fold, repeat) pairs of both.
    """
    pairs = PairedDesigns(trials, [a, b, *(also or ())], seed=seed, resamples=resamples)
    if cache is not None:
        pairs.designs = cache
    return pairs.ratios(a, b, epsilons, statistic=statistic, level=level)


_RATIO_COLUMNS = ["epsilon", "a_value", "b_value", "ratio", "ratio_lo", "ratio_hi"]


class PairedDesigns:
    """The designs of one dataset's trials from which paired ratios are bootstrapped.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trials of ONE dataset.
    cells : sequence of (variant, algorithm)
        Every cell a comparison may name; a design built for a comparison
        holds all of them (restricted to the compared cells' shared repeats),
        so later comparisons with the same shared repeat count reuse it.
    seed, resamples
        As for :func:`bootstrap_intervals`.
    median_cache : dict, optional
        Shared by the designs (see :class:`DesignBootstrap`); may be shared
        with the designs of other trial tables of the same dataset.

    Notes
    -----
    The trials of each cell are located once (one pass over the variant and
    algorithm columns), not once per comparison.
    """

    def __init__(
        self,
        trials: pd.DataFrame,
        cells: Sequence[tuple[str, str]],
        *,
        seed: int,
        resamples: int,
        median_cache: dict[tuple, tuple[float, np.ndarray]] | None = None,
    ):
        self.trials = trials
        self.seed, self.resamples = seed, resamples
        self.median_cache = {} if median_cache is None else median_cache
        self.designs: dict[int, DesignBootstrap] = {}
        var, var_names = _sorted_codes(trials["variant"])
        alg, alg_names = _sorted_codes(trials["algorithm"])
        var_code = {v: i for i, v in enumerate(var_names)}
        alg_code = {a: i for i, a in enumerate(alg_names)}
        self._repeat = trials["repeat"].to_numpy()
        self._rows = {}
        for cell in dict.fromkeys((str(v), str(al)) for v, al in cells):
            self._rows[cell] = (var == var_code.get(cell[0], -2)) & (
                alg == alg_code.get(cell[1], -2)
            )
        self._any = np.zeros(len(trials), dtype=bool)
        for rows in self._rows.values():
            self._any |= rows

    def design(self, a: tuple[str, str], b: tuple[str, str]) -> DesignBootstrap | None:
        """The design comparing a and b (None when either has no trial)."""
        for cell in (a, b):
            if cell not in self._rows:
                raise DPRegError(
                    f"cell {cell} was not named when the designs were set up; "
                    f"named: {', '.join(map(str, self._rows))}"
                )
        in_a, in_b = self._rows[a], self._rows[b]
        if not in_a.any() or not in_b.any():
            return None
        shared = int(min(self._repeat[in_a].max(), self._repeat[in_b].max()) + 1)
        if shared not in self.designs:
            self.designs[shared] = DesignBootstrap(
                self.trials.loc[self._any & (self._repeat < shared)],
                seed=self.seed,
                resamples=self.resamples,
                median_cache=self.median_cache,
            )
        return self.designs[shared]

    def ratio_replicates(
        self,
        a: tuple[str, str],
        b: tuple[str, str],
        epsilons: Sequence[float],
        *,
        statistic: str,
    ):
        """(design, [(epsilon, row a, row b)], stat a, stat b, replicate ratios ``(B, E)``).

        None when either cell has no trial; epsilons missing for either cell
        are skipped; a replicate ratio that is not finite is NaN.
        """
        a, b = (str(a[0]), str(a[1])), (str(b[0]), str(b[1]))
        boot = self.design(a, b)
        if boot is None:
            return None
        if statistic not in STATISTICS:
            raise DPRegError(f"unknown statistic {statistic!r}; known: {', '.join(STATISTICS)}")
        pairs = [
            (float(eps), ia, ib)
            for eps in epsilons
            if (ia := boot.index_of(a[0], a[1], eps)) is not None
            and (ib := boot.index_of(b[0], b[1], eps)) is not None
        ]
        est, reps = boot.cell_statistic(statistic, [i for _, ia, ib in pairs for i in (ia, ib)])
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio_reps = reps[:, 0::2] / reps[:, 1::2]
        ratio_reps = np.where(np.isfinite(ratio_reps), ratio_reps, np.nan)
        return boot, pairs, est[0::2], est[1::2], ratio_reps

    def ratios(
        self,
        a: tuple[str, str],
        b: tuple[str, str],
        epsilons: Sequence[float],
        *,
        statistic: str,
        level: float = DEFAULT_LEVEL,
    ) -> pd.DataFrame:
        """The table of :func:`paired_ratios` for cells a and b."""
        found = self.ratio_replicates(a, b, epsilons, statistic=statistic)
        if found is None:
            return pd.DataFrame(columns=_RATIO_COLUMNS)
        boot, pairs, est_a, est_b, ratio_reps = found
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = est_a / est_b
        lo, hi = _percentile_interval(ratio_reps, level, boot.clusters)
        rows = [
            {
                "epsilon": eps,
                "a_value": float(est_a[j]),
                "b_value": float(est_b[j]),
                "ratio": float(ratio[j]) if np.isfinite(ratio[j]) else math.nan,
                "ratio_lo": float(lo[j]),
                "ratio_hi": float(hi[j]),
            }
            for j, (eps, _, _) in enumerate(pairs)
        ]
        return pd.DataFrame(rows, columns=_RATIO_COLUMNS)
