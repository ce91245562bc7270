"""Hostile inputs: extreme budgets at the estimator, over-long names in the config."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from dpreg import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.estimator import NonPrivateWarning, PrivateLinearRegression
from dpreg.fitguard import EPSILON_RANGE

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 3)) / 2  # ||x|| <= sqrt(3)/2 < 1 = B_X
    y = np.clip(X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.standard_normal(200), -1, 1)
    return X, y


@pytest.mark.parametrize("epsilon", [1e300, 1e-250], ids=["eps-1e300", "eps-1e-250"])
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_extreme_epsilon_gives_a_finite_fit_or_one_clear_error(algorithm, epsilon):
    # under the suite's filterwarnings=error a RuntimeWarning is an exception too,
    # so this also checks that no overflow warning escapes as a traceback
    model = PrivateLinearRegression(algorithm, epsilon=epsilon, bounds=(1.0, 1.0), random_state=0)
    X, y = _data()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonPrivateWarning)  # trivial, ols, ridge
            model.fit(X, y)
    except DPRegError as err:
        msg = str(err)
        assert "\n" not in msg and "epsilon" in msg
        assert algorithm in msg or f"{epsilon:g}" in msg or f"{epsilon:.3g}" in msg, msg
        return
    assert np.isfinite(model.coef_).all()
    assert np.isfinite(model.predict(X)).all()


def test_the_estimator_names_the_range_the_schema_accepts():
    schema = yaml.safe_load(SCHEMA.read_text())
    items = schema["properties"]["epsilons"]["items"]
    assert (items["minimum"], items["maximum"]) == EPSILON_RANGE


def test_an_internal_failure_names_the_algorithm_budget_and_range(monkeypatch):
    alg = ALGORITHMS["adassp"]

    def broken(*args, **kwargs):
        return 1.0 / 0.0

    monkeypatch.setattr(type(alg), "fit", broken)
    with pytest.raises(DPRegError) as exc:
        PrivateLinearRegression("adassp", epsilon=2.0, random_state=0).fit(*_data())
    msg = str(exc.value)
    assert "adassp cannot be calibrated or fitted at epsilon=2" in msg
    assert "ZeroDivisionError" in msg and "between 1e-06 and 1000" in msg


def _config(name: str) -> dict:
    return {
        "datasets": {name: {"path": "data.csv", "target": "y"}},
        "variants": {"v": {}},
        "experiments": {"e": {"algorithms": ["adassp"], "variants": ["v"]}},
    }


def test_schema_refuses_a_300_character_dataset_name():
    with pytest.raises(WorkflowError) as info:
        validate(_config("a" * 300), str(SCHEMA))
    assert "is too long" in str(info.value.args[1] if len(info.value.args) > 1 else info.value)
    validate(_config("a" * 100), str(SCHEMA))  # the longest allowed


@pytest.mark.workflow
def test_workflow_names_the_over_long_dataset_and_the_limit(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(_config("a" * 300)))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    proc = subprocess.run(
        [*cmd, "--directory", str(tmp_path), "-n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "invalid configuration: config: datasets: 'aaaa" in out, out[-2000:]
    assert "is 300 characters long; at most 100 are allowed" in out
    assert "Traceback" not in out
    assert not (tmp_path / "results").exists()
