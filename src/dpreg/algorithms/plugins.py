"""Plug-ins: algorithm families outside the package, held to the built-ins' contract.

A plug-in is one Python file or importable module that defines ``ENTRIES``,
a list of :class:`~dpreg.algorithms.base.Algorithm` -- exactly what a family
module inside :mod:`dpreg.algorithms` defines.  It is named

* in the workflow config, ``plugins:`` (a list of file paths, relative to the
  working directory, or module names; :func:`load_plugins`), or
* in the ``DPREG_PLUGINS`` environment variable (the same, separated by
  ``os.pathsep``), or
* by an installed distribution under the entry-point group
  ``dpreg.algorithms`` (the entry point names a module with ``ENTRIES`` or
  the list itself).

The last two are loaded when :mod:`dpreg.algorithms` is imported
(:func:`load_installed`).  Each entry is checked before it is registered
(:func:`check_entry`): a unique config name that is not a built-in's, a
label and a reference, releases for a private entry, and a fit on a tiny
dataset that returns one coefficient row per repeat.  A plug-in that breaks
the contract stops with one :class:`PluginError` naming the plug-in and what
is wrong.  An entry that sets no style (or, among private entries, a colour
already taken) gets a free colour from :data:`PALETTE`, so figures never
draw two private algorithms alike.  The tutorial is
``docs/tutorials/add-a-method.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.registry import ALGORITHMS, BUILT_IN, ORIGINS
from dpreg.preprocess.stats import SuffStats

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_VAR",
    "PALETTE",
    "PluginError",
    "check_entry",
    "load_installed",
    "load_plugins",
    "loaded_plugins",
]

log = logging.getLogger(__name__)

#: The entry-point group installed plug-ins register under.
ENTRY_POINT_GROUP = "dpreg.algorithms"
#: Environment variable naming plug-ins (files or modules, ``os.pathsep``-separated).
ENV_VAR = "DPREG_PLUGINS"

#: Colours (with markers) given to plug-in entries that set no style; none is a
#: built-in's colour.  The first free one from a start fixed by the name is taken.
PALETTE: tuple[Style, ...] = tuple(
    Style(colour, "-", marker)
    for colour, marker in [
        ("firebrick", "o"),
        ("dodgerblue", "s"),
        ("forestgreen", "D"),
        ("darkorange", "^"),
        ("mediumvioletred", "v"),
        ("steelblue", "P"),
        ("darkslategray", "X"),
        ("rosybrown", "*"),
        ("lightseagreen", "h"),
        ("navy", "<"),
        ("tomato", ">"),
        ("slategray", "o"),
        ("darkmagenta", "s"),
        ("lightcoral", "D"),
        ("cornflowerblue", "^"),
        ("mediumseagreen", "v"),
        ("sandybrown", "P"),
        ("darkred", "X"),
        ("deepskyblue", "*"),
        ("olive", "h"),
    ]
)

_UNSET = Style("0.3")  # Algorithm's default style: the entry set none
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")

#: source (resolved file path or module name) -> names it registered
_LOADED: dict[str, list[str]] = {}


class PluginError(DPRegError):
    """A plug-in that cannot be loaded or breaks the entry contract (one message)."""


def loaded_plugins() -> dict[str, list[str]]:
    """Plug-in source (file path or module name) -> the names it registered."""
    return {k: list(v) for k, v in _LOADED.items()}


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------
def _is_file(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def _import_file(path: Path, label: str) -> ModuleType:
    if not path.is_file():
        raise PluginError(f"plugin {label}: no such file ({path.resolve()})")
    digest = hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:10]
    mod_name = f"dpreg_plugin_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:  # pragma: no cover (a .py file always has one)
        raise PluginError(f"plugin {label}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # any error of the plug-in's own code
        sys.modules.pop(mod_name, None)
        raise PluginError(
            f"plugin {label}: importing it failed: {type(err).__name__}: {err}"
        ) from err
    return module


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as err:
        raise PluginError(
            f"plugin {name}: importing it failed: {type(err).__name__}: {err} "
            "(a file path must end in .py; a module must be importable)"
        ) from err


def load_plugins(specs: Iterable[str], *, where: str = "config: plugins") -> list[str]:
    """Import each plug-in (file path or module name), check and register its entries.

    Paths are relative to the working directory.  A plug-in already loaded
    (the same resolved file, or module name) is not loaded again.  Returns
    the names registered by ``specs`` (also those registered before).

    Raises
    ------
    PluginError
        One message naming the plug-in and what is wrong (it cannot be
        imported, it defines no ``ENTRIES``, an entry breaks the contract, or
        a name clashes with a built-in or another plug-in); nothing of that
        plug-in is registered.
    """
    if isinstance(specs, str):
        raise PluginError(f"{where} must be a list of file paths or module names, got {specs!r}")
    names: list[str] = []
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise PluginError(f"{where}: {spec!r} is not a file path or module name")
        spec = spec.strip()
        if _is_file(spec):
            key = str(Path(spec).resolve())
            if key not in _LOADED:
                _register_all(_entries(_import_file(Path(spec), spec), spec), spec, key)
        else:
            key = spec
            if key not in _LOADED:
                module = _import_module(spec)
                _register_all(_entries(module, spec), spec, key, module.__name__)
        names += _LOADED[key]
    return names


def load_installed() -> list[str]:
    """Load the plug-ins of ``DPREG_PLUGINS`` and of the ``dpreg.algorithms`` entry points."""
    names = []
    env = os.environ.get(ENV_VAR, "")
    if env.strip():
        names += load_plugins([s for s in env.split(os.pathsep) if s.strip()], where=ENV_VAR)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        label = f"entry point {ep.name!r} ({ep.value})"
        if label in _LOADED:
            names += _LOADED[label]
            continue
        try:
            obj = ep.load()
        except Exception as err:
            raise PluginError(
                f"plugin {label}: importing it failed: {type(err).__name__}: {err}"
            ) from err
        origin = obj.__name__ if isinstance(obj, ModuleType) else ep.module
        _register_all(_entries(obj, label), label, label, origin)
        names += _LOADED[label]
    return names


def _entries(obj: Any, label: str) -> list[Algorithm]:
    entries = getattr(obj, "ENTRIES", None) if isinstance(obj, ModuleType) else obj
    if entries is None:
        raise PluginError(
            f"plugin {label}: defines no ENTRIES (a list of dpreg.algorithms.base.Algorithm)"
        )
    if not isinstance(entries, list | tuple) or not entries:
        raise PluginError(
            f"plugin {label}: ENTRIES must be a non-empty list of "
            f"dpreg.algorithms.base.Algorithm, got {type(entries).__name__}"
        )
    for i, alg in enumerate(entries):
        if not isinstance(alg, Algorithm):
            raise PluginError(
                f"plugin {label}: ENTRIES[{i}] is {type(alg).__name__} {alg!r}, "
                "not a dpreg.algorithms.base.Algorithm"
            )
    return list(entries)


def _register_all(
    entries: Sequence[Algorithm], label: str, key: str, origin: str | None = None
) -> None:
    """Check every entry, then register them all (nothing when one fails)."""
    seen: set[str] = set()
    checked = []
    for alg in entries:
        where = f"plugin {label}: entry {alg.name!r}"
        if alg.name in seen:
            raise PluginError(f"{where} appears twice in ENTRIES")
        seen.add(alg.name)
        if alg.name in BUILT_IN:
            raise PluginError(
                f"{where} clashes with the built-in algorithm of that name; rename it"
            )
        if alg.name in ALGORITHMS:
            other = next((k for k, v in _LOADED.items() if alg.name in v), "another plug-in")
            raise PluginError(f"{where} clashes with the entry of that name from {other}")
        check_entry(alg, where=where)
        checked.append(alg)
    module = origin or _module_of(label)
    for alg in checked:
        alg = _with_style(alg)
        ALGORITHMS[alg.name] = alg
        ORIGINS[alg.name] = module
    _LOADED[key] = [a.name for a in checked]
    log.info("plugin %s: registered %s", label, ", ".join(_LOADED[key]))


def _module_of(label: str) -> str:
    path = str(Path(label).resolve())
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and str(Path(file).resolve()) == path:
            return name
    return label  # pragma: no cover


# --------------------------------------------------------------------------
# the contract
# --------------------------------------------------------------------------
def _tiny_data(n: int = 400, d: int = 3) -> tuple[SuffStats, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(20260101)
    X = rng.standard_normal((n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.5
    y = np.clip(X @ np.linspace(1.0, -0.5, d) + 0.05 * rng.standard_normal(n), -1.0, 1.0)
    return SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0), (X, y)


def check_entry(alg: Algorithm, *, where: str) -> None:
    """What every plug-in entry must fulfil before it is registered.

    A config name (lower-case words joined by ``-``), a label and a
    reference; a private entry releases something at ``epsilon = 1`` and its
    ``noise_kinds`` (when set) name one kind per release; ``tuned_nonprivately``
    names hyperparameters it has; a fit of two repeats on a tiny dataset
    (n = 400, d = 3) returns coefficients of shape (2, 3) and ``lam`` and
    ``failed`` of shape (2,).  Raises :class:`PluginError` starting with ``where``.
    """
    if not _NAME.fullmatch(alg.name):
        raise PluginError(
            f"{where}: the name must be lower-case letters, digits and '-' (it is a config name)"
        )
    if not alg.label.strip():
        raise PluginError(f"{where}: label is empty (the legend needs one)")
    if not alg.reference.strip():
        raise PluginError(f"{where}: reference is empty (cite where the method comes from)")
    extra = set(alg.tuned_nonprivately) - set(alg.hyperparameters)
    if extra:
        raise PluginError(
            f"{where}: tuned_nonprivately names {sorted(extra)}, which are not hyperparameters"
        )
    stats, rows = _tiny_data()
    if alg.private:
        try:
            rel = alg.releases(epsilon=1.0, delta=1e-6, d=stats.d, n=stats.n)
        except Exception as err:
            raise PluginError(
                f"{where}: its release function raised {type(err).__name__}: {err}"
            ) from err
        if not rel:
            raise PluginError(
                f"{where}: a private entry must declare its releases (release_fn returned none)"
            )
        if alg.noise_kinds and len(alg.noise_kinds) != len(rel):
            raise PluginError(
                f"{where}: noise_kinds names {len(alg.noise_kinds)} kinds for "
                f"{len(rel)} releases (one per release)"
            )
    if not alg.available:
        return  # its optional package is missing: it is skipped with its install hint
    try:
        res = alg.fit(
            stats,
            epsilon=1.0,
            delta=1e-6,
            rng=np.random.default_rng(0),
            size=2,
            rows=rows if alg.needs_rows else None,
        )
    except Exception as err:
        raise PluginError(
            f"{where}: a fit of 2 repeats on a tiny dataset (n=400, d=3) raised "
            f"{type(err).__name__}: {err}"
        ) from err
    shapes = {
        "theta": (np.shape(res.theta), (2, 3)),
        "lam": (np.shape(res.lam), (2,)),
        "failed": (np.shape(res.failed), (2,)),
    }
    for key, (got, want) in shapes.items():
        if got != want:
            raise PluginError(
                f"{where}: a fit of 2 repeats on a tiny dataset (n=400, d=3) returned "
                f"{key} of shape {got}, expected {want} (one row per repeat)"
            )


def _with_style(alg: Algorithm) -> Algorithm:
    """The entry, with a free style when it set none or its colour is taken."""
    taken = {a.style.color for a in ALGORITHMS.values() if a.private or a.style != _UNSET}
    clash = alg.private and alg.style.color in {
        a.style.color for a in ALGORITHMS.values() if a.private
    }
    if alg.style != _UNSET and not clash:
        return alg
    if clash:
        log.warning(
            "algorithm %r: colour %r is taken by another private algorithm; given another",
            alg.name,
            alg.style.color,
        )
    start = int(hashlib.sha256(alg.name.encode("utf-8")).hexdigest(), 16) % len(PALETTE)
    for k in range(len(PALETTE)):
        style = PALETTE[(start + k) % len(PALETTE)]
        if style.color not in taken:
            return dataclasses.replace(alg, style=style)
    raise PluginError(  # pragma: no cover (more plug-ins than colours)
        f"algorithm {alg.name!r}: every colour of the plug-in palette is taken; set its style"
    )
