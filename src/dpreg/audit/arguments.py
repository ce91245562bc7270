"""Arguments of ``dpreg audit``: the quick and full settings, the parser, and the
checks every argument passes before the run (one usage error naming the flag
and what is allowed; nothing is written on a usage error)."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

from dpreg.audit.declared import CHECK_SAMPLES, DEFAULT_SAMPLES
from dpreg.audit.endtoend import E2E_SAMPLES
from dpreg.audit.model import AUDITED

__all__ = ["AUDIT_EPSILON_RANGE", "MAX_FITS", "MAX_SAMPLES", "parser", "settings", "unwritable"]

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


def parser() -> argparse.ArgumentParser:
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


def settings(args: argparse.Namespace) -> dict[str, Any]:
    base = dict(_QUICK if args.quick else _FULL)
    for key in ("epsilon", "samples", "check_samples", "e2e_samples", "ps_samples", "ps_shares"):
        value = getattr(args, key)
        if value is not None:
            base[key] = value
    return base


def unwritable(path: Path, is_dir: bool) -> str | None:
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
