"""Datasets: source -> checksum -> recipe -> canonical numeric table.

A dataset is a name and an *entry*: a mapping that says where the raw table
comes from and how to turn it into a design matrix ``X`` (float64, n x d) and
a response ``y`` (float64, n).  The same keys are used in
``config/config.yaml`` (``datasets:``) and by :data:`DEFAULT_DATASETS`.

Sources, in the order they are tried:

1. ``path`` -- a local CSV (or archive) file, or a folder in the mirror
   layout (``data.csv`` + ``metadata.json``).  Always used when given.
2. the offline mirror ``mirror_dir/<name>/`` -- used when it exists (unless
   ``refresh: true``), after its ``data.csv`` is checked against
   ``mirror_dir/SHA256SUMS``.  A mismatch is an error: a corrupted mirror is
   never used, and never silently replaced by a download.
3. ``uci_id`` -- downloaded through :func:`ucimlrepo.fetch_ucirepo`, keeping
   the variable roles the UCI API reports.
4. ``url`` -- downloaded with :mod:`urllib` (60 s timeout).

Entry keys (:data:`DATASET_KEYS`)
---------------------------------
=================  =========================================================
key                meaning
=================  =========================================================
uci_id             UCI Machine Learning Repository id (int).
url                http(s) address of a data file.
format             ``csv`` | ``whitespace`` | ``zip`` | ``tgz``; default from
                   the file suffix (``.zip``, ``.tgz``/``.tar.gz``, else
                   ``csv``).  Files need a header row; a member of an archive
                   is comma-separated if its first line holds a comma,
                   otherwise whitespace-separated.
member             file inside a zip/tgz archive (may be omitted when the
                   archive holds one file).
path               local data file, or folder with ``data.csv`` +
                   ``metadata.json`` (the mirror layout); relative to the
                   working directory.
sha256             expected SHA-256 of the downloaded file (url, uci_id: the
                   CSV that the UCI API points to) or of the local file
                   (path; ``data.csv`` for a folder).  Not applied to the
                   mirror, which SHA256SUMS pins.
refresh            ``true``: download (uci_id/url) even if the mirror or the
                   download cache holds the dataset.
target             target column; default the single column with role Target.
target_transform   ``none`` (default) | ``log`` (needs y > 0) | ``log1p``
                   (needs y > -1).
drop               columns removed.
include            columns used as features although their role is not
                   Feature (ID and Other columns are dropped otherwise).
dates              column -> parts, from year, month, day, weekday
                   (Monday = 0), dayofyear, hour; the column is replaced by
                   numeric columns ``<column>_<part>`` at its position.
missing            ``error`` (default) | ``drop_rows`` | ``zero`` (fill NaN
                   with 0, as Wang 2018 did).  Infinite values are always
                   an error.
description        free text, copied into the provenance sidecar.
=================  =========================================================

Exactly one of ``uci_id``, ``url``, ``path`` is required, except for a
dataset held by the mirror, which may have none (mirror only) or a
``uci_id``/``url`` used when the mirror is absent or ``refresh`` is set.
Variable roles come from ``metadata.json`` (mirror, folder) or from the UCI
API; columns without a role (plain CSV files, url downloads) are features.

Prepared tables (written by :func:`prepare_dataset`) are Parquet files with
the feature columns in order and the target column last, all float64, in row
groups of :data:`ROW_GROUP_ROWS` rows so they can be streamed with
:func:`iter_prepared`; a JSON sidecar records the provenance.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import http.client
import io
import json
import os
import re
import socket
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpreg._validation import DPRegError, check_choice

__all__ = [
    "DATASET_KEYS",
    "DATE_PARTS",
    "DEFAULT_DATASETS",
    "PreparedDataset",
    "RawDataset",
    "apply_recipe",
    "fetch_raw",
    "iter_prepared",
    "prepare_dataset",
    "prepared_shape",
    "read_prepared",
    "validate_entry",
]

#: The keys a dataset entry may hold, with a one-line meaning each.
DATASET_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "uci_id": "UCI Machine Learning Repository id (int)",
        "url": "http(s) address of a data file",
        "format": "csv | whitespace | zip | tgz (default: from the file suffix)",
        "member": "file inside a zip/tgz archive",
        "path": "local data file, or folder with data.csv + metadata.json",
        "sha256": "expected SHA-256 of the downloaded or local data file",
        "refresh": "true: download even if the mirror or cache holds the dataset",
        "target": "target column (default: the variable with role Target)",
        "target_transform": "none | log | log1p",
        "drop": "list of columns to remove",
        "include": "columns used as features although their role is ID or Other",
        "dates": "column -> parts (year, month, day, weekday, dayofyear, hour)",
        "missing": "error | drop_rows | zero",
        "description": "free text",
    }
)

#: Parts a ``dates`` column can be expanded into.
DATE_PARTS: tuple[str, ...] = ("year", "month", "day", "weekday", "dayofyear", "hour")

FORMATS: tuple[str, ...] = ("csv", "whitespace", "zip", "tgz")
TARGET_TRANSFORMS: tuple[str, ...] = ("none", "log", "log1p")
MISSING_POLICIES: tuple[str, ...] = ("error", "drop_rows", "zero")
ROLES: tuple[str, ...] = ("ID", "Feature", "Target", "Other")
SOURCES: tuple[str, ...] = ("mirror", "uci", "url", "path")

#: Seconds before a download (or a UCI API call) is abandoned.
DOWNLOAD_TIMEOUT = 60.0

#: Rows per Parquet row group of a prepared table (the streaming unit).
ROW_GROUP_ROWS = 65536

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
_OFFLINE_HINT = (
    "to work offline, set path: to a CSV file or to a folder holding data.csv "
    "and metadata.json (the mirror layout)"
)


# --------------------------------------------------------------------------
# entries


def _fail(name: str, message: str) -> DPRegError:
    return DPRegError(f"dataset {name!r}: {message}")


def _str_list(name: str, key: str, value: object) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise _fail(name, f"{key} must be a list of column names, got {value!r}")
    if len(set(value)) != len(value):
        raise _fail(name, f"{key} lists a column twice: {list(value)!r}")
    return list(value)


def _choice(name: str, key: str, value: object, choices: tuple[str, ...]) -> str:
    try:
        return check_choice(value, f"{key} value", choices)
    except DPRegError as exc:
        raise _fail(name, str(exc)) from None


def _infer_format(location: str) -> str:
    low = location.lower().split("?", 1)[0]
    if low.endswith(".zip"):
        return "zip"
    if low.endswith((".tgz", ".tar.gz")):
        return "tgz"
    return "csv"


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
        is left to :func:`fetch_raw`.

    Returns
    -------
    dict
        All keys of :data:`DATASET_KEYS`; absent ones take their defaults
        (``None``, ``False``, ``"none"``, ``[]``, ``{}``, ``"error"``, ``""``),
        ``format`` is resolved from the file suffix and ``sha256`` is
        lower-case.

    Raises
    ------
    DPRegError
        On an unknown key (named, with the allowed ones), a value of the
        wrong type or outside its choices, or a missing/ambiguous source.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise DPRegError(
            f"dataset name {name!r} is not allowed; use letters, digits and _ . + - "
            "(it names files)"
        )
    if entry is None:
        entry = {}
    if not isinstance(entry, Mapping):
        raise _fail(name, f"the entry must be a mapping of keys to values, got {entry!r}")
    for key in entry:
        if key not in DATASET_KEYS:
            close = difflib.get_close_matches(str(key), list(DATASET_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _fail(
                name,
                f"unknown key {key!r}{hint}; allowed keys: {', '.join(DATASET_KEYS)}",
            )
    e: dict[str, Any] = {
        "uci_id": None,
        "url": None,
        "format": None,
        "member": None,
        "path": None,
        "sha256": None,
        "refresh": False,
        "target": None,
        "target_transform": "none",
        "drop": [],
        "include": [],
        "dates": {},
        "missing": "error",
        "description": "",
    }
    e.update({k: v for k, v in entry.items() if v is not None})

    sources = [k for k in ("uci_id", "url", "path") if e[k] is not None]
    if len(sources) > 1:
        raise _fail(name, f"give exactly one of uci_id, url, path; got {', '.join(sources)}")
    if e["uci_id"] is not None and (
        isinstance(e["uci_id"], bool) or not isinstance(e["uci_id"], int) or e["uci_id"] < 1
    ):
        raise _fail(name, f"uci_id must be a positive integer, got {e['uci_id']!r}")
    if e["url"] is not None and (
        not isinstance(e["url"], str) or not e["url"].startswith(("http://", "https://"))
    ):
        raise _fail(name, f"url must be an http:// or https:// address, got {e['url']!r}")
    if e["path"] is not None:
        if not isinstance(e["path"], str | os.PathLike) or not str(e["path"]):
            raise _fail(name, f"path must be a file or folder name, got {e['path']!r}")
        e["path"] = str(e["path"])
    if not sources and mirror_dir is not None:
        if not (Path(mirror_dir) / name / "data.csv").is_file():
            raise _fail(
                name,
                f"no source: it is not in the mirror {mirror_dir} and has none of "
                f"uci_id, url, path; {_OFFLINE_HINT}",
            )

    location = e["url"] or e["path"]
    if e["format"] is not None:
        if location is None:
            raise _fail(name, "format applies to url and path sources only")
        _choice(name, "format", e["format"], FORMATS)
    elif location is not None:
        e["format"] = _infer_format(location)
    if e["member"] is not None:
        if e["format"] not in ("zip", "tgz"):
            raise _fail(name, "member names a file inside an archive; set format: zip or tgz")
        if not isinstance(e["member"], str) or not e["member"]:
            raise _fail(name, f"member must be a file name, got {e['member']!r}")
    if e["sha256"] is not None:
        if not isinstance(e["sha256"], str) or not _SHA_RE.match(e["sha256"]):
            raise _fail(name, f"sha256 must be 64 hex digits, got {e['sha256']!r}")
        if not sources:
            raise _fail(name, "sha256 pins a downloaded or local file; give uci_id, url or path")
        e["sha256"] = e["sha256"].lower()
    if not isinstance(e["refresh"], bool):
        raise _fail(name, f"refresh must be true or false, got {e['refresh']!r}")
    if e["refresh"] and e["uci_id"] is None and e["url"] is None:
        raise _fail(name, "refresh: true needs uci_id or url to download from")
    if e["target"] is not None and (not isinstance(e["target"], str) or not e["target"]):
        raise _fail(name, f"target must be a column name, got {e['target']!r}")
    _choice(name, "target_transform", e["target_transform"], TARGET_TRANSFORMS)
    _choice(name, "missing", e["missing"], MISSING_POLICIES)
    e["drop"] = _str_list(name, "drop", e["drop"])
    e["include"] = _str_list(name, "include", e["include"])
    both = sorted(set(e["drop"]) & set(e["include"]))
    if both:
        raise _fail(name, f"column(s) {', '.join(both)} are both in drop and in include")
    if not isinstance(e["dates"], Mapping):
        raise _fail(name, f"dates must map column -> list of parts, got {e['dates']!r}")
    dates: dict[str, list[str]] = {}
    for col, parts in e["dates"].items():
        if not isinstance(parts, list | tuple) or not parts:
            raise _fail(
                name,
                f"dates[{col!r}] must be a non-empty list of parts from "
                f"{', '.join(DATE_PARTS)}; got {parts!r}",
            )
        for part in parts:
            if part not in DATE_PARTS:
                raise _fail(
                    name,
                    f"dates[{col!r}] has unknown part {part!r}; allowed: {', '.join(DATE_PARTS)}",
                )
        if len(set(parts)) != len(parts):
            raise _fail(name, f"dates[{col!r}] lists a part twice: {list(parts)!r}")
        if col in e["drop"]:
            raise _fail(name, f"column {col!r} is both in dates and in drop")
        dates[str(col)] = list(parts)
    e["dates"] = dates
    if not isinstance(e["description"], str):
        raise _fail(name, f"description must be text, got {e['description']!r}")
    return e


# --------------------------------------------------------------------------
# fetching


@dataclass
class RawDataset:
    """A raw table as fetched, before the recipe.

    Attributes
    ----------
    frame : pandas.DataFrame
        The table as parsed from its header and rows.
    roles : dict
        Column -> role, one of ``ID``, ``Feature``, ``Target``, ``Other``.
    source : str
        ``mirror``, ``uci``, ``url`` or ``path``.
    sha256 : str
        SHA-256 of the data bytes read (the file downloaded or on disk).
    detail : str
        Where exactly the bytes came from (folder, id, address, cache).
    name : str
        Dataset name (used in the messages of :func:`apply_recipe`).
    """

    frame: pd.DataFrame
    roles: dict[str, str]
    source: str
    sha256: str
    detail: str
    name: str = "unnamed"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_pin(name: str, expected: str | None, actual: str, what: str) -> None:
    if expected is not None and expected != actual:
        raise _fail(
            name,
            f"sha256 mismatch for {what}: expected {expected}, got {actual}; the file "
            "changed or is not the pinned one (fix or remove sha256 after checking it)",
        )


def _read_table(name: str, data: bytes, fmt: str, member: str | None, where: str) -> pd.DataFrame:
    """Parse ``data`` (a csv/whitespace file or a zip/tgz archive) into a frame."""
    sep = ","
    if fmt in ("zip", "tgz"):
        data, member = _archive_member(name, data, fmt, member, where)
        first = data.split(b"\n", 1)[0]
        sep = "," if b"," in first else r"\s+"
        where = f"{where} member {member}"
    elif fmt == "whitespace":
        sep = r"\s+"
    try:
        frame = pd.read_csv(io.BytesIO(data), sep=sep, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _fail(name, f"could not parse {where} as {fmt}: {reason}") from None
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise _fail(name, f"{where} holds no data rows (a header row and data are needed)")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _archive_member(
    name: str, data: bytes, fmt: str, member: str | None, where: str
) -> tuple[bytes, str]:
    try:
        if fmt == "zip":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = [n for n in zf.namelist() if not n.endswith("/")]
                chosen = _choose_member(name, names, member, where)
                return zf.read(chosen), chosen
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
            files = {m.name: m for m in tf.getmembers() if m.isfile()}
            chosen = _choose_member(name, list(files), member, where)
            handle = tf.extractfile(files[chosen])
            assert handle is not None  # a regular file always has a handle
            return handle.read(), chosen
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise _fail(name, f"{where} is not a readable {fmt} archive: {exc}") from None


def _choose_member(name: str, names: list[str], member: str | None, where: str) -> str:
    if member is None:
        if len(names) == 1:
            return names[0]
        raise _fail(
            name,
            f"archive {where} holds {len(names)} files; choose one with member: "
            f"({', '.join(names) or 'none'})",
        )
    if member not in names:
        raise _fail(name, f"archive {where} has no member {member!r}; members: {', '.join(names)}")
    return member


def _roles_from_metadata(name: str, meta: Mapping[str, Any], columns: list[str], where: str):
    """Column -> role from a UCI-style ``variables`` list (unlisted columns: Feature)."""
    roles = dict.fromkeys(columns, "Feature")
    variables = meta.get("variables") or []
    listed = set()
    for var in variables:
        if not isinstance(var, Mapping) or "name" not in var or "role" not in var:
            raise _fail(name, f"{where}: each variable needs a name and a role, got {var!r}")
        vname, role = str(var["name"]), var["role"]
        if role not in ROLES:
            raise _fail(
                name, f"{where}: variable {vname!r} has role {role!r}; allowed: {', '.join(ROLES)}"
            )
        listed.add(vname)
        roles[vname] = role
    missing = [v for v in listed if v not in columns]
    if missing:
        raise _fail(
            name,
            f"{where} describes variable(s) {', '.join(sorted(missing))} that the data "
            f"does not have; columns: {', '.join(columns)}",
        )
    return roles


def _read_sums(mirror: Path) -> dict[str, str]:
    sums: dict[str, str] = {}
    for line in (mirror / "SHA256SUMS").read_text().splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            sums[parts[1].lstrip("*").strip()] = parts[0].lower()
    return sums


def _from_folder(name: str, folder: Path, expected: str | None, what: str):
    """Read a mirror-layout folder: ``data.csv`` (+ optional ``metadata.json``)."""
    csv_path = folder / "data.csv"
    if not csv_path.is_file():
        raise _fail(name, f"folder {folder} has no data.csv (expected data.csv + metadata.json)")
    data = csv_path.read_bytes()
    sha = _sha256(data)
    if what == "mirror":
        if expected != sha:
            raise _fail(
                name,
                f"mirror file {csv_path} is corrupted: SHA256SUMS pins {expected}, the file "
                f"has {sha}; restore the file (or set refresh: true to download instead)",
            )
    else:
        _check_pin(name, expected, sha, str(csv_path))
    frame = _read_table(name, data, "csv", None, str(csv_path))
    meta: dict[str, Any] = {}
    meta_path = folder / "metadata.json"
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _fail(name, f"{meta_path} is not valid JSON: {exc}") from None
        if not isinstance(meta, dict):
            raise _fail(name, f"{meta_path} must hold a JSON object")
    roles = _roles_from_metadata(name, meta, list(frame.columns), str(meta_path))
    ids = ", ".join(
        f"{label} {meta[key]}"
        for key, label in (("uci_id", "UCI id"), ("openml_id", "OpenML id"), ("doi", "doi"))
        if meta.get(key)
    )
    about = "; ".join(s for s in (meta.get("name"), ids, meta.get("license")) if s)
    detail = f"{folder}" + (f" ({about})" if about else "")
    return frame, roles, sha, detail


def _download(name: str, url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "dpreg"})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        reason = f"HTTP {exc.code} {exc.reason}"
        exc.close()
    except urllib.error.URLError as exc:
        reason = str(exc.reason)
    except (OSError, http.client.HTTPException) as exc:
        reason = str(exc) or type(exc).__name__
    raise _fail(name, f"could not be fetched from {url}: {reason}; {_OFFLINE_HINT}")


@contextlib.contextmanager
def _socket_timeout(seconds: float):
    """Give libraries that call urlopen without a timeout (ucimlrepo) one."""
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(old)


def _fetch_uci(name: str, uci_id: int) -> tuple[bytes, list[dict[str, str]], str]:
    """Fetch a UCI dataset via ucimlrepo: (CSV bytes, variables with roles, data_url)."""
    import ucimlrepo
    from ucimlrepo.fetch import DatasetNotFoundError

    try:
        with _socket_timeout(DOWNLOAD_TIMEOUT):
            result = ucimlrepo.fetch_ucirepo(id=uci_id)
    except (ConnectionError, OSError, http.client.HTTPException, DatasetNotFoundError) as exc:
        raise _fail(
            name,
            f"could not be fetched from the UCI repository (id {uci_id}, "
            f"{ucimlrepo.fetch.API_BASE_URL}): {exc}; {_OFFLINE_HINT}",
        ) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(name, f"unexpected answer from the UCI API for id {uci_id}: {exc!r}") from None
    data_url = str(result.metadata.data_url)
    # ucimlrepo parses the CSV without exposing its bytes: read the same
    # address once more so the bytes used are the bytes hashed.
    data = _download(name, data_url)
    variables = [
        {"name": str(n), "role": str(r)}
        for n, r in zip(result.variables["name"], result.variables["role"], strict=True)
    ]
    headers = [str(c) for c in result.data.headers]
    try:
        parsed_headers = [str(c) for c in pd.read_csv(io.BytesIO(data), nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        parsed_headers = []
    if parsed_headers != headers:
        raise _fail(
            name, f"{data_url} changed between two reads (columns {parsed_headers} vs {headers})"
        )
    return data, variables, data_url


def _cache_paths(cache_dir: Path, name: str, e: Mapping[str, Any]) -> tuple[Path, Path]:
    key = json.dumps({k: e[k] for k in ("uci_id", "url", "format", "member")}, sort_keys=True)
    stem = f"{name}-{_sha256(key.encode())[:16]}"
    return cache_dir / f"{stem}.bin", cache_dir / f"{stem}.json"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _download_source(name: str, e: Mapping[str, Any], cache_dir: Path | None):
    """Bytes, variables (name, role) and detail of a uci_id/url source, through the cache."""
    if cache_dir is not None:
        bin_path, info_path = _cache_paths(cache_dir, name, e)
        if not e["refresh"] and bin_path.is_file() and info_path.is_file():
            data = bin_path.read_bytes()
            with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
                info = json.loads(info_path.read_text())
                if isinstance(info, dict) and info.get("sha256") == _sha256(data):
                    return data, info["variables"], f"{info['detail']} (cached {bin_path})"
            # a damaged cache entry is disposable: download again
    if e["uci_id"] is not None:
        data, variables, data_url = _fetch_uci(name, e["uci_id"])
        detail = f"UCI id {e['uci_id']} via {data_url}"
    else:
        data, variables, detail = _download(name, e["url"]), [], e["url"]
    if cache_dir is not None:
        info = {"sha256": _sha256(data), "variables": variables, "detail": detail}
        _write_atomic(bin_path, data)
        _write_atomic(info_path, json.dumps(info, indent=1).encode())
    return data, variables, detail


def fetch_raw(
    name: str,
    entry: Mapping[str, Any] | None,
    *,
    mirror_dir: str | os.PathLike | None,
    cache_dir: str | os.PathLike | None = None,
) -> RawDataset:
    """Fetch the raw table of a dataset from its source, checking checksums.

    Parameters
    ----------
    name : str
        Dataset name; also the mirror folder ``mirror_dir/<name>/``.
    entry : mapping or None
        The dataset entry (see :data:`DATASET_KEYS`).
    mirror_dir : path-like or None
        Offline mirror (folders ``<name>/data.csv`` + ``metadata.json`` and a
        ``SHA256SUMS`` file); ``None``: no mirror.
    cache_dir : path-like, optional
        Where downloads (uci_id, url) are kept, keyed by dataset name and
        source, so that a rerun works offline.  ``refresh: true`` bypasses it.

    Returns
    -------
    RawDataset

    Raises
    ------
    DPRegError
        A corrupted mirror (both sums named), a pin mismatch (both sums
        named), a network failure (one line with a ``path:`` hint), an
        unreadable file or a missing source.
    """
    e = validate_entry(name, entry)
    if e["path"] is not None:
        path = Path(e["path"]).expanduser()
        if path.is_dir():
            frame, roles, sha, detail = _from_folder(name, path, e["sha256"], "path")
            return RawDataset(frame, roles, "path", sha, detail, name)
        if not path.is_file():
            raise _fail(
                name,
                f"path {str(path)!r} does not exist; give a CSV file or a folder "
                "with data.csv + metadata.json",
            )
        data = path.read_bytes()
        sha = _sha256(data)
        _check_pin(name, e["sha256"], sha, str(path))
        frame = _read_table(name, data, e["format"], e["member"], str(path))
        detail = str(path) + (f" member {e['member']}" if e["member"] else "")
        return RawDataset(frame, dict.fromkeys(frame.columns, "Feature"), "path", sha, detail, name)

    if mirror_dir is not None and not e["refresh"]:
        mirror = Path(mirror_dir)
        folder = mirror / name
        if (folder / "data.csv").is_file():
            sums_file = mirror / "SHA256SUMS"
            if not sums_file.is_file():
                raise _fail(name, f"mirror {mirror} has no SHA256SUMS file to check {folder}")
            expected = _read_sums(mirror).get(f"{name}/data.csv")
            if expected is None:
                raise _fail(
                    name,
                    f"{sums_file} has no line for {name}/data.csv; the mirror copy is "
                    "not pinned (add its sum: sha256sum <name>/data.csv >> SHA256SUMS)",
                )
            frame, roles, sha, detail = _from_folder(name, folder, expected, "mirror")
            return RawDataset(frame, roles, "mirror", sha, f"offline mirror {detail}", name)

    if e["uci_id"] is None and e["url"] is None:
        where = f"in the mirror {mirror_dir}" if mirror_dir is not None else "in a mirror"
        raise _fail(name, f"not found {where} and no uci_id, url or path given; {_OFFLINE_HINT}")
    data, variables, detail = _download_source(
        name, e, Path(cache_dir) if cache_dir is not None else None
    )
    sha = _sha256(data)
    _check_pin(name, e["sha256"], sha, detail)
    fmt = "csv" if e["uci_id"] is not None else e["format"]
    frame = _read_table(name, data, fmt, e["member"], detail)
    roles = _roles_from_metadata(name, {"variables": variables}, list(frame.columns), detail)
    source = "uci" if e["uci_id"] is not None else "url"
    return RawDataset(frame, roles, source, sha, detail, name)


# --------------------------------------------------------------------------
# recipe


@dataclass
class PreparedDataset:
    """Numeric features and target after the recipe.

    Attributes
    ----------
    features : pandas.DataFrame
        float64 columns, in order.
    target : pandas.Series
        float64, named after the target column.
    report : dict
        ``rows_raw``, ``dropped`` (column -> reason), ``date_parts``
        (column -> new columns), ``rows_dropped_na``, ``na_filled``
        (column -> count), ``constant`` (feature columns with one value).
    """

    features: pd.DataFrame
    target: pd.Series
    report: dict[str, Any] = field(default_factory=dict)


def _unknown_columns(name: str, key: str, names: list[str], columns: list[str]) -> None:
    unknown = [c for c in names if c not in columns]
    if unknown:
        raise _fail(
            name,
            f"{key} names column(s) {', '.join(map(repr, unknown))} that the data does not "
            f"have; columns: {', '.join(columns)}",
        )


def _expand_date(name: str, column: pd.Series, parts: list[str]) -> dict[str, pd.Series]:
    text = column.astype("string")
    try:
        parsed = pd.to_datetime(text, format="ISO8601")
    except (ValueError, TypeError):
        parsed = pd.to_datetime(text, format="mixed", errors="coerce")
    bad = parsed.isna() & text.notna()
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise _fail(
            name,
            f"dates column {column.name!r} has {int(bad.sum())} value(s) that are not dates "
            f"(first: {text.iloc[first]!r} in data row {first + 1}); fix them or drop the column",
        )
    out = {}
    for part in parts:
        attr = {"weekday": "day_of_week", "dayofyear": "day_of_year"}.get(part, part)
        out[f"{column.name}_{part}"] = getattr(parsed.dt, attr).astype("float64")
    return out


def _as_float(name: str, column: pd.Series, what: str) -> pd.Series:
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        return column.astype("float64")
    coerced = pd.to_numeric(column, errors="coerce")
    bad = coerced.isna() & column.notna()
    first = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
    raise _fail(
        name,
        f"{what} column {column.name!r} is not numeric (e.g. {column.iloc[first]!r} in data "
        f"row {first + 1}); drop it (drop: [{column.name}]), list it under dates, or "
        "convert it to numbers in the source",
    )


def apply_recipe(raw: RawDataset, entry: Mapping[str, Any] | None) -> PreparedDataset:
    """Turn a raw table into numeric features and a target, following the entry.

    Steps: choose the target (``target`` or the single Target-role column);
    keep Feature-role columns and those in ``include`` (ID, Other and other
    Target columns are dropped); remove ``drop``; expand ``dates`` into
    ``<column>_<part>`` at the column's position; require every remaining
    column to be numeric; apply the ``missing`` policy (infinite values are
    always an error); apply ``target_transform`` after checking its domain;
    report constant feature columns (kept: standardisation sets their sd to 1).

    Parameters
    ----------
    raw : RawDataset
    entry : mapping or None
        The dataset entry (validated here).

    Returns
    -------
    PreparedDataset

    Raises
    ------
    DPRegError
        Naming the dataset, the column(s) and what is allowed.
    """
    name = raw.name
    e = validate_entry(name, entry)
    frame = raw.frame
    columns = list(frame.columns)
    roles = {c: raw.roles.get(c, "Feature") for c in columns}
    _unknown_columns(name, "drop", e["drop"], columns)
    _unknown_columns(name, "include", e["include"], columns)
    _unknown_columns(name, "dates", list(e["dates"]), columns)

    target = e["target"]
    if target is None:
        targets = [c for c in columns if roles[c] == "Target"]
        if len(targets) != 1:
            found = f"{len(targets)} ({', '.join(targets)})" if targets else "none"
            raise _fail(
                name,
                f"set target: to one column; the source marks {found} as Target; "
                f"columns: {', '.join(columns)}",
            )
        target = targets[0]
    elif target not in columns:
        _unknown_columns(name, "target", [target], columns)
    for key in ("drop", "include", "dates"):
        if target in e[key]:
            raise _fail(name, f"the target {target!r} cannot be listed in {key}")

    report: dict[str, Any] = {
        "rows_raw": int(len(frame)),
        "dropped": {},
        "date_parts": {},
        "rows_dropped_na": 0,
        "na_filled": {},
        "constant": [],
    }
    parts: dict[str, pd.Series] = {}
    for col in columns:
        if col == target:
            continue
        if col in e["drop"]:
            report["dropped"][col] = "drop"
        elif col in e["dates"]:
            new = _expand_date(name, frame[col], e["dates"][col])
            clash = [c for c in new if c in columns or c in parts]
            if clash:
                raise _fail(name, f"dates column names {', '.join(clash)} exist already")
            parts.update(new)
            report["date_parts"][col] = list(new)
        elif roles[col] == "Feature" or col in e["include"]:
            parts[col] = _as_float(name, frame[col], "feature")
        else:
            report["dropped"][col] = f"{roles[col]} role"
    if not parts:
        raise _fail(name, "no feature columns are left after the recipe")
    X = pd.DataFrame(parts, index=frame.index)
    y = _as_float(name, frame[target], "target").rename(target)

    both = pd.concat([X, y], axis=1)
    inf = np.isinf(both.to_numpy())
    if inf.any():
        counts = {c: int(k) for c, k in zip(both.columns, inf.sum(axis=0), strict=True) if k}
        listing = ", ".join(f"{c} ({k})" for c, k in counts.items())
        raise _fail(
            name,
            f"infinite values in column(s) {listing}; they are not treated as missing: "
            "fix the source or drop the column",
        )
    na = both.isna()
    if na.to_numpy().any():
        counts = {c: int(k) for c, k in na.sum().items() if k}
        listing = ", ".join(f"{c} ({k})" for c, k in counts.items())
        if e["missing"] == "error":
            raise _fail(
                name,
                f"missing values in column(s) {listing}; set missing: drop_rows or zero, "
                "or drop the column(s)",
            )
        if e["missing"] == "drop_rows":
            keep = ~na.any(axis=1)
            report["rows_dropped_na"] = int((~keep).sum())
            X, y = X[keep], y[keep]
            if len(y) == 0:
                raise _fail(name, f"missing: drop_rows leaves no rows (missing in {listing})")
        else:
            report["na_filled"] = counts
            X, y = X.fillna(0.0), y.fillna(0.0)

    if e["target_transform"] != "none":
        values = y.to_numpy()
        bad = values <= 0 if e["target_transform"] == "log" else values <= -1
        if bad.any():
            need = "y > 0" if e["target_transform"] == "log" else "y > -1"
            raise _fail(
                name,
                f"target_transform {e['target_transform']} needs {need}, but {int(bad.sum())} "
                f"row(s) of {target!r} break it (min {values.min():g}); use another transform "
                "or none",
            )
        y = pd.Series(getattr(np, e["target_transform"])(values), index=y.index, name=target)

    Xv = X.to_numpy()
    report["constant"] = [
        c for c, lo, hi in zip(X.columns, Xv.min(0), Xv.max(0), strict=True) if lo == hi
    ]
    return PreparedDataset(X.reset_index(drop=True), y.reset_index(drop=True), report)


# --------------------------------------------------------------------------
# prepared tables


def prepare_dataset(
    name: str,
    entry: Mapping[str, Any] | None,
    *,
    mirror_dir: str | os.PathLike | None,
    out_table: str | os.PathLike,
    out_meta: str | os.PathLike,
    cache_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Fetch a dataset, apply its recipe and write the table and its sidecar.

    The Parquet table holds the feature columns in order and the target
    column last, all float64, in row groups of :data:`ROW_GROUP_ROWS`.  The
    JSON sidecar holds ``dataset, source, detail, sha256, n, d, features,
    target, target_transform, description, report, dpreg_version``.  Both are
    written to temporary files in their folders and moved into place; on any
    error neither output exists afterwards.

    Parameters
    ----------
    name, entry, mirror_dir, cache_dir
        As for :func:`fetch_raw`.
    out_table, out_meta : path-like
        Destination of the Parquet table and of the JSON sidecar.

    Returns
    -------
    dict
        The sidecar's content.
    """
    from dpreg import __version__

    outs = [Path(out_table), Path(out_meta)]
    temps: list[str] = []
    try:
        e = validate_entry(name, entry)
        raw = fetch_raw(name, e, mirror_dir=mirror_dir, cache_dir=cache_dir)
        prepared = apply_recipe(raw, e)
        X, y = prepared.features, prepared.target
        meta = {
            "dataset": name,
            "source": raw.source,
            "detail": raw.detail,
            "sha256": raw.sha256,
            "n": int(X.shape[0]),
            "d": int(X.shape[1]),
            "features": list(X.columns),
            "target": str(y.name),
            "target_transform": e["target_transform"],
            "description": e["description"],
            "report": prepared.report,
            "dpreg_version": __version__,
        }
        table = pa.table(
            {**{c: X[c].to_numpy(np.float64) for c in X.columns}, y.name: y.to_numpy(np.float64)}
        )
        for out in outs:
            out.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
            os.close(fd)
            temps.append(tmp)
        pq.write_table(table, temps[0], row_group_size=ROW_GROUP_ROWS)
        Path(temps[1]).write_text(json.dumps(meta, indent=1) + "\n")
        for tmp, out in zip(temps, outs, strict=True):
            os.replace(tmp, out)
        return meta
    except BaseException:
        for p in [*temps, *map(str, outs)]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
        raise


