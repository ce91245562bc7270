"""Sources: a dataset's raw table from a path, the mirror, UCI or a URL.

:func:`fetch_raw` returns the table as parsed from its header and rows with
each column's role, after checking the bytes read against their SHA-256: the
mirror's ``SHA256SUMS`` or the entry's ``sha256``.  A ``url`` source must be
pinned: without ``sha256`` the run stops and prints the hash of the file it
downloaded, to be pasted into the entry after checking the file.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dpreg.data.download import download_source, sha256_hex
from dpreg.data.entries import OFFLINE_HINT, ROLES, fail, validate_entry
from dpreg.io.atomic import write_bytes_atomic

__all__ = ["RawDataset", "fetch_raw"]


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
        Dataset name (used in the messages of :func:`~dpreg.data.apply_recipe`).
    """

    frame: pd.DataFrame
    roles: dict[str, str]
    source: str
    sha256: str
    detail: str
    name: str = "unnamed"


def _check_pin(name: str, expected: str | None, actual: str, what: str) -> None:
    if expected is not None and expected != actual:
        raise fail(
            name,
            f"sha256 mismatch for {what}: expected {expected}, got {actual}; the file "
            "changed or is not the pinned one (fix or remove sha256 after checking it)",
        )


# --------------------------------------------------------------------------
# parsing


def _header(data: bytes, sep: str) -> list[str]:
    """The header row's names as written (pandas renames duplicates to ``a.1``)."""
    try:
        first = pd.read_csv(io.BytesIO(data), sep=sep, header=None, nrows=1, dtype=str)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return []
    return [str(v) for v in first.iloc[0].tolist()] if len(first) else []


def _refuse_duplicates(name: str, header: list[str], where: str) -> None:
    twice = [c for c in dict.fromkeys(header) if header.count(c) > 1]
    if twice:
        raise fail(
            name,
            f"{where} has duplicate column name(s) {', '.join(map(repr, twice))}; "
            "every column needs its own name (rename them in the header row)",
        )


def read_table(name: str, data: bytes, fmt: str, member: str | None, where: str) -> pd.DataFrame:
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
        raise fail(name, f"could not parse {where} as {fmt}: {reason}") from None
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise fail(name, f"{where} holds no data rows (a header row and data are needed)")
    _refuse_duplicates(name, _header(data, sep), where)
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
        raise fail(name, f"{where} is not a readable {fmt} archive: {exc}") from None


def _choose_member(name: str, names: list[str], member: str | None, where: str) -> str:
    if member is None:
        if len(names) == 1:
            return names[0]
        raise fail(
            name,
            f"archive {where} holds {len(names)} files; choose one with member: "
            f"({', '.join(names) or 'none'})",
        )
    if member not in names:
        raise fail(name, f"archive {where} has no member {member!r}; members: {', '.join(names)}")
    return member


def _roles_from_metadata(
    name: str, meta: Mapping[str, Any], columns: list[str], where: str
) -> dict[str, str]:
    """Column -> role from a UCI-style ``variables`` list (unlisted columns: Feature)."""
    roles = dict.fromkeys(columns, "Feature")
    listed: set[str] = set()
    for var in meta.get("variables") or []:
        if not isinstance(var, Mapping) or "name" not in var or "role" not in var:
            raise fail(name, f"{where}: each variable needs a name and a role, got {var!r}")
        vname, role = str(var["name"]), var["role"]
        if role not in ROLES:
            raise fail(
                name, f"{where}: variable {vname!r} has role {role!r}; allowed: {', '.join(ROLES)}"
            )
        if vname in listed:
            raise fail(name, f"{where} describes variable {vname!r} twice")
        listed.add(vname)
        roles[vname] = role
    missing = sorted(v for v in listed if v not in columns)
    if missing:
        raise fail(
            name,
            f"{where} describes variable(s) {', '.join(missing)} that the data "
            f"does not have; columns: {', '.join(columns)}",
        )
    return roles


# --------------------------------------------------------------------------
# local files and the mirror


def _read_sums(mirror: Path) -> dict[str, str]:
    sums: dict[str, str] = {}
    for line in (mirror / "SHA256SUMS").read_text().splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            sums[parts[1].lstrip("*").strip()] = parts[0].lower()
    return sums


