"""Error-versus-epsilon figures, one panel per dataset.

The figures follow Wang (2018, Fig. 2) and Kalaja (2020, Figs. 4.1-4.2):
log-log axes, test MSE over all folds and noise repeats against epsilon.

- The line is the *median* test MSE with the interquartile range as a band
  (robust to the heavy-tailed errors of unstable algorithms), or the *mean*
  where an experiment asks for it (the thesis' Figs. 4.1 and 4.2 plot means;
  config key ``statistic``), drawn without a band: quartiles describe the
  median, not the mean.  Every plotted point has a marker.  Error bars give the bootstrap confidence
  interval of the plotted statistic (:mod:`dpreg.inference.bootstrap`), so a reader sees
  whether two lines differ beyond resampling noise.
- Robust axes: a value above ``cap`` times the trivial predictor's error is
  not allowed to stretch the axis; it is drawn as a triangle on the panel's
  top edge, and the panel states how many points are off scale.
- Non-private references (ridge, trivial, OLS, cross-validated ridge) are
  drawn without a band in their registry style; a reference whose curve
  differs between the variants of a figure is drawn once per variant and
  labelled so: in the variant's colour when the figure compares one algorithm
  across variants, else with the variant's marker fill.  A reference that is
  the same under every variant is drawn once.
- Labels, colours, line styles and markers come from the algorithm registry
  (:data:`dpreg.algorithms.ALGORITHMS`: ``label`` and ``style``), the same
  in every figure; under several variants the marker fill tells the variant
  (:data:`dpreg.report.lines.VARIANT_FILLS`).  Open
  circles mark points where some release was outside its calibration's
  proven validity (the trial table's ``outside_validity``), crosses points
  where some trials failed (each scored as the trivial predictor theta = 0 in
  the plotted statistic; a point without a finite error is crossed at the
  panel's foot).

Figures are drawn on a :class:`matplotlib.figure.Figure` with the Agg canvas
(no pyplot state), laid out once and saved without timestamps, so the same
table gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.io.atomic import atomic_path
from dpreg.report.lines import _Line, _ordered, _private_lines, _reference_lines, panel_grid

__all__ = [
    "DEFAULT_CAP",
    "SCALE_LABEL",
    "plot_experiment",
]

#: Values above DEFAULT_CAP x the trivial error are drawn as off-scale markers.
DEFAULT_CAP = 10.0

#: The scale every variant is scored in (SPEC section 5).
SCALE_LABEL = "(y − ȳ)/max|y − ȳ| test MSE"


_TABLE_NEEDS = ["dataset", "variant", "algorithm", "epsilon", "failed", "outside_validity"]


# --------------------------------------------------------------------------
# one panel
# --------------------------------------------------------------------------
@dataclass
class _PanelFlags:
    outside: bool = False
    failed: bool = False
    all_failed: bool = False
    interval: bool = False
    band: bool = False
    offscale: int = 0


def _cap_value(part: pd.DataFrame, stat: str, cap: float | None) -> float:
    """The panel's off-scale threshold: ``cap`` x the largest trivial error (inf if none)."""
    if cap is None:
        return math.inf
    trivial = part.loc[part["algorithm"] == "trivial", stat].to_numpy(dtype=float)
    trivial = trivial[np.isfinite(trivial) & (trivial > 0)]
    return float(cap * trivial.max()) if trivial.size else math.inf


def _rows(part: pd.DataFrame, line: _Line) -> pd.DataFrame:
    rows = part[part["algorithm"] == line.algorithm]
    if line.variant is not None:
        rows = rows[rows["variant"] == line.variant]
    elif len(rows):
        rows = rows[rows["variant"] == rows["variant"].iloc[0]]
    return rows.sort_values("epsilon", kind="mergesort")


