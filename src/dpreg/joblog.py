"""Logging set-up for one Snakemake job (used by workflow/scripts/*).

Imports nothing heavy, so an adapter can send everything to its log file
before it imports the rest of the package.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["log_to_file"]


def log_to_file(path: str) -> TextIO:
    """Send stdout, stderr, logging and warnings of this process to ``path``.

    The file stays open (line-buffered) for the whole job; it is returned so
    the caller may keep a reference.
    """
    log_file = open(path, "w", buffering=1)  # noqa: SIM115 - open for the job's lifetime
    sys.stderr = sys.stdout = log_file
    logging.basicConfig(
        stream=log_file,
        level=logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return log_file
