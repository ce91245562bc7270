"""Atomic file writes with the user's umask: the one helper every writer uses.

A file is written to a temporary sibling (``.<name>.<random>.tmp`` in the same
folder, so the final move is a rename on one file system) and moved into
place with :func:`os.replace`: a reader sees the previous complete file or the
new complete file, never a partial one.  On any failure (an exception, a
full disk, Ctrl-C) the temporary file is removed and the destination is left
as it was.

:func:`tempfile.mkstemp` creates its file with mode ``0600`` whatever the
umask; the file is given ``0666 & ~umask`` before it is moved into place, so
outputs are group-readable on a shared cluster folder exactly as a plain
``open(path, "w")`` would make them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "umask_mode", "write_bytes_atomic", "write_text_atomic"]

_UMASK_LOCK = threading.Lock()


def umask_mode() -> int:
    """``0o666 & ~umask``: the mode :func:`open` gives a new file under the current umask."""
    with _UMASK_LOCK:  # os.umask only reads by setting: restore it at once
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, mkdir: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success move it into place.

    For writers that need a file name (matplotlib's ``savefig``, Parquet
    writers).  The temporary file exists (empty) when the block starts; the
    block writes it by name.  When the block ends normally the file gets the
    umask's mode (:func:`umask_mode`) and replaces ``path``; when it raises,
    the temporary file is removed and ``path`` is untouched.

    Parameters
    ----------
    path : path-like
        The destination.
    mkdir : bool
        Create the destination's folder (and its parents) when missing.
    """
    path = Path(path)
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, umask_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`).

    On any failure the temporary file is removed and ``path`` is left as it
    was (absent, or the previous complete file).
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """UTF-8 text through :func:`write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"))
