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
  (16-40 s measured); part of the test suite.

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

import argparse
import csv
import io
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_choice
from dpreg.algorithms import ALGORITHMS
from dpreg.audit.declared import CHECK_SAMPLES, DEFAULT_SAMPLES, audit_algorithm
from dpreg.audit.endtoend import E2E_SAMPLES, audit_end_to_end
from dpreg.audit.model import (
    AUDITED,
    DEFAULT_D,
    MECHANISMS,
    claimed_releases,
    declared_layout,
    reproduces_fit,
)
from dpreg.progress import progress

__all__ = ["SUMMARY_KEYS", "main", "run_audit", "write_outputs"]

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
    "lb_exceeds_claim",
    "exact_exceeds_claim",
    "lb_exceeds_exact",
    "method",
    "noise_factor",
    "seed",
    "seconds",
)

_QUICK = {
    "epsilon": [1.0],
    "samples": 200_000,
    "check_samples": 2_000,
    "e2e_samples": 20_000,
    "rows_samples": 500,
    "ps_samples": 1_000,
    "ps_shares": [0.1],
    "ps_private_only": True,
}
_FULL = {
    "epsilon": [0.1, 1.0],
    "samples": DEFAULT_SAMPLES,
    "check_samples": CHECK_SAMPLES,
    "e2e_samples": E2E_SAMPLES,
    "rows_samples": E2E_SAMPLES // 10,
    "ps_samples": 5_000,
    "ps_shares": [0.1, 0.3],
    "ps_private_only": True,
}


#: The largest sample counts accepted: the declared layer holds its draws in
#: memory (8 bytes each, two hypotheses), the end-to-end layer runs one fit per
#: sample; beyond these a run cannot finish on a workstation.
MAX_SAMPLES = 10**8
MAX_FITS = 10**7
#: The epsilon range the audit can judge: below it no test has power, above it
#: the privacy-loss distribution overflows double precision.
AUDIT_EPSILON_RANGE = (1e-3, 100.0)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _count(limit: int) -> Any:
    def parse(text: str) -> int:
        value = _number(text)
        if not (math.isfinite(value) and value == int(value) and 4 <= value <= limit):
            raise argparse.ArgumentTypeError(
                f"must be an integer from 4 to {limit:.0e}, got {text!r}"
            )
        return int(value)

    return parse


_parse_samples = _count(MAX_SAMPLES)
_parse_fits = _count(MAX_FITS)


def _parse_epsilon(text: str) -> float:
    value = _number(text)
    lo, hi = AUDIT_EPSILON_RANGE
    if not (math.isfinite(value) and lo <= value <= hi):
        raise argparse.ArgumentTypeError(f"must be a number from {lo:g} to {hi:g}, got {text!r}")
    return value


def _open_unit(what: str) -> Any:
    def parse(text: str) -> float:
        value = _number(text)
        if not (math.isfinite(value) and 0.0 < value < 1.0):
            raise argparse.ArgumentTypeError(
                f"{what} must be a number strictly between 0 and 1, got {text!r}"
            )
        return value

    return parse


