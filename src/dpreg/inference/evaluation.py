"""Claims evaluated on trial tables: pooled paired ratios and their verdicts.

:func:`evaluate_claims` reads the trial files of every experiment with
claims once per dataset, computes per claim, dataset and epsilon the ratio
of the two statistics with its paired bootstrap interval
(:func:`dpreg.inference.intervals.paired_ratios`) and turns the intervals into
verdicts (:func:`dpreg.inference.claims.point_verdicts`,
:func:`~dpreg.inference.claims.overall_verdict`): the rows of
``results/tables/claims.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.inference.bootstrap import BOOTSTRAP_TRIAL_COLUMNS, DEFAULT_LEVEL, DEFAULT_RESAMPLES
from dpreg.inference.claims import (
    Claim,
    bootstrap_settings,
    overall_verdict,
    parse_claims,
    point_verdicts,
)
from dpreg.inference.intervals import PairedDesigns
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
) -> pd.DataFrame:
    """Point rows of ``claims.csv`` for the claims on one dataset's trials.

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
        trials, cells, seed=seed, resamples=resamples, median_cache=median_cache
    )
    for c in claims:
        if c.datasets is not None and dataset not in c.datasets:
            continue
        eps = [e for e in eps_all if c.eps_range[0] <= e <= c.eps_range[1]]
        ratios = designs.ratios(c.a, c.b, eps, statistic=c.statistic, level=level)
        verdicts = point_verdicts(
            ratios["ratio_lo"].to_numpy(float),
            ratios["ratio_hi"].to_numpy(float),
            expect=c.expect,
            margin=c.margin,
        )
        for rec, verdict in zip(ratios.to_dict("records"), verdicts, strict=True):
            rows.append(
                {
                    **_claim_fields(c),
                    **rec,
                    "scope": "point",
                    "dataset": dataset,
                    "level": level,
                    "resamples": resamples,
                    "verdict": verdict,
                }
            )
    return pd.DataFrame(rows)


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
    claims: Sequence[Claim], points: pd.DataFrame, *, level: float, resamples: int
) -> pd.DataFrame:
    """Add one overall row per claim to the point rows and order the table.

    Point rows are sorted by (claim order, dataset, epsilon); each claim's
    overall row (``scope == "overall"``, dataset ``all``) comes first and
    carries the counts and :func:`overall_verdict`.
    """
    out = []
    for c in claims:
        pts = points[points["claim"] == c.id] if len(points) else points
        pts = pts.sort_values(["dataset", "epsilon"], kind="mergesort") if len(pts) else pts
        verdicts = list(pts["verdict"]) if len(pts) else []
        summary = {
            **_claim_fields(c),
            "scope": "overall",
            "dataset": "all",
            "epsilon": math.nan,
            "a_value": math.nan,
            "b_value": math.nan,
            "ratio": float(np.nanmedian(pts["ratio"]))
            if len(pts) and pts["ratio"].notna().any()
            else math.nan,
            "ratio_lo": float(pts["ratio"].min()) if len(pts) else math.nan,
            "ratio_hi": float(pts["ratio"].max()) if len(pts) else math.nan,
            "level": level,
            "resamples": resamples,
            "verdict": overall_verdict(verdicts, quorum=c.quorum),
            "points": len(verdicts),
            "supported": verdicts.count("supported"),
            "contradicted": verdicts.count("contradicted"),
            "inconclusive": verdicts.count("inconclusive"),
        }
        out.append(pd.DataFrame([summary]))
        if len(pts):
            pts = pts.copy()
            for col in ("points", "supported", "contradicted", "inconclusive"):
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

    Returns
    -------
    pandas.DataFrame
        Columns :data:`dpreg.io.tables.CLAIM_COLUMNS`.  The overall row's
        ``ratio`` is the median point ratio and ``ratio_lo``/``ratio_hi`` the
        smallest and largest point ratio (not an interval).

    Notes
    -----
    The overall verdict rule (:func:`overall_verdict`) and the point rule
    (:func:`point_verdicts`) are written down in config/README.md.
    """
    seed, level, resamples = bootstrap_settings(config)
    parsed = {exp_id: parse_claims(exp_id, exp) for exp_id, exp in config["experiments"].items()}
    parsed = {exp_id: claims for exp_id, claims in parsed.items() if claims}
    files = _SharedTrialFiles(trial_files, parsed)
    median_cache: dict[tuple, tuple[float, np.ndarray]] = {}  # shared by every experiment
    all_claims: list[Claim] = []
    points = []
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
                )
            )
    pts = (
        pd.concat([p for p in points if len(p)], ignore_index=True)
        if any(len(p) for p in points)
        else pd.DataFrame(columns=CLAIM_COLUMNS)
    )
    return finish_claims(all_claims, pts, level=level, resamples=resamples)


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
