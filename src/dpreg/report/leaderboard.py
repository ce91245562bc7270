"""The leaderboard over Wang's suite: average ranks, Friedman, Nemenyi, sign tests.

Reads a summary table (``results/tables/wang-suite.csv``: one row per
dataset, variant, algorithm and epsilon) and, per (variant, epsilon), treats
the datasets as the units of comparison (Demšar 2006):

- each method's **average rank** over the datasets, ranking the methods on
  each dataset by the table's error statistic (``mse_median`` by default;
  lower error = better = smaller rank; tied errors get the average of the
  ranks they span);
- the **Friedman test** of "all methods are equivalent" (Demšar 2006, eq. 1,
  with the usual correction for tied ranks, which is what
  :func:`scipy.stats.friedmanchisquare` computes):
  ``chi2_F = 12 N / (k (k+1)) * [sum_j R_j^2 - k (k+1)^2 / 4] / C`` with
  ``C = 1 - sum (t^3 - t) / (N k (k^2 - 1))`` over the groups of ``t`` tied
  errors, ``chi2`` with ``k - 1`` degrees of freedom; and Iman and
  Davenport's less conservative ``F_F = (N - 1) chi2_F / (N (k - 1) - chi2_F)``
  with ``(k - 1, (k - 1)(N - 1))`` degrees of freedom (eq. 2);
- the **Nemenyi critical difference** ``CD = q_alpha sqrt(k (k+1) / (6 N))``
  with ``q_alpha = q_{1-alpha}(k, inf) / sqrt(2)``, the studentized range
  quantile (Demšar 2006, Section 3.2.2; ``q_0.05 = 1.960`` for ``k = 2``):
  two methods whose average ranks differ by less than CD are not
  significantly different;
- **wins, ties and losses** against a reference method (the tight AdaSSP
  ``adassp-tight`` when the table has it, else ``adassp``): a tie is a ratio
  of errors within the margin, ``1/(1+m) <= err / err_ref <= 1+m``; and the
  two-sided **sign test** p-value of "wins and losses are equally likely"
  (binomial with ``p = 1/2``).  Ties are split evenly between wins and losses,
  one of an odd number being dropped -- Demšar's recommendation (Section
  3.1.3); ``ties="drop"`` ignores them instead.

Methods are labelled from the registry (:data:`dpreg.algorithms.ALGORITHMS`):
private, non-private or a reproduction of published code whose privacy is not
claimed; bounds given or bound-free; the hyperparameters tuned without
privacy, or chosen privately inside the budget; the neighbour relation; and, per
epsilon, whether every release is private as claimed at that epsilon
(``privacy``: ``as claimed`` or ``not as claimed``, from the releases'
``valid`` flags, the ledger's): reproductions of published code that are not
(``ssp-wang``, ``bas-amazon-code``, ``gaussmix-code``...) and entries charged
more than their nominal budget (TukeyEM's depth step) are ranked with that
flag, not at equal exact privacy.  Non-private references are left out of the
ranking unless asked for.

A failed trial is scored as what the algorithm outputs when it fails (theta =
0, the trivial predictor; :mod:`dpreg.report.summary`), so no trial is dropped;
``failed`` is the share of a method's trials that failed over the ranked
datasets.  A cell with no finite statistic at all is ranked last on its
dataset rather than dropping the dataset.  Several tables (the suite's
experiments) can be ranked together: a (dataset, variant, algorithm, epsilon)
row present in more than one is taken from the first (the same seed and folds
give the same trials).

References
----------
Demšar, J. (2006). Statistical comparisons of classifiers over multiple data
sets. JMLR 7, 1-30.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.io.tables import read_table, write_table, write_text_atomic
from dpreg.report.cdplot import save_cd_figure
from dpreg.report.lines import algorithm_label
from dpreg.report.ranking import (
    TIES,
    average_ranks,
    critical_difference,
    friedman,
    sign_test,
    wins_ties_losses,
)

__all__ = [
    "DEFAULT_EXCLUDE",
    "FIGURE_EPSILONS",
    "LEADERBOARD_COLUMNS",
    "combine_tables",
    "default_reference",
    "labels",
    "leaderboard",
    "leaderboard_main",
    "privacy_flag",
    "to_markdown",
]

STATISTICS = ("mse_median", "mse_mean")
#: Datasets the command leaves out by default: the suite's corrected copies of
#: autos and machine (with them one dataset would count twice among the units).
DEFAULT_EXCLUDE = ("autos-fixed", "machine-fixed")
#: Panels of the command's critical-difference figure (the suite's headline epsilons).
FIGURE_EPSILONS = (0.1, 1.0)

#: Columns of ``leaderboard.csv`` (one row per variant, epsilon and method).
LEADERBOARD_COLUMNS = [
    "variant",
    "epsilon",
    "position",
    "algorithm",
    "label",
    "kind",
    "bounds",
    "tuning",
    "neighbouring",
    "privacy",
    "failed",
    "avg_rank",
    "datasets",
    "reference",
    "wins",
    "ties",
    "losses",
    "sign_p",
    "methods",
    "friedman_chi2",
    "friedman_p",
    "iman_davenport_f",
    "iman_davenport_p",
    "cd",
    "alpha",
    "statistic",
    "margin",
    "ties_rule",
]


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------
def default_reference(algorithms: Sequence[str]) -> str:
    """``adassp-tight`` when present, else ``adassp``."""
    for name in ("adassp-tight", "adassp"):
        if name in algorithms:
            return name
    raise DPRegError(
        "the table has neither 'adassp-tight' nor 'adassp'; name the reference method "
        f"(one of {', '.join(sorted(algorithms))})"
    )


def labels(algorithm: str) -> dict[str, str]:
    """Label, kind, bounds, tuning and neighbour relation of a method, from the registry."""
    spec = ALGORITHMS.get(algorithm)
    if spec is None:
        return {
            "label": algorithm_label(algorithm),
            "kind": "unregistered",
            "bounds": "unknown",
            "tuning": "unknown",
            "neighbouring": "unknown",
        }
    kind = "non-private" if not spec.private else "reproduction" if spec.reproduction else "private"
    tuned = tuple(getattr(spec, "tuned_nonprivately", ()))
    private_tuned = tuple(getattr(spec, "tuned_privately", ()))
    tuning = f"tuned non-privately: {', '.join(tuned)}" if tuned else "not tuned on data"
    if private_tuned:
        tuning = f"tuned privately: {', '.join(private_tuned)}"
    return {
        "label": spec.label,
        "kind": kind,
        "bounds": "bound-free" if getattr(spec, "bound_free", False) else "bounds given",
        "tuning": tuning,
        "neighbouring": spec.neighbouring if spec.private else "",
    }


def privacy_flag(algorithm: str, epsilon: float, delta: float) -> str:
    """``as claimed`` when every release of one run at ``(epsilon, delta)`` is valid, else ``not as claimed``.

    Non-private and unregistered methods get ``""``.  Validity is structural
    (a calibration and its range), so a nominal ``d = 5``, ``n = 1000`` is used.
    """
    spec = ALGORITHMS.get(algorithm)
    if spec is None or not spec.private:
        return ""
    rel = spec.releases(epsilon=float(epsilon), delta=float(delta), d=5, n=1000)
    return "as claimed" if all(r.valid for r in rel) else "not as claimed"


def combine_tables(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The rows of several suite tables; a (dataset, variant, algorithm, epsilon) from the first that has it."""
    if not tables:
        raise DPRegError("no suite table to rank")
    both = pd.concat(list(tables), ignore_index=True)
    keys = [k for k in ("dataset", "variant", "algorithm", "epsilon") if k in both]
    return both.drop_duplicates(subset=keys, keep="first").reset_index(drop=True)