def _open_prepared(table_path: str | os.PathLike, *, pre_buffer: bool = True) -> pq.ParquetFile:
    try:
        pf = pq.ParquetFile(table_path, pre_buffer=pre_buffer)
    except (OSError, pa.ArrowException) as exc:
        raise DPRegError(f"cannot read prepared table {str(table_path)!r}: {exc}") from None
    if pf.metadata.num_columns < 2:
        raise DPRegError(
            f"prepared table {str(table_path)!r} needs feature columns and a target column last"
        )
    return pf


def read_prepared(
    table_path: str | os.PathLike,
) -> tuple[np.ndarray, np.ndarray, list[str], str]:
    """Read a prepared table into memory.

    Returns
    -------
    X : numpy.ndarray, shape (n, d), float64
    y : numpy.ndarray, shape (n,), float64
    features : list of str
    target : str
    """
    table = _open_prepared(table_path).read()
    names = table.column_names
    X = np.empty((table.num_rows, len(names) - 1), dtype=np.float64)
    for j in range(len(names) - 1):
        X[:, j] = table.column(j).to_numpy()
    y = np.asarray(table.column(len(names) - 1).to_numpy(), dtype=np.float64)
    return X, y, names[:-1], names[-1]


def prepared_shape(table_path: str | os.PathLike) -> tuple[int, int]:
    """``(n, d)`` of a prepared table from its Parquet footer, without reading data."""
    md = _open_prepared(table_path).metadata
    return int(md.num_rows), int(md.num_columns) - 1


def iter_prepared(
    table_path: str | os.PathLike, *, chunk_rows: int = 65536
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Stream a prepared table as ``(X_chunk, y_chunk)`` float64 pairs.

    At most ``chunk_rows`` rows (plus one Parquet row group being decoded)
    are in memory at a time; the chunks, concatenated, are the table's rows
    in order.
    """
    if (
        isinstance(chunk_rows, bool)
        or not isinstance(chunk_rows, int | np.integer)
        or chunk_rows < 1
    ):
        raise DPRegError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
    pf = _open_prepared(table_path, pre_buffer=False)
    d = pf.metadata.num_columns - 1
    # one row group at a time, single-threaded: bounded memory while streaming
    batches = (
        batch
        for i in range(pf.num_row_groups)
        for batch in pf.iter_batches(batch_size=chunk_rows, row_groups=[i], use_threads=False)
    )
    for batch in batches:
        X = np.empty((batch.num_rows, d), dtype=np.float64)
        for j in range(d):
            X[:, j] = batch.column(j).to_numpy()
        yield X, np.asarray(batch.column(d).to_numpy(), dtype=np.float64)
