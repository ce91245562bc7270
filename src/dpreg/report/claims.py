"""Claims in the results README, and the claims command line.

:func:`render_markdown` turns ``claims.csv``
(:func:`dpreg.inference.evaluation.evaluate_claims`) into the verdict block of
a README and :func:`replace_readme_block` puts it between the claims
markers; ``dpreg claims {evaluate,readme,check-readme}`` (or ``python -m
dpreg.report.claims ...``, the same command) runs the claims outside
Snakemake (see config/README.md).
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
import yaml

from dpreg._validation import DPRegError
from dpreg.inference.claims import parse_claims
from dpreg.inference.evaluation import evaluate_claims
from dpreg.io.checksum import verify
from dpreg.io.tables import (
    read_claims,
    write_claims,
    write_text_atomic,
)
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


def render_markdown(claims: pd.DataFrame) -> str:
    """Markdown of every claim and its computed verdict, grouped by experiment.

    For each experiment a table lists each claim (source thesis / ours, the
    comparison, statistic, epsilon range covered, expected direction), the
    overall verdict with the point counts, and the median and range of the
    point ratios; below it, the points that contradict a claim are listed with
    their interval.  Every number comes from ``claims`` (the text is what
    :func:`replace_readme_block` inserts between the README markers).
    """
    if claims.empty:
        return "_No experiment states claims._\n"
    lines: list[str] = []
    overall = claims[claims["scope"] == "overall"]
    points = claims[claims["scope"] == "point"]
    level = float(overall["level"].iloc[0])
    resamples = int(overall["resamples"].iloc[0])
    lines.append(
        f"Verdicts computed from `tables/claims.csv` ({level:.0%} paired bootstrap intervals, "
        f"{resamples} replicates; rule in config/README.md). Ratio = statistic of the first "
        'named over the second; "thesis" marks the thesis\' claims (ours where the thesis '
        'text is not available: our reading), "ours" this project\'s.'
    )
    for exp_id in dict.fromkeys(overall["experiment"]):
        lines += ["", f"### `{exp_id}`", ""]
        lines.append(
            "| claim | source | comparison | stat | ε | expect | verdict | s / c / i of n | ratio median (range) |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        exp_rows = overall[overall["experiment"] == exp_id]
        for row in exp_rows.itertuples(index=False):
            pts = points[points["claim"] == row.claim]
            a = _side_text(row.a_variant, row.a_algorithm, (row.b_variant, row.b_algorithm))
            b = _side_text(row.b_variant, row.b_algorithm, (row.a_variant, row.a_algorithm))
            if row.a_variant == row.b_variant:
                a = f"{a} vs {b} (`{row.a_variant}`)"
            else:
                a = f"{a} vs {b}"
            eps = f"{_num(pts['epsilon'].min())}–{_num(pts['epsilon'].max())}" if len(pts) else "–"
            expect = row.expect if row.margin == 0 else f"{row.expect} (±{row.margin:g})"
            lines.append(
                f"| {row.claim} | {row.source} | {a} | {row.statistic} | {eps} | {expect} | "
                f"**{row.verdict}** | {row.supported} / {row.contradicted} / {row.inconclusive}"
                f" of {row.points} | {_num(row.ratio)} ({_num(row.ratio_lo)}–{_num(row.ratio_hi)}) |"
            )
        lines.append("")
        for row in exp_rows.itertuples(index=False):
            if row.statement:
                lines.append(f"- {row.claim}: {row.statement}")
            bad = points[(points["claim"] == row.claim) & (points["verdict"] == "contradicted")]
            if len(bad):
                where = "; ".join(
                    f"{p.dataset} ε={_num(p.epsilon)}: {_num(p.ratio)} [{_num(p.ratio_lo)}, {_num(p.ratio_hi)}]"
                    for p in bad.itertuples(index=False)
                )
                lines.append(f"  Contradicted at: {where}.")
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
    with open(path, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh)
    if not isinstance(cfg, dict) or "experiments" not in cfg:
        raise DPRegError(f"{path}: not a dpreg configuration (no 'experiments' key)")
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


def _check_readme(readme: str, tables: str, provenance: str) -> int:
    sources = sorted(Path(tables).glob("*.csv")) + [p for p in [Path(provenance)] if p.exists()]
    # numbers are checked only against whole tables: a sidecar that exists must match (a
    # committed table without one is checked by git)
    for source in sources:
        verify(source, "results file", missing_ok=True)
    bad = unverified_numbers(Path(readme).read_text(encoding="utf-8"), table_values(sources))
    for number in bad:
        print(f"{readme}: {number} is in no table under {tables} (nor in {provenance})")
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``dpreg claims {evaluate,readme,check-readme}`` (see config/README.md)."""
    parser = argparse.ArgumentParser(
        prog="dpreg claims",
        description="Claims as data: paired comparisons with computed verdicts.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
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
    ck.add_argument("--tables", default="results/tables")
    ck.add_argument("--provenance", default="results/provenance.json")
    args = parser.parse_args(argv)
    try:
        if args.command == "check-readme":
            return _check_readme(args.readme, args.tables, args.provenance)
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
            block = render_markdown(read_claims(args.claims, require_checksum=False))
            path = Path(args.readme)
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            write_text_atomic(path, replace_readme_block(text, block, source=args.claims))
    except DPRegError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
