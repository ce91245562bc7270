"""What a run depended on: configuration hash, package versions, data checksums.

The record has no timestamps, so a rerun with the same inputs gives the
same bytes (written by :func:`dpreg.io.tables.write_json`).
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
from dpreg.io.checksum import verify
from dpreg.io.tables import plain

__all__ = [
    "PROVENANCE_PACKAGES",
    "canonical_json",
    "config_hash",
    "package_versions",
    "provenance",
]

#: Packages whose versions are recorded in the provenance.
PROVENANCE_PACKAGES = (
    "dpreg",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "matplotlib",
    "snakemake",
    "ucimlrepo",
    "diffprivlib",
    "scikit-learn",
)


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
    packages: Iterable[str] = PROVENANCE_PACKAGES,
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
    packages : iterable of str
        Distributions whose versions are recorded.

    Returns
    -------
    dict
        ``config_sha256``, ``config``, ``dpreg_version``, ``python``,
        ``packages``, ``datasets`` (name -> n, d, sha256, source, target,
        features) and ``tables`` (id -> sha256).

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
    return {
        "config_sha256": config_hash(config),
        "config": plain(config),
        "dpreg_version": __version__,
        "python": platform.python_version(),
        "packages": package_versions(packages),
        "datasets": datasets,
        "tables": table_sums,
    }
