"""Wang (2018)'s UCI suite: per-dataset figures, a summary figure and win counts.

Reads the summary table of the ``wang-suite`` experiment
(``results/tables/wang-suite.csv``, one row per dataset, variant, algorithm
and epsilon with bootstrap intervals of the mean and median test MSE) and
writes, into one folder:

- ``figures/<dataset>.png`` -- the layout of Wang's per-dataset plots
  (``exp_uci.m``: mean test MSE against epsilon on log-log axes, every
  method), drawn as two panels sharing the y axis: his methods as his code
  runs them, and their corrected variants; ``trivial`` and ``ridge`` appear in
  both as references.  Error bars are the table's bootstrap intervals.
- ``summary.png`` / ``summary.pdf`` -- each private method's mean error
  relative to non-private ridge, ``log10(MSE / MSE_ridge)``, one row per
  dataset, one panel per epsilon (0.1 and 1 by default); the best method of
  each row and group is marked, with a filled marker where its interval lies
  below every other method's.
- ``relative-errors.csv`` and ``wins.csv`` -- the numbers behind the summary.

Run ``dpreg suite results/tables/wang-suite.csv --out results/wang-suite`` (or
``python -m dpreg.report.suite ...``, the same command).

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI
(Section 6, the UCI experiments; code ``exp_uci.m``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from dpreg._validation import DPRegError
from dpreg.data.prepared import read_prepared_meta
from dpreg.io.atomic import atomic_path, write_text_atomic
from dpreg.io.tables import read_table
from dpreg.report.lines import algorithm_label, algorithm_style

__all__ = [
    "CORRECTED",
    "REFERENCES",
    "WANG_CODE",
    "main",
    "parser",
    "plot_dataset",
    "plot_summary",
    "read_suite_table",
    "relative_errors",
    "run",
    "winners",
]

#: Wang's private methods in the order of exp_uci.m, as his code runs them.
WANG_CODE = (
    "ssp-wang",
    "objpert",
    "ops-balanced",
    "adaops",
    "adassp-wang",
    "ops-concentrated",
    "ops-diffused",
    "ops-worstcase",
)
#: Their corrected variants (SPEC-wang-methods.md; Kalaja 2020 for SSP/AdaSSP).
CORRECTED = (
    "ssp",
    "objpert-kst",
    "ops-balanced-post",
    "adaops-post",
    "adaops-cap",
    "adassp",
    "ops-concentrated-fixed",
    "ops-diffused-post",
    "ops-worstcase-post",
)
#: Non-private references drawn in every panel.
REFERENCES = ("trivial", "ridge")

_NEEDS = ["dataset", "algorithm", "epsilon", "mse_mean", "mse_mean_lo", "mse_mean_hi"]


def _check(table: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in _NEEDS if c not in table.columns]
    if missing:
        raise DPRegError(f"suite table lacks columns {missing}")
    if table.empty:
        raise DPRegError("suite table is empty")
    if "variant" in table.columns and table["variant"].nunique() > 1:
        raise DPRegError(
            f"suite table holds several variants {sorted(table['variant'].unique())}; "
            "select one first"
        )
    return table


def relative_errors(
    table: pd.DataFrame,
    *,
    epsilons: Sequence[float] = (0.1, 1.0),
    reference: str = "ridge",
    algorithms: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Mean test MSE of each private method relative to ``reference``.

    Returns one row per (dataset, epsilon, algorithm) with ``ratio =
    mse_mean / mse_mean(reference)`` and ``ratio_lo``/``ratio_hi``, the
    method's bootstrap interval divided by the reference's mean (the
    reference is non-private; its own interval is much narrower and is not
    propagated).
    """
    table = _check(table)
    algs = list(algorithms) if algorithms is not None else [*WANG_CODE, *CORRECTED]
    ref = table[table["algorithm"] == reference].set_index(["dataset", "epsilon"])["mse_mean"]
    if ref.empty:
        raise DPRegError(f"suite table has no rows of the reference {reference!r}")
    out = []
    for eps in epsilons:
        part = table[np.isclose(table["epsilon"], eps) & table["algorithm"].isin(algs)]
        if part.empty:
            raise DPRegError(f"suite table has no rows at epsilon={eps:g}")
        for row in part.itertuples(index=False):
            r = float(ref.loc[(row.dataset, row.epsilon)])
            out.append(
                {
                    "dataset": row.dataset,
                    "epsilon": float(eps),
                    "algorithm": row.algorithm,
                    "mse_mean": row.mse_mean,
                    "ratio": row.mse_mean / r,
                    "ratio_lo": row.mse_mean_lo / r,
                    "ratio_hi": row.mse_mean_hi / r,
                }
            )
    return pd.DataFrame(out)


