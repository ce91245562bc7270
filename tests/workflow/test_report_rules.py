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


def test_a_plugin_goes_on_the_leaderboard(tmp_path):
    """A method outside the package, run through the suite, is ranked on the board."""
    import shutil
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "plugin"
    cfg = tiny_config()
    cfg["plugins"] = ["my_method.py"]
    cfg["experiments"]["wang-suite"] = {
        **SUITE,
        "algorithms": [*SUITE["algorithms"], "adassp-skew"],
    }
    cfg["run"] = ["wang-suite"]
    run = make_workdir(tmp_path, cfg)
    shutil.copy(example / "my_method.py", run / "my_method.py")
    snakemake(run, "--cores", "2")
    board = pd.read_csv(run / "results" / "leaderboard.csv")
    skew = board[board["algorithm"] == "adassp-skew"]
    assert len(skew) == len(cfg["epsilons"]) and (skew["datasets"] == 3).all()
    assert skew["avg_rank"].between(1, 4).all()  # four private methods ranked


def test_the_documented_suite_overlay_is_the_suite_plus_the_plugin():
    """examples/plugin/suite.yaml repeats the suite's algorithm list (YAML lists replace,
    they do not merge): tied here to config/wang-suite.yaml so the two cannot drift."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    suite = yaml.safe_load((root / "config" / "wang-suite.yaml").read_text())
    overlay = yaml.safe_load((root / "examples" / "plugin" / "suite.yaml").read_text())
    expected = [*suite["experiments"]["wang-suite"]["algorithms"], "adassp-skew"]
    assert overlay["experiments"]["wang-suite"]["algorithms"] == expected
    assert overlay["plugins"] == ["examples/plugin/my_method.py"]
