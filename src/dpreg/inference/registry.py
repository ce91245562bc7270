"""Claims registered before the data: the claims file and its registration record.

The claims of every experiment live in their own file (``config/claims.yaml``:
experiment id -> list of claims, the keys of config/README.md "Intervals and
claims"), not in the configuration.  :func:`register_claims` writes the
*registration record* next to it (``config/claims.lock``): per claim the
SHA-256 of its canonical definition (:func:`definition_hash`), the date it
was registered, the git commit it was registered at, and the seeds whose
trials had already been drawn when it was registered.  At evaluation
(:func:`claim_status`) a claim is ``confirmatory`` only when its definition
hash equals its registered one and the run's seed is not among the seeds
seen before registration; otherwise it is ``exploratory``, and never enters
the confirmatory family of the multiplicity adjustment
(:mod:`dpreg.inference.pooled`).

The definition hashed is what decides the claim: the experiment, the id, the
two cells (defaults filled in), statistic, expectation, margin, epsilon
range and datasets (:func:`definition`).  The statement and the source label
are words about the claim and may be edited without re-registering.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from dpreg._validation import DPRegError
from dpreg.configfile import load_config_file
from dpreg.gitstate import git_state
from dpreg.inference.claims import Claim, parse_claims
from dpreg.io.tables import write_text_atomic

__all__ = [
    "DEFAULT_CLAIMS_FILE",
    "attach_claims",
    "claim_status",
    "definition",
    "definition_hash",
    "lock_path",
    "read_claims_file",
    "read_registration",
    "register_claims",
]

#: Where the claims live, relative to the working directory (config key ``claims_file``).
DEFAULT_CLAIMS_FILE = "config/claims.yaml"


def lock_path(claims_file: str | Path) -> Path:
    """The registration record of a claims file: the same name with suffix ``.lock``."""
    return Path(claims_file).with_suffix(".lock")


def read_claims_file(path: str | Path) -> dict[str, list[Any]]:
    """experiment id -> its claims, as written in the claims file (read strictly).

    Raises
    ------
    DPRegError
        Naming the file when an entry is not a list of claims.
    """
    raw = load_config_file(path)
    for exp, claims in raw.items():
        if not isinstance(claims, list):
            raise DPRegError(
                f"{path}: {exp}: must be a list of claims (mappings with id, a, expect, ...), "
                f"got {type(claims).__name__}"
            )
    return {str(exp): list(claims) for exp, claims in raw.items()}


def attach_claims(config: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Put the claims of the claims file into the experiments of ``config`` (in place).

    The file is ``config["claims_file"]`` (default :data:`DEFAULT_CLAIMS_FILE`);
    a missing default file means no claims.  Claims of an experiment that is
    not in the configuration are left out (the Wang suite's configuration
    adds its own experiments).  The registration record, when there is one,
    is put under ``claims_registration`` so that provenance carries it.

    Raises
    ------
    DPRegError
        When an experiment of the configuration still states ``claims:``
        itself (they belong in the claims file), or a named claims file is
        missing.
    """
    experiments = config.get("experiments") or {}
    for exp_id, exp in experiments.items():
        if isinstance(exp, Mapping) and "claims" in exp:
            raise DPRegError(
                f"config: experiments: {exp_id}: claims: claims live in the claims file "
                f"({config.get('claims_file', DEFAULT_CLAIMS_FILE)}: {exp_id}: [...]) so that "
                "they can be registered before the data; move them there"
            )
    path = Path(str(config.get("claims_file", DEFAULT_CLAIMS_FILE)))
    if not path.exists():
        if "claims_file" in config and config["claims_file"] != DEFAULT_CLAIMS_FILE:
            raise DPRegError(f"config: claims_file: {str(path)!r} does not exist")
        return config
    for exp_id, claims in read_claims_file(path).items():
        if exp_id in experiments and claims:
            experiments[exp_id]["claims"] = claims
            try:  # checked here, so that the message names the claims file
                parse_claims(exp_id, experiments[exp_id])
            except DPRegError as err:
                raise DPRegError(f"{path}: {err}") from None
    record = read_registration(lock_path(path))
    if record:
        config["claims_registration"] = record
    return config


def definition(claim: Claim) -> dict[str, Any]:
    """The fields of a claim that decide it (what :func:`definition_hash` hashes)."""
    lo, hi = claim.eps_range
    return {
        "experiment": claim.experiment,
        "id": claim.id,
        "a": {"variant": claim.a[0], "algorithm": claim.a[1]},
        "b": {"variant": claim.b[0], "algorithm": claim.b[1]},
        "statistic": claim.statistic,
        "expect": claim.expect,
        "margin": claim.margin,
        # JSON has no infinity: an open upper end is written as null
        "epsilons": [lo, hi if math.isfinite(hi) else None],
        "datasets": None if claim.datasets is None else sorted(claim.datasets),
    }


