"""The registry: every algorithm entry of every family module, by config name.

A family is a module of this package that defines ``ENTRIES`` (a list of
:class:`~dpreg.algorithms.base.Algorithm`).  Families are discovered in
sorted module order, so adding an algorithm is one entry in its family
module (plus its functions and tests); nothing else lists algorithms.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from dpreg._validation import DPRegError, check_choice
from dpreg.algorithms.base import Algorithm
from dpreg.algorithms.peers import PEERS

__all__ = ["ALGORITHMS", "get_algorithm", "private_algorithms"]


def _discover() -> dict[str, Algorithm]:
    package = __name__.rpartition(".")[0]  # dpreg.algorithms, still loading: scan its folder
    out: dict[str, Algorithm] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in ("base", "registry"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for alg in getattr(module, "ENTRIES", ()):
            if not isinstance(alg, Algorithm):
                raise TypeError(f"{module.__name__}.ENTRIES holds {alg!r}, not an Algorithm")
            if alg.name in out:
                raise ValueError(f"algorithm {alg.name!r} is registered twice")
            out[alg.name] = alg
    return out


#: Config name -> registry entry (read-only by convention).
ALGORITHMS: dict[str, Algorithm] = _discover()


def private_algorithms() -> tuple[str, ...]:
    """Names of every algorithm the project calls private."""
    return tuple(name for name, alg in ALGORITHMS.items() if alg.private)


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by config name (the error lists the known names)."""
    if name not in ALGORITHMS:
        if name in PEERS:
            raise DPRegError(
                f"{name!r} is an external peer run by the sweep, not a registry algorithm"
            )
        check_choice(name, "algorithm", [*ALGORITHMS, *PEERS])
        raise DPRegError(f"unknown algorithm {name!r}")  # pragma: no cover
    return ALGORITHMS[name]
