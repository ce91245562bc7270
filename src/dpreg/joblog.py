"""Logging set-up for one Snakemake job (used by workflow/scripts/*).

Imports nothing heavy, so an adapter can send everything to its log file
before it imports the rest of the package.
"""

from __future__ import annotations

import logging
import sys
import traceback
from types import TracebackType
from typing import TextIO

__all__ = ["log_to_file"]


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
            line = f"ERROR {exc}"
        else:
            log_file.write("".join(traceback.format_exception(kind, exc, tb)))
            line = f"ERROR {kind.__name__}: {exc} (traceback in {path})"
        log_file.write(line + "\n")
        log_file.flush()
        if console is not None:
            console.write(line + "\n")
            console.flush()

    sys.excepthook = hook
    return log_file
