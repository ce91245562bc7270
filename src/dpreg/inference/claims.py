"""Claims as data: paired comparisons, checked, and the verdicts of their points.

A claim (stated in the claims file, :mod:`dpreg.inference.registry`) compares
two cells (an algorithm under a variant) on the same datasets and epsilons:
the statistic (mean or median), and the expected direction (lower, higher, or
equal within a relative margin).  This module

- checks the claims of an experiment (:func:`parse_claims`);
- gives each (dataset, epsilon) point's interval of the ratio a/b
  (:func:`dpreg.inference.intervals.PairedDesigns`: partitions, folds within
  them and repeats within folds, resampled; paired by (partition, fold,
  repeat)) a descriptive verdict
  (:func:`point_verdicts`).

The one decision per claim (pooled effect over datasets and epsilons, dataset
bootstrap, Holm, margin and TOST) is :mod:`dpreg.inference.pooled`; the rows
of ``results/tables/claims.csv`` are computed by
:func:`dpreg.inference.evaluation.evaluate_claims` and rendered into the
results README by :mod:`dpreg.report.claims`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpreg._validation import DPRegError
from dpreg.inference.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    STATISTICS,
    check_level,
    check_resamples,
)

__all__ = [
    "DEFAULT_QUORUM",
    "EXPECTATIONS",
    "SOURCES",
    "Claim",
    "bootstrap_settings",
    "parse_claims",
    "point_verdicts",
]

#: Claim key ``quorum`` of the former point-counting rule: still accepted, not used.
DEFAULT_QUORUM = 0.5

EXPECTATIONS = ("lower", "higher", "equal")
SOURCES = ("thesis", "ours")


# --------------------------------------------------------------------------
# verdicts
# --------------------------------------------------------------------------
def point_verdicts(
    lo: np.ndarray, hi: np.ndarray, *, expect: str, margin: float = 0.0
) -> np.ndarray:
    """Verdict of each (dataset, epsilon) point from the interval of its ratio a/b.

    Parameters
    ----------
    lo, hi : array_like
        Interval of the ratio stat(a) / stat(b).
    expect : {"lower", "higher", "equal"}
        What the claim says of a relative to b.
    margin : float
        Relative margin m >= 0.  ``lower``/``higher`` need the interval to
        lie below 1/(1+m) / above 1+m to support (m = 0: simply below /
        above 1); ``equal`` needs it inside [1/(1+m), 1+m].

    Returns
    -------
    numpy.ndarray of str
        ``supported`` when the whole interval lies in the claimed region,
        ``contradicted`` when the whole interval lies in the opposite region
        (for ``lower``: at or above 1, i.e. a is not lower; for ``equal``:
        entirely outside [1/(1+m), 1+m]), else ``inconclusive`` (also when
        the interval is undefined).
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    if expect not in EXPECTATIONS:
        raise DPRegError(f"unknown expect {expect!r}; known: {', '.join(EXPECTATIONS)}")
    if not (isinstance(margin, int | float) and math.isfinite(margin) and margin >= 0):
        raise DPRegError(f"margin must be a finite number >= 0, got {margin!r}")
    up, down = 1.0 + margin, 1.0 / (1.0 + margin)
    if expect == "lower":
        support, contra = hi < down, lo >= 1.0
    elif expect == "higher":
        support, contra = lo > up, hi <= 1.0
    else:
        support, contra = (lo >= down) & (hi <= up), (lo > up) | (hi < down)
    out = np.full(lo.shape, "inconclusive", dtype=object)
    defined = np.isfinite(lo) & np.isfinite(hi)
    out[defined & support] = "supported"
    out[defined & contra & ~support] = "contradicted"
    return out


# --------------------------------------------------------------------------
# claims as data
# --------------------------------------------------------------------------
_CLAIM_KEYS = {
    "id",
    "source",
    "statement",
    "a",
    "b",
    "statistic",
    "expect",
    "margin",
    "epsilons",
    "datasets",
    "quorum",
}


@dataclass(frozen=True)
class Claim:
    """One comparison an experiment states (see config/README.md, "claims").

    ``a`` and ``b`` are (variant, algorithm); the effect is
    stat(a) / stat(b) over the datasets and the closed epsilon range.
    """

    id: str
    experiment: str
    source: str
    statement: str
    a: tuple[str, str]
    b: tuple[str, str]
    statistic: str
    expect: str
    margin: float
    eps_range: tuple[float, float]
    datasets: tuple[str, ...] | None
    quorum: float


def _side(spec: Any, where: str, exp: Mapping[str, Any], default: tuple[str, str] | None):
    if not isinstance(spec, Mapping) or not set(spec) <= {"algorithm", "variant"}:
        raise DPRegError(f"{where} must be a mapping with keys algorithm, variant; got {spec!r}")
    variants = list(exp.get("variants", []))
    algorithms = list(exp.get("algorithms", []))
    variant = spec.get("variant") or (default[0] if default else None)
    algorithm = spec.get("algorithm") or (default[1] if default else None)
    if variant is None and len(variants) == 1:
        variant = variants[0]
    if variant is None or algorithm is None:
        raise DPRegError(f"{where} needs 'algorithm' and (with several variants) 'variant'")
    if variant not in variants:
        raise DPRegError(
            f"{where}: variant {variant!r} is not in the experiment; known: {', '.join(variants)}"
        )
    if algorithm not in algorithms:
        raise DPRegError(
            f"{where}: algorithm {algorithm!r} is not in the experiment; "
            f"known: {', '.join(algorithms)}"
        )
    return str(variant), str(algorithm)


