"""Command line of the audit: ``dpreg audit``, ``dpreg-audit``, ``python -m dpreg.audit``.

Modes
-----
* default (full): both layers at epsilon 0.1 and 1 -- the declared-scale
  layer with 10^7 draws per hypothesis for every raw mechanism and private
  algorithm it has a model of, the end-to-end layer with 2 x 10^5 fits per
  hypothesis for every private algorithm and 5,000 runs for every
  (non-reproduction algorithm, private-stats share 0.1 and 0.3).
* ``--quick``: both layers at epsilon 1 -- declared 2 x 10^5 draws (2,000
  verification draws), end-to-end 2 x 10^4 fits per algorithm (500 for an
  algorithm that fits on rows), and 1,000 runs of every non-reproduction
  algorithm behind private-stats share 0.1.  Under a minute on two cores
  (about 36 s of CPU measured, with the branch pairs; 10 s of it the
  privately tuned ``dpk-bas-tuned`` and ``tukey-em-tuned``, whose 500 fits
  per hypothesis run several DPKendall + BoostedAdaSSP or TukeyEM fits each
  and detect nothing: they are listed under "No power"); part of the test suite.

Both modes also audit, end to end, the pairs of :mod:`dpreg.audit.pairs`
(:func:`~dpreg.audit.pairs.pair_names`) with the algorithm's own number of
draws, as records with ``variant`` ``pair:<name>``.

In full mode an algorithm that fits on rows (``needs_rows``) gets a tenth of
the end-to-end draws.  Such algorithms are not run behind private
pre-processing, which hands algorithms statistics only.

Exit status: 0 when every record labelled ``private`` passes; 1 when one
fails (empirical lower bound above the claim, exact epsilon above the
claim, or lower bound above the exact epsilon; see
:func:`dpreg.audit.bounds.judge`); 2 on a usage error.  Records of
reproductions of Wang's code (``reproduction``) and of calibrations used
outside their theorem (``outside-validity``) are reported and do not decide
the exit status.

``--out DIR`` writes ``DIR/audit.csv`` (one row per record),
``DIR/audit.json`` (the settings, the run time and every full record) and
``DIR/audit.md`` (a report generated from the records), atomically.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_choice
from dpreg.algorithms import ALGORITHMS
from dpreg.audit.arguments import parser as _parser
from dpreg.audit.arguments import settings as _settings
from dpreg.audit.arguments import unwritable as _unwritable
from dpreg.audit.declared import audit_algorithm
from dpreg.audit.endtoend import audit_end_to_end
from dpreg.audit.model import (
    AUDITED,
    DEFAULT_D,
    MECHANISMS,
    claimed_releases,
    declared_layout,
    reproduces_fit,
)
from dpreg.audit.pairs import pair_names
from dpreg.io.atomic import write_text_atomic
from dpreg.progress import progress

__all__ = ["SUMMARY_KEYS", "main", "no_power", "run_audit", "write_outputs"]

#: Columns of the summary line and of ``audit.csv``.
SUMMARY_KEYS = (
    "layer",
    "name",
    "variant",
    "label",
    "kind",
    "claimed_epsilon",
    "delta",
    "empirical_epsilon_lb",
    "exact_epsilon",
    "n_samples",
    "verdict",
    "ceiling",
    "tightness",
    "power",
    "lb_exceeds_claim",
    "exact_exceeds_claim",
    "lb_exceeds_exact",
    "method",
    "noise_factor",
    "seed",
    "seconds",
)


def run_audit(
    names: Sequence[str],
    *,
    layer: str,
    settings: dict[str, Any],
    delta: float,
    seed: int,
    noise_factor: float = 1.0,
    emit=None,
) -> list[dict[str, Any]]:
    """Every record of one audit run; ``emit(record)`` is called as each is made."""
    records: list[dict[str, Any]] = []

    def add(rec: dict[str, Any]) -> None:
        records.append(rec)
        if emit is not None:
            emit(rec)

    for eps in settings["epsilon"]:
        if layer in ("both", "end-to-end"):
            for name in progress(names, desc=f"audit end-to-end, epsilon {eps:g}", unit="target"):
                if name in MECHANISMS:
                    continue
                kw = {"epsilon": eps, "delta": delta, "seed": seed}
                alg = ALGORITHMS[name]
                # fits on rows cost far more than fits on statistics: fewer draws
                n_e2e = settings["rows_samples" if alg.needs_rows else "e2e_samples"]
                add(_guarded(name, eps, None, samples=n_e2e, **kw))
                for pair in pair_names(
                    name, epsilon=eps, delta=delta, d=DEFAULT_D
                ):  # pairs built to take each branch
                    add(_guarded(name, eps, None, samples=n_e2e, pair=pair, **kw))
                if alg.needs_rows or (settings["ps_private_only"] and alg.reproduction):
                    continue  # private pre-processing hands algorithms statistics, not rows
                for share in settings["ps_shares"]:
                    add(_guarded(name, eps, share, samples=settings["ps_samples"], **kw))
        if layer in ("both", "declared"):
            for name in progress(names, desc=f"audit declared, epsilon {eps:g}", unit="target"):
                if name not in MECHANISMS and not _has_model(name, eps, delta):
                    continue
                add(
                    audit_algorithm(
                        name,
                        epsilon=eps,
                        delta=delta,
                        samples=settings["samples"],
                        seed=seed,
                        noise_factor=noise_factor,
                        check_samples=settings["check_samples"],
                    )
                )
    return records


def _guarded(name: str, eps: float, share: float | None, **kw: Any) -> dict[str, Any]:
    """An end-to-end record, or an ``error`` record when the real fit path refuses
    the audit datasets or records no releases (an entry that cannot be audited
    end to end fails the audit when it is labelled private)."""
    try:
        return audit_end_to_end(name, private_stats=share, **kw)
    except DPRegError as err:
        alg = ALGORITHMS[name]
        pair = kw.get("pair", "bounds")
        variant = None if share is None else f"private-stats-{share:g}"
        return {
            "layer": "end-to-end",
            "name": name,
            "variant": f"pair:{pair}" if pair != "bounds" else variant,
            "label": "reproduction" if alg.reproduction else "private",
            "kind": "algorithm",
            "claimed_epsilon": float(eps),
            "delta": float(kw["delta"]),
            "empirical_epsilon_lb": math.nan,
            "exact_epsilon": None,
            "n_samples": 0,
            "verdict": "error",
            "ceiling": None,
            "tightness": None,
            "power": "none",
            "error": str(err),
            "seed": kw.get("seed"),
        }


def _has_model(name: str, eps: float, delta: float) -> bool:
    """Whether the declared-scale layer has a model of ``name`` that reproduces its fit."""
    try:
        rel = claimed_releases(name, epsilon=eps, delta=delta, d=DEFAULT_D)
    except DPRegError:
        return False
    if declared_layout(name, rel) is None:
        return False
    return reproduces_fit(name, epsilon=eps, delta=delta)


def failing(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records labelled ``private`` whose verdict is not ``ok``."""
    return [r for r in records if r["label"] == "private" and r["verdict"] != "ok"]


