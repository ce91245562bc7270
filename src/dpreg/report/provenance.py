"""What a run depended on: configuration hash, package versions, data checksums, code.

The record has no timestamps, so a rerun with the same inputs gives the
same bytes (written by :func:`dpreg.io.tables.write_json`).  Which code ran
is recorded per algorithm (its fingerprint, :mod:`dpreg.algorithms.fingerprint`,
and the plug-in file it came from), with the dpreg version and, when dpreg
runs from a git checkout, the commit (and whether the checkout had changes).
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from dpreg._version import __version__
from dpreg.algorithms import ALGORITHMS
from dpreg.algorithms.fingerprint import code_record
from dpreg.gitstate import git_state
from dpreg.io.checksum import verify
from dpreg.io.tables import plain

__all__ = [
    "PROVENANCE_PACKAGES",
    "algorithm_code",
    "canonical_json",
    "config_hash",
    "package_versions",
    "provenance",
]

#: Packages whose versions are recorded in the provenance (besides the optional
#: packages registry entries require, :func:`provenance_packages`).
PROVENANCE_PACKAGES = (
    "dpreg",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "matplotlib",
    "snakemake",
    "ucimlrepo",
    "scikit-learn",
)


def provenance_packages() -> tuple[str, ...]:
    """:data:`PROVENANCE_PACKAGES` and every package a registry entry ``requires``."""
    required = [m for alg in ALGORITHMS.values() for m in alg.requires]
    return tuple(dict.fromkeys([*PROVENANCE_PACKAGES, *sorted(required)]))


def algorithm_code(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Algorithm -> its code record (fingerprint, module, modules hashed, plug-in file)."""
    return {name: code_record(name) for name in sorted(set(names))}


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the same text for equal content."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a validated configuration."""
    return hashlib.sha256(canonical_json(plain(config)).encode("utf-8")).hexdigest()


def package_versions(packages: Iterable[str] = PROVENANCE_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when it is not installed)."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance(
    *,
    config: Mapping[str, Any],
    metas: Mapping[str, Mapping[str, Any]],
    tables: Mapping[str, str | Path] | None = None,
    packages: Iterable[str] | None = None,
) -> dict[str, Any]:
    """What a run depended on, without timestamps (reruns give identical bytes).

    Parameters
    ----------
    config : mapping
        The validated configuration (defaults filled in).
    metas : mapping
        Dataset name -> the JSON sidecar written by
        :func:`dpreg.data.prepare_dataset` (n, d, sha256, source, ...).
    tables : mapping, optional
        Experiment id -> summary table path; their SHA-256 is recorded once it
        matches the sidecar written with the table (:func:`dpreg.io.checksum.verify`).
    packages : iterable of str, optional
        Distributions whose versions are recorded (default:
        :func:`provenance_packages`).

    Returns
    -------
    dict
        ``config_sha256``, ``config``, ``dpreg_version``, ``git`` (commit and
        dirty flag, or None outside a checkout), ``python``, ``packages``,
        ``algorithms`` (name -> code fingerprint, module, plug-in file; every
        algorithm of the config's experiments), ``plugins`` (the config's),
        ``datasets`` (name -> n, d, sha256, source, target, features) and
        ``tables`` (id -> sha256).

    Raises
    ------
    DPRegError
        If a table is missing, damaged or has no checksum sidecar.
    """
    datasets = {}
    for name, meta in sorted(metas.items()):
        datasets[name] = {
            key: meta[key]
            for key in ("n", "d", "sha256", "source", "target", "target_transform", "features")
            if key in meta
        }
    # each table checked against the checksum written with it: a damaged or truncated
    # table is refused, never recorded as if it were the run's result
    table_sums = {
        name: verify(path, "summary table") for name, path in sorted((tables or {}).items())
    }
    used = [a for exp in (config.get("experiments") or {}).values() for a in exp["algorithms"]]
    return {
        "config_sha256": config_hash(config),
        "config": plain(config),
        "dpreg_version": __version__,
        "git": git_state(),
        "python": platform.python_version(),
        "packages": package_versions(provenance_packages() if packages is None else packages),
        "algorithms": algorithm_code(used),
        "plugins": list(config.get("plugins") or []),
        "datasets": datasets,
        "tables": table_sums,
    }
