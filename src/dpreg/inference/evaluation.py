"""Claims evaluated on trial tables: one pooled decision per claim, and its points.

:func:`evaluate_claims` reads the trial files of every experiment with
claims once per dataset and computes, per claim, dataset and epsilon, the
ratio of the two statistics with its paired bootstrap interval
(:class:`dpreg.inference.intervals.PairedDesigns`; failed trials scored as the
trivial predictor) and a descriptive point verdict
(:func:`dpreg.inference.claims.point_verdicts`); then, per claim, the pooled
effect over datasets and epsilons with its dataset bootstrap, the claim's
status from its registration (:mod:`dpreg.inference.registry`), Holm's
adjustment over the confirmatory claims and the decision
(:mod:`dpreg.inference.pooled`): the rows of ``results/tables/claims.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.inference.bands import simultaneous_band
from dpreg.inference.bootstrap import (
    BOOTSTRAP_TRIAL_COLUMNS,
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    _percentile_interval,
)
from dpreg.inference.claims import (
    Claim,
    bootstrap_settings,
    parse_claims,
    point_verdicts,
)
from dpreg.inference.intervals import PairedDesigns
from dpreg.inference.pooled import decide, decision_p_value, holm, holm_adjusted, pool_datasets
from dpreg.inference.registry import claim_status, definition_hash
from dpreg.io.tables import CLAIM_COLUMNS, CLAIM_DTYPES, conform, empty_frame
from dpreg.io.trials import read_trials, select_trials

__all__ = ["claim_points", "evaluate_claims", "finish_claims"]


def claim_points(
    claims: Sequence[Claim],
    trials: pd.DataFrame,
    *,
    seed: int,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    median_cache: dict[tuple, tuple[float, np.ndarray]] | None = None,
    pooled_inputs: dict[str, dict[str, list]] | None = None,
) -> pd.DataFrame:
    """Point rows of ``claims.csv`` for the claims on one dataset's trials.

    A failed trial is scored as the trivial predictor (theta = 0, the error the
    sweep records for it), not left out.  A comparison whose two cells have the
    same trials at every epsilon of the claim (epsilon-independent) gives one
    point (epsilon empty) instead of one per epsilon.  ``pooled_inputs`` (claim
    id -> lists) collects, per dataset, the mean log ratio over the points, its
    design-bootstrap replicates and the failure counts, for :func:`finish_claims`.

    ``median_cache`` (see :class:`dpreg.inference.bootstrap.DesignBootstrap`) may be
    shared by the calls of one evaluation: a cell that several experiments
    compare then has its replicate medians computed once.
    """
    rows = []
    dataset = str(trials["dataset"].iloc[0])
    eps_all = sorted(set(trials["epsilon"].astype(float)))
    cells = sorted({side for c in claims for side in (c.a, c.b)})
    # every cell located once, and resampled and sorted once per shared repeat count
    designs = PairedDesigns(
        trials,
        cells,
        seed=seed,
        resamples=resamples,
        median_cache=median_cache,
    )
    for c in claims:
        if c.datasets is not None and dataset not in c.datasets:
            continue
        eps = [e for e in eps_all if c.eps_range[0] <= e <= c.eps_range[1]]
        found = designs.ratio_replicates(c.a, c.b, eps, statistic=c.statistic)
        if found is None or not found[1]:
            continue
        boot, pairs, est_a, est_b, reps = found
        rows_a = [ia for _, ia, _ in pairs]
        rows_b = [ib for _, _, ib in pairs]
        flat = _eps_independent(boot.values, rows_a) and _eps_independent(boot.values, rows_b)
        keep = [0] if flat else list(range(len(pairs)))
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = est_a / est_b
        # per-point intervals and the simultaneous band over the points kept
        band = simultaneous_band(ratio[keep], reps[:, keep], level=level, clusters=boot.clusters)
        lo, hi = _percentile_interval(reps, level, boot.clusters)
        verdicts = point_verdicts(lo, hi, expect=c.expect, margin=c.margin)
        fail_a = boot.failed[rows_a].mean(axis=1)
        fail_b = boot.failed[rows_b].mean(axis=1)
        for k, j in enumerate(keep):
            rows.append(
                {
                    **_claim_fields(c),
                    "scope": "point",
                    "dataset": dataset,
                    "epsilon": math.nan if flat else pairs[j][0],
                    "a_value": float(est_a[j]),
                    "b_value": float(est_b[j]),
                    "ratio": float(ratio[j]) if np.isfinite(ratio[j]) else math.nan,
                    "ratio_lo": float(lo[j]),
                    "ratio_hi": float(hi[j]),
                    "band_low": float(band.band_low[k]),
                    "band_high": float(band.band_high[k]),
                    "level": level,
                    "resamples": resamples,
                    "verdict": verdicts[j],
                    "a_failed": float(fail_a[j]),
                    "b_failed": float(fail_b[j]),
                }
            )
        if pooled_inputs is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                log_point = np.log(ratio[keep])
                log_reps = np.log(reps[:, keep])
            acc = pooled_inputs.setdefault(c.id, {"points": [], "reps": [], "failed": []})
            acc["points"].append(float(np.mean(log_point)))
            acc["reps"].append(log_reps.mean(axis=1))
            acc["failed"].append(
                (
                    int(boot.failed[[rows_a[j] for j in keep]].sum()),
                    int(boot.failed[[rows_b[j] for j in keep]].sum()),
                    len(keep) * boot.failed.shape[1],
                )
            )
    return pd.DataFrame(rows)


def _eps_independent(values: np.ndarray, rows: Sequence[int]) -> bool:
    """Whether the trials of these cells (one per epsilon) are the same at every epsilon.

    Equal to a relative 1e-9: a non-private fit solved in batches of different
    composition differs between epsilons in the last bits (measured: 1 ulp),
    while a private one differs in the leading digits.
    """
    first = values[rows[0]]
    return all(np.allclose(values[r], first, rtol=1e-9, atol=0.0, equal_nan=True) for r in rows[1:])


def _claim_fields(c: Claim) -> dict[str, Any]:
    return {
        "claim": c.id,
        "experiment": c.experiment,
        "source": c.source,
        "a_variant": c.a[0],
        "a_algorithm": c.a[1],
        "b_variant": c.b[0],
        "b_algorithm": c.b[1],
        "statistic": c.statistic,
        "expect": c.expect,
        "margin": c.margin,
        "statement": c.statement,
    }


def finish_claims(
    claims: Sequence[Claim],
    points: pd.DataFrame,
    *,
    level: float,
    resamples: int,
    pooled_inputs: Mapping[str, Mapping[str, list]] | None = None,
    registration: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Add one overall row per claim to the point rows and order the table.

    Point rows are sorted by (claim order, dataset, epsilon); each claim's
    overall row (``scope == "overall"``, dataset ``all``) comes first and
    carries the pooled effect (``ratio``), its interval at the claim's
    (Holm-adjusted, for a confirmatory claim) level, the decision, its status
    and registration, the failure rates and the point counts
    (:mod:`dpreg.inference.pooled`).
    """
    alpha = 1.0 - level
    inputs = pooled_inputs or {}
    status: dict[str, tuple[str, dict[str, Any]]] = {
        c.id: claim_status(c, registration, seed=seed) for c in claims
    }
    pooled = {
        c.id: pool_datasets(
            inputs.get(c.id, {}).get("points", []),
            inputs.get(c.id, {}).get("reps", []),
            seed=seed,
            key=f"{c.experiment}/{c.id}",
        )
        for c in claims
    }
    p_raw = {c.id: decision_p_value(pooled[c.id], expect=c.expect, margin=c.margin) for c in claims}
    family = [c for c in claims if status[c.id][0] == "confirmatory"]
    levels, decided = holm([p_raw[c.id] for c in family], alpha)
    adjusted = {c.id: (float(a), bool(d)) for c, a, d in zip(family, levels, decided, strict=True)}
    p_holm = holm_adjusted([p_raw[c.id] for c in family])
    p_report = {**p_raw, **{c.id: float(p) for c, p in zip(family, p_holm, strict=True)}}
    out = []
    for c in claims:
        pts = points[points["claim"] == c.id] if len(points) else points
        pts = pts.sort_values(["dataset", "epsilon"], kind="mergesort") if len(pts) else pts
        verdicts = list(pts["verdict"]) if len(pts) else []
        a_level, ok = adjusted.get(c.id, (alpha, True))
        lo, hi = pooled[c.id].interval(a_level)
        decision = decide(lo, hi, expect=c.expect, margin=c.margin) if ok else "inconclusive"
        fails = inputs.get(c.id, {}).get("failed", [])
        total = sum(n for _, _, n in fails)
        state, entry = status[c.id]
        summary = {
            **_claim_fields(c),
            "status": state,
            "scope": "overall",
            "dataset": "all",
            "epsilon": math.nan,
            "a_value": math.nan,
            "b_value": math.nan,
            "ratio": math.exp(pooled[c.id].theta) if pooled[c.id].datasets else math.nan,
            "ratio_lo": math.exp(lo) if math.isfinite(lo) else math.nan,
            "ratio_hi": math.exp(hi) if math.isfinite(hi) else math.nan,
            "band_low": math.nan,
            "band_high": math.nan,
            "level": 1.0 - a_level,
            "resamples": resamples,
            "verdict": decision,
            "p_value": p_report[c.id],
            "a_failed": sum(f for f, _, _ in fails) / total if total else math.nan,
            "b_failed": sum(f for _, f, _ in fails) / total if total else math.nan,
            "datasets": pooled[c.id].datasets,
            "points": len(verdicts),
            "supported": verdicts.count("supported"),
            "contradicted": verdicts.count("contradicted"),
            "inconclusive": verdicts.count("inconclusive"),
            "registered": str(entry.get("registered", "")),
            "sha256": definition_hash(c),
        }
        out.append(pd.DataFrame([summary]))
        if len(pts):
            pts = pts.copy()
            pts["status"] = state
            pts["p_value"] = math.nan
            pts["registered"] = summary["registered"]
            pts["sha256"] = summary["sha256"]
            for col in ("datasets", "points", "supported", "contradicted", "inconclusive"):
                pts[col] = 0
            out.append(pts)
    if not out:
        return empty_frame(CLAIM_COLUMNS, CLAIM_DTYPES)
    frame = pd.concat(out, ignore_index=True)
    return conform(frame, CLAIM_COLUMNS, CLAIM_DTYPES)