def _parse_seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def _parse_factor(text: str) -> float:
    value = _number(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dpreg audit",
        description=(
            "Empirical privacy audit of every raw mechanism and private algorithm: a "
            "Clopper-Pearson lower bound on epsilon at the claimed delta from a test between "
            "neighbouring datasets, (1) end to end through the real fit path and the private "
            "pre-processing, on the values the fit releases, and (2) from the declared noise "
            "scales (faster, larger samples). Prints one JSON line per record. Exit status 1 "
            "iff a record labelled 'private' has a lower bound above its claim, an exact "
            "epsilon above its claim, or a lower bound above its exact epsilon; 2 on a usage "
            "error."
        ),
    )
    p.add_argument("--quick", action="store_true", help="the small settings (under a minute)")
    p.add_argument(
        "--layer",
        choices=("both", "end-to-end", "declared"),
        default="both",
        help="which layer(s) to run (default both)",
    )
    p.add_argument(
        "--samples",
        type=_parse_samples,
        default=None,
        help=f"declared layer: draws per hypothesis (full {DEFAULT_SAMPLES:.0e}, quick 2e5)",
    )
    p.add_argument(
        "--e2e-samples",
        type=_parse_fits,
        default=None,
        help=f"end-to-end layer: fits per hypothesis (full {E2E_SAMPLES:.0e}, quick 2e4)",
    )
    p.add_argument(
        "--ps-samples",
        type=_parse_fits,
        default=None,
        help="end-to-end runs per hypothesis behind private-stats (full 5e3, quick 1e3)",
    )
    p.add_argument(
        "--ps-shares",
        type=_open_unit("a private-stats share"),
        nargs="*",
        default=None,
        help="private-stats epsilon shares audited end to end (full 0.1 0.3, quick 0.1)",
    )
    p.add_argument(
        "--seed", type=_parse_seed, default=20200601, help="root seed (default 20200601)"
    )
    p.add_argument(
        "--epsilon",
        type=_parse_epsilon,
        nargs="+",
        default=None,
        help="total epsilon(s) (full 0.1 1)",
    )
    p.add_argument(
        "--delta", type=_open_unit("delta"), default=1e-6, help="claimed delta (default 1e-6)"
    )
    p.add_argument(
        "--algorithms",
        nargs="+",
        default=None,
        help=f"targets (space or comma separated; default all): {', '.join(AUDITED)}",
    )
    p.add_argument("--json-out", default=None, help="also write the JSON lines to this file")
    p.add_argument("--out", default=None, help="write audit.csv and audit.json to this directory")
    p.add_argument(
        "--noise-factor",
        type=_parse_factor,
        default=1.0,
        help="declared layer: multiply every noise scale (e.g. 0.25 shows a broken version)",
    )
    p.add_argument(
        "--check-samples",
        type=_parse_fits,
        default=None,
        help=f"declared layer: direct draws verifying the shortcut (full {CHECK_SAMPLES})",
    )
    p.add_argument("--full", action="store_true", help="print full records, not just the summary")
    return p


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    base = dict(_QUICK if args.quick else _FULL)
    for key in ("epsilon", "samples", "check_samples", "e2e_samples", "ps_samples", "ps_shares"):
        value = getattr(args, key)
        if value is not None:
            base[key] = value
    return base


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
        return {
            "layer": "end-to-end",
            "name": name,
            "variant": None if share is None else f"private-stats-{share:g}",
            "label": "reproduction" if alg.reproduction else "private",
            "kind": "algorithm",
            "claimed_epsilon": float(eps),
            "delta": float(kw["delta"]),
            "empirical_epsilon_lb": math.nan,
            "exact_epsilon": None,
            "n_samples": 0,
            "verdict": "error",
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


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    lines += [
        "",
        "| layer | target | variant | label | epsilon | delta | lower bound | exact epsilon "
        "| verdict | draws |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['layer']} | {r['name']} | {r.get('variant') or ''} | {r['label']} "
            f"| {r['claimed_epsilon']:g} | {r['delta']:g} | {_fmt(r['empirical_epsilon_lb'])} "
            f"| {_fmt(r['exact_epsilon'])} | {r['verdict']} | {r['n_samples']} |"
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
    _atomic_write(out / "audit.csv", buf.getvalue())
    doc = jsonable({**meta, "records": list(records)})
    _atomic_write(out / "audit.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    _atomic_write(out / "audit.md", summary_markdown(records, meta))


def _unwritable(path: Path, is_dir: bool) -> str | None:
    """Why ``path`` cannot receive the audit's output (checked before the run, not after it)."""
    if is_dir and path.exists() and not path.is_dir():
        return "exists and is not a directory"
    if not is_dir and path.is_dir():
        return "is a directory, not a file"
    folder = path if is_dir else path.parent
    while not folder.exists():  # the nearest existing ancestor must let us create the rest
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    return None


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
        _atomic_write(Path(args.json_out), "\n".join(lines) + "\n")
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
