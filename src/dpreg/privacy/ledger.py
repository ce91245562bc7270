"""The privacy ledger: what every algorithm releases, and what that guarantees.

For each (algorithm, epsilon) the ledger lists the noisy releases (name,
sensitivity, sigma or Laplace scale, nominal per-release budget,
calibration, whether the calibration's theorem covers it, and the exact
delta of that release at its nominal epsilon under the Gaussian privacy
profile), the composed total -- basic composition as the thesis uses it,
and the exact GDP value (Dong, Roth & Su 2019) -- and the statistics the
pre-processing takes from the data *without* noise (the thesis' option 2),
so that nobody mistakes the total for an end-to-end guarantee.

Every failure probability of a safety margin or test is a release of its
own (mechanism ``"failure"``, cost ``(0, p)``), so the composed delta counts
it; a stated release whose claim is not met records the epsilon a theorem
does give (``true_epsilon``), which the exact accounting charges (the
releases column shows it as ``[true_eps=...]``).

This module holds the release-level records: what one run's list of
releases is written as (trial-table columns, provenance records).  Which
releases an algorithm makes is its registry entry's business; the ledger of
whole configurations (by algorithm name, for ``provenance.json``) is
:mod:`dpreg.engine.run_ledger`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dpreg.io.tables import LEDGER_COLUMNS
from dpreg.privacy.mechanisms import Release, compose, gdp_delta

__all__ = [
    "release_columns",
    "release_records",
    "releases_entry",
]


def release_records(releases: Sequence[Release]) -> list[dict[str, Any]]:
    """Every release with its sensitivity, scale and nominal share, as JSON records.

    Gaussian ones also carry ``mu`` and the exact delta at their nominal
    epsilon.
    """
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
    return rel_dicts


def releases_entry(
    algorithm: str,
    releases: Sequence[Release],
    *,
    epsilon: float,
    delta: float,
    private: bool,
    reproduction: bool,
    calibration: str,
) -> dict[str, Any]:
    """The full ledger record of one (algorithm, epsilon) given its releases.

    ``releases`` lists every release (:func:`release_records`); ``total`` is
    :func:`dpreg.privacy.mechanisms.compose` over them (basic and exact
    accounting).
    """
    return {
        "algorithm": algorithm,
        "epsilon": float(epsilon),
        "delta": float(delta),
        "private": private,
        "reproduction": reproduction,
        "calibration": calibration,
        "releases": release_records(releases),
        "total": compose(list(releases), delta=delta) if releases else None,
    }


def _fmt(x: float | None) -> float:
    return float("nan") if x is None else float(x)


_SCALE_NAME = {"gaussian": "sigma", "laplace": "b"}


def _release_text(r: Release) -> str:
    if r.mechanism == "poisson-selection":  # the whole protocol's bound (dpreg.privacy.selection)
        return (
            f"{r.name}:best-of-Poisson({r.scale:.6g})-runs-of-{r.copies}-candidates"
            f"[upper-bound:Papernot-Steinke-2022-Thm6]@({r.epsilon:.6g},{r.delta:.3g})"
        )
    if r.mechanism in ("external", "failure"):
        return f"{r.name}:{r.calibration}@({r.epsilon:.6g},{r.delta:.3g})"
    if r.true_epsilon is not None:  # the accountant charges the proven epsilon, not the nominal
        return (
            f"{r.name}:{_SCALE_NAME.get(r.mechanism, 'scale')}={r.scale:.6g}"
            f"@({r.epsilon:.6g},{r.delta:.3g})[true_eps={r.true_epsilon:.6g}]"
        )
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
