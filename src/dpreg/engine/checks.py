"""Config cross-checks the planner runs that make sure nothing is accepted in
silence: parameters for an algorithm that does not exist (they would be
ignored) and claims that would judge nothing (a dataset their experiment
does not run, an epsilon range holding no point of the grid)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from dpreg._validation import DPRegError

__all__ = ["check_algorithm_params", "check_claim_scopes"]


def check_algorithm_params(cfg: Mapping[str, Any], known: Sequence[str]) -> None:
    """Every key of ``algorithm_params`` names an algorithm in ``known``."""
    for name in cfg.get("algorithm_params") or {}:
        if name not in known:
            close = difflib.get_close_matches(str(name), list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise DPRegError(
                f"config: algorithm_params names unknown algorithm {name!r}{hint}; "
                f"its parameters would be ignored; known algorithms: {', '.join(known)}"
            )


def check_claim_scopes(cfg: Mapping[str, Any], exp_id: str, exp: Mapping[str, Any]) -> None:
    """A claim that would judge nothing stops the run: every dataset it names is
    one its experiment runs, and its epsilon range holds a point of the grid."""
    exp_datasets = list(cfg["datasets"]) if exp["datasets"] == "all" else list(exp["datasets"])
    grid = [float(e) for e in cfg["epsilons"]]
    for i, claim in enumerate(exp.get("claims") or []):
        if not isinstance(claim, Mapping):
            continue  # the claims module reports a malformed claim
        where = f"config: experiments: {exp_id}: claims: {claim.get('id', f'[{i}]')}"
        named = claim.get("datasets", "all")
        if named != "all" and isinstance(named, list):
            for name in named:
                if name not in exp_datasets:
                    raise DPRegError(
                        f"{where} names dataset {name!r}, which experiment {exp_id!r} does not "
                        f"run; its datasets: {', '.join(exp_datasets)}"
                    )
        eps = claim.get("epsilons")
        if isinstance(eps, list) and len(eps) == 2:
            low, high = float(eps[0]), float(eps[1])
            if not any(low <= e <= high for e in grid):
                raise DPRegError(
                    f"{where}: epsilons [{low:g}, {high:g}] hold no epsilon of the grid "
                    f"({', '.join(f'{e:g}' for e in grid)}), so the claim would judge nothing"
                )