def definition_hash(claim: Claim) -> str:
    """SHA-256 (hex) of the canonical JSON (sorted keys, no spaces) of :func:`definition`."""
    text = json.dumps(definition(claim), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_registration(path: str | Path) -> dict[str, Any]:
    """The registration record (``{"claims": {"<experiment>/<id>": {...}}, ...}``), or {}."""
    path = Path(path)
    if not path.exists():
        return {}
    record = load_config_file(path)
    if not isinstance(record.get("claims", {}), Mapping):
        raise DPRegError(f"{path}: 'claims' must map '<experiment>/<id>' to a registration")
    return record


def claim_key(claim: Claim) -> str:
    """The key of a claim in the registration record."""
    return f"{claim.experiment}/{claim.id}"


def claim_status(
    claim: Claim, registration: Mapping[str, Any] | None, *, seed: int
) -> tuple[str, dict[str, Any]]:
    """(``confirmatory`` or ``exploratory``, the claim's registration entry or {}).

    Confirmatory when the claim is registered, its definition hash equals the
    registered one, and ``seed`` (the run's root seed) is not one of the
    seeds whose trials had been drawn before it was registered.
    """
    entry = dict(((registration or {}).get("claims") or {}).get(claim_key(claim)) or {})
    if not entry or entry.get("sha256") != definition_hash(claim):
        return "exploratory", entry
    if int(seed) in {int(s) for s in entry.get("seen_seeds") or []}:
        return "exploratory", entry
    return "confirmatory", entry


def _folder_experiments(path: Path) -> dict[str, Any]:
    """The experiments of every configuration next to a claims file, merged in name order."""
    out: dict[str, Any] = {}
    for other in sorted(path.parent.glob("*.yaml")):
        if other.resolve() != path.resolve():
            out.update(load_config_file(other).get("experiments") or {})
    return out


def register_claims(
    path: str | Path = DEFAULT_CLAIMS_FILE,
    *,
    experiments: Mapping[str, Mapping[str, Any]] | None = None,
    seen_seeds: Sequence[int] = (),
    note: str = "",
    date: str | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """Register the claims of a claims file: write its record (:func:`lock_path`).

    Parameters
    ----------
    path : path
        The claims file.
    experiments : mapping, optional
        The configuration's experiments (the claims' cells are checked
        against them and their defaults filled in, as at evaluation); by
        default those of every other YAML file in the claims file's folder
        (config/config.yaml and config/wang-suite.yaml).
    seen_seeds : sequence of int
        Root seeds whose trials were already drawn when the claims were
        written; a run with one of them judges the claims as exploratory.
    note : str
        Written into the record (e.g. why the claims are registered late).
    date, commit : str, optional
        Registration date (ISO, default today in UTC) and git commit
        (default ``git rev-parse HEAD`` in the claims file's folder).

    Returns
    -------
    dict
        The record written.  A claim already registered with the same
        definition keeps its date, commit and seen seeds (registering again
        changes nothing for it); a new or changed claim gets today's.
    """
    path = Path(path)
    old = read_registration(lock_path(path)).get("claims") or {}
    date = date or _dt.datetime.now(_dt.UTC).date().isoformat()
    state = git_state(path.resolve().parent)
    commit = commit or (state["commit"] if state else "unknown")
    if experiments is None:
        experiments = _folder_experiments(path)
    entries: dict[str, Any] = {}
    for exp_id, claims in read_claims_file(path).items():
        if exp_id not in experiments:
            raise DPRegError(
                f"{path}: {exp_id}: not an experiment of the configuration; "
                f"known: {', '.join(experiments)}"
            )
        for claim in parse_claims(exp_id, {**experiments[exp_id], "claims": claims}):
            key, digest = claim_key(claim), definition_hash(claim)
            if old.get(key, {}).get("sha256") == digest:
                entries[key] = dict(old[key])
                continue
            entries[key] = {
                "sha256": digest,
                "registered": date,
                "commit": commit,
                "seen_seeds": sorted({int(s) for s in seen_seeds}),
            }
    record: dict[str, Any] = {"claims_file": path.name, "claims": entries}
    if note:
        record["note"] = note
    header = (
        "# Registration record of the claims (dpreg.inference.registry.register_claims).\n"
        "# Written by a command, never by hand: a claim whose definition no longer\n"
        "# hashes to its sha256 here is judged as exploratory.\n"
    )
    text = header + yaml.safe_dump(record, sort_keys=True, width=88, allow_unicode=True)
    write_text_atomic(lock_path(path), text)
    return record
