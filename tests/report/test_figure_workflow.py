"""The figure option and ridge-cv in a real Snakemake run (tiny config)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from test_workflow import make_workdir, snakemake, tiny_config  # noqa: E402

pytestmark = pytest.mark.workflow


def test_ratio_figures_and_ridge_cv_run_end_to_end(tmp_path):
    cfg = tiny_config()
    cfg["experiments"] = {
        "refs": {
            "algorithms": ["adassp", "adassp-gdp", "ridge", "ols", "ridge-cv", "trivial"],
            "variants": ["maxnorm", "clip2"],
            "datasets": ["concrete"],
            "figure": {"kind": "ratio", "reference": "adassp"},
        },
        "clip": {
            "algorithms": ["adassp", "trivial"],
            "variants": ["maxnorm", "clip2"],
            "datasets": ["concrete"],
            "figure": {"kind": "ratio", "reference_variant": "maxnorm"},
        },
    }
    cfg.pop("run", None)
    run = make_workdir(tmp_path, cfg)
    targets = [f"results/{k}/{e}.{x}" for e in ("refs", "clip") for k, x in
               (("figures", "png"), ("tables", "csv"))]  # fmt: skip
    snakemake(run, "--cores", "2", *targets)
    for target in targets:  # a drawn figure is tens of kB; a table a few rows
        assert (run / target).stat().st_size > (10_000 if target.endswith("png") else 500)
    table = pd.read_csv(run / "results" / "tables" / "refs.csv")
    cv = table[table["algorithm"] == "ridge-cv"]
    assert set(cv["variant"]) == {"maxnorm", "clip2"} and cv["mse_median"].notna().all()
    # non-private: one curve, the same at every epsilon
    assert cv.groupby("variant")["mse_median"].nunique().eq(1).all()
    # a bad figure option stops the run before anything is computed, naming the key
    cfg["experiments"]["clip"]["figure"] = {"kind": "ratio"}
    bad = make_workdir(tmp_path / "bad", cfg)
    proc = snakemake(bad, "-n", check=False)
    assert proc.returncode != 0 and "figure" in proc.stdout + proc.stderr
