"""The run directory: writable, and used by one run at a time.

Snakemake checks neither before it starts. A ``.snakemake`` folder it cannot
write stops it with a ``PermissionError`` traceback from deep inside its
persistence layer. A second run in a directory where a run is active builds
its whole DAG first. With the default profile's ``rerun-incomplete`` it even
plans to rerun the first run's in-progress jobs. Only then is it refused,
with "Directory cannot be locked" and advice to use ``--unlock``, the one
command that would let the two runs write the same files.

:func:`claim_run_directory` runs while the Snakefile is read, before any of
that (``workflow/rules/common.smk``):

- it checks that ``.snakemake`` and the output folders can be written, by
  creating and removing a file in each. ``os.access`` would not do: it says
  yes to root on a read-only mount. A folder that cannot be written stops the
  run with one message naming it and what to do;
- it holds an exclusive :func:`fcntl.flock` on ``.snakemake/dpreg-run.lock``
  for the life of the Snakemake process. The file records the holder's pid,
  host, start time and command. The kernel drops the lock when that process
  ends, however it ends (``kill -9`` included), so a lock never outlives its
  run and needs no ``--unlock``. A second run meanwhile stops with one
  message naming the active run, saying to wait for it, and warning against
  ``--unlock``.

A command that only looks (a dry run, ``--lint``, listings, summaries,
graphs, the report) takes no lock and creates no folder; it is refused only
an existing ``.snakemake`` it cannot write (a dry run writes there too).
While a run is active it gets the same facts as a warning and goes on.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from dpreg._validation import DPRegError

__all__ = [
    "LOOKING_OPTIONS",
    "MIN_FREE_BYTES",
    "RUN_LOCK",
    "check_writable",
    "claim_run_directory",
    "invocation_looks_only",
]

#: Free space a run needs to start: less, and Snakemake itself fails writing its
#: own records (job scripts, metadata) before any job can say what is wrong.
#: The tiny CI run writes about 1 MiB of outputs; a real run far more.
MIN_FREE_BYTES = 1 << 20

#: The lock file, relative to the working directory.
RUN_LOCK = Path(".snakemake") / "dpreg-run.lock"

#: Snakemake options of a command that only looks: it writes no output, so it
#: may run beside an active run.
LOOKING_OPTIONS = frozenset(
    {
        "--dry-run",
        "--dryrun",
        "--lint",
        "--list-rules",
        "--list",
        "--list-target-rules",
        "--lt",
        "--summary",
        "--detailed-summary",
        "--dag",
        "--rulegraph",
        "--filegraph",
        "--d3dag",
        "--report",
        "--list-changes",
        "--lc",
        "--list-input-changes",
        "--li",
        "--list-params-changes",
        "--lp",
        "--list-code-changes",
        "--list-untracked",
        "--lu",
        "--print-compilation",
    }
)
#: The one-letter forms (``-n``, also inside ``-np``; ``-l``; ``-S``; ``-D``).
_LOOKING_LETTERS = frozenset("nlSD")

#: What to do about another active run (README.md, "Troubleshooting").
_WAIT_ADVICE = (
    "Two runs in one directory would write the same files. Wait for that run to "
    "finish, or stop it (Ctrl-C in its terminal, or kill {pid}), then run the same "
    "command again. Do not use --unlock while it runs: --unlock is only for a run "
    "that was killed (README.md, 'Troubleshooting')"
)

#: The lock held by this process (kept open for its lifetime; the kernel releases it at exit).
_HELD: list[IO[str]] = []


def invocation_looks_only(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` only looks (see :data:`LOOKING_OPTIONS`).

    A process that is not Snakemake's command line (the Snakemake API called
    from Python, ``argv[0]`` then being that program) counts as looking: it
    takes no lock and is refused nothing.
    """
    if not argv:
        return True
    program = Path(argv[0])
    if not (program.name == "snakemake" or program.parent.name == "snakemake"):
        return True
    for arg in argv[1:]:
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in LOOKING_OPTIONS:
                return True
        elif arg.startswith("-") and arg[1:].isalpha() and _LOOKING_LETTERS & set(arg[1:]):
            return True
    return False