def _draw_line(ax, rows: pd.DataFrame, line: _Line, stat: str, top: float, flags: _PanelFlags):
    """Draw one curve; return its legend handle.  Off-scale points become edge markers."""
    eps = rows["epsilon"].to_numpy(dtype=float) * line.dodge
    y = rows[stat].to_numpy(dtype=float)
    off = np.isfinite(y) & (y > top)
    shown = np.where(off, np.nan, y)
    if not line.reference:
        if stat == "mse_median":  # quartiles go with the median, never around a mean
            lo_q, hi_q = rows["mse_q25"].to_numpy(float), rows["mse_q75"].to_numpy(float)
            ax.fill_between(eps, lo_q, np.minimum(hi_q, top), color=line.color, alpha=0.1, lw=0)
            flags.band = True
        lo_col, hi_col = f"{stat}_lo", f"{stat}_hi"
        if lo_col in rows and hi_col in rows:
            lo, hi = rows[lo_col].to_numpy(dtype=float), rows[hi_col].to_numpy(dtype=float)
            ok = np.isfinite(shown) & np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                ax.errorbar(
                    eps[ok],
                    shown[ok],
                    yerr=[shown[ok] - lo[ok], np.minimum(hi[ok], top) - shown[ok]],
                    fmt="none",
                    ecolor=line.color,
                    elinewidth=0.9,
                    capsize=2.0,
                    zorder=2.5,
                )
                flags.interval = True
    (handle,) = ax.plot(eps, shown, lw=1.4 if line.reference else 1.6, **line.plot_kwargs())
    if off.any():
        ax.plot(
            eps[off],
            np.full(off.sum(), top),
            ls="none",
            marker="^",
            ms=7,
            mfc=line.color,
            mec="0.15",
            mew=0.6,
            clip_on=False,
            zorder=4,
        )
        flags.offscale += int(off.sum())
    at = np.where(off, top, shown)  # markers of off-scale points sit on the edge too
    flags.outside |= _mark(ax, eps, at, rows["outside_validity"].to_numpy(), line.color, "o")
    failed = rows["failed"].to_numpy() > 0
    flags.failed |= _mark(ax, eps, at, failed, line.color, "x")
    flags.all_failed |= bool((failed & ~np.isfinite(np.asarray(at, dtype=float))).any())
    return handle


def _mark(ax, eps, y, flag, colour, marker: str) -> bool:
    """Mark the points where ``flag`` is true (failed points without a value: at the bottom)."""
    flag = np.asarray(flag, dtype=bool)
    if not flag.any():
        return False
    if marker == "x":
        have = np.isfinite(y)
        style = dict(ls="none", marker="x", ms=5, mec=colour, mew=1.0, zorder=3, clip_on=False)
        if (flag & have).any():
            ax.plot(eps[flag & have], y[flag & have], **style)
        if (flag & ~have).any():  # no finite error to plot: marked at the panel's foot
            foot = blended_transform_factory(ax.transData, ax.transAxes)
            ax.plot(eps[flag & ~have], np.full((flag & ~have).sum(), 0.03), transform=foot, **style)
    else:
        ax.plot(
            eps[flag],
            y[flag],
            ls="none",
            marker="o",
            ms=6,
            mfc="none",
            mec=colour,
            mew=1.1,
            zorder=3,
        )
    return True


def _set_limits(ax, part: pd.DataFrame, stat: str, top: float, flags: _PanelFlags) -> None:
    """Log y-limits from the values on scale; the top edge is the cap when points are off it."""
    quartiles = stat == "mse_median"  # drawn only around a median
    cols = [c for c in (stat, "mse_q25" if quartiles else stat, f"{stat}_lo") if c in part]
    vals = part[cols].to_numpy(dtype=float).ravel()
    vals = vals[np.isfinite(vals) & (vals > 0) & (vals <= top)]
    highs = [c for c in (stat, f"{stat}_hi", "mse_q75" if quartiles else stat) if c in part]
    hi_vals = part[highs].to_numpy(dtype=float).ravel()
    hi_vals = hi_vals[np.isfinite(hi_vals) & (hi_vals > 0) & (hi_vals <= top)]
    if not vals.size:
        return
    bottom = vals.min() / 1.4
    upper = (
        top if flags.offscale else min(top, (hi_vals.max() if hi_vals.size else vals.max()) * 1.4)
    )
    ax.set_ylim(bottom, max(upper, bottom * 10))


