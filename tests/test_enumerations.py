"""Every closed vocabulary is defined once in the code, and the config schema
agrees with it: a value allowed in one place and refused in the other is a
test failure, not a silent mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.algorithms.base import Algorithm
from dpreg.data.entries import FORMATS, MISSING_POLICIES, TARGET_TRANSFORMS
from dpreg.inference.bootstrap import STATISTICS
from dpreg.inference.claims import EXPECTATIONS, SOURCES
from dpreg.preprocess.spec import INTERCEPTS, SCALES, STATS_SOURCES
from dpreg.privacy.accounting import Release
from dpreg.privacy.kinds import Mechanism, Neighbouring

SCHEMA = yaml.safe_load(
    (
        Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"
    ).read_text()
)
DEFS = SCHEMA["$defs"]


def _enum(spec: dict) -> list:
    """The allowed values a schema property lists (``enum``, or a ``oneOf`` of them)."""
    if "enum" in spec:
        return list(spec["enum"])
    out: list = []
    for option in spec.get("oneOf", []):
        if option.get("type") == "boolean":
            out += [False, True]
        out += option.get("enum", [])
    return out


@pytest.mark.parametrize(
    ("where", "key", "code"),
    [
        ("variant", "stats", STATS_SOURCES),
        ("variant", "scale", SCALES),
        ("variant", "intercept", INTERCEPTS),
        ("claim", "statistic", STATISTICS),
        ("claim", "expect", EXPECTATIONS),
        ("claim", "source", SOURCES),
        ("dataset", "missing", MISSING_POLICIES),
        ("dataset", "target_transform", TARGET_TRANSFORMS),
        ("dataset", "format", FORMATS),
    ],
)
def test_schema_allows_exactly_what_the_code_defines(where, key, code):
    schema_values = _enum(DEFS[where]["properties"][key])
    assert sorted(map(str, schema_values)) == sorted(map(str, code)), (where, key)


def test_every_release_and_entry_uses_the_defined_kinds():
    for name, alg in ALGORITHMS.items():
        assert alg.neighbouring in {n.value for n in Neighbouring}, name
        if alg.private:
            for rel in alg.releases(epsilon=1.0, delta=1e-6, d=3, n=1000):
                assert rel.mechanism in {m.value for m in Mechanism}, (name, rel.name)


def test_a_misspelt_mechanism_is_refused_naming_it():
    with pytest.raises(DPRegError, match="mechanism 'gausian' is not one of gaussian"):
        Release("XtX", "gausian", 1.0, 1.0, 1.0, 1e-6, "gdp", True)


def test_a_misspelt_neighbour_relation_is_refused_naming_it():
    base = ALGORITHMS["adassp"]
    with pytest.raises(DPRegError, match="neighbouring 'replace one' is not one of"):
        Algorithm(
            "x",
            "x",
            private=True,
            calibration="gdp",
            release_fn=base.release_fn,
            fit_fn=base.fit_fn,
            neighbouring="replace one",
            reference="test",
        )


def test_kinds_compare_equal_to_the_strings_the_ledger_writes():
    assert Mechanism.GAUSSIAN == "gaussian" and Neighbouring.ADD_REMOVE == "add/remove"


def test_config_readme_names_only_registered_algorithms():
    """config/README.md lists no algorithms by hand (the docs generate the list);
    every algorithm name it quotes in a config example exists in the registry."""
    import re

    text = (Path(__file__).resolve().parents[1] / "config" / "README.md").read_text()
    quoted = set(re.findall(r"\{algorithm: ([a-z0-9][a-z0-9-]*)", text))
    quoted |= {
        name
        for block in re.findall(r"algorithms: \[([^\]]*)\]", text)
        for name in (n.strip() for n in block.split(","))
        if name
    }
    assert quoted  # the README does show algorithms in its examples
    unknown = sorted(q for q in quoted if q not in ALGORITHMS)
    assert unknown == []