def _probe(folder: Path) -> None:
    """Create and remove a file in ``folder`` (made if missing); raises on failure."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".dpreg-write-check.", dir=folder)
    os.close(fd)
    os.unlink(name)


def check_writable(folders: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse, with one message, a folder of the run that cannot be written.

    Each folder (created when missing) must take a new file and have
    :data:`MIN_FREE_BYTES` free. For ``.snakemake``, each folder already
    inside it must take a new file too: Snakemake writes its locks, metadata
    and markers there.
    """
    for folder in map(Path, folders):
        inside = []
        if folder.name == ".snakemake" and folder.is_dir():
            with contextlib.suppress(OSError):
                inside = sorted(p for p in folder.iterdir() if p.is_dir())
        for path in [folder, *inside]:
            try:
                _probe(path)
            except OSError as err:
                where = path.resolve()
                raise DPRegError(
                    f"cannot write in {where} ({err.strerror}): a run writes Snakemake's "
                    "records to .snakemake/ and its outputs and logs to results/ and logs/ "
                    f"of the working directory {Path.cwd()}. Make the folder writable "
                    f"(chmod -R u+w {where}) or run in a directory you can write "
                    "(snakemake --directory DIR, with DIR/config/config.yaml), then run "
                    "the command again"
                ) from None
        free = shutil.disk_usage(folder).free
        if free < MIN_FREE_BYTES:
            raise DPRegError(
                f"cannot write in {folder.resolve()}: no space left on device "
                f"({free // 1024} KiB free; a run needs at least {MIN_FREE_BYTES >> 20} MiB "
                "to start). Free space on that file system, then run the command again"
            )


def _holder(handle: IO[str]) -> dict[str, Any]:
    """What the lock file says about the run holding it (empty when unreadable)."""
    handle.seek(0)
    try:
        record = json.loads(handle.read() or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _describe(record: dict[str, Any]) -> str:
    if not record.get("pid"):
        return "(its process id is not recorded yet)"
    return (
        f"(pid {record['pid']} on {record.get('host', '?')}, started "
        f"{record.get('started', '?')}: {record.get('command', '?')})"
    )


def claim_run_directory(
    folders: Iterable[str | os.PathLike[str]],
    argv: Sequence[str],
    *,
    warn: Any = None,
) -> bool:
    """Check the run directory (the current one) and take its run lock.

    Parameters
    ----------
    folders : iterable of path-like
        The folders the run writes besides ``.snakemake`` (``results``, ``logs``).
    argv : sequence of str
        The command line (``sys.argv``). A command that only looks
        (:func:`invocation_looks_only`) is checked, not locked.
    warn : callable, optional
        Gets the warning for a looking command while a run is active
        (Snakemake's ``logger.warning``).

    Returns
    -------
    bool
        Whether this process now holds the lock (until it ends).

    Raises
    ------
    DPRegError
        When a folder cannot be written, or when another run holds the lock
        and this command would write.
    """
    looks = invocation_looks_only(argv)
    if _HELD:  # the Snakefile read twice in one process (e.g. by the API)
        return True
    if not looks or RUN_LOCK.parent.is_dir():
        # a dry run writes .snakemake too; a look where nothing ran (a lint in a
        # read-only clone) creates nothing
        check_writable([RUN_LOCK.parent])
    if looks and not RUN_LOCK.exists():
        return False  # nothing ran here yet: nothing to report
    handle = open(RUN_LOCK, "a+", encoding="utf-8")  # noqa: SIM115 - held for the run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        record = _holder(handle)
        handle.close()
        message = f"another Snakemake run is active in {Path.cwd()} {_describe(record)}. "
        if looks:
            if warn is not None:
                warn(f"dpreg: {message}What this command shows may change as it runs.")
            return False
        raise DPRegError(message + _WAIT_ADVICE.format(pid=record.get("pid", "<pid>"))) from None
    if looks:
        handle.close()  # nobody else runs here; a look needs no lock
        return False
    handle.seek(0)
    handle.truncate()
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "command": " ".join(["snakemake", *argv[1:]]),
    }
    handle.write(json.dumps(record) + "\n")
    handle.flush()
    _HELD.append(handle)
    check_writable(folders)
    return True