def no_power(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records labelled ``private`` that pass with ``power == "none"``
    (:func:`dpreg.audit.bounds.power_of`): listed by name in ``audit.md``."""
    return [
        r
        for r in records
        if r["label"] == "private" and r["verdict"] == "ok" and r.get("power") == "none"
    ]


def _summary(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: rec.get(k) for k in SUMMARY_KEYS}


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN and infinities as None and numpy scalars as Python numbers
    (a release whose scale is stated by its own theorem records NaN)."""
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def summary_markdown(records: Sequence[dict[str, Any]], meta: dict) -> str:
    """A Markdown report of one audit run, generated from its records (``audit.md``)."""
    bad = failing(records)
    labels = sorted({r["label"] for r in records})
    counts = ", ".join(f"{sum(r['label'] == lab for r in records)} {lab}" for lab in labels)
    lines = [
        "# Privacy audit",
        "",
        f"Command: `{meta.get('command', 'dpreg audit')}` ({meta.get('mode', '')} mode, "
        f"seed {meta.get('seed')}, delta {meta.get('delta')}), {meta.get('seconds')} s.",
        "",
        f"{len(records)} records ({counts}); "
        + (
            "every record labelled private passes (exit status 0)."
            if not bad
            else f"{len(bad)} private record(s) FAIL (exit status 1): "
            + ", ".join(sorted({f"{r['name']} [{r['layer']}]" for r in bad}))
        ),
        "",
        "Not private-labelled but flagged (reported, not deciding the exit status):",
        "",
    ]
    flagged = [r for r in records if r["label"] != "private" and r["verdict"] != "ok"]
    for r in flagged:
        lines.append(
            f"- {r['name']} ({r['label']}, {r['layer']}, epsilon {r['claimed_epsilon']:g}): "
            f"{r['verdict']}; lower bound {_fmt(r['empirical_epsilon_lb'])}, exact "
            f"{_fmt(r['exact_epsilon'])}" + (f" ({r['error']})" if "error" in r else "")
        )
    if not flagged:
        lines.append("- none")
    weak = no_power(records)
    lines += [
        "",
        f"No power: {len(weak)} private record(s) pass without having detected anything "
        "(lower bound 0) or at a sample size whose ceiling cannot exceed the claim; "
        "they neither prove nor refute the claim (the exit status is unchanged):",
        "",
    ]
    for r in weak:
        lines.append(
            f"- {r['name']} ({r['layer']}{', ' + r['variant'] if r.get('variant') else ''}, "
            f"epsilon {r['claimed_epsilon']:g}): lower bound {_fmt(r['empirical_epsilon_lb'])}, "
            f"ceiling {_fmt(r.get('ceiling'))}, {r['n_samples']} draws"
        )
    if not weak:
        lines.append("- none")
    lines += [
        "",
        "| layer | target | variant | label | epsilon | delta | lower bound | exact epsilon "
        "| ceiling | tightness | power | verdict | draws |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['layer']} | {r['name']} | {r.get('variant') or ''} | {r['label']} "
            f"| {r['claimed_epsilon']:g} | {r['delta']:g} | {_fmt(r['empirical_epsilon_lb'])} "
            f"| {_fmt(r['exact_epsilon'])} | {_fmt(r.get('ceiling'))} "
            f"| {_fmt(r.get('tightness'))} | {r.get('power') or ''} | {r['verdict']} "
            f"| {r['n_samples']} |"
        )
    return "\n".join(lines) + "\n"


def _fmt(x: Any) -> str:
    return "" if x is None or not math.isfinite(float(x)) else f"{float(x):.3f}"


def write_outputs(out_dir: str | Path, records: Sequence[dict[str, Any]], meta: dict) -> None:
    """``audit.csv`` (summary rows), ``audit.json`` (settings and full records) and
    ``audit.md`` (:func:`summary_markdown`)."""
    out = Path(out_dir)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(SUMMARY_KEYS), lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow({k: "" if v is None else v for k, v in _summary(rec).items()})
    write_text_atomic(out / "audit.csv", buf.getvalue())
    doc = jsonable({**meta, "records": list(records)})
    write_text_atomic(out / "audit.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_text_atomic(out / "audit.md", summary_markdown(records, meta))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the audit; 0 when every private record passes, 1 when one fails, 2 on bad arguments."""
    parser = _parser()
    args = parser.parse_args(argv)
    names: list[str] = []
    for item in args.algorithms if args.algorithms is not None else list(AUDITED):
        names.extend(s.strip() for s in item.split(",") if s.strip())
    if not names:
        parser.error(f"--algorithms names no target; known targets: {', '.join(AUDITED)}")
    for flag, value, is_dir in (("--out", args.out, True), ("--json-out", args.json_out, False)):
        if value is not None and (problem := _unwritable(Path(value), is_dir)):
            parser.error(f"{flag} {value}: {problem}")
    settings = _settings(args)
    lines: list[str] = []

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(jsonable(rec if args.full else _summary(rec)), allow_nan=False)
        print(line, flush=True)
        lines.append(line)

    t0 = time.perf_counter()
    try:
        for name in names:
            check_choice(name, "audit target", AUDITED)
        records = run_audit(
            names,
            layer=args.layer,
            settings=settings,
            delta=args.delta,
            seed=args.seed,
            noise_factor=args.noise_factor,
            emit=emit,
        )
    except DPRegError as exc:
        print(f"dpreg-audit: error: {exc}", file=sys.stderr)
        return 2
    seconds = round(time.perf_counter() - t0, 1)
    if args.json_out:
        write_text_atomic(Path(args.json_out), "\n".join(lines) + "\n")
    bad = failing(records)
    if args.out:
        meta = {
            "command": "dpreg audit " + " ".join(argv if argv is not None else sys.argv[1:]),
            "mode": "quick" if args.quick else "full",
            "layer": args.layer,
            "settings": settings,
            "delta": args.delta,
            "seed": args.seed,
            "seconds": seconds,
            "exit_status": 1 if bad else 0,
        }
        write_outputs(args.out, records, meta)
    if bad:
        names_bad = sorted({f"{r['name']}[{r['layer']}]" for r in bad})
        print(f"dpreg-audit: privacy audit failed for: {', '.join(names_bad)}", file=sys.stderr)
        return 1
    return 0
