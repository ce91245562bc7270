"""Critical-difference diagrams of the leaderboard (Demšar 2006, Fig. 1).

One panel per (variant, epsilon): the methods' average ranks on an axis
running from 1 (best, left) to k; each method hangs from its rank by an
elbow line to its label (the better half on the left, the rest on the
right); thick bars join the groups of methods whose average ranks differ by
less than the Nemenyi critical difference (not significantly different),
and a bar of length CD is drawn above the axis.  A method whose releases
are not private as claimed at that epsilon (leaderboard column ``privacy``)
is marked with a dagger: it is ranked, but not at equal exact privacy.

References
----------
Demšar, J. (2006). Statistical comparisons of classifiers over multiple data
sets. JMLR 7, 1-30.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dpreg._validation import DPRegError
from dpreg.io.atomic import atomic_path
from dpreg.report.ranking import nemenyi_cliques

__all__ = ["plot_cd", "save_cd_figure"]


def _panel(ax: Axes, cell: pd.DataFrame, title: str) -> None:
    cell = cell.sort_values("avg_rank", kind="stable")
    flags = cell["privacy"] if "privacy" in cell else pd.Series("", index=cell.index)
    names = [
        f"{lab}{' †' if flag == 'not as claimed' else ''} ({r:.2f})"
        for lab, r, flag in zip(cell["label"], cell["avg_rank"], flags, strict=True)
    ]
    ranks = cell["avg_rank"].to_numpy(dtype=float)
    k = int(cell["methods"].iloc[0])
    cd = float(cell["cd"].iloc[0])
    half = (len(ranks) + 1) // 2
    rows = max(half, len(ranks) - half)
    cliques = nemenyi_cliques(ranks, cd)
    top = 0.45 + 0.32 * len(cliques)  # label rows start below the bars
    ax.set_xlim(0.5 - 0.35 * k, k + 0.5 + 0.35 * k)
    ax.set_ylim(top + rows + 0.3, -1.6)
    ax.axis("off")
    # the rank axis
    ax.plot([1, k], [0, 0], color="black", lw=1)
    step = 1 if k <= 20 else 5  # readable numbers on a long axis
    for t in range(1, k + 1):
        ax.plot([t, t], [0, -0.18], color="black", lw=1)
        if t == 1 or t % step == 0 or t == k:
            ax.text(t, -0.3, str(t), ha="center", va="bottom", fontsize=7)
    # the CD bar
    ax.plot([1, 1 + cd], [-1.1, -1.1], color="black", lw=1.5)
    for x in (1, 1 + cd):
        ax.plot([x, x], [-1.2, -1.0], color="black", lw=1)
    ax.text(1 + cd / 2, -1.25, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=7)
    # methods: elbows to the labels
    for i, (r, name) in enumerate(zip(ranks, names, strict=True)):
        left = i < half
        y = top + (i if left else len(ranks) - 1 - i)
        x_end = 0.5 - 0.05 * k if left else k + 0.5 + 0.05 * k
        ax.plot([r, r, x_end], [0, y, y], color="0.25", lw=0.8)
        ax.text(
            x_end + (-0.05 if left else 0.05),
            y,
            name,
            ha="right" if left else "left",
            va="center",
            fontsize=7,
        )
    # groups not significantly different
    for level, (i, j) in enumerate(cliques):
        y = 0.4 + 0.32 * level
        ax.plot(
            [ranks[i] - 0.06, ranks[j] + 0.06], [y, y], color="black", lw=2.2, solid_capstyle="butt"
        )
    head = cell.iloc[0]
    ax.set_title(
        f"{title}: {k} methods, {int(head['datasets'])} datasets, Friedman p = "
        f"{head['friedman_p']:.2g}"
        + ("  († not private as claimed)" if "†" in "".join(names) else ""),
        fontsize=9,
    )


def plot_cd(board: pd.DataFrame, epsilons: Sequence[float] | None = None) -> Figure:
    """The figure: one critical-difference panel per (variant, epsilon) of ``board``."""
    cells = list(board.groupby(["variant", "epsilon"], sort=True))
    if epsilons:
        cells = [c for c in cells if any(np.isclose(c[0][1], e) for e in epsilons)]
        if not cells:
            have = ", ".join(f"{e:g}" for e in sorted(board["epsilon"].unique()))
            raise DPRegError(
                f"figure epsilons {list(epsilons)} are not in the leaderboard ({have})"
            )
    variants = board["variant"].nunique()
    k = int(board["methods"].max())
    height = 0.8 + 0.19 * ((k + 1) // 2 + 3)
    fig = Figure(figsize=(9.0, height * len(cells)), layout="constrained")
    axes = fig.subplots(len(cells), 1, squeeze=False)[:, 0]
    for ax, ((variant, eps), cell) in zip(axes, cells, strict=True):
        title = f"epsilon = {eps:g}" + (f" ({variant})" if variants > 1 else "")
        _panel(ax, cell, title)
    return fig


def save_cd_figure(
    board: pd.DataFrame, path: str | Path, epsilons: Sequence[float] | None = None
) -> None:
    """Write the diagram as PNG (``path``) and as PDF beside it."""
    fig = plot_cd(board, epsilons)
    path = Path(path)
    # each file through a temporary sibling: a full disk leaves no partial figure
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    # no dates or producer in the PDF: the same board gives the same bytes
    with atomic_path(path.with_suffix(".pdf")) as tmp:
        fig.savefig(
            tmp, format="pdf", metadata={"CreationDate": None, "ModDate": None, "Producer": None}
        )
