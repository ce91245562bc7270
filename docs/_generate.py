"""Pages generated from their one source at every build: the algorithms from
the registry (:data:`dpreg.algorithms.ALGORITHMS`), the config keys from
``workflow/schemas/config.schema.yaml``."""

from __future__ import annotations

from pathlib import Path

import yaml


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def algorithms_page() -> str:
    from dpreg.algorithms import ALGORITHMS

    lines = [
        "# Algorithms",
        "",
        f"The registry holds {len(ALGORITHMS)} entries (generated from "
        "`dpreg.algorithms.ALGORITHMS` at build time).",
        "",
        "| name | label | private | calibration | neighbours | fits on |",
        "|---|---|---|---|---|---|",
    ]
    for name, alg in sorted(ALGORITHMS.items()):
        kind = "private" if alg.private else "non-private"
        if getattr(alg, "reproduction", False):
            kind += " (reproduction)"
        fits = "rows" if alg.needs_rows else "statistics"
        lines.append(
            f"| `{name}` | {_cell(alg.label)} | {kind} | {_cell(alg.calibration)} "
            f"| {_cell(getattr(alg, 'neighbouring', ''))} | {fits} |"
        )
    lines += ["", "## What each entry is", ""]
    lines += [f"- `{name}`: {_cell(alg.reference)}" for name, alg in sorted(ALGORITHMS.items())]
    return "\n".join(lines) + "\n"


def _schema_rows(props: dict, prefix: str, out: list[str]) -> None:
    for key, spec in props.items():
        path = f"{prefix}{key}"
        default = spec.get("default", "")
        desc = spec.get("description", "")
        out.append(f"| `{path}` | {_cell(desc)} | {_cell(default)} |")
        if spec.get("type") == "object" and "properties" in spec:
            _schema_rows(spec["properties"], f"{path}.", out)


def config_page(root: Path) -> str:
    schema = yaml.safe_load((root / "workflow" / "schemas" / "config.schema.yaml").read_text())
    rows: list[str] = []
    _schema_rows(schema["properties"], "", rows)
    return (
        "# Configuration keys\n\n"
        "Every top-level key of the config and its nested keys, generated from "
        "`workflow/schemas/config.schema.yaml` (the schema the workflow validates "
        "against). `config/README.md` explains them with examples.\n\n"
        "| key | meaning | default |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def api_page() -> str:
    """Every public module of the package (entry points such as ``__main__`` and
    private ``_`` modules left out), so a new module is documented without an edit."""
    import importlib
    import pkgutil

    import dpreg

    names = ["dpreg"]
    for info in pkgutil.walk_packages(dpreg.__path__, prefix="dpreg."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]):
            continue
        importlib.import_module(info.name)  # fail the build on a module that cannot import
        names.append(info.name)
    body = "\n".join(f"   {name}" for name in sorted(names))
    return (
        "# API reference\n\nGenerated from the docstrings of every public module.\n\n"
        "```{eval-rst}\n.. autosummary::\n   :toctree: ../_autosummary\n\n" + body + "\n```\n"
    )


def write_generated(out: Path, root: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    pages = (
        ("algorithms.md", algorithms_page()),
        ("config.md", config_page(root)),
        ("api.md", api_page()),
    )
    for name, text in pages:
        path = out / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