def winners(
    table: pd.DataFrame, *, algorithms: Sequence[str], epsilons: Sequence[float] | None = None
) -> pd.DataFrame:
    """The method with the lowest mean MSE among ``algorithms``, per dataset and epsilon.

    ``clear`` is true where the winner's upper interval bound lies below the
    lower bound of every other method's interval (a win beyond the
    bootstrap's resampling noise); ``runner_up`` is the second-best method.
    """
    table = _check(table)
    part = table[table["algorithm"].isin(algorithms)]
    if epsilons is not None:
        part = part[np.isclose(part["epsilon"].to_numpy()[:, None], list(epsilons)).any(axis=1)]
    out = []
    for (ds, eps), grp in part.groupby(["dataset", "epsilon"], sort=True):
        grp = grp.sort_values(["mse_mean", "algorithm"])
        best = grp.iloc[0]
        rest = grp.iloc[1:]
        clear = bool(len(rest) and (best["mse_mean_hi"] < rest["mse_mean_lo"]).all())
        out.append(
            {
                "dataset": ds,
                "epsilon": float(eps),
                "winner": best["algorithm"],
                "runner_up": rest.iloc[0]["algorithm"] if len(rest) else "",
                "winner_mse_mean": float(best["mse_mean"]),
                "clear": clear,
            }
        )
    return pd.DataFrame(out)


