"""Progress of long jobs (sweeps, summaries, the audit), from tqdm.

On an interactive terminal a bar with rate and time left; otherwise (a
Snakemake job log, CI, a pipe) one plain line at most every
:data:`LOG_EVERY` seconds through :mod:`logging`, with the same estimate, so
a job log shows how far a long job got without carriage-return clutter.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

__all__ = ["LOG_EVERY", "progress"]

T = TypeVar("T")

#: Seconds between two progress lines when the output is not a terminal.
LOG_EVERY = 30.0

_log = logging.getLogger("dpreg.progress")


def _interactive() -> bool:
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def progress(
    items: Iterable[T],
    *,
    desc: str,
    total: int | None = None,
    unit: str = "it",
    every: float = LOG_EVERY,
    interactive: bool | None = None,
) -> Iterator[T]:
    """Yield ``items`` while reporting progress.

    Parameters
    ----------
    items : iterable
        What the job works through.
    desc : str
        What is being done, e.g. ``"sweep bike/stats"``.
    total : int, optional
        Number of items (taken from ``len(items)`` when it has one).
    unit : str
        Name of one item, for the rate.
    every : float
        Seconds between two lines when not interactive (the last item is
        always reported).
    interactive : bool, optional
        Force the bar (True) or the lines (False); default: a bar exactly
        when standard error is a terminal.
    """
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if interactive is None:
        interactive = _interactive()
    if interactive:
        yield from tqdm(items, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False)
        return
    start = last = time.monotonic()
    done = 0
    for item in items:
        yield item
        done += 1
        now = time.monotonic()
        if now - last >= every or (total is not None and done == total):
            last = now
            _log.info(
                "%s",
                tqdm.format_meter(done, total, now - start, prefix=desc, unit=unit, ncols=0),
            )