def _claim_id(spec: Any, where: str, seen: set[str]) -> str:
    if not isinstance(spec, Mapping):
        raise DPRegError(f"{where} must be a mapping, got {spec!r}")
    unknown = sorted(set(spec) - _CLAIM_KEYS)
    if unknown:
        raise DPRegError(
            f"{where}: unknown key(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(_CLAIM_KEYS))}"
        )
    cid = spec.get("id")
    if not isinstance(cid, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", cid):
        raise DPRegError(f"{where}: id must be a name (letters, digits, _ . + -), got {cid!r}")
    if cid in seen:
        raise DPRegError(f"{where}: duplicate claim id {cid!r}")
    seen.add(cid)
    return cid


def _number(spec: Mapping[str, Any], key: str, default: float, where: str, ok, allowed: str):
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not ok(value):
        raise DPRegError(f"{where}: {key} must be {allowed}, got {value!r}")
    return float(value)


def _claim_scope(spec: Mapping[str, Any], where: str):
    """(epsilon range, datasets or None) of a claim."""
    eps = spec.get("epsilons", [0.0, math.inf])
    if (
        not isinstance(eps, Sequence)
        or len(eps) != 2
        or not all(isinstance(e, int | float) and not isinstance(e, bool) for e in eps)
        or eps[0] > eps[1]
    ):
        raise DPRegError(f"{where}: epsilons must be [low, high] with low <= high, got {eps!r}")
    ds = spec.get("datasets", "all")
    if ds != "all" and not (isinstance(ds, Sequence) and all(isinstance(x, str) for x in ds)):
        raise DPRegError(f"{where}: datasets must be 'all' or a list of names, got {ds!r}")
    return (float(eps[0]), float(eps[1])), (None if ds == "all" else tuple(ds))


def parse_claims(experiment: str, exp: Mapping[str, Any]) -> list[Claim]:
    """The claims of one experiment's config entry, checked.

    Raises
    ------
    DPRegError
        Naming the experiment, the claim and the key for an unknown key, a
        side that is not in the experiment, or a value out of range.
    """
    out = []
    seen: set[str] = set()
    for i, spec in enumerate(exp.get("claims") or []):
        cid = _claim_id(spec, f"experiments: {experiment}: claims[{i}]", seen)
        where = f"experiments: {experiment}: claims: {cid}"
        a = _side(spec.get("a"), f"{where}: a", exp, None)
        b = _side(spec.get("b", {}), f"{where}: b", exp, a)
        if a == b:
            raise DPRegError(f"{where}: a and b are the same (variant, algorithm) {a}")
        values = {"statistic": "median", "source": "ours", **spec}
        for key, allowed in (
            ("statistic", STATISTICS),
            ("expect", EXPECTATIONS),
            ("source", SOURCES),
        ):
            if values.get(key) not in allowed:
                raise DPRegError(
                    f"{where}: {key} must be one of {', '.join(allowed)}, got {values.get(key)!r}"
                )
        margin = _number(spec, "margin", 0.0, where, lambda m: 0 <= m < 10, "a number in [0, 10)")
        quorum = _number(spec, "quorum", DEFAULT_QUORUM, where, lambda q: 0 < q <= 1, "in (0, 1]")
        eps_range, datasets = _claim_scope(spec, where)
        out.append(
            Claim(
                id=cid,
                experiment=experiment,
                source=str(values["source"]),
                statement=str(spec.get("statement", "")),
                a=a,
                b=b,
                statistic=str(values["statistic"]),
                expect=str(values["expect"]),
                margin=margin,
                eps_range=eps_range,
                datasets=datasets,
                quorum=quorum,
            )
        )
    return out


def bootstrap_settings(
    config: Mapping[str, Any], *, claims: bool = False
) -> tuple[int, float, int]:
    """(seed, level, resamples) of a configuration, defaults filled in.

    With ``claims=True`` the resamples are ``bootstrap.claims_resamples``
    (default ``bootstrap.resamples``): Holm's step-down decides the claim of
    rank 1 among n at alpha / n, so the claims need enough replicates to
    resolve p-values that small, while the tables' intervals do not.
    """
    boot = config.get("bootstrap") or {}
    resamples = check_resamples(boot.get("resamples", DEFAULT_RESAMPLES))
    if claims:
        resamples = check_resamples(boot.get("claims_resamples", resamples))
    return (
        int(config.get("seed", 20200601)),
        check_level(boot.get("level", DEFAULT_LEVEL)),
        resamples,
    )
