"""The ledger of runs by algorithm name: trial-table columns and ``provenance.json``.

:mod:`dpreg.privacy.ledger` writes a list of releases down; this module
asks the registry which releases each (algorithm, epsilon) makes -- and,
for a whole configuration, also lists what each pre-processing variant takes
from the data without noise (:func:`dpreg.preprocess.nonprivate_statistics`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dpreg._validation import DPRegError
from dpreg.algorithms import get_algorithm
from dpreg.preprocess import VariantSpec, nonprivate_statistics
from dpreg.privacy.ledger import release_columns, releases_entry

__all__ = ["ledger_entry", "ledger_report", "trial_columns"]


def ledger_entry(
    algorithm: str,
    *,
    epsilon: float,
    delta: float,
    d: int,
    rho: float = 0.05,
    spec: VariantSpec | None = None,
    bound_x: float = 1.0,
    bound_y: float = 1.0,
    n: int | None = None,
) -> dict[str, Any]:
    """The full ledger record of one (algorithm, epsilon).

    ``releases`` lists every release with its sensitivity, scale and nominal
    share (Gaussian ones also with ``mu`` and the exact delta at their
    nominal epsilon); ``total`` is :func:`dpreg.privacy.mechanisms.compose` over
    them (basic and exact accounting).
    """
    alg = get_algorithm(algorithm)
    releases = alg.releases(
        epsilon=epsilon, delta=delta, d=d, rho=rho, bound_x=bound_x, bound_y=bound_y, n=n
    )
    entry = releases_entry(
        algorithm,
        releases,
        epsilon=epsilon,
        delta=delta,
        private=alg.private,
        reproduction=alg.reproduction,
        calibration=alg.calibration,
    )
    if spec is not None:
        entry["nonprivate_statistics"] = nonprivate_statistics(spec)
    return entry


def trial_columns(
    algorithm: str,
    epsilons: Sequence[float],
    *,
    delta: float,
    d: int,
    rho: float,
    n: int | None = None,
    params: Mapping[str, Any] | None = None,
    bound_x: float = 1.0,
    bound_y: float = 1.0,
) -> dict[float, dict[str, Any]]:
    """Compact ledger columns for the trial table, keyed by epsilon.

    ``releases`` reads ``name:sigma=..@(eps_i,delta_i)`` joined by ``;``;
    ``eps_basic``/``delta_basic`` are the basic composition, ``eps_exact``
    the exact epsilon at the nominal delta and ``delta_exact`` the exact
    delta at the nominal epsilon (GDP accounting; NaN where not Gaussian).
    ``bound_x``/``bound_y`` are the row bounds of the training statistics
    (``stats.bound_x``; ``sqrt(2)`` with the thesis' intercept) -- the same
    the fit calibrates with.  (A private-stats run composes the statistics'
    releases with the algorithm's: :func:`release_columns` over both lists,
    at the run's total delta.)
    """
    alg = get_algorithm(algorithm)
    out = {}
    for eps in epsilons:
        # the same run settings recur for every fold and partition: compose them once
        # (an entry is hashed by identity, so a plug-in registered anew is a new key)
        key = (
            alg,
            float(eps),
            delta,
            d,
            rho,
            n,
            bound_x,
            bound_y,
            repr(sorted((params or {}).items())),
        )
        hit = _COLUMNS.get(key)
        if hit is None:
            rel = alg.releases(
                epsilon=eps,
                delta=delta,
                d=d,
                rho=rho,
                n=n,
                params=params,
                bound_x=bound_x,
                bound_y=bound_y,
            )
            hit = _COLUMNS[key] = release_columns(list(rel), delta=delta)
        out[eps] = dict(hit)  # a copy: the caller may edit it
    return out


#: (entry, run settings) -> its ledger columns
_COLUMNS: dict[tuple, dict[str, Any]] = {}


def ledger_report(config: Mapping[str, Any], dims: Mapping[str, int]) -> dict[str, Any]:
    """The privacy ledger of a whole configuration, for ``provenance.json``.

    Parameters
    ----------
    config : mapping
        Validated config (``epsilons``, ``delta``, ``rho``, ``variants``,
        ``experiments``).
    dims : mapping
        Dataset name -> number of features ``d`` after the recipe.

    Returns
    -------
    dict
        ``algorithms``: algorithm -> epsilon -> :func:`ledger_entry` (noise
        scales do not depend on ``d`` except the functional mechanism's
        sensitivity, which is recorded per dataset -- any algorithm whose
        releases depend on ``d`` is); ``variants``: variant ->
        its options and the statistics it takes without noise.
    """
    delta = float(config["delta"])
    rho = float(config.get("rho", 0.05))
    used = sorted({a for e in config["experiments"].values() for a in e["algorithms"]})
    algorithms: dict[str, Any] = {}
    for name in used:
        try:
            per_ds = {
                ds: {
                    repr(float(e)): ledger_entry(name, epsilon=e, delta=delta, d=d, rho=rho)
                    for e in config["epsilons"]
                }
                for ds, d in sorted(dims.items())
            }
        except DPRegError as err:
            if "depends on n" not in str(err):
                raise
            algorithms[name] = {
                "note": "the calibration depends on the training-fold size n: the releases of "
                "every run are in the trial tables' releases column"
            }
            continue
        texts = {json.dumps(v, sort_keys=True, default=str) for v in per_ds.values()}
        if len(texts) <= 1:  # the releases do not depend on d: record them once
            algorithms[name] = next(iter(per_ds.values()))
        else:
            algorithms[name] = per_ds
    variants = {}
    for vname, v in sorted(config["variants"].items()):
        spec = VariantSpec.from_dict(v, vname)
        variants[vname] = {
            "options": spec.to_dict(),
            "nonprivate_statistics": nonprivate_statistics(spec),
            "note": (
                "the statistics are released with noise (see the trial tables' releases column)"
                if spec.releases_statistics
                else "these statistics are taken from the data without noise (thesis option 2"
                + (", with the public ranges of option 3" if spec.private_stats else "")
                + "): the composed total is the guarantee of the regression releases only"
            ),
        }
    return {"algorithms": algorithms, "variants": variants}
