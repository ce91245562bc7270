"""The registry: every algorithm entry of every family module, by config name.

A family is a module of this package that defines ``ENTRIES`` (a list of
:class:`~dpreg.algorithms.base.Algorithm`).  Families are discovered in
sorted module order, so adding an algorithm is one entry in its family
module (plus its functions and tests); nothing else lists algorithms.
Plug-ins (a family outside the package, :mod:`dpreg.algorithms.plugins`)
are added after the built-ins, into the same :data:`ALGORITHMS` mapping, so
every module that reads it sees them.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from dpreg._validation import DPRegError, check_choice
from dpreg.algorithms.base import Algorithm

__all__ = ["ALGORITHMS", "ORIGINS", "get_algorithm", "private_algorithms"]

#: Modules of this package that hold the contract and the machinery, not families.
_NOT_FAMILIES = frozenset({"base", "fits", "registry", "plugins", "fingerprint"})


def _discover() -> tuple[dict[str, Algorithm], dict[str, str]]:
    package = __name__.rpartition(".")[0]  # dpreg.algorithms, still loading: scan its folder
    out: dict[str, Algorithm] = {}
    origins: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_FAMILIES:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for alg in getattr(module, "ENTRIES", ()):
            if not isinstance(alg, Algorithm):
                raise TypeError(f"{module.__name__}.ENTRIES holds {alg!r}, not an Algorithm")
            if alg.name in out:
                raise ValueError(f"algorithm {alg.name!r} is registered twice")
            out[alg.name] = alg
            origins[alg.name] = module.__name__
    return out, origins


_BUILT_IN, _BUILT_IN_ORIGINS = _discover()

#: Config name -> registry entry (read-only by convention; plug-ins are added in place).
ALGORITHMS: dict[str, Algorithm] = dict(_BUILT_IN)

#: Config name -> the module (a key of ``sys.modules``) whose ``ENTRIES`` holds it.
ORIGINS: dict[str, str] = dict(_BUILT_IN_ORIGINS)

#: Names of the built-in entries (a plug-in may not reuse one).
BUILT_IN: frozenset[str] = frozenset(_BUILT_IN)


def private_algorithms() -> tuple[str, ...]:
    """Names of every algorithm the project calls private."""
    return tuple(name for name, alg in ALGORITHMS.items() if alg.private)


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by config name (the error lists the known names)."""
    if name not in ALGORITHMS:
        check_choice(name, "algorithm", list(ALGORITHMS))
        raise DPRegError(f"unknown algorithm {name!r}")  # pragma: no cover
    return ALGORITHMS[name]
