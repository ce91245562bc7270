"""Ratio figures: each curve divided by a reference, and the figure kinds of an experiment.

An experiment's ``figure`` option (``config/config.yaml``, schema-checked)
chooses how its table is drawn:

- ``{kind: lines}`` (default): error against epsilon,
  :func:`dpreg.report.figures.plot_experiment`.
- ``{kind: ratio, reference: ALGORITHM}``: one panel set (row) per variant,
  one panel per dataset; y = the statistic of each method divided by the
  reference algorithm's at the same (dataset, variant, epsilon), on a log
  axis with a line at 1 (a failed trial enters the statistic as the trivial
  predictor theta = 0, as in the tables).  Where a method has failed trials, its pass rate
  (1 - failed/trials) is drawn on a second axis (right, 0-1) in the
  method's colour and marker, hollow, with a dotted line.
- ``{kind: ratio, reference_variant: VARIANT}``: each (algorithm, variant)
  divided by the same algorithm under the reference variant (e.g. clipped
  over unclipped), one panel per dataset, line at 1; non-private
  references are not drawn (their ratio says nothing about the algorithm).

Bars: the method's bootstrap interval divided by the reference's statistic
(the reference's own resampling noise is not propagated; said in the
legend).  Given ``bands`` (:func:`dpreg.inference.bands.curve_bands`, which
the workflow computes from the trials of a ratio figure), the bars are
instead the paired bootstrap interval of the ratio and each curve has its
simultaneous band over epsilon shaded behind them, in the curve's colour.
Styles come from the registry (:mod:`dpreg.report.lines`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from dpreg._validation import DPRegError
from dpreg.report.figures import (
    DEFAULT_CAP,
    _prepare,
    _save,
    _title,
    figure_legend,
    plot_experiment,
)
from dpreg.report.lines import (
    _Line,
    _ordered,
    _private_lines,
    algorithm_label,
    algorithm_style,
    is_reference,
)

__all__ = [
    "FIGURE_KINDS",
    "band_comparisons",
    "check_figure_option",
    "draw_figure",
    "plot_ratio",
    "ratio_table",
]

#: The figure kinds an experiment may ask for (``figure.kind``).
FIGURE_KINDS = ("lines", "ratio")

#: A ratio figure's y axis spans at most [1/RATIO_CAP, RATIO_CAP]; ratios beyond
#: are drawn as triangles on the panel's edge and counted in its title.
RATIO_CAP = 30.0


def check_figure_option(figure: Mapping[str, Any] | None, *, variants, algorithms) -> dict:
    """The experiment's ``figure`` option, checked against its variants and algorithms.

    Raises
    ------
    DPRegError
        Naming the key and value when the kind is unknown, a ratio figure
        names no reference (or both kinds), or the reference is not among the
        experiment's algorithms or variants.
    """
    fig = dict(figure or {})
    kind = fig.get("kind", "lines")
    if kind not in FIGURE_KINDS:
        raise DPRegError(f"figure.kind must be one of {', '.join(FIGURE_KINDS)}, got {kind!r}")
    if kind == "lines":
        extra = sorted(set(fig) - {"kind"})
        if extra:
            raise DPRegError(f"figure.kind 'lines' takes no {', '.join(extra)}")
        return {"kind": "lines"}
    ref, ref_var = fig.get("reference"), fig.get("reference_variant")
    if (ref is None) == (ref_var is None):
        raise DPRegError(
            "figure.kind 'ratio' needs exactly one of figure.reference (an algorithm) "
            "and figure.reference_variant (a variant)"
        )
    if ref is not None and ref not in algorithms:
        raise DPRegError(
            f"figure.reference {ref!r} is not one of the experiment's algorithms "
            f"({', '.join(algorithms)})"
        )
    if ref_var is not None and ref_var not in variants:
        raise DPRegError(
            f"figure.reference_variant {ref_var!r} is not one of the experiment's variants "
            f"({', '.join(variants)})"
        )
    return {"kind": "ratio", "reference": ref, "reference_variant": ref_var}


def ratio_table(
    table: pd.DataFrame,
    stat: str,
    *,
    reference: str | None = None,
    reference_variant: str | None = None,
) -> pd.DataFrame:
    """Rows of ``table`` with ``ratio``, ``ratio_lo``, ``ratio_hi`` and ``pass_rate``.

    ``ratio = stat / stat(reference)`` at the same (dataset, variant,
    epsilon) -- or, with ``reference_variant``, at the same (dataset,
    algorithm, epsilon) under that variant; the reference's own rows are
    left out.  ``pass_rate = 1 - failed / trials``.
    """
    if (reference is None) == (reference_variant is None):
        raise DPRegError("a ratio needs exactly one of reference and reference_variant")
    if reference is not None:
        keys, own = ["dataset", "variant", "epsilon"], table["algorithm"] == reference
        what = f"algorithm {reference!r}"
    else:
        keys, own = ["dataset", "algorithm", "epsilon"], table["variant"] == reference_variant
        what = f"variant {reference_variant!r}"
    if not own.any():
        raise DPRegError(f"the table has no rows of the ratio's reference {what}")
    ref = table[own].set_index(keys)[stat].rename("ref")
    out = table[~own].join(ref, on=keys)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = out[stat] / out["ref"]
        for side in ("lo", "hi"):
            col = f"{stat}_{side}"
            out[f"ratio_{side}"] = out[col] / out["ref"] if col in out else np.nan
        out["pass_rate"] = 1.0 - out["failed"] / out["trials"].where(out["trials"] > 0)
    return out


def _draw(ax, rows: pd.DataFrame, line: _Line, twin_of: dict, flags: dict):
    rows = rows.sort_values("epsilon", kind="mergesort")
    eps = rows["epsilon"].to_numpy(float) * line.dodge
    y = rows["ratio"].to_numpy(float)
    lo, hi = rows["ratio_lo"].to_numpy(float), rows["ratio_hi"].to_numpy(float)
    ok = np.isfinite(y) & np.isfinite(lo) & np.isfinite(hi)
    if "band_low" in rows and not line.reference:
        b_lo, b_hi = rows["band_low"].to_numpy(float), rows["band_high"].to_numpy(float)
        shade = np.isfinite(b_lo) & np.isfinite(b_hi)
        if shade.sum() > 1:
            ax.fill_between(
                eps[shade], b_lo[shade], b_hi[shade], color=line.color, alpha=0.13, lw=0,
                zorder=1.2,
            )  # fmt: skip
            flags["band"] = True
    if ok.any() and not line.reference:
        ax.errorbar(
            eps[ok],
            y[ok],
            yerr=[np.maximum(y[ok] - lo[ok], 0), np.maximum(hi[ok] - y[ok], 0)],
            fmt="none",
            ecolor=line.color,
            elinewidth=0.8,
            capsize=1.8,
            zorder=2.5,
        )
        flags["interval"] = True
    (handle,) = ax.plot(eps, y, lw=1.3 if line.reference else 1.5, **line.plot_kwargs())
    rate = rows["pass_rate"].to_numpy(float)
    if (rate < 1).any():  # some trials failed: the pass rate on the second axis
        if ax not in twin_of:
            twin = ax.twinx()
            twin.set_ylim(-0.03, 1.03)
            twin.tick_params(labelsize=7, colors="0.35")
            twin_of[ax] = twin
        twin_of[ax].plot(
            eps, rate, color=line.color, ls=":", lw=1.0, marker=line.marker or "o",
            ms=4.5, mfc="none", mec=line.color, zorder=1,
        )  # fmt: skip
        flags.setdefault("pass", []).append(line.label)
    return handle


def _lines(table, var_order, alg_order, reference, reference_variant) -> list[_Line]:
    if reference_variant is not None:  # private algorithms under the other variants
        # one algorithm: each variant its own look (variant_look); several: registry
        # style, the marker fill telling the variant
        return _private_lines(table, var_order, [a for a in alg_order if not is_reference(a)])
    out = []
    for a in alg_order:
        if a == reference:
            continue
        colour, style, marker = algorithm_style(a)
        out.append(_Line(None, a, algorithm_label(a), colour, style, marker, is_reference(a)))
    n = len(out)
    return [
        _Line(**{**ln.__dict__, "dodge": 10 ** (0.012 * (i - (n - 1) / 2))})
        for i, ln in enumerate(out)
    ]


def plot_ratio(
    table: pd.DataFrame,
    *,
    experiment: str,
    dataset_info: Mapping[str, tuple[int, int]],
    out_png: str | Path,
    out_pdf: str | Path,
    reference: str | None = None,
    reference_variant: str | None = None,
    title: str | None = None,
    variants: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
    note: str | None = None,
    statistic: str = "median",
    level: float | None = None,
    dpi: int = 150,
    bands: pd.DataFrame | None = None,
) -> Figure:
    """Draw each method's statistic relative to a reference algorithm or variant.

    With ``reference`` (an algorithm): one row of panels per variant, one
    panel per dataset.  With ``reference_variant``: one row of panels, one
    curve per (private algorithm, other variant).  See the module docstring
    for the pass-rate axis and the bars.  Raises :class:`DPRegError` when
    the table lacks a column or the reference's rows.
    """
    table = _prepare(table, experiment, statistic)
    stat = f"mse_{statistic}"
    rel = ratio_table(table, stat, reference=reference, reference_variant=reference_variant)
    if bands is not None:  # paired intervals and simultaneous bands of the ratios
        keys = ["dataset", "variant", "algorithm", "epsilon"]
        extra = bands[[*keys, "ratio_lo", "ratio_hi", "band_low", "band_high"]].astype(
            {"dataset": str, "variant": str, "algorithm": str, "epsilon": float}
        )
        rel = rel.drop(columns=["ratio_lo", "ratio_hi"]).astype(
            {"dataset": str, "variant": str, "algorithm": str, "epsilon": float}
        )
        rel = rel.merge(extra, on=keys, how="left")
    datasets = _ordered(list(table["dataset"]), list(dataset_info))
    var_order = _ordered(list(table["variant"]), variants)
    alg_order = _ordered(list(table["algorithm"]), algorithms)
    rows_of = [v for v in var_order if v != reference_variant] if reference else [None]
    lines = _lines(rel, var_order, alg_order, reference, reference_variant)
    ncols = len(datasets)
    fig = Figure(figsize=(3.5 * ncols + 0.6, 3.0 * len(rows_of) + 2.4), layout="constrained")
    axes = fig.subplots(len(rows_of), ncols, squeeze=False, sharex=True)
    handles: dict[str, Any] = {}
    flags: dict[str, Any] = {}
    twins: dict = {}
    for r, variant in enumerate(rows_of):
        for c, ds in enumerate(datasets):
            ax = axes[r][c]
            part = rel[rel["dataset"] == ds]
            if variant is not None:
                part = part[part["variant"] == variant]
            for line in lines:
                sub = part[part["algorithm"] == line.algorithm]
                if line.variant is not None:
                    sub = sub[sub["variant"] == line.variant]
                if sub.empty:
                    continue
                handles.setdefault(line.label, _draw(ax, sub, line, twins, flags))
            ax.axhline(1.0, color="0.2", lw=1.0, zorder=1)
            ax.set_xscale("log")
            ax.set_yscale("log", nonpositive="mask")
            off = _limits(ax, part, lines)  # after the scale: it sets the tick labels
            flags["offscale"] = flags.get("offscale", 0) + off
            ax.grid(True, which="major", alpha=0.3, lw=0.6)
            n_d = dataset_info.get(ds)
            name = f"{ds} (n={int(n_d[0])}, d={int(n_d[1])})" if n_d else ds
            name += f" · {variant}" if variant else ""
            ax.set_title(name + (f"  ▲▼ {off} off scale" if off else ""), fontsize=9.5)
            if r == len(rows_of) - 1:
                ax.set_xlabel("ε")
            if c == 0:
                ax.set_ylabel(_ylabel(statistic, reference, reference_variant), fontsize=8.5)
            if ax in twins and c == ncols - 1:
                twins[ax].set_ylabel("pass rate (1 − failed/trials)", fontsize=8, color="0.35")
    flags["paired"] = bands is not None
    _ratio_legend(fig, handles, flags, statistic, level, reference, reference_variant, note)
    fig.suptitle(_title(title, experiment, alg_order), fontsize=12)
    _save(fig, out_png, out_pdf, dpi)
    return fig


def _limits(ax, part: pd.DataFrame, lines: Sequence[_Line]) -> int:
    """Log limits around the ratios (within the cap); off-scale ratios as edge triangles."""
    y = part["ratio"].to_numpy(float)
    y = y[np.isfinite(y) & (y > 0)]
    if not y.size:
        return 0
    lo = max(min(y.min(), 1.0) / 1.25, 1 / RATIO_CAP)
    hi = min(max(y.max(), 1.0) * 1.25, RATIO_CAP)
    ax.set_ylim(lo, hi)
    # plain numbers (0.6, 1, 2), not powers of ten: a ratio is read as a factor
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label(hi / lo)))
    count = 0
    for line in lines:
        sub = part[part["algorithm"] == line.algorithm]
        if line.variant is not None:
            sub = sub[sub["variant"] == line.variant]
        r, e = sub["ratio"].to_numpy(float), sub["epsilon"].to_numpy(float) * line.dodge
        for mask, edge, marker in ((r > hi, hi, "^"), (r < lo, lo, "v")):
            if mask.any():
                ax.plot(
                    e[mask], np.full(mask.sum(), edge), ls="none", marker=marker, ms=7,
                    mfc=line.color, mec="0.15", mew=0.6, clip_on=False, zorder=4,
                )  # fmt: skip
                count += int(mask.sum())
    return count


def _minor_label(span: float):
    """Minor tick labels: all of them on a short axis, else only 2, 3 and 5 (x 10^k)."""
    keep = range(1, 10) if span < 4 else (2, 3, 5)

    def label(v: float, _pos) -> str:
        lead = round(v / 10 ** np.floor(np.log10(v))) if v > 0 else 0
        return f"{v:g}" if lead in keep else ""

    return label


def _ylabel(statistic, reference, reference_variant) -> str:
    if reference is not None:
        return f"{statistic} MSE / {algorithm_label(reference)}'s"
    return f"{statistic} MSE / the same under {reference_variant}"


def _ratio_legend(fig, handles, flags, statistic, level, reference, ref_var, note) -> None:
    legend = dict(handles)
    what = algorithm_label(reference) if reference is not None else f"variant {ref_var}"
    legend[f"ratio 1: as good as {what}"] = Line2D([], [], color="0.2", lw=1.0)
    if flags.get("interval"):
        lvl = f"{level:.0%} " if level else ""
        bars = (
            f"bars: {lvl}paired bootstrap CI of the ratio at each ε"
            if flags.get("paired")
            else f"bars: {lvl}bootstrap CI of the {statistic} / {what}'s {statistic}"
        )
        legend[bars] = Line2D([], [], color="0.2", marker="|", ms=8, ls="none")
    if flags.get("band"):
        lvl = f"{level:.0%} " if level else ""
        legend[f"shaded: {lvl}simultaneous band over ε (max-|t|)"] = Patch(
            facecolor="0.2", alpha=0.13, lw=0
        )
    if flags.get("offscale"):
        legend[f"▲▼ off scale (beyond {RATIO_CAP:g}× or 1/{RATIO_CAP:g})"] = Line2D(
            [], [], ls="none", marker="^", color="0.2", mfc="0.6", mec="0.15"
        )
    if flags.get("pass"):
        names = ", ".join(dict.fromkeys(flags["pass"]))
        legend[f"hollow, dotted (right axis): pass rate of {names}"] = Line2D(
            [], [], color="0.3", ls=":", marker="o", mfc="none"
        )
    figure_legend(fig, legend, note)


def draw_figure(table: pd.DataFrame, *, figure: Mapping[str, Any] | None = None, **kw) -> Figure:
    """Draw an experiment's table as its ``figure`` option asks (see the module docstring).

    ``kw`` are :func:`dpreg.report.figures.plot_experiment`'s arguments; a
    ratio figure ignores ``cap`` (ratios are drawn to scale) and takes ``bands``
    (:func:`dpreg.inference.bands.curve_bands`), which a line figure ignores.
    """
    option = check_figure_option(
        figure,
        variants=kw.get("variants") or sorted(set(table["variant"].astype(str))),
        algorithms=kw.get("algorithms") or sorted(set(table["algorithm"].astype(str))),
    )
    bands = kw.pop("bands", None)  # a ratio figure's (curve_bands); a line figure has none
    if option["kind"] == "lines":
        return plot_experiment(table, **kw)
    kw.pop("cap", DEFAULT_CAP)
    return plot_ratio(
        table,
        reference=option["reference"],
        reference_variant=option["reference_variant"],
        bands=bands,
        **kw,
    )


def band_comparisons(
    cells: Sequence[tuple[str, str]], figure: Mapping[str, Any] | None
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The (curve, reference) cell pairs a ratio figure draws, for their bands.

    ``cells`` are the (variant, algorithm) pairs of the table; ``figure`` the
    experiment's option (a ``lines`` figure has none).  Non-private
    references are left out under ``reference_variant``, as in the figure.
    """
    fig = dict(figure or {})
    if fig.get("kind", "lines") != "ratio":
        return []
    have = set(cells)
    ref, ref_var = fig.get("reference"), fig.get("reference_variant")
    out = []
    for v, a in sorted(have):
        if ref is not None and a != ref and (v, ref) in have:
            out.append(((v, a), (v, ref)))
        elif ref_var is not None and v != ref_var and not is_reference(a) and (ref_var, a) in have:
            out.append(((v, a), (ref_var, a)))
    return out