def evaluate_claims(
    config: Mapping[str, Any],
    trial_files: Mapping[str, Sequence[str | Path]] | None = None,
    *,
    trials: Mapping[str, pd.DataFrame] | None = None,
    select: Mapping[str, Mapping[str, Any]] | None = None,
    registration: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Evaluate every claim of a configuration (the ``claims.csv`` table).

    Parameters
    ----------
    config : mapping
        The configuration (``seed``, optional ``bootstrap``, ``experiments``
        with their ``claims``).
    trial_files : mapping, optional
        Experiment id -> its trial files.  A file named by several
        experiments is read once, with only the columns and the cells that
        the claims of all of them compare; each experiment's rows are then
        selected from it in memory.
    trials : mapping, optional
        Experiment id -> trial table (instead of files).
    select : mapping, optional
        Experiment id -> ``{"repeats": R}`` (an int, or algorithm -> int):
        only the first R repeats of each cell are used, as in the
        experiment's own table.
    registration : mapping, optional
        The claims' registration record
        (:func:`dpreg.inference.registry.read_registration`); default the
        config's ``claims_registration``.  A claim not registered with its
        current definition is ``exploratory``.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`dpreg.io.tables.CLAIM_COLUMNS`.  The overall row's
        ``ratio`` is the pooled effect (geometric-mean ratio over datasets
        and epsilons) and ``ratio_lo``/``ratio_hi`` its interval at the
        row's ``level`` (Holm-adjusted for a confirmatory claim).

    Notes
    -----
    The decision rule (:mod:`dpreg.inference.pooled`) and the point rule
    (:func:`point_verdicts`, description only) are written down in
    config/README.md.
    """
    if registration is None:
        registration = config.get("claims_registration")
    seed, level, resamples = bootstrap_settings(config, claims=True)
    parsed = {exp_id: parse_claims(exp_id, exp) for exp_id, exp in config["experiments"].items()}
    parsed = {exp_id: claims for exp_id, claims in parsed.items() if claims}
    files = _SharedTrialFiles(trial_files, parsed)
    median_cache: dict[tuple, tuple[float, np.ndarray]] = {}  # shared by every experiment
    all_claims: list[Claim] = []
    points = []
    pooled_inputs: dict[str, dict[str, list]] = {}
    for exp_id, claims in parsed.items():
        all_claims.extend(claims)
        chosen = config["experiments"][exp_id].get("datasets", "all")
        for part in _dataset_parts(exp_id, claims, files, trials, select):
            if chosen != "all" and str(part["dataset"].iloc[0]) not in chosen:
                continue  # shared trial files may hold datasets the experiment does not use
            points.append(
                claim_points(
                    claims,
                    part,
                    seed=seed,
                    level=level,
                    resamples=resamples,
                    median_cache=median_cache,
                    pooled_inputs=pooled_inputs,
                )
            )
    pts = (
        pd.concat([p for p in points if len(p)], ignore_index=True)
        if any(len(p) for p in points)
        else pd.DataFrame(columns=CLAIM_COLUMNS)
    )
    return finish_claims(
        all_claims,
        pts,
        level=level,
        resamples=resamples,
        pooled_inputs=pooled_inputs,
        registration=registration,
        seed=seed,
    )


def _claim_cells(claims: Sequence[Claim]) -> tuple[list[str], list[str]]:
    """(variants, algorithms) the claims compare, sorted."""
    variants = sorted({v for c in claims for v in (c.a[0], c.b[0])})
    algorithms = sorted({a for c in claims for a in (c.a[1], c.b[1])})
    return variants, algorithms


class _SharedTrialFiles:
    """Trial files read once per evaluation, for every experiment that uses them.

    Each file is read the first time an experiment asks for it, with the
    variants and algorithms of every experiment's claims; an experiment's
    rows are then selected in memory, as :func:`dpreg.io.trials.read_trials`
    would have selected them from the file.
    """

    def __init__(
        self,
        trial_files: Mapping[str, Sequence[str | Path]] | None,
        claims: Mapping[str, Sequence[Claim]],
    ):
        self.files = dict(trial_files or {})
        wanted = [_claim_cells(c) for e, c in claims.items() if e in self.files]
        self.variants = sorted({v for vs, _ in wanted for v in vs})
        self.algorithms = sorted({a for _, als in wanted for a in als})
        self._frames: dict[str, pd.DataFrame] = {}

    def __contains__(self, exp_id: str) -> bool:
        return exp_id in self.files

    def read(self, exp_id: str, variants, algorithms, repeats) -> pd.DataFrame:
        parts = []
        for path in self.files[exp_id]:
            key = str(path)
            if key not in self._frames:
                self._frames[key] = self._read(path)
            parts.append(
                select_trials(
                    self._frames[key], variants=variants, algorithms=algorithms, repeats=repeats
                )
            )
        if not parts:
            raise DPRegError("no trial files given")
        # the same dataset categories in every part, so the column stays categorical
        names = sorted({str(n) for p in parts for n in p["dataset"].cat.categories})
        parts = [p.assign(dataset=p["dataset"].cat.set_categories(names)) for p in parts]
        return pd.concat(parts, ignore_index=True)

    def _read(self, path: str | Path) -> pd.DataFrame:
        # the names as categoricals (from the file's dictionary encoding), with the same
        # categories in every file: selections and groupings work on integer codes
        frame = read_trials(
            [path],
            variants=self.variants,
            algorithms=self.algorithms,
            columns=BOOTSTRAP_TRIAL_COLUMNS,
            categorical=("dataset", "variant", "algorithm"),
        )
        for col, names in (("variant", self.variants), ("algorithm", self.algorithms)):
            frame[col] = frame[col].cat.set_categories(names)
        return frame


def _dataset_parts(exp_id, claims, files, trials, select):
    """Trials of the cells an experiment's claims compare, one dataset at a time."""
    variants, algorithms = _claim_cells(claims)
    if trials is not None and exp_id in trials:
        frame = trials[exp_id]
        frame = frame[
            frame["variant"].astype(str).isin(variants)
            & frame["algorithm"].astype(str).isin(algorithms)
        ]
    elif exp_id in files:
        frame = files.read(
            exp_id, variants, algorithms, (select or {}).get(exp_id, {}).get("repeats")
        )
    else:
        raise DPRegError(f"experiment {exp_id!r} states claims but no trials were given for it")
    codes, names = pd.factorize(frame["dataset"])
    for i in sorted(range(len(names)), key=lambda i: str(names[i])):
        part = frame.loc[codes == i]
        # one dataset per part: its name as a one-category categorical (cheap to group by)
        part = part.assign(
            dataset=pd.Categorical.from_codes(np.zeros(len(part), int), [str(names[i])])
        )
        yield part
