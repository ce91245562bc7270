"""Wang (2018)'s published UCI errors against ``results/tables/wang-suite.csv``.

Wang's ``code/exp_uci.m`` (yuxiangw/optimal_dp_linear_regression @ a14dbe5)
prints his paper's table: for every dataset, the 10-fold cross-validated test
MSE of trivial, non-private, ObjPert, OPS, SSP, AdaOPS and AdaSSP at one
epsilon (``epsindex = 7``, i.e. epsilon = 1 in his grid, although the comment
there says 0.1), delta = 1e-6, one noise draw per fold, printed with 3
significant digits as ``mean +/- 2 sd / sqrt(10)`` (sd over the 10 folds).
His per-dataset figures plot the same fold means, with error bars of one sd,
at all ten epsilon values.

Each published cell is typed into :data:`PUBLISHED` below as data, with the
source of its block in a comment, and matched to our row of the same
dataset, algorithm (:data:`METHODS`), epsilon and the ``wang`` variant.
The script writes one row per published cell to
``results/wang-suite/published-comparison.csv``::

    dataset, method, our_algorithm, epsilon, statistic, published, ours,
    ours_lo, ours_hi, ratio, source

``ours`` is ``mse_mean`` (the mean over 10 folds x the suite's noise repeats,
the expected value of Wang's statistic), ``ours_lo``/``ours_hi`` its bootstrap
interval (``mse_mean_lo``/``mse_mean_hi``) and ``ratio = published / ours``.
Wang's number is a single draw per fold, so it scatters around our mean by
more than the width of our interval (which bounds the expected value only):
"inside the interval" is a strict check, "ratio near 1" the meaningful one.

Status: no published number could be read offline (see :data:`SEARCHED`);
:data:`PUBLISHED` is empty and the script then writes nothing and says so.

Run from the repository root::

    python benchmarks/compare_wang_published.py [--table PATH] [--out PATH]

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI 2018;
arXiv:1803.02596.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "results" / "tables" / "wang-suite.csv"
OUT = ROOT / "results" / "wang-suite" / "published-comparison.csv"

#: Wang's method names (``methodsNamelist`` of exp_uci.m) -> our algorithm.
#: His table's "OPS" column is method 10, the second run of
#: OPS_epsdelta_balanced.m, i.e. our ``ops-balanced``.
METHODS: dict[str, str] = {
    "trivial": "trivial",
    "non-private": "ridge",
    "SSP": "ssp-wang",
    "ObjPert": "objpert",
    "OPS": "ops-balanced",
    "AdaOPS": "adaops",
    "AdaSSP": "adassp-wang",
    "OPS-concentrated": "ops-concentrated",
    "OPS-diffused": "ops-diffused",
    "OPS-balanced": "ops-balanced",
    "OPS-worstcase": "ops-worstcase",
}

#: Wang's datasets without a row in our suite: their raw files are missing
#: from his repository (results/wang-suite/README.md, "Datasets").
NOT_REBUILT: frozenset[str] = frozenset({"3droad", "gas"})

#: The statistic every published cell states (see the module docstring).
STATISTIC = "mean over 10 folds, one noise draw per fold"

#: Published cells: (dataset, Wang's method name, epsilon, value, source).
#: One block per source, each preceded by a comment naming the table or
#: figure and the page it was read from. Values are never estimated here.
#: None could be read offline; see SEARCHED.
PUBLISHED: tuple[tuple[str, str, float, float, str], ...] = ()

#: What was searched for the published numbers (offline copies only).
SEARCHED: tuple[str, ...] = (
    "stored web pages: groundai.com project page, pdfslide.net copy of the UAI "
    "proceedings PDF, bohrium.dp.tech abstract page of arXiv 1803.02596 (only "
    "the opening text of each page is stored: title, abstract, introduction)",
    "yuxiangw/optimal_dp_linear_regression: README.md (both stored versions), "
    "code/exp_uci.m (the table's print code, no values), code/exp_results.mat "
    "and code/figs/*.pdf (binary, no text stored), figures/ (png/pdf only)",
    "jeremy43/optimal_dp_linear_regression (Python port, no results files)",
    "public code index: exact strings of the printed table rows and method names",
)

COLUMNS = [
    "dataset",
    "method",
    "our_algorithm",
    "epsilon",
    "statistic",
    "published",
    "ours",
    "ours_lo",
    "ours_hi",
    "ratio",
    "source",
]


def compare(
    published: Iterable[tuple[str, str, float, float, str]],
    table: pd.DataFrame,
    *,
    variant: str = "wang",
) -> pd.DataFrame:
    """One row per published cell, next to our mean and its interval.

    Parameters
    ----------
    published : iterable of (dataset, method, epsilon, value, source)
        Wang's cells; ``method`` is one of his names (:data:`METHODS`).
    table : pandas.DataFrame
        The suite table (columns dataset, variant, algorithm, epsilon,
        mse_mean, mse_mean_lo, mse_mean_hi).
    variant : str, default "wang"
        Our variant that follows his protocol.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`; ``ratio = published / ours``.

    Raises
    ------
    DPRegError
        A method or dataset with no counterpart, or no row of ours at that
        epsilon.
    """
    rows = table[table["variant"] == variant]
    out = []
    for dataset, method, epsilon, value, source in published:
        if method not in METHODS:
            raise DPRegError(
                f"published method {method!r} has no counterpart; allowed: {sorted(METHODS)}"
            )
        if dataset in NOT_REBUILT:
            raise DPRegError(
                f"published dataset {dataset!r} is not in the suite (raw files missing); "
                "leave it out"
            )
        alg = METHODS[method]
        hit = rows[
            (rows["dataset"] == dataset)
            & (rows["algorithm"] == alg)
            & np.isclose(rows["epsilon"], epsilon, rtol=1e-9, atol=0.0)
        ]
        if len(hit) != 1:
            raise DPRegError(
                f"no single row of ours for dataset={dataset!r}, algorithm={alg!r}, "
                f"epsilon={epsilon!r}, variant={variant!r} (found {len(hit)})"
            )
        r = hit.iloc[0]
        ours = float(r["mse_mean"])
        out.append(
            {
                "dataset": dataset,
                "method": method,
                "our_algorithm": alg,
                "epsilon": epsilon,
                "statistic": STATISTIC,
                "published": float(value),
                "ours": ours,
                "ours_lo": float(r["mse_mean_lo"]),
                "ours_hi": float(r["mse_mean_hi"]),
                "ratio": float(value) / ours,
                "source": source,
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the comparison CSV, or say that no published value is typed in."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", type=Path, default=TABLE)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if not PUBLISHED:
        print("No published value of Wang (2018) is typed into PUBLISHED; nothing written.")
        print("Searched:")
        for item in SEARCHED:
            print(f"  - {item}")
        return 0
    result = compare(PUBLISHED, pd.read_csv(args.table))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result.to_csv(args.out, index=False, float_format="%.4g")
    inside = (
        (result["published"] >= result["ours_lo"]) & (result["published"] <= result["ours_hi"])
    ).sum()
    print(
        f"{len(result)} published cells; median ratio {result['ratio'].median():.3g}; "
        f"{inside} inside our interval; written to {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
