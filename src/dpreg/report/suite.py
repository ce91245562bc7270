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
- ``summary.png`` / ``summary.pdf`` -- a dot plot, one row per method, one
  panel per epsilon (0.1 and 1): each method's mean error over the tight
  AdaSSP's (``adassp-tight``; the fixed ``adassp`` in tables without it), the
  geometric mean over the datasets with its t-interval (datasets as units),
  and each dataset's ratio as a grey dot; ``summary.csv`` holds its numbers.
- ``relative-errors.csv`` (every method over non-private ridge) and
  ``wins.csv`` (the best method per dataset and epsilon).

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
from matplotlib.ticker import LogFormatter

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
    "ratio_summary",
    "read_suite_table",
    "relative_errors",
    "run",
    "summary_reference",
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
#: The summary figure's reference, in order of preference: the tight AdaSSP
#: (exact (epsilon, delta)), else the fixed AdaSSP of tables without it.
SUMMARY_REFERENCES = ("adassp-tight", "adassp")
#: The summary's x axis (ratio to the reference); beyond it: an arrow on the edge.
SUMMARY_SPAN = (0.25, 64.0)

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


def summary_reference(table: pd.DataFrame) -> str:
    """The suite summary's reference: the tight AdaSSP, else the fixed one (older tables)."""
    found = set(table["algorithm"].astype(str))
    for name in SUMMARY_REFERENCES:
        if name in found:
            return name
    raise DPRegError(
        f"suite table has rows of none of the summary's references {', '.join(SUMMARY_REFERENCES)}"
    )