def _read_metadata(name: str, folder: Path) -> dict[str, Any]:
    meta_path = folder / "metadata.json"
    if not meta_path.is_file():
        return {}
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise fail(name, f"{meta_path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise fail(name, f"{meta_path} must hold a JSON object")
    return meta


def _describe_folder(folder: Path, meta: Mapping[str, Any]) -> str:
    ids = ", ".join(
        f"{label} {meta[key]}"
        for key, label in (("uci_id", "UCI id"), ("openml_id", "OpenML id"), ("doi", "doi"))
        if meta.get(key)
    )
    about = "; ".join(s for s in (meta.get("name"), ids, meta.get("license")) if s)
    return f"{folder}" + (f" ({about})" if about else "")


def _from_folder(name: str, folder: Path, expected: str | None, source: str) -> RawDataset:
    """Read a mirror-layout folder: ``data.csv`` (+ optional ``metadata.json``)."""
    csv_path = folder / "data.csv"
    if not csv_path.is_file():
        raise fail(name, f"folder {folder} has no data.csv (expected data.csv + metadata.json)")
    data = csv_path.read_bytes()
    sha = sha256_hex(data)
    if source == "mirror" and expected != sha:
        raise fail(
            name,
            f"mirror file {csv_path} is corrupted: SHA256SUMS pins {expected}, the file "
            f"has {sha}; restore the file (or set refresh: true to download instead)",
        )
    _check_pin(name, expected, sha, str(csv_path))
    frame = read_table(name, data, "csv", None, str(csv_path))
    meta = _read_metadata(name, folder)
    roles = _roles_from_metadata(name, meta, list(frame.columns), str(folder / "metadata.json"))
    detail = _describe_folder(folder, meta)
    if source == "mirror":
        detail = f"offline mirror {detail}"
    return RawDataset(frame, roles, source, sha, detail, name)


def _from_path(name: str, e: Mapping[str, Any]) -> RawDataset:
    path = Path(e["path"]).expanduser()
    if path.is_dir():
        return _from_folder(name, path, e["sha256"], "path")
    if not path.is_file():
        raise fail(
            name,
            f"path {str(path)!r} does not exist; give a CSV file or a folder "
            "with data.csv + metadata.json",
        )
    data = path.read_bytes()
    sha = sha256_hex(data)
    _check_pin(name, e["sha256"], sha, str(path))
    frame = read_table(name, data, e["format"], e["member"], str(path))
    detail = str(path) + (f" member {e['member']}" if e["member"] else "")
    return RawDataset(frame, dict.fromkeys(frame.columns, "Feature"), "path", sha, detail, name)


def _from_mirror(name: str, mirror: Path) -> RawDataset | None:
    folder = mirror / name
    if not (folder / "data.csv").is_file():
        return None
    sums_file = mirror / "SHA256SUMS"
    if not sums_file.is_file():
        raise fail(name, f"mirror {mirror} has no SHA256SUMS file to check {folder}")
    expected = _read_sums(mirror).get(f"{name}/data.csv")
    if expected is None:
        raise fail(
            name,
            f"{sums_file} has no line for {name}/data.csv; the mirror copy is "
            "not pinned (add its sum: sha256sum <name>/data.csv >> SHA256SUMS)",
        )
    return _from_folder(name, folder, expected, "mirror")


#: Where a download that is not (yet) pinned, or does not match its pin, is
#: kept for the user to check (the download cache when one is given).
UNVERIFIED_DIR = Path(tempfile.gettempdir()) / "dpreg-unverified"


def _keep_unverified(name: str, data: bytes, sha: str, cache_dir: Path | None) -> Path:
    """Save a download the run will not use, so the message can name a file to check."""
    path = (cache_dir or UNVERIFIED_DIR) / f"{name}-{sha[:16]}.unverified"
    write_bytes_atomic(path, data)
    return path


def _from_download(name: str, e: Mapping[str, Any], cache_dir: Path | None) -> RawDataset:
    data, variables, detail = download_source(name, e, cache_dir)
    sha = sha256_hex(data)
    if e["url"] is not None and e["sha256"] is None:
        kept = _keep_unverified(name, data, sha, cache_dir)
        raise fail(
            name,
            f"a url source must be pinned: the file just downloaded from {e['url']} "
            f"({len(data)} bytes) is saved as {kept}; check it (its size, row count and "
            f"last line: a transfer cut short also gets a hash), then add  sha256: {sha}  "
            "to the entry",
        )
    if e["sha256"] is not None and e["sha256"] != sha:
        kept = _keep_unverified(name, data, sha, cache_dir)
        raise fail(
            name,
            f"sha256 mismatch for {detail}: expected {e['sha256']}, got {sha} for the "
            f"{len(data)} bytes received, saved as {kept}; the file changed, is not the "
            "pinned one or was cut short (check the saved file before changing sha256)",
        )
    fmt = "csv" if e["uci_id"] is not None else e["format"]
    frame = read_table(name, data, fmt, e["member"], detail)
    roles = _roles_from_metadata(name, {"variables": variables}, list(frame.columns), detail)
    source = "uci" if e["uci_id"] is not None else "url"
    return RawDataset(frame, roles, source, sha, detail, name)


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
        The dataset entry (see :data:`~dpreg.data.DATASET_KEYS`).
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
        named), an unpinned url (the hash to paste named), a network failure
        or missed deadline (one line with a ``path:`` hint), a body shorter
        than announced, duplicate column names, an unreadable file or a
        missing source.
    """
    e = validate_entry(name, entry)
    if e["path"] is not None:
        return _from_path(name, e)
    if mirror_dir is not None and not e["refresh"]:
        raw = _from_mirror(name, Path(mirror_dir))
        if raw is not None:
            return raw
    if e["uci_id"] is None and e["url"] is None:
        where = f"in the mirror {mirror_dir}" if mirror_dir is not None else "in a mirror"
        raise fail(name, f"not found {where} and no uci_id, url or path given; {OFFLINE_HINT}")
    return _from_download(name, e, Path(cache_dir) if cache_dir is not None else None)
