"""The package layout: layers, no import cycle, no module over 500 lines.

Every import in ``src/dpreg`` (also those inside functions) is read with
:mod:`ast`.  A module belongs to the layer of its package; the layers, from
the bottom up, are :data:`LAYERS`.  A module may import its own layer and
the layers below it, never one above; and the packages must not import one
another in a circle (neither must the modules).  See the "Architecture"
section of README.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: bottom -> top; a unit is ``dpreg.<first part>`` (the root package is ``dpreg``)
LAYERS: list[tuple[str, ...]] = [
    (
        "dpreg._validation",
        "dpreg._version",
        "dpreg.seeding",
        "dpreg.joblog",
        "dpreg.progress",
        "dpreg.configfile",
        "dpreg.gitstate",
        "dpreg.io",
    ),
    ("dpreg.data",),
    ("dpreg.privacy",),
    ("dpreg.preprocess",),
    ("dpreg.algorithms",),
    ("dpreg.engine",),
    ("dpreg.inference",),
    ("dpreg.report",),
    ("dpreg.audit",),
    (
        "dpreg",
        "dpreg.bounds",
        "dpreg.budget",
        "dpreg.fitguard",
        "dpreg.estimator",
        "dpreg.cli",
        "dpreg.__main__",
    ),
]

MAX_LINES = 500


def unit_of(module: str) -> str:
    """``dpreg.algorithms.tukey`` -> ``dpreg.algorithms``; ``dpreg`` -> ``dpreg``."""
    parts = module.split(".")
    return ".".join(parts[:2])


def layer_of(module: str, layers: list[tuple[str, ...]] = LAYERS) -> int:
    unit = unit_of(module)
    for i, units in enumerate(layers):
        if unit in units:
            return i
    raise KeyError(f"{module}: its package {unit} is in no layer of tests/test_layering.py")


def module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The dpreg modules a module imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "dpreg")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "dpreg":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    out.discard(module)
    return out


def import_graph(src: Path) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Module -> the dpreg modules it imports; module -> its number of lines."""
    files = sorted((src / "dpreg").rglob("*.py"))
    names = {module_name(f, src): f for f in files}
    known = set(names)
    graph, lines = {}, {}
    for name, f in names.items():
        text = f.read_text(encoding="utf-8")
        lines[name] = len(text.splitlines())
        graph[name] = imports_of(ast.parse(text), name, f.name == "__init__.py", known)
    return graph, lines


def upward_imports(
    graph: Mapping[str, Iterable[str]], layers: list[tuple[str, ...]] = LAYERS
) -> list[str]:
    return [
        f"{m} (layer {layer_of(m, layers)}) imports {t} (layer {layer_of(t, layers)})"
        for m, targets in sorted(graph.items())
        for t in sorted(targets)
        if layer_of(t, layers) > layer_of(m, layers)
    ]


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def package_graph(graph: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        out.setdefault(unit_of(m), set()).update(
            unit_of(t) for t in targets if unit_of(t) != unit_of(m)
        )
    return out


GRAPH, LINES = import_graph(SRC)


def test_every_module_is_in_a_layer():
    for module in GRAPH:
        layer_of(module)


def test_no_upward_import():
    assert upward_imports(GRAPH) == []


def test_no_import_cycle_between_packages():
    assert cycles(package_graph(GRAPH)) == []


def test_no_import_cycle_between_modules():
    assert cycles(GRAPH) == []


def test_no_module_over_500_lines():
    assert {m: n for m, n in LINES.items() if n > MAX_LINES} == {}


# ---------------------------------------------------------------------------
# the checker itself finds what it must
# ---------------------------------------------------------------------------
def _fake_package(tmp_path: Path, files: Mapping[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        path = tmp_path / "dpreg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(tmp_path)[0]


def test_checker_finds_an_upward_import(tmp_path):
    graph = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "privacy/__init__.py": "",
            "privacy/ledger.py": "def f():\n    from dpreg.algorithms import registry\n",
            "algorithms/__init__.py": "",
            "algorithms/registry.py": "from ..privacy import ledger\n",
        },
    )
    assert graph["dpreg.privacy.ledger"] == {"dpreg.algorithms.registry"}
    assert graph["dpreg.algorithms.registry"] == {"dpreg.privacy.ledger"}
    found = upward_imports(graph)
    assert len(found) == 1 and found[0].startswith("dpreg.privacy.ledger (layer 2) imports")
    assert cycles(package_graph(graph)) == [["dpreg.algorithms", "dpreg.privacy"]]


def test_checker_reads_the_root_package_as_the_top_layer(tmp_path):
    graph = _fake_package(
        tmp_path,
        {"__init__.py": "__version__ = '1'\n", "io/x.py": "from dpreg import __version__\n"},
    )
    assert upward_imports(graph) == ["dpreg.io.x (layer 0) imports dpreg (layer 9)"]


def test_checker_rejects_a_module_in_no_layer():
    with pytest.raises(KeyError, match="in no layer"):
        layer_of("dpreg.newthing.x")
