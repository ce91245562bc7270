"""Logging set-up for one Snakemake job (used by ``workflow/scripts/*``).

Imports nothing heavy, so an adapter can send everything to its log file
before it imports the rest of the package.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from types import TracebackType
from typing import TextIO

__all__ = ["ORPHAN_EXIT_STATUS", "RECOVERY_HINT", "exit_with_parent", "log_to_file"]

#: Exit status of a job that stopped because Snakemake was gone.
ORPHAN_EXIT_STATUS = 75

#: The commands that recover a run after Snakemake was killed (README.md,
#: "Recovering an interrupted run").
RECOVERY_HINT = (
    "recover with: snakemake --unlock && snakemake --cores 2 --rerun-incomplete "
    "(README.md, 'Recovering an interrupted run')"
)


def _is_user_error(exc: BaseException) -> bool:
    # dpreg._validation.DPRegError, matched by name so this module stays light
    return any(cls.__name__ == "DPRegError" for cls in type(exc).__mro__)


def log_to_file(path: str) -> TextIO:
    """Send stdout, stderr, logging and warnings of this process to ``path``.

    An uncaught :class:`~dpreg.DPRegError` (bad data, config or parameter)
    is written as one line ``ERROR <message>`` to the log *and* to the
    console Snakemake shows, without a traceback; any other exception keeps
    its full traceback in the log and gets a one-line pointer on the console.
    The file stays open (line-buffered) for the whole job and is returned.
    """
    console = sys.__stderr__
    log_file = open(path, "w", buffering=1)  # noqa: SIM115 - open for the job's lifetime
    sys.stderr = sys.stdout = log_file
    logging.basicConfig(
        stream=log_file,
        level=logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if _is_user_error(exc):
            line, text = f"ERROR {exc}", ""
        else:
            line = f"ERROR {kind.__name__}: {exc} (traceback in {path})"
            text = "".join(traceback.format_exception(kind, exc, tb))
        # the console first: on a full disk the log file itself cannot be written
        if console is not None:
            console.write(line + "\n")
            console.flush()
        try:
            log_file.write(text + line + "\n")
            log_file.flush()
        except OSError:
            pass  # the message is on the console; a full disk is what it says

    sys.excepthook = hook
    exit_with_parent()
    return log_file


def exit_with_parent(*, interval: float = 0.5) -> threading.Thread:
    """Stop this process soon after the process that started it has died.

    A Snakemake job is a child of the Snakemake process.  When Snakemake is
    killed outright (``kill -9``, a closed terminal) the job would otherwise
    run on and write outputs nobody records.  A daemon thread checks every
    ``interval`` seconds whether the parent changed (the job was re-parented);
    if so it logs one line with :data:`RECOVERY_HINT` and ends the process
    at once with :data:`ORPHAN_EXIT_STATUS`, before any further output is
    written (outputs are written atomically, so none is left half-written).
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                logging.getLogger(__name__).error(
                    "the Snakemake process (pid %d) that started this job is gone; "
                    "stopping without writing outputs; %s",
                    parent,
                    RECOVERY_HINT,
                )
                logging.shutdown()
                os._exit(ORPHAN_EXIT_STATUS)

    thread = threading.Thread(target=watch, name="dpreg-exit-with-parent", daemon=True)
    thread.start()
    return thread
