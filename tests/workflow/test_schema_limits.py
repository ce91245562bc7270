"""Configured sizes that cannot finish, and privacy parameters outside what any
calibration can honour, stop at the schema with the largest value allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def _config(**top):
    cfg = {
        "datasets": {"airfoil": {"uci_id": 291}},
        "variants": {"v": {}},
        "experiments": {"e": {"algorithms": ["adassp"], "variants": ["v"]}},
    }
    cfg.update(top)
    return cfg


@pytest.mark.parametrize(
    ("top", "needle"),
    [
        ({"bootstrap": {"resamples": 10**9}}, "100000"),
        ({"cv": {"repeats": 10**9}}, "100000"),
        ({"cv": {"folds": 10**6}}, "1000"),
        ({"epsilons": [1e300]}, "1000"),
        ({"epsilons": [1e-250]}, "1e-06"),
        ({"delta": 1e-320}, "1e-100"),
    ],
    ids=["resamples", "repeats", "folds", "epsilon-huge", "epsilon-tiny", "delta-tiny"],
)
def test_sizes_and_budgets_beyond_the_limits_are_refused(top, needle):
    with pytest.raises(WorkflowError) as info:
        validate(_config(**top), str(SCHEMA))
    assert needle in str(info.value.args[1] if len(info.value.args) > 1 else info.value)


def test_experiment_repeats_beyond_the_limit_are_refused():
    cfg = _config()
    cfg["experiments"]["e"]["repeats"] = {"adassp": 10**9}
    with pytest.raises(WorkflowError):
        validate(cfg, str(SCHEMA))


@pytest.mark.parametrize(
    "top",
    [
        {"bootstrap": {"resamples": 100_000}},
        {"cv": {"repeats": 100_000, "folds": 1000}},
        {"epsilons": [1e-6, 1000]},
        {"delta": 1e-100},
    ],
)
def test_the_limits_themselves_are_allowed(top):
    validate(_config(**top), str(SCHEMA))
