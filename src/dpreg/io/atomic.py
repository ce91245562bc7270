"""Atomic file writes with the user's umask: the one helper every writer uses.

A file is written to a temporary sibling (``.<name>.<random>.tmp`` in the same
folder, so the final move is a rename on one file system) and moved into
place with :func:`os.replace`: a reader sees the previous complete file or the
new complete file, never a partial one.  On any failure (an exception, a
full disk, Ctrl-C) the temporary file is removed and the destination is left
as it was. A write killed outright (``kill -9``) leaves its temporary file;
the next write of the same file removes it.

:func:`tempfile.mkstemp` creates its file with mode ``0600`` whatever the
umask; the file is given ``0666 & ~umask`` before it is moved into place, so
outputs are group-readable on a shared cluster folder exactly as a plain
``open(path, "w")`` would make them.

A write that fails because the disk (or the user's quota, or the process's
file-size limit) is full raises :class:`~dpreg._validation.DPRegError` naming
the destination, "no space left" and what to do, instead of the bare
``OSError`` a job would otherwise print with its traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from dpreg._validation import DPRegError

__all__ = [
    "NO_SPACE_ERRNOS",
    "atomic_path",
    "no_space_error",
    "umask_mode",
    "write_bytes_atomic",
    "write_text_atomic",
]

_UMASK_LOCK = threading.Lock()

#: errno values of a write that failed for want of space: the file system is
#: full (ENOSPC), the user's quota is used up (EDQUOT), or the file would pass
#: the process's file-size limit, ``ulimit -f`` (EFBIG).
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def no_space_error(path: str | os.PathLike[str], err: OSError) -> DPRegError:
    """The one message for a write of ``path`` that failed with ``err`` (an errno of
    :data:`NO_SPACE_ERRNOS`): which file, why, that nothing partial was kept, what to do."""
    why = {
        errno.ENOSPC: "no space left on device",
        errno.EDQUOT: "no space left: disk quota exceeded",
        errno.EFBIG: "no space left: file larger than the process's file-size limit (ulimit -f)",
    }.get(err.errno or 0, "no space left on device")
    return DPRegError(
        f"cannot write {path}: {why}; nothing partial was kept ({Path(path).name} is "
        f"as it was before the write). Free space on the file system of {Path(path).parent} "
        "(or raise the limit) and run the same command again"
    )


def umask_mode() -> int:
    """``0o666 & ~umask``: the mode :func:`open` gives a new file under the current umask."""
    with _UMASK_LOCK:  # os.umask only reads by setting: restore it at once
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def _remove_stale_temporaries(path: Path) -> None:
    """Remove temporary siblings of ``path`` left by earlier writes that were killed
    outright (``kill -9`` runs no cleanup). Only one job writes a given file at a
    time, so after this write has moved into place, any other temporary of the
    same name is a leftover."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}\.tmp")
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if pattern.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


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
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        if err.errno in NO_SPACE_ERRNOS:  # no inode left for the temporary file
            raise no_space_error(path, err) from None
        raise
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, umask_mode())
        os.replace(tmp, path)
        _remove_stale_temporaries(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if err.errno in NO_SPACE_ERRNOS:
            raise no_space_error(path, err) from None
        raise
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
