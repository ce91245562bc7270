"""The leaderboard and browser rules (workflow/rules/report.smk) in real Snakemake runs."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_workflow import make_workdir, snakemake, tiny_config

from dpreg.report.browser import plotly_js
from dpreg.report.leaderboard import LEADERBOARD_COLUMNS

pytestmark = pytest.mark.workflow

#: a miniature of Wang's suite on the tiny config's three datasets
SUITE = {
    "algorithms": ["adassp", "ssp", "adassp-wang", "trivial", "ridge"],
    "variants": ["wang"],
    "datasets": ["airfoil", "concrete", "servo"],
}


def test_suite_run_writes_leaderboard_and_its_browser(tmp_path):
    cfg = tiny_config()
    cfg["experiments"]["wang-suite"] = SUITE
    cfg["run"] = ["wang-suite"]
    run = make_workdir(tmp_path, cfg)
    snakemake(run, "--cores", "2")
    board = pd.read_csv(run / "results" / "leaderboard.csv")
    assert list(board.columns) == LEADERBOARD_COLUMNS
    # private methods only (ridge and trivial are references), per epsilon, on 3 datasets
    assert len(board) == 3 * len(cfg["epsilons"])
    assert set(board["algorithm"]) == {"adassp", "ssp", "adassp-wang"}
    assert (board["datasets"] == 3).all() and set(board["reference"]) == {"adassp"}
    md = (run / "results" / "leaderboard.md").read_text(encoding="utf-8")
    assert md.count("## wang, epsilon = ") == len(cfg["epsilons"])
    assert "[figures/leaderboard-cd.png](figures/leaderboard-cd.png)" in md
    for ext in ("png", "pdf"):
        assert (run / "results" / "figures" / f"leaderboard-cd.{ext}").stat().st_size > 1000
    # the browser of this run set, with the leaderboard and links to its own provenance
    site = run / "results" / "browser-wang-suite"
    assert (site / "plotly.min.js").read_bytes() == plotly_js().read_bytes()
    text = (site / "data.js").read_text(encoding="utf-8")
    data = json.loads(text.removeprefix("window.DPREG_DATA = ").rstrip().rstrip(";"))
    assert list(data["experiments"]) == ["wang-suite"]
    assert [t["id"] for t in data["tables"]] == ["leaderboard"]
    assert {"text": "provenance", "href": "../provenance-wang-suite.json"} in data["links"]
    assert (run / "results" / "provenance-wang-suite.json").exists()


def test_leaderboard_only_in_runs_with_the_suite(tmp_path):
    run = make_workdir(tmp_path)
    out = snakemake(run, "-n", "--cores", "1").stdout
    assert "results/browser/index.html" in out
    assert "write_leaderboard" not in out and "leaderboard.csv" not in out