def ratio_summary(
    table: pd.DataFrame,
    *,
    epsilons: Sequence[float] = (0.1, 1.0),
    reference: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per method and epsilon: the geometric-mean ratio of its mean MSE to the reference's.

    The datasets are the units: ``log(mse_mean / mse_mean(reference))`` on
    each dataset, their mean and a Student-t interval at ``level`` over the
    datasets (``k - 1`` degrees of freedom; Demšar 2006 judges a suite with
    datasets as units), back-transformed: ``ratio``, ``ratio_lo``,
    ``ratio_hi``, with ``datasets`` (k) and ``below`` (how many datasets have
    a ratio below 1).
    """
    from scipy import stats as st

    reference = reference or summary_reference(table)
    algs = [a for a in (*WANG_CODE, *CORRECTED) if a != reference]
    rel = relative_errors(table, epsilons=epsilons, reference=reference, algorithms=algs)
    out = []
    for (alg, eps), grp in rel.groupby(["algorithm", "epsilon"], sort=False):
        logs = np.log(grp["ratio"].to_numpy(float))
        logs = logs[np.isfinite(logs)]
        k = logs.size
        mean, sd = (logs.mean(), logs.std(ddof=1)) if k > 1 else (np.nan, np.nan)
        half = st.t.ppf(0.5 + level / 2, max(k - 1, 1)) * sd / np.sqrt(max(k, 1))
        ratios = np.exp([mean, mean - half, mean + half])
        out.append([alg, float(eps), reference, k, int((logs < 0).sum()), *ratios])
    cols = ["algorithm", "epsilon", "reference", "datasets", "below", "ratio", "ratio_lo"]
    return pd.DataFrame(out, columns=[*cols, "ratio_hi"])


def plot_summary(
    table: pd.DataFrame,
    *,
    out_png: str | Path | None = None,
    out_pdf: str | Path | None = None,
    epsilons: Sequence[float] = (0.1, 1.0),
    reference: str | None = None,
    level: float = 0.95,
    dpi: int = 130,
) -> Figure:
    """Dot plot: each method's mean error over the tight AdaSSP's, one row per method.

    One panel per epsilon (0.1 and 1 by default), a log x axis with a line at
    1 (as good as the reference).  Small grey dots: the ratio on each
    dataset; the method's marker (registry style): the geometric mean over
    the datasets, with its ``level`` interval (:func:`ratio_summary`).  Rows:
    Wang's methods as his code runs them, then their corrected variants,
    each group sorted by the ratio at the last epsilon.
    """
    reference = reference or summary_reference(table)
    summ = ratio_summary(table, epsilons=epsilons, reference=reference, level=level)
    algs = [a for a in (*WANG_CODE, *CORRECTED) if a != reference]
    rel = relative_errors(table, epsilons=epsilons, reference=reference, algorithms=algs)
    last = summ[np.isclose(summ["epsilon"], epsilons[-1])].set_index("algorithm")["ratio"]
    groups = [
        ("Wang's code", [a for a in WANG_CODE if a in last.index]),
        ("corrected", [a for a in CORRECTED if a in last.index]),
    ]
    order = [a for _, members in groups for a in sorted(members, key=lambda a: (last[a], a))]
    fig = Figure(figsize=(4.3 * len(epsilons) + 2.2, 0.3 * len(order) + 1.9), layout="constrained")
    axes = fig.subplots(1, len(epsilons), sharey=True, squeeze=False)[0]
    rng = np.random.default_rng(0)  # jitter of the dataset dots only: drawing, not data
    lo_x, hi_x = SUMMARY_SPAN
    for ax, eps in zip(axes, epsilons, strict=True):
        sub = summ[np.isclose(summ["epsilon"], eps)].set_index("algorithm")
        dots = rel[np.isclose(rel["epsilon"], eps)]
        for i, alg in enumerate(order):
            vals = dots.loc[dots["algorithm"] == alg, "ratio"].to_numpy(float)
            ax.plot(vals, i + rng.uniform(-0.18, 0.18, vals.size), ".", color="0.7", ms=3, zorder=1)
            if alg not in sub.index:
                continue
            row = sub.loc[alg]
            color, _, marker = algorithm_style(alg)
            lo, hi = max(row["ratio_lo"], lo_x), min(row["ratio_hi"], hi_x)
            ax.plot([lo, hi], [i, i], "-", color=color, lw=1.6, zorder=2)
            at, shape = float(row["ratio"]), marker or "o"
            if not lo_x <= at <= hi_x:  # off scale: an arrow on the edge, the value beside
                at, shape = (hi_x, ">") if at > hi_x else (lo_x, "<")
            edge = color if shape in "+x1234" else "0.1"  # line markers take the colour
            ax.plot(at, i, shape, color=color, mec=edge, mew=0.5 if edge == "0.1" else 2, ms=7)
            ax.annotate(
                f"{row['ratio']:.3g}", (1.0, i), xycoords=("axes fraction", "data"),
                xytext=(4, 0), textcoords="offset points", ha="left", va="center",
                fontsize=7.5, color="0.25",
            )  # fmt: skip
        ax.axvline(1.0, color="0.2", lw=1.0, zorder=0)
        ax.axhline(len(groups[0][1]) - 0.5, color="0.5", lw=0.8, ls="--")  # between the groups
        ax.set_xscale("log")
        ax.set_xlim(lo_x, hi_x)
        ax.xaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))  # 0.25, 1, 10: factors
        ax.grid(True, axis="x", which="major", alpha=0.3, lw=0.6)
        ax.set_title(f"ε = {eps:g}", fontsize=10)
        ax.set_xlabel(f"mean test MSE / {algorithm_label(reference)}'s", fontsize=9)
    axes[0].set_yticks(range(len(order)))
    axes[0].set_yticklabels([f"{algorithm_label(a)}  [{a}]" for a in order], fontsize=8)
    axes[0].set_ylim(len(order) - 0.5, -0.5)
    for name, members in groups:  # group names at the right edge of the last panel
        if members:
            mid = (order.index(members[0]) + order.index(members[-1])) / 2
            axes[-1].annotate(
                name, (1.0, mid), xycoords=("axes fraction", "data"), rotation=270,
                xytext=(34, 0), textcoords="offset points", va="center", fontsize=8.5, color="0.3",
            )  # fmt: skip
    k = int(summ["datasets"].max()) if len(summ) else 0
    fig.suptitle(
        f"Wang (2018)'s suite: mean error over {algorithm_label(reference)}'s on {k} datasets\n"
        f"marker (value at the right) = geometric mean, bar = its {level:.0%} t-interval over "
        "the datasets, grey dots = single datasets, arrow = off scale; left of 1 = better",
        fontsize=9.5,
    )
    _save(fig, out_png, out_pdf, dpi)
    return fig


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
        n_d, meta_path = None, Path(args.meta or ".") / f"{ds}.json"
        if args.meta and meta_path.exists():
            meta = read_prepared_meta(meta_path)
            n_d = (int(meta["n"]), int(meta["d"]))
        plot_dataset(table, ds, out_png=out / "figures" / f"{ds}.png", n_d=n_d)
    plot_summary(table, out_png=out / "summary.png", out_pdf=out / "summary.pdf")
    fmt = "%.4g"
    summ = ratio_summary(table)
    write_text_atomic(out / "summary.csv", summ.to_csv(index=False, float_format=fmt))
    rel = relative_errors(table, epsilons=sorted(table["epsilon"].unique()))
    write_text_atomic(out / "relative-errors.csv", rel.to_csv(index=False, float_format=fmt))
    groups = {"wang-code": WANG_CODE, "corrected": CORRECTED, "all": WANG_CODE + CORRECTED}
    wins = [winners(table, algorithms=a).assign(group=g) for g, a in groups.items()]
    wins = [w[["group", *w.columns[:-1]]] for w in wins]  # the group first, as before
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