def _draw_group(ax, part: pd.DataFrame, algorithms: Sequence[str]) -> list:
    handles = []
    for alg in [*algorithms, *REFERENCES]:
        rows = part[part["algorithm"] == alg].sort_values("epsilon")
        if rows.empty:
            continue
        color, ls, marker = algorithm_style(alg)
        y = rows["mse_mean"].to_numpy(float)
        err = np.vstack([y - rows["mse_mean_lo"].to_numpy(float), rows["mse_mean_hi"] - y])
        err = np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)
        ref = alg in REFERENCES
        ax.errorbar(
            rows["epsilon"],
            y,
            yerr=None if ref else err,
            color=color,
            linestyle=ls,
            marker="" if ref else (marker or "o"),
            markersize=4,
            linewidth=1.2,
            capsize=2,
            elinewidth=0.7,
        )
        handles.append(
            Line2D(
                [],
                [],
                color=color,
                linestyle=ls,
                marker="" if ref else (marker or "o"),
                label=algorithm_label(alg),
            )
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    ax.set_xlabel("ε")
    return handles


def _save(fig: Figure, out_png: str | Path | None, out_pdf: str | Path | None, dpi: int) -> None:
    # each file through a temporary sibling (dpreg.io.atomic): never a partial figure
    if out_png is not None:
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    if out_pdf is not None:
        pdf_meta = {"CreationDate": None, "Creator": None, "Producer": None}
        with atomic_path(out_pdf) as tmp:
            fig.savefig(tmp, format="pdf", metadata=pdf_meta)


def plot_dataset(
    table: pd.DataFrame,
    dataset: str,
    *,
    out_png: str | Path | None = None,
    out_pdf: str | Path | None = None,
    n_d: tuple[int, int] | None = None,
    dpi: int = 90,
) -> Figure:
    """One dataset, Wang's layout: mean test MSE against epsilon, every method.

    Left panel: his methods as his code runs them; right panel: the corrected
    variants; both with the non-private references.  Error bars: the
    table's bootstrap interval of the mean.
    """
    table = _check(table)
    part = table[table["dataset"] == dataset]
    if part.empty:
        raise DPRegError(f"suite table has no rows of dataset {dataset!r}")
    fig = Figure(figsize=(11.0, 6.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, algs, title in (
        (axes[0], WANG_CODE, "as in Wang's code"),
        (axes[1], CORRECTED, "corrected variants"),
    ):
        handles = _draw_group(ax, part, algs)
        ax.set_title(title, fontsize=10)
        ax.legend(
            handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2
        )
    axes[0].set_ylabel("mean test MSE (scaled y)")
    name = dataset if n_d is None else f"{dataset} (n={n_d[0]}, d={n_d[1]})"
    fig.suptitle(f"{name}: Wang (2018)'s protocol, δ = 1e-6", fontsize=11)
    _save(fig, out_png, out_pdf, dpi)
    return fig


def plot_summary(
    table: pd.DataFrame,
    *,
    out_png: str | Path | None = None,
    out_pdf: str | Path | None = None,
    epsilons: Sequence[float] = (0.1, 1.0),
    reference: str = "ridge",
    dpi: int = 130,
) -> Figure:
    """Every method's mean error relative to non-private ridge; rows = datasets.

    Colour: ``log10(MSE / MSE_ridge)`` (0 = as good as ridge), clipped to
    ``[0, 3]``.  In each row and each group (Wang's code | corrected) the
    method with the lowest mean is outlined; a filled dot marks a clear win
    (its interval below every other method's of the group).
    """
    rel = relative_errors(table, epsilons=epsilons, reference=reference)
    datasets = sorted(rel["dataset"].unique())
    algs = [a for a in (*WANG_CODE, *CORRECTED) if a in set(rel["algorithm"])]
    fig = Figure(
        figsize=(5.2 * len(epsilons) + 1.2, 0.28 * len(datasets) + 2.6), layout="constrained"
    )
    axes = fig.subplots(1, len(epsilons), sharey=True, squeeze=False)[0]
    image = None
    for ax, eps in zip(axes, epsilons, strict=True):
        sub = rel[np.isclose(rel["epsilon"], eps)]
        grid = sub.pivot(index="dataset", columns="algorithm", values="ratio")
        grid = grid.reindex(index=datasets, columns=algs)
        vals = np.log10(grid.to_numpy(float))
        image = ax.imshow(
            np.clip(vals, 0, 3),
            aspect="auto",
            cmap="viridis",
            vmin=0,
            vmax=3,
            interpolation="nearest",
        )
        for group in (WANG_CODE, CORRECTED):
            cols = [a for a in group if a in algs]
            win = winners(table, algorithms=cols, epsilons=[eps]).set_index("dataset")
            for i, ds in enumerate(datasets):
                if ds not in win.index:
                    continue
                j = algs.index(win.loc[ds, "winner"])
                ax.add_patch(_outline(j, i))
                if win.loc[ds, "clear"]:
                    ax.plot(
                        j,
                        i,
                        "o",
                        color="white",
                        markersize=3.5,
                        markeredgecolor="black",
                        markeredgewidth=0.5,
                    )
        ax.axvline(len([a for a in WANG_CODE if a in algs]) - 0.5, color="white", linewidth=2)
        ax.set_xticks(range(len(algs)))
        ax.set_xticklabels(algs, rotation=70, ha="right", fontsize=7)
        ax.set_yticks(range(len(datasets)))
        ax.set_yticklabels(datasets, fontsize=7)
        ax.set_title(f"ε = {eps:g}   (left: Wang's code | right: corrected)", fontsize=9)
    assert image is not None  # at least one epsilon was drawn
    cbar = fig.colorbar(image, ax=list(axes), shrink=0.8)
    cbar.set_label(f"log10(MSE / MSE {reference}), in [0, 3]", fontsize=8)
    fig.suptitle(
        "Wang (2018)'s suite: error relative to non-private ridge "
        "(outline = lowest mean of its group, dot = clear win)",
        fontsize=10,
    )
    _save(fig, out_png, out_pdf, dpi)
    return fig


def _outline(j: int, i: int):
    return Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.4)


def parser() -> argparse.ArgumentParser:
    """The options of ``dpreg suite``."""
    p = argparse.ArgumentParser(
        prog="dpreg suite",
        description="Wang (2018)'s UCI suite: per-dataset figures, a summary figure and "
        "win counts from the wang-suite experiment's summary table.",
    )
    p.add_argument(
        "table", help="summary table of the wang-suite experiment (results/tables/wang-suite.csv)"
    )
    p.add_argument("--out", default="results/wang-suite", help="output folder")
    p.add_argument(
        "--meta", default=None, help="folder of prepared datasets' <name>.json (n and d in titles)"
    )
    return p


def read_suite_table(path: str | Path) -> pd.DataFrame:
    """Read and check a summary table of the ``wang-suite`` experiment.

    Raises
    ------
    DPRegError
        If the file is missing, damaged (its checksum, :mod:`dpreg.io.checksum`),
        not a CSV table, or not a suite table (its columns, the ``ridge``
        reference or any of Wang's methods missing); the message names the file.
    """
    if not Path(path).is_file():
        raise DPRegError(
            f"suite table {str(path)!r} does not exist; it is written by the wang-suite "
            "experiment (snakemake --cores 2 --configfile config/wang-suite.yaml)"
        )
    try:
        table = read_table(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DPRegError(f"suite table {str(path)!r} is not a CSV table: {exc}") from None
    try:
        _check(table)
    except DPRegError as exc:
        raise DPRegError(f"{str(path)!r} is not a wang-suite summary table: {exc}") from None
    found = set(table["algorithm"].astype(str))
    if "ridge" not in found or not found & {*WANG_CODE, *CORRECTED}:
        raise DPRegError(
            f"{str(path)!r} is not a wang-suite summary table: it needs rows of 'ridge' and of "
            f"Wang's methods ({', '.join(WANG_CODE)}); it has {', '.join(sorted(found))}"
        )
    return table


def run(args: argparse.Namespace) -> int:
    """Write every suite figure and table for parsed ``args`` (see :func:`parser`)."""
    table = read_suite_table(args.table)
    out = Path(args.out)
    for ds in sorted(table["dataset"].unique()):
        n_d = None
        if args.meta:
            meta_path = Path(args.meta) / f"{ds}.json"
            if meta_path.exists():
                meta = read_prepared_meta(meta_path)
                n_d = (int(meta["n"]), int(meta["d"]))
        plot_dataset(table, ds, out_png=out / "figures" / f"{ds}.png", n_d=n_d)
    plot_summary(table, out_png=out / "summary.png", out_pdf=out / "summary.pdf")
    fmt = "%.4g"
    rel = relative_errors(table, epsilons=sorted(table["epsilon"].unique()))
    write_text_atomic(out / "relative-errors.csv", rel.to_csv(index=False, float_format=fmt))
    wins = []
    for group, algs in (
        ("wang-code", WANG_CODE),
        ("corrected", CORRECTED),
        ("all", WANG_CODE + CORRECTED),
    ):
        w = winners(table, algorithms=algs)
        w.insert(0, "group", group)
        wins.append(w)
    write_text_atomic(out / "wins.csv", pd.concat(wins).to_csv(index=False, float_format=fmt))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``dpreg suite TABLE --out DIR [--meta DIR]``: every suite figure and table.

    Bad input (a missing, damaged or non-suite table, an unwritable folder)
    gives one line ``dpreg suite: error: ...`` on stderr and exit status 2,
    no traceback.
    """
    p = parser()
    args = p.parse_args(argv)
    try:
        return run(args)
    except DPRegError as exc:
        p.exit(2, f"{p.prog}: error: {' '.join(str(exc).split())}\n")  # one line
    except OSError as exc:
        where = f" {exc.filename!r}" if exc.filename else ""
        p.exit(2, f"{p.prog}: error: cannot write{where}: {exc.strerror or exc}\n")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