def _is_private(algorithm: str) -> bool:
    return labels(algorithm)["kind"] != "non-private"


def leaderboard(
    table: pd.DataFrame,
    *,
    statistic: str = "mse_median",
    reference: str | None = None,
    margin: float = 0.01,
    alpha: float = 0.05,
    ties: str = "split",
    include_nonprivate: bool = False,
    exclude_datasets: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per (variant, epsilon, method): ranks, tests and labels (columns :data:`LEADERBOARD_COLUMNS`).

    Datasets without a finite error for every method at an epsilon are left
    out of that epsilon (the Friedman test needs complete blocks); the
    ``datasets`` column says how many remain.
    """
    if statistic not in STATISTICS:
        raise DPRegError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    if ties not in TIES:
        raise DPRegError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    if margin < 0:
        raise DPRegError(f"margin must be >= 0, got {margin!r}")
    missing = sorted({"dataset", "variant", "algorithm", "epsilon", statistic} - set(table))
    if missing:
        raise DPRegError(f"the suite table lacks columns {missing}")
    table = table[~table["dataset"].isin(list(exclude_datasets))]
    algorithms = list(dict.fromkeys(table["algorithm"]))
    ref = reference if reference is not None else default_reference(algorithms)
    if ref not in algorithms:
        raise DPRegError(
            f"reference method {ref!r} is not in the table (it has {', '.join(algorithms)})"
        )
    methods = [a for a in algorithms if include_nonprivate or _is_private(a)]
    rows = []
    for (variant, eps), cell in table.groupby(["variant", "epsilon"], sort=True):
        wide = cell.pivot_table(
            index="dataset", columns="algorithm", values=statistic, aggfunc="first"
        )
        wide = wide.reindex(columns=methods).replace([np.inf, -np.inf], np.nan)
        # a row whose every trial failed (NaN statistic) ranks last; a missing row drops the dataset
        wide = wide.where(~_all_failed(cell, wide, statistic), np.inf).dropna()
        if np.isinf(wide.to_numpy()).any():
            worst = wide.replace(np.inf, np.nan).max(axis=1).abs() * 2 + 1.0  # above every error
            wide = wide.where(np.isfinite(wide), pd.DataFrame({m: worst for m in wide.columns}))
        failed = _failed_share(cell, wide.index, methods)
        delta = float(cell["delta"].iloc[0]) if "delta" in cell else 1e-6
        if len(wide) < 2 or len(methods) < 2:
            raise DPRegError(
                f"variant {variant!r}, epsilon {eps:g}: fewer than 2 datasets with every method"
            )
        errors = wide.to_numpy()
        ranks = average_ranks(errors)
        test = friedman(ranks)
        cd = critical_difference(len(methods), len(wide), alpha)
        ref_errors = wide[ref].to_numpy() if ref in wide else None
        if ref_errors is None:
            ref_wide = cell[cell["algorithm"] == ref].set_index("dataset")[statistic]
            ref_errors = ref_wide.reindex(wide.index).to_numpy()
        avg = ranks.mean(axis=0)
        order = np.argsort(avg, kind="stable")
        for pos, j in enumerate(order, start=1):
            w, t, lo = wins_ties_losses(errors[:, j], ref_errors, margin)
            is_ref = methods[j] == ref
            rows.append(
                {
                    "variant": variant,
                    "epsilon": float(eps),
                    "position": pos,
                    "algorithm": methods[j],
                    **labels(methods[j]),
                    "privacy": privacy_flag(methods[j], float(eps), delta),
                    "failed": failed[methods[j]],
                    "avg_rank": float(avg[j]),
                    "datasets": len(wide),
                    "reference": ref,
                    "wins": pd.NA if is_ref else w,
                    "ties": pd.NA if is_ref else t,
                    "losses": pd.NA if is_ref else lo,
                    "sign_p": np.nan if is_ref else sign_test(w, t, lo, ties),
                    "methods": len(methods),
                    "friedman_chi2": test.chi2,
                    "friedman_p": test.p,
                    "iman_davenport_f": test.f,
                    "iman_davenport_p": test.f_p,
                    "cd": cd,
                    "alpha": alpha,
                    "statistic": statistic,
                    "margin": margin,
                    "ties_rule": ties,
                }
            )
    out = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    for col in ("wins", "ties", "losses"):
        out[col] = out[col].astype("Int64")
    return out


def _all_failed(cell: pd.DataFrame, wide: pd.DataFrame, statistic: str) -> pd.DataFrame:
    """True where a (dataset, method) row exists and every one of its trials failed."""
    if not {"failed", "trials"} <= set(cell):
        return pd.DataFrame(False, index=wide.index, columns=wide.columns)
    rows = cell.assign(_all=(cell["failed"] >= cell["trials"]) & cell[statistic].isna())
    flag = rows.pivot_table(index="dataset", columns="algorithm", values="_all", aggfunc="any")
    return flag.reindex(index=wide.index, columns=wide.columns).fillna(False).astype(bool)


def _failed_share(cell: pd.DataFrame, datasets: pd.Index, methods: Sequence[str]) -> dict:
    """Share of each method's trials that failed on the ranked datasets (NaN without the columns)."""
    if not {"failed", "trials"} <= set(cell):
        return dict.fromkeys(methods, np.nan)
    rows = cell[cell["dataset"].isin(datasets)].groupby("algorithm")[["failed", "trials"]].sum()
    rows = rows.reindex(list(methods))
    return {m: float(f / t) if t else np.nan for m, f, t in rows.itertuples()}


def to_markdown(board: pd.DataFrame, figure: str | None = None) -> str:
    """``leaderboard.md``: one section per (variant, epsilon), methods by average rank."""
    first = board.iloc[0]
    lines = [
        "# Leaderboard over Wang's suite",
        "",
        f"Methods ranked on each dataset by `{first['statistic']}` (1 = lowest error, ties "
        "averaged); datasets are the units (Demšar 2006). Friedman's chi-square (tie-corrected) "
        "and Iman-Davenport's F test whether all methods are equivalent; two methods whose "
        f"average ranks differ by less than the Nemenyi critical difference (CD, alpha = "
        f"{first['alpha']:g}) are not significantly different. W/T/L count datasets where a "
        f"method's error is below / within {100 * first['margin']:g}% of / above the reference "
        f"`{first['reference']}`; the sign test's p is two-sided, ties "
        + (
            "split evenly (one of an odd number dropped)."
            if first["ties_rule"] == "split"
            else "dropped."
        )
        + " Privacy: `not as claimed` marks a method some of whose releases at that epsilon are "
        "not private as its calibration claims (a reproduction of published code, or a step "
        "charged more than its nominal budget): it is ranked, but not at equal exact privacy. "
        "Neighbours: the relation its guarantee holds under (replace-one is not add/remove). "
        "Failed: the share of its trials that failed (a dataset where all did ranks it last)."
        " Generated by `dpreg.report.leaderboard`; do not edit.",
    ]
    if figure:
        lines += ["", f"Critical-difference diagram: [{figure}]({figure})."]
    for (variant, eps), cell in board.groupby(["variant", "epsilon"], sort=True):
        head = cell.iloc[0]
        lines += [
            "",
            f"## {variant}, epsilon = {eps:g}",
            "",
            f"{int(head['methods'])} methods on {int(head['datasets'])} datasets: Friedman "
            f"chi2 = {head['friedman_chi2']:.4g} (p = {head['friedman_p']:.3g}), Iman-Davenport "
            f"F = {head['iman_davenport_f']:.4g} (p = {head['iman_davenport_p']:.3g}); "
            f"CD = {head['cd']:.3f}.",
            "",
            "| # | method | avg rank | W/T/L vs reference | sign p | kind | privacy | failed "
            "| bounds | tuning | neighbours |",
            "|---:|---|---:|---|---:|---|---|---:|---|---|---|",
        ]
        for _, r in cell.iterrows():
            wtl = "reference" if pd.isna(r["wins"]) else f"{r['wins']}/{r['ties']}/{r['losses']}"
            p = "" if pd.isna(r["sign_p"]) else f"{r['sign_p']:.3g}"
            lines.append(
                f"| {r['position']} | {r['label']} (`{r['algorithm']}`) | {r['avg_rank']:.2f} | "
                f"{wtl} | {p} | {r['kind']} | {r['privacy']} | {_pct(r['failed'])} | "
                f"{r['bounds']} | {r['tuning']} | "
                f"{r['neighbouring']} |"
            )
    return "\n".join(lines) + "\n"


def _pct(share: float) -> str:
    return "" if pd.isna(share) or share == 0 else f"{100 * share:.3g}%"


def leaderboard_main(argv: Sequence[str] | None = None) -> int:
    """The ``dpreg leaderboard`` command: the suite table -> CSV, Markdown and CD diagram.

    ``argv`` as on the command line (``--help`` lists the options); returns
    the exit code, 0 on success (an error exits with 2 and one message).
    """
    parser = argparse.ArgumentParser(
        prog="dpreg leaderboard",
        description="Average ranks, Friedman/Nemenyi tests and sign tests over Wang's suite.",
    )
    parser.add_argument(
        "table",
        nargs="+",
        help="the suite's summary tables (results/tables/wang-suite.csv ...); a row in "
        "several is taken from the first",
    )
    parser.add_argument("--out-csv", default="results/leaderboard.csv")
    parser.add_argument("--out-md", default="results/leaderboard.md")
    parser.add_argument("--figure", help="critical-difference diagram (PNG; a PDF beside it)")
    parser.add_argument("--statistic", default="mse_median", choices=STATISTICS)
    parser.add_argument("--reference", help="default: adassp-tight if present, else adassp")
    parser.add_argument("--margin", type=float, default=0.01, help="tie margin (0.01 = 1%%)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--ties", default="split", choices=TIES)
    parser.add_argument("--include-nonprivate", action="store_true")
    parser.add_argument(
        "--exclude",
        nargs="*",
        default=list(DEFAULT_EXCLUDE),
        help=f"datasets left out (default: {' '.join(DEFAULT_EXCLUDE)}; none: --exclude alone)",
    )
    parser.add_argument(
        "--figure-epsilons",
        type=float,
        nargs="*",
        default=list(FIGURE_EPSILONS),
        help="panels of the figure (default: 0.1 1; every epsilon: --figure-epsilons alone)",
    )
    args = parser.parse_args(argv)
    try:
        board = leaderboard(
            # a committed table is checked by git: its sidecar is verified when present
            combine_tables([read_table(t, require_checksum=False) for t in args.table]),
            statistic=args.statistic,
            reference=args.reference,
            margin=args.margin,
            alpha=args.alpha,
            ties=args.ties,
            include_nonprivate=args.include_nonprivate,
            exclude_datasets=args.exclude,
        )
        figure = None
        if args.figure:
            save_cd_figure(board, args.figure, epsilons=args.figure_epsilons)
            figure = Path(args.figure).as_posix()
            md_dir = Path(args.out_md).resolve().parent
            try:
                figure = Path(args.figure).resolve().relative_to(md_dir).as_posix()
            except ValueError:
                pass
        write_table(board, args.out_csv)
        write_text_atomic(args.out_md, to_markdown(board, figure))
    except (DPRegError, OSError) as err:
        print(f"dpreg leaderboard: error: {err}", file=sys.stderr)
        return 2
    return 0