def _draw_panel(ax, part, lines, stat, cap, flags: _PanelFlags, handles: dict) -> int:
    """Draw one dataset's curves; return how many points are off scale."""
    top = _cap_value(part, stat, cap)
    before = flags.offscale
    for line in lines:
        rows = _rows(part, line)
        if rows.empty:
            continue
        handles.setdefault(line.label, _draw_line(ax, rows, line, stat, top, flags))
    ax.set_xscale("log")
    ax.set_yscale("log", nonpositive="mask")
    panel = _PanelFlags(offscale=flags.offscale - before)
    _set_limits(ax, part, stat, top, panel)
    ax.grid(True, which="major", alpha=0.3, lw=0.6)
    if part[stat].isna().all():
        ax.text(0.5, 0.5, "no finite errors", transform=ax.transAxes, ha="center")
    return panel.offscale


# --------------------------------------------------------------------------
# the figure
# --------------------------------------------------------------------------
def _prepare(table: pd.DataFrame, experiment: str, stat: str) -> pd.DataFrame:
    if stat not in ("median", "mean"):
        raise DPRegError(f"statistic must be 'median' or 'mean', got {stat!r}")
    needs = [*_TABLE_NEEDS, f"mse_{stat}", "mse_q25", "mse_q75"]
    missing = [c for c in needs if c not in table.columns]
    if missing:
        raise DPRegError(f"summary table lacks column(s) {', '.join(missing)}")
    if table.empty:
        raise DPRegError(f"experiment {experiment!r}: the summary table is empty")
    table = table.copy()
    for col in ("dataset", "variant", "algorithm"):
        table[col] = table[col].astype(str)
    table["outside_validity"] = table["outside_validity"].astype(bool)
    return table


def _title(title: str | None, experiment: str, algorithms: Sequence[str]) -> str:
    """The title, naming the external libraries drawn (an entry's ``requires``) it does not."""
    text = title or experiment
    libraries = [lib for a in algorithms if a in ALGORITHMS for lib in ALGORITHMS[a].requires]
    for lib in dict.fromkeys(libraries):
        if lib.lower() not in text.lower():
            text += f" (and {lib})"
    return text


def _legend(
    fig, handles: dict, flags: _PanelFlags, stat: str, level: float | None, cap, note=None
) -> None:
    legend = dict(handles)
    if flags.band:
        legend["band: interquartile range"] = _proxy(marker="s", ms=8, mfc="0.85", mec="0.85")
    if flags.interval:
        what = f"{level:.0%} " if level else ""
        legend[f"bars: {what}bootstrap CI of the {stat}"] = Line2D(
            [], [], color="0.2", marker="|", ms=8, ls="none"
        )
    if flags.offscale:
        legend[f"▲ off scale (> {cap:g}× trivial)"] = _proxy(marker="^", mfc="0.6", mec="0.15")
    if flags.outside:
        legend["outside the calibration's validity"] = _proxy(marker="o", mfc="none", mec="0.2")
    if flags.failed:
        legend["some trials failed"] = _proxy(marker="x", mec="0.2")
    if flags.all_failed:
        legend["× at the panel's foot: no trial with a finite error"] = _proxy(
            marker="x", mec="0.6"
        )
    # the note is the legend's title, so the layout engine makes room for it
    figure_legend(fig, legend, note)


