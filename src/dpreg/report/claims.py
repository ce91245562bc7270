"""Claims in the results README, and the claims command line.

:func:`render_markdown` turns ``claims.csv``
(:func:`dpreg.inference.evaluation.evaluate_claims`) into the verdict block of
a README and :func:`replace_readme_block` puts it between the claims
markers; ``dpreg claims {evaluate,readme,check-readme,derive}`` (or ``python -m
dpreg.report.claims ...``, the same command) runs the claims outside
Snakemake (see config/README.md); ``derive`` rewrites a README's derived
numbers from the tables (:mod:`dpreg.report.derived`), which ``check-readme``
recomputes.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.configfile import load_config_file
from dpreg.inference.claims import parse_claims
from dpreg.inference.evaluation import evaluate_claims
from dpreg.inference.registry import attach_claims, lock_path, register_claims
from dpreg.io.checksum import verify
from dpreg.io.tables import (
    read_claims,
    write_claims,
    write_text_atomic,
)
from dpreg.report.derived import check_derived, rewrite_derived, untagged_text
from dpreg.report.quotes import table_values, unverified_numbers

__all__ = [
    "README_BEGIN",
    "README_END",
    "main",
    "readme_block",
    "render_markdown",
    "replace_readme_block",
]


#: Markers of the generated block in a README; the begin marker names the
#: claims table the block was rendered from (a path relative to the
#: repository root), so a test can check every block against its table.
README_BEGIN = "<!-- claims:begin"
README_END = "<!-- claims:end -->"
_BEGIN_RE = re.compile(r"<!-- claims:begin(?: source=(\S+))?[^\n]*-->\n")


# --------------------------------------------------------------------------
# markdown for results/README.md
# --------------------------------------------------------------------------
def _num(x: float) -> str:
    """A ratio as the README prints it: 3 significant digits."""
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.3g}"


def _side_text(variant: str, algorithm: str, other: tuple[str, str]) -> str:
    return f"`{algorithm}`" if variant == other[0] else f"`{algorithm}` · `{variant}`"


def _pct(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{100 * x:.0f}%"


def render_markdown(claims: pd.DataFrame, *, table: str = "tables/claims.csv") -> str:
    """Markdown of every claim and its one decision, grouped by experiment.

    For each experiment a table lists each claim (status confirmatory /
    exploratory, source thesis / ours, the comparison, statistic, epsilon range
    covered, expected direction and margin), the decision, the pooled
    geometric-mean ratio with its interval at the claim's (Holm-adjusted)
    level, the number of datasets, the failure rates of the two sides, and the
    per-point description (supported / contradicted / inconclusive of n
    points); below it the statements.  Every number comes from ``claims``
    (the text is what :func:`replace_readme_block` inserts between the README
    markers).
    """
    if claims.empty:
        return "_No experiment states claims._\n"
    lines: list[str] = []
    overall = claims[claims["scope"] == "overall"]
    points = claims[claims["scope"] == "point"]
    resamples = int(overall["resamples"].iloc[0])
    n_conf = int((overall["status"] == "confirmatory").sum())
    lines.append(
        f'Decisions computed from `{table}` (rule in config/README.md, "Intervals '
        'and claims"): one per claim, on the geometric-mean ratio of the first named over '
        "the second over its datasets and ε (an ε-independent comparison once per dataset), "
        f"with a dataset bootstrap ({resamples} replicates; datasets, then each dataset's "
        f"partitions, folds within them and repeats within folds), Holm-adjusted over the {n_conf} confirmatory claims; a failed trial "
        "counts as the trivial predictor (θ = 0). Exploratory claims (not registered with this "
        "definition, or judged on trials drawn before their registration) are judged at the "
        'unadjusted level. The point counts are description only. "thesis" marks the '
        'thesis\' claims (ours where the thesis text is not available: our reading), "ours" '
        "this project's."
    )
    for exp_id in dict.fromkeys(overall["experiment"]):
        lines += ["", f"### `{exp_id}`", ""]
        lines.append(
            "| claim | status | source | comparison | stat | ε | expect | decision "
            "| pooled ratio [interval] (level) | datasets | failed a / b | points s / c / i of n |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        exp_rows = overall[overall["experiment"] == exp_id]
        for row in exp_rows.itertuples(index=False):
            pts = points[points["claim"] == row.claim]
            a = _side_text(row.a_variant, row.a_algorithm, (row.b_variant, row.b_algorithm))
            b = _side_text(row.b_variant, row.b_algorithm, (row.a_variant, row.a_algorithm))
            if row.a_variant == row.b_variant:
                a = f"{a} vs {b} (`{row.a_variant}`)"
            else:
                a = f"{a} vs {b}"
            eps = pts["epsilon"].dropna()
            if len(pts) and not len(eps):
                where = "any (ε-independent)"
            elif len(eps):
                where = f"{_num(eps.min())}–{_num(eps.max())}"
            else:
                where = "–"
            expect = row.expect if row.margin == 0 else f"{row.expect} (±{row.margin:g})"
            lines.append(
                f"| {row.claim} | {row.status} | {row.source} | {a} | {row.statistic} | {where} "
                f"| {expect} | **{row.verdict}** | {_num(row.ratio)} [{_num(row.ratio_lo)}, "
                f"{_num(row.ratio_hi)}] ({row.level:.4g}) | {row.datasets} | "
                f"{_pct(row.a_failed)} / {_pct(row.b_failed)} | {row.supported} / "
                f"{row.contradicted} / {row.inconclusive} of {row.points} |"
            )
        lines.append("")
        for row in exp_rows.itertuples(index=False):
            if row.statement:
                lines.append(f"- {row.claim}: {row.statement}")
    return "\n".join(lines) + "\n"


def replace_readme_block(readme: str, block: str, *, source: str = "") -> str:
    """``readme`` with the text between the claims markers replaced by ``block``.

    ``source`` (the claims table's path) is written into the begin marker.
    The markers are added at the end, under a heading, when the README has
    none; the text outside them is kept as it is.
    """
    tag = f" source={source}" if source else ""
    body = (
        f"{README_BEGIN}{tag} (generated by python -m dpreg.report.claims readme) -->\n"
        f"{block.rstrip()}\n{README_END}"
    )
    match = _BEGIN_RE.search(readme)
    if match and README_END in readme[match.end() :]:
        tail = readme[match.end() :].split(README_END, 1)[1]
        return readme[: match.start()] + body + tail
    return readme.rstrip("\n") + "\n\n## Claims and computed verdicts\n\n" + body + "\n"


def readme_block(readme: str) -> tuple[str, str] | None:
    """(source, block) of a README's generated block, or None when it has none."""
    match = _BEGIN_RE.search(readme)
    if not match or README_END not in readme[match.end() :]:
        return None
    block = readme[match.end() :].split(README_END, 1)[0]
    return match.group(1) or "", block.strip("\n")


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
def _load_config(path: str | Path) -> dict[str, Any]:
    cfg = load_config_file(path)  # read strictly: a repeated key or bad YAML names the file
    if "experiments" not in cfg:
        raise DPRegError(f"{path}: not a dpreg configuration (no 'experiments' key)")
    attach_claims(cfg)  # the claims file and its registration record, in place
    return cfg


def _cli_trial_files(cfg: Mapping[str, Any], root: Path):
    """Trial files and row selection of every experiment with claims.

    The pipeline's layout is ``<root>/<dataset>/<shard>.parquet`` (every
    experiment's cells of a dataset in one place); the older
    ``<root>/<experiment>/<dataset>.csv.gz`` is read when present.
    """
    shared = sorted(root.glob("*/*.parquet"))
    default_r = (cfg.get("cv") or {}).get("repeats", 10)
    files: dict[str, list[Path]] = {}
    select: dict[str, dict[str, Any]] = {}
    for exp, spec in cfg["experiments"].items():
        if not parse_claims(exp, spec):
            continue
        found = sorted((root / exp).glob("*.csv.gz")) or shared
        if not found:
            print(
                f"note: no trial files for {exp} under {root}; its claims are left out",
                file=sys.stderr,
            )
            continue
        files[exp] = found
        select[exp] = {"repeats": spec.get("repeats", default_r)}
    return files, select


def _check_readme(readme: str, tables: Sequence[str], provenance: str) -> int:
    sources = [p for t in tables for p in sorted(Path(t).glob("*.csv"))]
    sources += [p for p in [Path(provenance)] if p.exists()]
    # numbers are checked only against whole tables: a sidecar that exists must match (a
    # committed table without one is checked by git)
    for source in sources:
        verify(source, "results file", missing_ok=True)
    text = Path(readme).read_text(encoding="utf-8")
    # derived numbers (tagged with their computation) are recomputed; the rest must be in a table
    wrong = check_derived(text, tables)
    for message in wrong:
        print(f"{readme}: {message} (rewrite with: dpreg claims derive --readme {readme})")
    bad = unverified_numbers(untagged_text(text), table_values(sources))
    where = " or ".join(tables)
    for number in bad:
        print(f"{readme}: {number} is in no table under {where} (nor in {provenance})")
    return 1 if bad or wrong else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``dpreg claims {register,evaluate,readme,check-readme,derive}`` (see config/README.md)."""
    parser = argparse.ArgumentParser(
        prog="dpreg claims",
        description="Claims as data: paired comparisons with computed verdicts.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rg = sub.add_parser(
        "register", help="record each claim's definition hash, date and commit (claims.lock)"
    )
    rg.add_argument("--claims", default="config/claims.yaml")
    rg.add_argument(
        "--seen-seed",
        type=int,
        action="append",
        default=[],
        help="a root seed whose trials were already drawn (its verdicts stay exploratory)",
    )
    rg.add_argument("--note", default="", help="written into the record")
    ev = sub.add_parser("evaluate", help="trial files -> claims.csv")
    ev.add_argument("--config", default="config/config.yaml")
    ev.add_argument(
        "--trials",
        default="results/trials",
        help="folder of <dataset>/<shard>.parquet (or <experiment>/<dataset>.csv.gz)",
    )
    ev.add_argument("--out", default="results/tables/claims.csv")
    rd = sub.add_parser("readme", help="claims.csv -> the verdict block of results/README.md")
    rd.add_argument("--claims", default="results/tables/claims.csv")
    rd.add_argument("--readme", default="results/README.md")
    ck = sub.add_parser("check-readme", help="list README numbers found in no table")
    ck.add_argument("--readme", default="results/README.md")
    ck.add_argument(
        "--tables", action="append", help="folder of CSV tables (repeatable; results/tables)"
    )
    ck.add_argument("--provenance", default="results/provenance.json")
    dv = sub.add_parser("derive", help="rewrite a README's tagged derived numbers from the tables")
    dv.add_argument("--readme", default="results/wang-suite/README.md")
    dv.add_argument(
        "--tables",
        action="append",
        help="folder of CSV tables (repeatable; results/tables and results/wang-suite)",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "register":
            record = register_claims(args.claims, seen_seeds=args.seen_seed, note=args.note)
            print(f"registered {len(record['claims'])} claims in {lock_path(args.claims)}")
            return 0
        if args.command == "check-readme":
            return _check_readme(args.readme, args.tables or ["results/tables"], args.provenance)
        if args.command == "derive":
            path = Path(args.readme)
            folders = args.tables or ["results/tables", "results/wang-suite"]
            text = path.read_text(encoding="utf-8")
            changed = len(check_derived(text, folders))
            write_text_atomic(path, rewrite_derived(text, folders))
            print(
                f"{path}: derived numbers recomputed from {', '.join(folders)} ({changed} changed)"
            )
            return 0
        if args.command == "evaluate":
            cfg = _load_config(args.config)
            files, select = _cli_trial_files(cfg, Path(args.trials))
            cfg = {
                **cfg,
                "experiments": {e: x for e, x in cfg["experiments"].items() if e in files},
            }
            write_claims(evaluate_claims(cfg, files, select=select), args.out)
        else:
            # a committed claims.csv may lack its sidecar (git checks it); one that has it must match
            block = render_markdown(
                read_claims(args.claims, require_checksum=False),
                table=f"tables/{Path(args.claims).name}",
            )
            path = Path(args.readme)
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            write_text_atomic(path, replace_readme_block(text, block, source=args.claims))
    except DPRegError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
