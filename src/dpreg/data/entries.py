"""Dataset entries: the keys, their defaults, and :func:`validate_entry`.

An entry is the mapping a configuration gives for one dataset (see the
package docstring of :mod:`dpreg.data` for the meaning of every key).  This
module only checks entries and fills in defaults; it reads no data.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dpreg._validation import DPRegError, check_choice
from dpreg.data.synthetic import check_synthetic

__all__ = [
    "DATASET_KEYS",
    "DATE_PARTS",
    "DEFAULT_DATASETS",
    "DEFAULT_DOWNLOAD_DEADLINE",
    "TIME_PARTS",
    "validate_entry",
]

#: The keys a dataset entry may hold, with a one-line meaning each.
DATASET_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "uci_id": "UCI Machine Learning Repository id (int)",
        "url": "http(s) address of a data file (needs sha256)",
        "format": "csv | whitespace | zip | tgz (default: from the file suffix)",
        "member": "file inside a zip/tgz archive",
        "path": "local data file, or folder with data.csv + metadata.json",
        "synthetic": "generated data with a known theta*: {design, n, d, noise, seed, theta}",
        "sha256": "expected SHA-256 of the downloaded or local data file",
        "refresh": "true: download even if the mirror or cache holds the dataset",
        "download_deadline": "seconds a whole download may take (default 600)",
        "download_max_bytes": "largest download accepted, in bytes (default 1 GiB)",
        "target": "target column (default: the variable with role Target)",
        "target_transform": "none | log | log1p",
        "set_values": "data row (from 1) -> {column: value}: corrections of single cells",
        "recode": "column -> {value: new value}: a value map applied before anything else",
        "drop": "list of columns to remove",
        "include": "columns used as features although their role is ID, Other or Target",
        "dates": "column -> parts (year, month, day, weekday, dayofyear, hour, minute, second)",
        "missing": "error | drop_rows | zero",
        "description": "free text",
    }
)

#: Parts a ``dates`` column can be expanded into.
DATE_PARTS: tuple[str, ...] = (
    "year",
    "month",
    "day",
    "weekday",
    "dayofyear",
    "hour",
    "minute",
    "second",
)
#: The parts a column of times of day (``HH:MM`` or ``HH:MM:SS``) has.
TIME_PARTS: tuple[str, ...] = ("hour", "minute", "second")

FORMATS: tuple[str, ...] = ("csv", "whitespace", "zip", "tgz")
TARGET_TRANSFORMS: tuple[str, ...] = ("none", "log", "log1p")
MISSING_POLICIES: tuple[str, ...] = ("error", "drop_rows", "zero")
ROLES: tuple[str, ...] = ("ID", "Feature", "Target", "Other")
SOURCES: tuple[str, ...] = ("mirror", "uci", "url", "path", "synthetic")

#: Seconds a whole download may take unless the entry sets ``download_deadline``.
DEFAULT_DOWNLOAD_DEADLINE = 600.0
#: Bytes a download may deliver unless the entry sets ``download_max_bytes``
#: (the largest dataset of Wang's suite is about 60 MB).
DEFAULT_DOWNLOAD_MAX_BYTES = 1 << 30

#: Wang's recipes for the four datasets of the thesis (SPEC section 1) and the
#: README's example of adding a dataset.  ``config/config.yaml`` repeats them.
DEFAULT_DATASETS: dict[str, dict[str, Any]] = {
    "airfoil": {
        "uci_id": 291,
        "description": "Airfoil self-noise (NASA), 5 regressors",
    },
    "concrete": {
        "uci_id": 165,
        "description": "Concrete compressive strength, 8 regressors",
    },
    "bike": {
        "uci_id": 275,
        "target": "cnt",
        "target_transform": "log",
        "drop": ["instant"],
        "include": ["casual", "registered"],
        "dates": {"dteday": ["year", "month", "day"]},
        "description": "Bike sharing, hourly counts; y = log(cnt)",
    },
    "elevators": {
        # Not in the UCI repository; Torgo's archive has no header row and
        # splits the rows over two files, OpenML serves ARFF: the mirror
        # (or a `path:`) is the only source.
        "target": "Goal",
        "target_transform": "log",
        "description": "Elevators (Torgo's collection, OpenML 216); y = log(Goal)",
    },
    "wine-red": {
        "uci_id": 186,
        "description": (
            "Red wines of Wine Quality (UCI 186), the mirror's copy; a download "
            "through uci_id returns red and white wines together"
        ),
    },
}

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_SHA_RE = re.compile(r"^[0-9a-fA-F]{64}$")
OFFLINE_HINT = (
    "to work offline, set path: to a CSV file or to a folder holding data.csv "
    "and metadata.json (the mirror layout)"
)

_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "uci_id": None,
        "url": None,
        "format": None,
        "member": None,
        "path": None,
        "synthetic": None,
        "sha256": None,
        "refresh": False,
        "download_deadline": DEFAULT_DOWNLOAD_DEADLINE,
        "download_max_bytes": DEFAULT_DOWNLOAD_MAX_BYTES,
        "target": None,
        "target_transform": "none",
        "set_values": {},
        "recode": {},
        "drop": [],
        "include": [],
        "dates": {},
        "missing": "error",
        "description": "",
    }
)


def fail(name: str, message: str) -> DPRegError:
    """The error for dataset ``name``: ``dataset '<name>': <message>``."""
    return DPRegError(f"dataset {name!r}: {message}")


def _str_list(name: str, key: str, value: object) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise fail(name, f"{key} must be a list of column names, got {value!r}")
    if len(set(value)) != len(value):
        raise fail(name, f"{key} lists a column twice: {list(value)!r}")
    return list(value)


def _choice(name: str, key: str, value: object, choices: tuple[str, ...]) -> str:
    try:
        return check_choice(value, f"{key} value", choices)
    except DPRegError as exc:
        raise fail(name, str(exc)) from None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def infer_format(location: str) -> str:
    """``zip``, ``tgz`` or ``csv`` from the suffix of a file name or address."""
    low = location.lower().split("?", 1)[0]
    if low.endswith(".zip"):
        return "zip"
    if low.endswith((".tgz", ".tar.gz")):
        return "tgz"
    return "csv"


# --------------------------------------------------------------------------
# one checker per group of keys; each reads and normalises ``e`` in place


def _with_defaults(name: str, entry: Mapping[str, Any] | None) -> dict[str, Any]:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise DPRegError(
            f"dataset name {name!r} is not allowed; use letters, digits and _ . + - "
            "(it names files)"
        )
    if entry is None:
        entry = {}
    if not isinstance(entry, Mapping):
        raise fail(name, f"the entry must be a mapping of keys to values, got {entry!r}")
    for key in entry:
        if key not in DATASET_KEYS:
            close = difflib.get_close_matches(str(key), list(DATASET_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise fail(name, f"unknown key {key!r}{hint}; allowed keys: {', '.join(DATASET_KEYS)}")
    e = dict(_DEFAULTS)
    e.update({k: v for k, v in entry.items() if v is not None})
    return e


def _check_synthetic(name: str, e: dict[str, Any], entry: Mapping[str, Any]) -> None:
    """A ``synthetic`` entry takes no other key but ``description`` (no file, no recipe)."""
    if e["synthetic"] is None:
        return
    others = [k for k in entry if k not in ("synthetic", "description") and entry[k] is not None]
    if others:
        raise fail(
            name,
            f"a synthetic dataset takes only synthetic and description; remove "
            f"{', '.join(others)} (the generated table needs no source or recipe)",
        )
    e["synthetic"] = check_synthetic(name, e["synthetic"])


def _check_source(name: str, e: dict[str, Any], mirror_dir: str | os.PathLike | None) -> None:
    sources = [k for k in ("uci_id", "url", "path", "synthetic") if e[k] is not None]
    if len(sources) > 1:
        raise fail(
            name, f"give exactly one of uci_id, url, path, synthetic; got {', '.join(sources)}"
        )
    uci = e["uci_id"]
    if uci is not None and (isinstance(uci, bool) or not isinstance(uci, int) or uci < 1):
        raise fail(name, f"uci_id must be a positive integer, got {uci!r}")
    url = e["url"]
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("http://", "https://"))
    ):
        raise fail(name, f"url must be an http:// or https:// address, got {url!r}")
    if e["path"] is not None:
        if not isinstance(e["path"], str | os.PathLike) or not str(e["path"]):
            raise fail(name, f"path must be a file or folder name, got {e['path']!r}")
        e["path"] = str(e["path"])
    if not sources and mirror_dir is not None:
        if not (Path(mirror_dir) / name / "data.csv").is_file():
            raise fail(
                name,
                f"no source: it is not in the mirror {mirror_dir} and has none of "
                f"uci_id, url, path, synthetic; {OFFLINE_HINT}",
            )


def _check_format(name: str, e: dict[str, Any]) -> None:
    location = e["url"] or e["path"]
    if e["format"] is not None:
        if location is None:
            raise fail(name, "format applies to url and path sources only")
        _choice(name, "format", e["format"], FORMATS)
    elif location is not None:
        e["format"] = infer_format(location)
    if e["member"] is not None:
        if e["format"] not in ("zip", "tgz"):
            raise fail(name, "member names a file inside an archive; set format: zip or tgz")
        if not isinstance(e["member"], str) or not e["member"]:
            raise fail(name, f"member must be a file name, got {e['member']!r}")


def _check_download(name: str, e: dict[str, Any]) -> None:
    if e["sha256"] is not None:
        if not isinstance(e["sha256"], str) or not _SHA_RE.match(e["sha256"]):
            raise fail(name, f"sha256 must be 64 hex digits, got {e['sha256']!r}")
        if e["uci_id"] is None and e["url"] is None and e["path"] is None:
            raise fail(name, "sha256 pins a downloaded or local file; give uci_id, url or path")
        e["sha256"] = e["sha256"].lower()
    if not isinstance(e["refresh"], bool):
        raise fail(name, f"refresh must be true or false, got {e['refresh']!r}")
    if e["refresh"] and e["uci_id"] is None and e["url"] is None:
        raise fail(name, "refresh: true needs uci_id or url to download from")
    limit = e["download_deadline"]
    if not _is_number(limit) or not math.isfinite(limit) or limit <= 0:
        raise fail(name, f"download_deadline must be a number of seconds > 0, got {limit!r}")
    e["download_deadline"] = float(limit)
    size = e["download_max_bytes"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise fail(name, f"download_max_bytes must be a whole number of bytes >= 1, got {size!r}")


def _check_target(name: str, e: dict[str, Any]) -> None:
    if e["target"] is not None and (not isinstance(e["target"], str) or not e["target"]):
        raise fail(name, f"target must be a column name, got {e['target']!r}")
    _choice(name, "target_transform", e["target_transform"], TARGET_TRANSFORMS)
    _choice(name, "missing", e["missing"], MISSING_POLICIES)
    if not isinstance(e["description"], str):
        raise fail(name, f"description must be text, got {e['description']!r}")


def _check_columns(name: str, e: dict[str, Any]) -> None:
    e["drop"] = _str_list(name, "drop", e["drop"])
    e["include"] = _str_list(name, "include", e["include"])
    both = sorted(set(e["drop"]) & set(e["include"]))
    if both:
        raise fail(name, f"column(s) {', '.join(both)} are both in drop and in include")


def _check_dates(name: str, e: dict[str, Any]) -> None:
    if not isinstance(e["dates"], Mapping):
        raise fail(name, f"dates must map column -> list of parts, got {e['dates']!r}")
    dates: dict[str, list[str]] = {}
    for col, parts in e["dates"].items():
        if not isinstance(parts, list | tuple) or not parts:
            raise fail(
                name,
                f"dates[{col!r}] must be a non-empty list of parts from "
                f"{', '.join(DATE_PARTS)}; got {parts!r}",
            )
        unknown = [p for p in parts if p not in DATE_PARTS]
        if unknown:
            raise fail(
                name,
                f"dates[{col!r}] has unknown part {unknown[0]!r}; allowed: {', '.join(DATE_PARTS)}",
            )
        if len(set(parts)) != len(parts):
            raise fail(name, f"dates[{col!r}] lists a part twice: {list(parts)!r}")
        if col in e["drop"]:
            raise fail(name, f"column {col!r} is both in dates and in drop")
        dates[str(col)] = list(parts)
    e["dates"] = dates


def _is_cell_value(value: object) -> bool:
    if isinstance(value, str):
        return value != ""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_recode(name: str, e: dict[str, Any]) -> None:
    if not isinstance(e["recode"], Mapping):
        raise fail(name, f"recode must map column -> {{value: new value}}, got {e['recode']!r}")
    recode: dict[str, dict[Any, Any]] = {}
    for col, table in e["recode"].items():
        if not isinstance(table, Mapping) or not table:
            raise fail(
                name, f"recode[{col!r}] must be a non-empty map value -> new value, got {table!r}"
            )
        for old, new in table.items():
            if not _is_cell_value(old) or not _is_cell_value(new):
                raise fail(
                    name,
                    f"recode[{col!r}] maps {old!r} -> {new!r}; both sides must be finite "
                    "numbers or non-empty text",
                )
        if col in e["drop"]:
            raise fail(name, f"column {col!r} is both in recode and in drop")
        recode[str(col)] = dict(table)
    e["recode"] = recode


def _check_set_values(name: str, e: dict[str, Any]) -> None:
    if not isinstance(e["set_values"], Mapping):
        raise fail(
            name, f"set_values must map data row -> {{column: value}}, got {e['set_values']!r}"
        )
    fixes: dict[int, dict[str, Any]] = {}
    for row, cells in e["set_values"].items():
        if isinstance(row, bool) or not isinstance(row, int) or row < 1:
            raise fail(
                name,
                f"set_values: row {row!r} must be a data row number >= 1 (1 = the row "
                "after the header)",
            )
        if not isinstance(cells, Mapping) or not cells:
            raise fail(name, f"set_values[{row}] must be a non-empty map column -> value")
        for col, value in cells.items():
            if not isinstance(col, str) or not _is_cell_value(value):
                raise fail(
                    name,
                    f"set_values[{row}] sets {col!r} to {value!r}; give a column name and a "
                    "finite number or non-empty text",
                )
        fixes[row] = dict(cells)
    e["set_values"] = fixes


_CHECKS: tuple[Callable[[str, dict[str, Any]], None], ...] = (
    _check_format,
    _check_download,
    _check_target,
    _check_columns,
    _check_dates,
    _check_recode,
    _check_set_values,
)


def validate_entry(
    name: str, entry: Mapping[str, Any] | None, *, mirror_dir: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Check a dataset entry and return it normalised, every key present.

    Parameters
    ----------
    name : str
        Dataset name (letters, digits, ``_ . + -``; it names files).
    entry : mapping or None
        The entry; see :data:`DATASET_KEYS`.  ``None`` is an empty entry.
    mirror_dir : path-like, optional
        When given, an entry without ``uci_id``/``url``/``path`` is accepted
        only if ``mirror_dir/<name>/data.csv`` exists.  Without it that check
        is left to :func:`~dpreg.data.fetch_raw`.

    Returns
    -------
    dict
        All keys of :data:`DATASET_KEYS`; absent ones take their defaults
        (``None``, ``False``, 600 s, ``"none"``, ``[]``, ``{}``, ``"error"``,
        ``""``), ``format`` is resolved from the file suffix, ``sha256`` is
        lower-case and ``download_deadline`` a float.

    Raises
    ------
    DPRegError
        On an unknown key (named, with the allowed ones), a value of the
        wrong type or outside its choices, or a missing/ambiguous source.
    """
    e = _with_defaults(name, entry)
    _check_source(name, e, mirror_dir)
    _check_synthetic(name, e, entry or {})
    for check in _CHECKS:
        check(name, e)
    return e
