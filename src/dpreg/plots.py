"""Error-versus-epsilon figures, one panel per dataset.

The figures follow Wang (2018, Fig. 2) and Kalaja (2020, Figs. 4.1-4.2):
log-log axes, the mean test MSE over all folds and noise repeats against
epsilon, here with the interquartile range as a band.  Non-private
references (``ridge``, ``trivial``, ``ols``) are drawn in fixed reference
styles without a band; a reference curve that is the same under every
variant of the figure is drawn once.  Open circles mark the points where a
classical calibration was used outside its proven range (per-release
epsilon >= 1, SPEC section 5), crosses the points where some trials failed.

Figures are drawn on a :class:`matplotlib.figure.Figure` with the Agg
canvas (no pyplot state, no display needed), and saved without timestamps,
so the same table gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from dpreg._validation import DPRegError

__all__ = ["REFERENCE_STYLES", "is_reference", "panel_grid", "plot_experiment"]

#: Line style of each non-private reference: (colour, line style).
REFERENCE_STYLES: dict[str, tuple[str, object]] = {
    "ridge": ("black", "--"),
    "trivial": ("0.5", ":"),
    "ols": ("tab:brown", "-."),
}

#: Dash patterns of a reference drawn once per variant (when its curves differ):
#: dashed shapes for ridge, dotted ones for trivial, dash-dot ones for ols.
_VARIANT_DASHES: dict[str, list[object]] = {
    "ridge": [
        (0, (5, 2)),
        (0, (9, 2, 2, 2)),
        (0, (2.5, 1.5)),
        (0, (12, 3)),
        (0, (6, 2, 2, 2, 2, 2)),
    ],
    "trivial": [":", (0, (1, 3.5)), (0, (0.5, 1)), (0, (1, 1.5, 1, 4))],
    "ols": ["-.", (0, (10, 2, 1, 2)), (0, (4, 2, 1, 2, 1, 2))],
}
_OTHER_DASHES: list[object] = [(0, (4, 2, 1, 2)), (0, (7, 2, 1, 2)), (0, (2, 2))]

#: Fixed colours of the private algorithms, so an algorithm keeps its colour
#: from figure to figure when a figure shows one variant.
_ALGORITHM_COLOURS: dict[str, str] = {
    "adassp": "tab:blue",
    "adassp-wang": "tab:orange",
    "ssp": "tab:green",
    "ssp-wang": "tab:red",
    "adassp-analytic": "tab:purple",
    "adassp-gdp": "tab:cyan",
    "ssp-gdp": "tab:olive",
    "functional": "tab:pink",
    "diffprivlib": "tab:brown",
}

_NON_PRIVATE_FALLBACK = frozenset(REFERENCE_STYLES)

_TABLE_NEEDS = [
    "dataset",
    "variant",
    "algorithm",
    "epsilon",
    "failed",
    "mse_mean",
    "mse_q25",
    "mse_q75",
    "outside_validity",
]


def is_reference(algorithm: str) -> bool:
    """Whether ``algorithm`` is non-private (drawn as a reference curve).

    Uses the registry :data:`dpreg.algorithms.ALGORITHMS`; names it does not
    know (e.g. an optional peer) count as private unless they are one of
    ``ridge``, ``trivial``, ``ols``.
    """
    try:
        from dpreg.algorithms import ALGORITHMS
    except ImportError:  # pragma: no cover - the registry ships with dpreg
        return algorithm in _NON_PRIVATE_FALLBACK
    spec = ALGORITHMS.get(algorithm)
    if spec is None:
        return algorithm in _NON_PRIVATE_FALLBACK
    return not spec.private


def panel_grid(count: int) -> tuple[int, int]:
    """(rows, columns) of the panel grid: 1 x k up to three panels, 2 x 2 for four."""
    if count < 1:
        raise DPRegError("a figure needs at least one dataset")
    if count <= 3:
        return 1, count
    if count == 4:
        return 2, 2
    cols = 3
    return math.ceil(count / cols), cols


def _ordered(present: Sequence[str], preferred: Sequence[str] | None) -> list[str]:
    """Names in ``present``, in the order of ``preferred`` first, then sorted."""
    seen = list(dict.fromkeys(present))
    head = [x for x in (preferred or []) if x in seen]
    return head + sorted(x for x in seen if x not in head)


def _series(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("epsilon", kind="mergesort")


def _same_curves(table: pd.DataFrame, algorithm: str, variants: Sequence[str]) -> bool:
    """Whether ``algorithm`` has the same mean-error curve under every variant."""
    sub = table[table["algorithm"] == algorithm]
    present = [v for v in variants if v in set(sub["variant"])]
    if len(present) <= 1:
        return True
    keyed = sub.set_index(["dataset", "epsilon", "variant"])["mse_mean"].unstack("variant")
    if keyed[present].isna().any().any() and not keyed[present].isna().all(axis=1).any():
        return False
    base = keyed[present[0]].to_numpy(dtype=float)
    return all(
        np.allclose(keyed[v].to_numpy(dtype=float), base, rtol=1e-12, atol=0.0, equal_nan=True)
        for v in present[1:]
    )


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
    dpi: int = 150,
) -> Figure:
    """Draw one experiment's summary table: error vs epsilon, one panel per dataset.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`dpreg.summary.summarise` (columns dataset, variant,
        algorithm, epsilon, failed, mse_mean, mse_q25, mse_q75,
        outside_validity).
    experiment : str
        Experiment id (the figure title when ``title`` is None).
    title : str, optional
        Figure title.
    dataset_info : mapping
        Dataset name -> (n, d), shown in the panel titles; its order is the
        panel order (datasets of the table it does not list come last).
    out_png, out_pdf : path
        Where to save the figure.
    variants, algorithms : sequence of str, optional
        Legend order (default: sorted names).
    note : str, optional
        A line printed under the title (e.g. that an optional peer was not
        installed and its curve is missing).
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (already saved), e.g. to inspect titles and legend.

    Raises
    ------
    DPRegError
        If a needed column is missing or the table is empty.

    Notes
    -----
    One line per (variant, algorithm), labelled ``algorithm`` when the table
    has one variant and ``algorithm · variant`` otherwise.  The band is the
    interquartile range of the test MSE over folds and repeats.
    """
    missing = [c for c in _TABLE_NEEDS if c not in table.columns]
    if missing:
        raise DPRegError(f"summary table lacks column(s) {', '.join(missing)}")
    if table.empty:
        raise DPRegError(f"experiment {experiment!r}: the summary table is empty")
    table = table.copy()
    for col in ("dataset", "variant", "algorithm"):
        table[col] = table[col].astype(str)
    table["outside_validity"] = table["outside_validity"].astype(bool)

    datasets = _ordered(list(table["dataset"]), list(dataset_info))
    var_order = _ordered(list(table["variant"]), variants)
    alg_order = _ordered(list(table["algorithm"]), algorithms)
    several_variants = len(var_order) > 1

    private_lines = [
        (v, a)
        for a in alg_order
        if not is_reference(a)
        for v in var_order
        if ((table["algorithm"] == a) & (table["variant"] == v)).any()
    ]
    private_algs = list(dict.fromkeys(a for _, a in private_lines))
    colours: dict[tuple[str, str], object] = {}
    if len(private_lines) == len(private_algs):  # one variant per algorithm
        fallback = iter(_palette(len(private_lines)))
        for v, a in private_lines:
            colours[(v, a)] = _ALGORITHM_COLOURS.get(a) or next(fallback)
    else:
        for (v, a), c in zip(private_lines, _palette(len(private_lines)), strict=True):
            colours[(v, a)] = c

    # reference lines: (variant or None when shared, algorithm)
    reference_lines: list[tuple[str | None, str]] = []
    for a in alg_order:
        if not is_reference(a):
            continue
        present = [
            v for v in var_order if ((table["algorithm"] == a) & (table["variant"] == v)).any()
        ]
        if len(present) > 1 and _same_curves(table, a, present):
            reference_lines.append((None, a))
        else:
            reference_lines.extend((v, a) for v in present)

    def label(variant: str | None, algorithm: str) -> str:
        if not several_variants:
            return algorithm
        if variant is None:
            return f"{algorithm} (every variant)"
        return f"{algorithm} · {variant}"

    nrows, ncols = panel_grid(len(datasets))
    fig = Figure(figsize=(4.3 * ncols, 3.4 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    handles: dict[str, Line2D] = {}
    any_outside = False
    any_failed = False

    for idx, ds in enumerate(datasets):
        ax = axes[idx // ncols][idx % ncols]
        part = table[table["dataset"] == ds]
        for v, a in private_lines:
            sub = _series(part[(part["variant"] == v) & (part["algorithm"] == a)])
            if sub.empty:
                continue
            eps = sub["epsilon"].to_numpy(dtype=float)
            colour = colours[(v, a)]
            ax.fill_between(
                eps,
                sub["mse_q25"].to_numpy(dtype=float),
                sub["mse_q75"].to_numpy(dtype=float),
                color=colour,
                alpha=0.15,
                linewidth=0,
            )
            (line,) = ax.plot(
                eps, sub["mse_mean"].to_numpy(dtype=float), color=colour, lw=1.6, ls="-"
            )
            handles.setdefault(label(v, a), line)
            any_outside |= _mark(ax, sub, "outside_validity", colour, "o")
            any_failed |= _mark(ax, sub, "failed", colour, "x")
        for k, (v, a) in enumerate(reference_lines):
            rows = part[part["algorithm"] == a]
            if rows.empty:
                continue
            shown = (
                v if v is not None else next(x for x in var_order if (rows["variant"] == x).any())
            )
            sub = _series(rows[rows["variant"] == shown])
            if sub.empty:
                continue
            colour, style = REFERENCE_STYLES.get(a, ("0.3", "-."))
            if v is not None and several_variants:
                same_alg = [x for x in reference_lines if x[1] == a]
                if len(same_alg) > 1:
                    dashes = _VARIANT_DASHES.get(a, _OTHER_DASHES)
                    style = dashes[same_alg.index((v, a)) % len(dashes)]
            (line,) = ax.plot(
                sub["epsilon"].to_numpy(dtype=float),
                sub["mse_mean"].to_numpy(dtype=float),
                color=colour,
                ls=style,
                lw=1.4,
                zorder=1.5 + 0.01 * k,
            )
            handles.setdefault(label(v, a), line)
            any_failed |= _mark(ax, sub, "failed", colour, "x")
        ax.set_xscale("log")
        ax.set_yscale("log", nonpositive="mask")
        ax.grid(True, which="major", alpha=0.3, lw=0.6)
        n_d = dataset_info.get(ds)
        ax.set_title(f"{ds} (n={int(n_d[0])}, d={int(n_d[1])})" if n_d else ds, fontsize=10)
        ax.set_xlabel("ε")
        if idx % ncols == 0:
            ax.set_ylabel("test MSE (mean)")
        if part["mse_mean"].isna().all():
            ax.text(0.5, 0.5, "no successful trials", transform=ax.transAxes, ha="center")
    for idx in range(len(datasets), nrows * ncols):
        axes[idx // ncols][idx % ncols].set_visible(False)

    legend = dict(handles)
    if private_lines:
        legend["band: interquartile range"] = _proxy(marker="s", ms=8, mfc="0.85", mec="0.85")
    if any_outside:
        legend["outside classical-Gaussian validity"] = _proxy(marker="o", mfc="none", mec="0.2")
    if any_failed:
        legend["some trials failed"] = _proxy(marker="x", mec="0.2")
    fig.legend(
        list(legend.values()),
        list(legend.keys()),
        loc="outside lower center",
        ncol=_legend_columns(list(legend), fig.get_figwidth()),
        fontsize=8.5,
        frameon=False,
    )
    fig.suptitle(title or experiment, fontsize=12)
    if note:
        fig.text(0.5, 0.955, note, ha="center", va="top", fontsize=8.5, color="0.3")
    fig.savefig(out_png, dpi=dpi, metadata={"Software": None})
    fig.savefig(out_pdf, metadata={"CreationDate": None, "ModDate": None, "Producer": None})
    return fig


def _legend_columns(labels: list[str], width_in: float, fontsize: float = 8.5) -> int:
    """As many legend columns (at most 4) as fit the figure width."""
    char_in = 0.55 * fontsize / 72  # average glyph width of DejaVu Sans
    column_in = max(len(t) for t in labels) * char_in + 0.75  # + handle and padding
    return max(1, min(4, len(labels), int(width_in // column_in)))


def _palette(count: int) -> list[object]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if count <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(count)]


def _mark(ax, sub: pd.DataFrame, column: str, colour: object, marker: str) -> bool:
    """Mark the points of ``sub`` where ``column`` is true (> 0)."""
    flag = sub[column].to_numpy()
    flag = flag.astype(bool) if flag.dtype == bool else flag > 0
    y = sub["mse_mean"].to_numpy(dtype=float)
    if not flag.any():
        return False
    if marker == "x":
        # a failed point may have no mean; put the cross on the lower axis edge then
        ymin = np.nanmin(y) if np.isfinite(y).any() else 1.0
        y = np.where(np.isfinite(y), y, ymin)
        ax.plot(
            sub["epsilon"].to_numpy(dtype=float)[flag],
            y[flag],
            ls="none",
            marker="x",
            ms=5,
            mec=colour,
            mew=1.0,
            zorder=3,
        )
    else:
        ax.plot(
            sub["epsilon"].to_numpy(dtype=float)[flag],
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


def _proxy(**kw) -> Line2D:
    return Line2D([], [], ls="none", color="0.2", **kw)
