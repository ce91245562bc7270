"""The privacy ledger: what every algorithm releases, and what that guarantees.

For each (algorithm, epsilon) the ledger lists the noisy releases (name,
sensitivity, sigma or Laplace scale, nominal per-release budget,
calibration, whether the calibration's theorem covers it, and the exact
delta of that release at its nominal epsilon under the Gaussian privacy
profile), the composed total -- basic composition as the thesis uses it,
and the exact GDP value (Dong, Roth & Su 2019) -- and the statistics the
pre-processing takes from the data *without* noise (the thesis' option 2),
so that nobody mistakes the total for an end-to-end guarantee.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from dpreg._validation import DPRegError
from dpreg.algorithms import get_algorithm
from dpreg.mechanisms import Release, compose, gdp_delta
from dpreg.preprocess import VariantSpec
from dpreg.tables import LEDGER_COLUMNS

__all__ = [
    "ledger_entry",
    "ledger_report",
    "nonprivate_statistics",
    "release_columns",
    "trial_columns",
]


def nonprivate_statistics(spec: VariantSpec) -> list[str]:
    """Statistics a variant takes from its statistics rows without noise."""
    rows = "all rows" if spec.stats == "global" else "training rows"
    out = [f"n (row count of the {rows})"]
    if spec.private_stats is not None:
        out.append(
            "public column ranges declared in the config (public_ranges.<dataset>, with their "
            "source): assumed known a priori, never taken from the data"
        )
        return out
    if spec.clip_sigma is not None:
        out.append(f"clip thresholds mean + {spec.clip_sigma:g} sd ({rows})")
    if spec.standardize:
        out.append(f"column means and sds ({rows})")
    out.append(f"y centre and scale max|y| ({rows})")
    if spec.scale == "maxnorm":
        out.append(f"x_max, largest row norm ({rows})")
    elif spec.scale == "rownorm-y":
        out.append(f"y_max2, largest |y|/||x|| ({rows})")
    return out


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
    nominal epsilon); ``total`` is :func:`dpreg.mechanisms.compose` over
    them (basic and exact accounting).
    """
    alg = get_algorithm(algorithm)
    releases = alg.releases(
        epsilon=epsilon, delta=delta, d=d, rho=rho, bound_x=bound_x, bound_y=bound_y, n=n
    )
    rel_dicts = []
    for r in releases:
        # a stated or external release has no sensitivity or scale: None, not NaN (JSON)
        item = {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in r.as_dict().items()
        }
        if r.mechanism == "gaussian":
            item["mu"] = r.mu
            item["exact_delta_at_nominal_epsilon"] = gdp_delta(r.epsilon, r.mu)
        rel_dicts.append(item)
    entry: dict[str, Any] = {
        "algorithm": algorithm,
        "epsilon": float(epsilon),
        "delta": float(delta),
        "private": alg.private,
        "reproduction": alg.reproduction,
        "calibration": alg.calibration,
        "releases": rel_dicts,
        "total": compose(releases, delta=delta) if releases else None,
    }
    if spec is not None:
        entry["nonprivate_statistics"] = nonprivate_statistics(spec)
    return entry


def _fmt(x: float | None) -> float:
    return float("nan") if x is None else float(x)


_SCALE_NAME = {"gaussian": "sigma", "laplace": "b"}


def _release_text(r: Release) -> str:
    if r.mechanism == "external":
        return f"{r.name}:{r.calibration}@({r.epsilon:.6g},{r.delta:.3g})"
    return (
        f"{r.name}:{_SCALE_NAME.get(r.mechanism, 'scale')}={r.scale:.6g}"
        f"@({r.epsilon:.6g},{r.delta:.3g})"
    )


def release_columns(releases: Sequence[Release], *, delta: float) -> dict[str, Any]:
    """The compact ledger columns of one run's releases (see :func:`trial_columns`)."""
    if not releases:
        values: list[Any] = ["none (non-private)", *[float("nan")] * 4]
    else:
        tot = compose(list(releases), delta=delta)
        values = [
            ";".join(_release_text(r) for r in releases),
            *(
                _fmt(tot[k])  # type: ignore[arg-type]
                for k in ("basic_epsilon", "basic_delta", "exact_epsilon", "exact_delta")
            ),
        ]
    return dict(zip(LEDGER_COLUMNS, values, strict=True))


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
    return {
        eps: release_columns(
            [
                *alg.releases(
                    epsilon=eps,
                    delta=delta,
                    d=d,
                    rho=rho,
                    n=n,
                    params=params,
                    bound_x=bound_x,
                    bound_y=bound_y,
                ),
            ],
            delta=delta,
        )
        for eps in epsilons
    }


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
    from dpreg.peers import PEERS, peer_entry

    delta = float(config["delta"])
    rho = float(config.get("rho", 0.05))
    used = sorted({a for e in config["experiments"].values() for a in e["algorithms"]})
    algorithms: dict[str, Any] = {}
    for name in used:
        if name in PEERS:
            algorithms[name] = {
                repr(float(e)): peer_entry(name, e, delta=delta) for e in config["epsilons"]
            }
            continue
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
                if spec.private_stats is not None
                else "these statistics are taken from the data without noise (thesis option 2): "
                "the composed total is the guarantee of the regression releases only"
            ),
        }
    return {"algorithms": algorithms, "variants": variants}