def plot_experiment(
    table: pd.DataFrame,
    *,
    experiment: str,
    title: str | None = None,
    dataset_info: Mapping[str, tuple[int, int]],
    out_png: str | Path,
    out_pdf: str | Path,
    variants: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
    note: str | None = None,
    statistic: str = "median",
    cap: float | None = DEFAULT_CAP,
    level: float | None = None,
    dpi: int = 150,
) -> Figure:
    """Draw one experiment's summary table: error vs epsilon, one panel per dataset.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`dpreg.report.summary.summarise` (dataset, variant,
        algorithm, epsilon, failed, outside_validity, mse_<statistic>,
        mse_q25, mse_q75 and, when present, the interval columns
        mse_<statistic>_lo/hi).
    experiment : str
        Experiment id (the figure title when ``title`` is None).
    title : str, optional
        Figure title; " (and <library>)" is added when an entry wrapping an
        external library (its ``requires``) is drawn and the title does not name it.
    dataset_info : mapping
        Dataset name -> (n, d), shown in the panel titles; its order is the
        panel order (datasets of the table it does not list come last).
    out_png, out_pdf : path
        Where to save the figure.
    variants, algorithms : sequence of str, optional
        Legend order (default: sorted names).
    note : str, optional
        A line printed under the title.
    statistic : {"median", "mean"}
        The plotted statistic.
    cap : float or None
        Points whose statistic exceeds ``cap`` x the panel's largest trivial
        error are drawn as triangles on the top edge and counted; None draws
        every value to scale.
    level : float, optional
        Confidence level of the intervals, named in the legend.
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (already saved).

    Raises
    ------
    DPRegError
        If a needed column is missing, the table is empty or the statistic
        is unknown.
    """
    table = _prepare(table, experiment, statistic)
    stat = f"mse_{statistic}"
    datasets = _ordered(list(table["dataset"]), list(dataset_info))
    var_order = _ordered(list(table["variant"]), variants)
    alg_order = _ordered(list(table["algorithm"]), algorithms)
    private = _private_lines(table, var_order, alg_order)
    by_variant = None
    if len({ln.algorithm for ln in private}) == 1 and len(private) > 1:
        by_variant = {ln.variant: ln.color for ln in private}  # colours tell the variants apart
    lines = private + _reference_lines(table, var_order, alg_order, stat, by_variant)

    nrows, ncols = panel_grid(len(datasets))
    fig = Figure(figsize=(4.4 * ncols, 3.5 * nrows + 1.0), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    handles: dict[str, Any] = {}
    flags = _PanelFlags()
    for idx, ds in enumerate(datasets):
        ax = axes[idx // ncols][idx % ncols]
        off = _draw_panel(ax, table[table["dataset"] == ds], lines, stat, cap, flags, handles)
        n_d = dataset_info.get(ds)
        name = f"{ds} (n={int(n_d[0])}, d={int(n_d[1])})" if n_d else ds
        ax.set_title(name + (f"  ▲ {off} off scale" if off else ""), fontsize=10)
        ax.set_xlabel("ε")
        if idx % ncols == 0:
            ax.set_ylabel(f"{statistic} {SCALE_LABEL}", fontsize=9)
    for idx in range(len(datasets), nrows * ncols):
        axes[idx // ncols][idx % ncols].set_visible(False)

    _legend(fig, handles, flags, statistic, level, cap, note)
    fig.suptitle(_title(title, experiment, alg_order), fontsize=12)
    _save(fig, out_png, out_pdf, dpi)
    return fig


def _save(fig: Figure, out_png, out_pdf, dpi: int) -> None:
    """Lay the figure out once, freeze it, and save PNG and PDF (no timestamps)."""
    FigureCanvasAgg(fig)
    # the layout pass measures text with the canvas' renderer but rasterises nothing
    fig.draw_without_rendering()
    # no layout engine from here on: savefig then draws each file once (with the
    # "none" placeholder engine it runs one more full draw per file first, which
    # changes no byte: the positions are frozen)
    fig.set_layout_engine(None)
    if fig.get_layout_engine() is not None:  # an rc setting asks for one
        fig.set_layout_engine("none")
    # each file through a temporary sibling (the umask's mode), so a full disk or an
    # interrupted job never leaves a partial figure that looks complete
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    with atomic_path(out_pdf) as tmp:
        fig.savefig(
            tmp,
            format="pdf",
            metadata={"CreationDate": None, "ModDate": None, "Producer": None},
        )


def figure_legend(fig: Figure, legend: Mapping[str, Any], note: str) -> None:
    """The figure's one legend, below its panels, with ``note`` as its title."""
    fig.legend(
        list(legend.values()),
        list(legend.keys()),
        loc="outside lower center",
        ncol=_legend_columns(list(legend), fig.get_figwidth()),
        fontsize=8.5,
        frameon=False,
        title=note,
        title_fontsize=8.5,
    )


def _legend_columns(labels: list[str], width_in: float, fontsize: float = 8.5) -> int:
    """As many legend columns (at most 4) as fit the figure width."""
    char_in = 0.55 * fontsize / 72  # average glyph width of DejaVu Sans
    column_in = max(len(t) for t in labels) * char_in + 0.75  # + handle and padding
    return max(1, min(4, len(labels), int(width_in // column_in)))


def _proxy(**kw) -> Line2D:
    return Line2D([], [], ls="none", color="0.2", **kw)
