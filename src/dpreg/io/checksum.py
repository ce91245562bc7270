"""Checksummed outputs: every trial, prepared and results file carries its SHA-256.

The manifest is one sidecar per file, ``<file>.sha256``, in the format of
``sha256sum`` (``<hex>  <file name>``), so ``sha256sum -c <file>.sha256`` run
in the file's folder checks it by hand.  A sidecar per file rather than one
manifest per folder because the pipeline's jobs write the files of a folder
concurrently (one sweep job per dataset and shard, one summary job per
experiment): a shared manifest would need a lock and a read-modify-write, and
a job that fails half-way could leave it naming files it never wrote.  A
sidecar is written by the only job that writes its file, right after it
(both atomically, :mod:`dpreg.io.atomic`).

Every reader calls :func:`verify` first: a file whose bytes do not match
its sidecar (truncated, damaged, even with its modification time kept), or
that has no sidecar, is refused with a :class:`~dpreg._validation.DPRegError`
naming the file and how to rebuild it; it is never read or checksummed into
provenance.  A crash between the file and its sidecar leaves the two
mismatched, which :func:`verify` reports the same way.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dpreg._validation import DPRegError
from dpreg.io.atomic import write_bytes_atomic, write_text_atomic

__all__ = [
    "SIDECAR_SUFFIX",
    "file_sha256",
    "rebuild_hint",
    "sidecar",
    "verify",
    "write_checksum",
    "write_checked",
]

#: Suffix of the checksum sidecar of a file.
SIDECAR_SUFFIX = ".sha256"

#: Which rule writes which files: how to rebuild one (the rule names of ``workflow/rules``).
_RULES = (
    ("trials", "run_sweep"),
    ("prepared", "prepare_dataset"),
    ("tables", "summarise_experiment"),
    ("claims", "write_claims"),
)


def sidecar(path: str | os.PathLike[str]) -> Path:
    """The checksum sidecar of ``path``: ``<path>.sha256``."""
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_checksum(path: str | os.PathLike[str], sha256: str | None = None) -> str:
    """Write the sidecar of ``path`` (its SHA-256 computed unless given); returns the hex."""
    path = Path(path)
    sha = sha256 if sha256 is not None else file_sha256(path)
    write_text_atomic(sidecar(path), f"{sha}  {path.name}\n")
    return sha


def write_checked(path: str | os.PathLike[str], data: bytes) -> str:
    """Write ``data`` to ``path`` and then its sidecar, both atomically; returns the hex."""
    sha = hashlib.sha256(data).hexdigest()
    write_bytes_atomic(path, data)
    return write_checksum(path, sha)


def rebuild_hint(path: str | os.PathLike[str]) -> str:
    """How to rebuild ``path``: Snakemake forced on the file (and the rule that writes it)."""
    parts = Path(path).parts
    name = Path(path).name
    rule = None
    for folder, candidate in _RULES:
        if folder in parts[:-1]:
            rule = candidate
    if rule is None and name == "claims.csv":
        rule = "write_claims"
    elif rule is None and name.endswith(".csv"):
        rule = "summarise_experiment"
    every = f" (or `--forcerun {rule}` for every file of its rule)" if rule else ""
    return (
        f"rebuild it with `snakemake --cores 2 --forcerun {path}`{every}, "
        f"or delete it (and its {SIDECAR_SUFFIX}) and run snakemake again"
    )


def verify(
    path: str | os.PathLike[str], what: str = "file", *, missing_ok: bool = False
) -> str | None:
    """Check ``path`` against its sidecar; returns the SHA-256 (hex).

    Parameters
    ----------
    path : path-like
        A file written with its sidecar (:func:`write_checked`, :func:`write_checksum`).
    what : str
        What the file is, for the message (``"trial file"``, ``"prepared table"``).
    missing_ok : bool
        Accept a file that has no sidecar (returns None): only for files kept
        under version control, whose integrity git checks.  A sidecar that
        exists must match.

    Raises
    ------
    DPRegError
        If the file is missing, has no sidecar, or its bytes do not match the
        sidecar (damaged or truncated); the message names the file and how to
        rebuild it.
    """
    path = Path(path)
    side = sidecar(path)
    try:
        st, st_side = path.stat(), side.stat()
        # ctime changes on every write, truncation or os.utime: a stat unchanged since a
        # successful check in this process means the same bytes (readers of a file that
        # is streamed many times hash it once)
        key = (str(path.resolve()), _stamp(st), _stamp(st_side))
    except OSError:
        key = None
    if key is not None and key in _VERIFIED:
        return _VERIFIED[key]
    if not path.is_file():
        raise DPRegError(f"{what} {str(path)!r} does not exist; {rebuild_hint(path)}")
    if missing_ok and not side.exists():
        return None
    try:
        recorded = side.read_text(encoding="utf-8").split()[0].lower()
    except (OSError, UnicodeDecodeError, IndexError):
        raise DPRegError(
            f"{what} {str(path)!r} has no readable checksum file {side.name!r}, so it cannot "
            f"be trusted (written by an older dpreg, or the write was interrupted); "
            f"{rebuild_hint(path)}"
        ) from None
    actual = file_sha256(path)
    if actual != recorded:
        raise DPRegError(
            f"{what} {str(path)!r} is damaged or incomplete: its SHA-256 {actual[:16]}... does "
            f"not match {recorded[:16]}... recorded in {side.name!r} when it was written; "
            f"{rebuild_hint(path)}"
        )
    if key is not None:
        _VERIFIED[key] = actual
    return actual


def _stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


#: (path, stat of the file, stat of its sidecar) -> SHA-256 of files verified in this process
_VERIFIED: dict[tuple[str, tuple[int, ...], tuple[int, ...]], str] = {}
