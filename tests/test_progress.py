"""Progress of long jobs: a tqdm bar on a terminal, plain periodic lines in a log."""

from __future__ import annotations

import logging

from dpreg import progress as progress_module
from dpreg.progress import progress


def test_items_pass_through_unchanged_either_way():
    items = [3, 1, 2]
    assert list(progress(items, desc="x", interactive=False)) == items
    assert list(progress(iter(items), desc="x", total=3, interactive=True)) == items


def test_log_lines_are_periodic_and_the_last_item_is_reported(caplog, monkeypatch):
    clock = iter([0.0, 1.0, 2.0, 40.0, 41.0, 42.0])  # start, then one reading per item
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: next(clock))
    with caplog.at_level(logging.INFO, logger="dpreg.progress"):
        list(
            progress(range(5), desc="sweep bike/stats", unit="trial", every=30.0, interactive=False)
        )
    lines = [r.getMessage() for r in caplog.records]
    # item 3 arrives 40 s after the start (a line), item 5 is the last (a line); no others
    assert len(lines) == 2
    assert lines[0].startswith("sweep bike/stats:  60% 3/5")
    assert lines[1].startswith("sweep bike/stats: 100% 5/5")
    assert "\r" not in "".join(lines)


def test_a_terminal_gets_a_bar_on_stderr(capsys):
    list(progress(range(4), desc="audit", total=4, interactive=True))
    err = capsys.readouterr().err
    # the bar is drawn (tqdm's meter) and cleared when done (leave=False)
    assert "audit:   0%|" in err and "0/4" in err and err.endswith("\r")


def test_unknown_length_reports_the_count(caplog):
    with caplog.at_level(logging.INFO, logger="dpreg.progress"):
        list(progress((i for i in range(3)), desc="gen", every=0.0, interactive=False))
    assert caplog.records[-1].getMessage().startswith("gen: 3it")
