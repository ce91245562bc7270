"""Code fingerprints: which source an algorithm's trials depend on, as one hash.

An entry's fingerprint is the SHA-256 of the source of the module whose
``ENTRIES`` holds it (:data:`dpreg.algorithms.registry.ORIGINS`; a plug-in's
file) together with the family modules of :mod:`dpreg.algorithms` it
imports, transitively (e.g. AdaSSP's :mod:`~dpreg.algorithms.ssp`, the Wang
family's private ``_wang`` helpers).  The contract and machinery shared by
every entry (``base``, ``fits``, the registry) and the layers below
(:mod:`dpreg.privacy`, :mod:`dpreg.preprocess`) are not part of it: a change
there is a change of dpreg for every algorithm (rerun everything, e.g.
``snakemake --forcerun run_sweep``).

The workflow puts each algorithm's fingerprint into the params of the sweeps
that run it, so editing an algorithm reruns exactly those sweeps; provenance
records the fingerprints of a run.  Modules are hashed by their name inside
dpreg (a plug-in's own file by its content only), so the fingerprint does
not depend on where the checkout or the plug-in file lives.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from dpreg.algorithms.registry import ORIGINS, get_algorithm

__all__ = ["code_fingerprint", "code_record", "source_files"]

_PACKAGE = "dpreg.algorithms"
_SHARED = frozenset({"base", "fits", "registry", "plugins", "fingerprint"})


@lru_cache(maxsize=512)
def _file_of(module: str) -> Path | None:
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    if path is None:
        spec = importlib.util.find_spec(module)
        path = spec.origin if spec is not None else None
    return Path(path) if path and str(path).endswith(".py") else None


def _stamp(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size


@lru_cache(maxsize=512)
def _read(stamp: tuple[str, int, int]) -> tuple[bytes, frozenset[str]]:
    """A file's bytes and the family modules it imports (cached until the file changes)."""
    data = Path(stamp[0]).read_bytes()
    return data, frozenset(_family_imports(ast.parse(data)))


def _family_imports(tree: ast.AST) -> set[str]:
    """Modules of dpreg.algorithms (bar the shared machinery) a module imports."""
    out: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == _PACKAGE:
                targets = [f"{_PACKAGE}.{a.name}" for a in node.names]
            else:
                targets = [node.module]
        for t in targets:
            parts = t.split(".")
            if parts[:2] == ["dpreg", "algorithms"] and len(parts) >= 3:
                sub = parts[2]
                if sub not in _SHARED and _file_of(f"{_PACKAGE}.{sub}") is not None:
                    out.add(f"{_PACKAGE}.{sub}")
    return out


def source_files(name: str) -> dict[str, Path]:
    """Label -> file of every module an algorithm's fingerprint covers.

    The defining module first, labelled by its module name (``<plugin>`` for
    a plug-in outside dpreg), then the family modules it imports.
    """
    get_algorithm(name)  # an unknown name stops here, listing the known ones
    origin = ORIGINS[name]
    first = _file_of(origin)
    if first is None:
        raise FileNotFoundError(f"algorithm {name!r}: no source file for module {origin}")
    label = origin if origin.startswith(_PACKAGE + ".") else "<plugin>"
    files = {label: first}
    todo = [first]
    while todo:
        path = todo.pop()
        for mod in sorted(_read(_stamp(path))[1]):
            if mod not in files:
                f = _file_of(mod)
                if f is not None:
                    files[mod] = f
                    todo.append(f)
    return files


def code_fingerprint(name: str) -> str:
    """SHA-256 (hex) of an algorithm's sources (:func:`source_files`)."""
    h = hashlib.sha256()
    for label, path in sorted(source_files(name).items()):
        h.update(label.encode("utf-8") + b"\0")
        h.update(_read(_stamp(path))[0])
        h.update(b"\0")
    return h.hexdigest()


def code_record(name: str) -> dict[str, Any]:
    """Provenance of an algorithm's code: fingerprint, module and the modules hashed."""
    files = source_files(name)
    origin = ORIGINS[name]
    record: dict[str, Any] = {
        "fingerprint": code_fingerprint(name),
        "module": origin,
        "modules": sorted(files),
    }
    if "<plugin>" in files:
        if origin.startswith("dpreg_plugin_"):  # a file's module name holds a path hash
            del record["module"]
        path = files["<plugin>"].resolve()
        here = Path.cwd().resolve()
        # relative to the working directory when under it (as the config names it)
        record["plugin_file"] = str(path.relative_to(here) if path.is_relative_to(here) else path)
    return record
