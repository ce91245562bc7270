"""Check the numbers a results README quotes against the tables.

A README that reports results should only quote numbers that are in the
tables (or rounded from them).  :func:`unverified_numbers` lists every
number of a text with at least three significant digits that no table value
rounds to at the quoted precision; the generated verdict block (see
:func:`dpreg.report.claims.replace_readme_block`) and code blocks are skipped, since
the first is checked against ``claims.csv`` as a whole and the second holds
commands.  Numbers with fewer significant digits (percentages, epsilons,
counts) match some table value by chance and are not checked.

This is a weak check: with thousands of table values, a wrong number can
still match an unrelated cell by chance.  It catches numbers that are in no
table at all (typed by hand, or left over from an earlier run).
``python -m dpreg.report.claims check-readme`` runs it on ``results/README.md``
against every CSV under ``results/tables`` and ``results/provenance.json``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["quoted_numbers", "table_values", "unverified_numbers"]

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
# 1.23, 0.0532, 3.2·10⁻⁶, 3.2×10⁻⁶, 1.2e-05 (not part of a word, a version or a path)
_NUMBER = re.compile(
    r"(?<![\w.\-/])(\d+\.\d+|\d+)(?:(?:·|×)10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)|e([-+]?\d+))?(?![\w.]*[A-Za-z_/])"
)
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_BLOCK = re.compile(r"<!-- claims:begin.*?<!-- claims:end -->", re.S)


def _significant(mantissa: str) -> int:
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits)


def quoted_numbers(text: str, *, min_digits: int = 3) -> list[tuple[str, float, float]]:
    """(as written, value, half unit of the last digit) of the numbers in ``text``.

    Code spans, code blocks and the generated claims block are skipped; only
    numbers with at least ``min_digits`` significant digits are returned.
    """
    text = _BLOCK.sub(" ", _CODE.sub(" ", text))
    out = []
    for match in _NUMBER.finditer(text):
        mantissa, sup, exp = match.group(1), match.group(2), match.group(3)
        if _significant(mantissa) < min_digits:
            continue
        power = int(sup.translate(_SUPERSCRIPT)) if sup else int(exp) if exp else 0
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        value = float(mantissa) * 10.0**power
        half = 0.5 * 10.0 ** (power - decimals)
        out.append((match.group(0), value, half))
    return out


def table_values(paths: Iterable[str | Path]) -> np.ndarray:
    """Every number in the given CSV tables (cells and numbers inside text cells) or JSON files."""
    values: list[float] = []
    for path in paths:
        if str(path).endswith(".json"):
            text = Path(path).read_text(encoding="utf-8")
            values.extend(abs(float(t)) for t in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))
            continue
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        for col in frame.columns:
            for cell in frame[col]:
                for token in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell):
                    values.append(abs(float(token)))
    arr = np.unique(np.asarray(values, dtype=float))
    return arr[np.isfinite(arr)]


def unverified_numbers(text: str, values: np.ndarray, *, min_digits: int = 3) -> list[str]:
    """Numbers of ``text`` that no value in ``values`` rounds to at the quoted precision."""
    values = np.sort(np.asarray(values, dtype=float))
    bad = []
    for written, value, half in quoted_numbers(text, min_digits=min_digits):
        tol = half * (1 + 1e-9) + 1e-15 * abs(value)
        lo = np.searchsorted(values, value - tol, side="left")
        hi = np.searchsorted(values, value + tol, side="right")
        if hi <= lo and not math.isclose(value, 0.0):
            bad.append(written)
    return bad
