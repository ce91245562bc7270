"""Claims as data: paired comparisons with computed verdicts.

An experiment of the configuration may state *claims*: two cells (an
algorithm under a variant) compared on the same datasets and epsilons, the
statistic (mean or median), and the expected direction (lower, higher, or
equal within a relative margin).  This module

- checks the claims of a configuration (:func:`parse_claims`);
- computes, per claim, dataset and epsilon, the ratio of the two statistics
  with its paired bootstrap interval (:func:`dpreg.bootstrap.paired_ratios`:
  folds, and repeats within folds, resampled; paired by (fold, repeat));
- turns the intervals into verdicts by the rule of :func:`point_verdicts`
  and :func:`overall_verdict` (written down in config/README.md);
- writes ``results/tables/claims.csv`` (:func:`evaluate_claims`) and renders
  it into the results README (:func:`render_markdown`,
  ``python -m dpreg.claims readme``).

The bootstrap names are re-exported here for convenience.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import DPRegError
from dpreg.bootstrap import (
    BOOTSTRAP_TRIAL_COLUMNS,
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    STATISTICS,
    DesignBootstrap,
    PairedDesigns,
    bootstrap_intervals,
    check_level,
    check_resamples,
    expanded_alpha,
    paired_ratios,
    resample_counts,
)
from dpreg.tables import (
    CLAIM_COLUMNS,
    CLAIM_DTYPES,
    conform,
    empty_frame,
    read_claims,
    read_trials,
    select_trials,
    write_claims,
    write_text_atomic,
)

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "EXPECTATIONS",
    "STATISTICS",
    "Claim",
    "DesignBootstrap",
    "bootstrap_intervals",
    "bootstrap_settings",
    "evaluate_claims",
    "expanded_alpha",
    "overall_verdict",
    "paired_ratios",
    "parse_claims",
    "point_verdicts",
    "render_markdown",
    "replace_readme_block",
    "resample_counts",
]

#: Default share of points that must support a claim (claim key ``quorum``).
DEFAULT_QUORUM = 0.5

EXPECTATIONS = ("lower", "higher", "equal")
SOURCES = ("thesis", "ours")

#: Markers of the generated block in a README; the begin marker names the
#: claims table the block was rendered from (a path relative to the
#: repository root), so a test can check every block against its table.
README_BEGIN = "<!-- claims:begin"
README_END = "<!-- claims:end -->"
_BEGIN_RE = re.compile(r"<!-- claims:begin(?: source=(\S+))?[^\n]*-->\n")


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


def overall_verdict(verdicts: Iterable[str], *, quorum: float = DEFAULT_QUORUM) -> str:
    """One verdict for a claim from the verdicts of its points.

    ``supported`` when no point contradicts and at least ``quorum`` of the
    points support; ``contradicted`` when some point contradicts and at least
    as many contradict as support; ``inconclusive`` otherwise (too few
    decided points, or mixed evidence with more points for than against).
    A claim with no point is ``inconclusive``.
    """
    v = list(verdicts)
    if not v:
        return "inconclusive"
    n_sup, n_con = v.count("supported"), v.count("contradicted")
    if n_con == 0 and n_sup >= quorum * len(v):
        return "supported"
    if n_con > 0 and n_con >= n_sup:
        return "contradicted"
    return "inconclusive"


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


def bootstrap_settings(config: Mapping[str, Any]) -> tuple[int, float, int]:
    """(seed, level, resamples) of a configuration, defaults filled in."""
    boot = config.get("bootstrap") or {}
    return (
        int(config.get("seed", 20200601)),
        check_level(boot.get("level", DEFAULT_LEVEL)),
        check_resamples(boot.get("resamples", DEFAULT_RESAMPLES)),
    )


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

    ``median_cache`` (see :class:`dpreg.bootstrap.DesignBootstrap`) may be
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
        Columns :data:`dpreg.tables.CLAIM_COLUMNS`.  The overall row's
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
    rows are then selected in memory, as :func:`dpreg.tables.read_trials`
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


# --------------------------------------------------------------------------
# markdown for results/README.md
# --------------------------------------------------------------------------
def _num(x: float) -> str:
    """A ratio as the README prints it: 3 significant digits."""
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.3g}"


def _side_text(variant: str, algorithm: str, other: tuple[str, str]) -> str:
    return f"`{algorithm}`" if variant == other[0] else f"`{algorithm}` · `{variant}`"


def render_markdown(claims: pd.DataFrame) -> str:
    """Markdown of every claim and its computed verdict, grouped by experiment.

    For each experiment a table lists each claim (source thesis / ours, the
    comparison, statistic, epsilon range covered, expected direction), the
    overall verdict with the point counts, and the median and range of the
    point ratios; below it, the points that contradict a claim are listed with
    their interval.  Every number comes from ``claims`` (the text is what
    :func:`replace_readme_block` inserts between the README markers).
    """
    if claims.empty:
        return "_No experiment states claims._\n"
    lines: list[str] = []
    overall = claims[claims["scope"] == "overall"]
    points = claims[claims["scope"] == "point"]
    level = float(overall["level"].iloc[0])
    resamples = int(overall["resamples"].iloc[0])
    lines.append(
        f"Verdicts computed from `tables/claims.csv` ({level:.0%} paired bootstrap intervals, "
        f"{resamples} replicates; rule in config/README.md). Ratio = statistic of the first "
        'named over the second; "thesis" marks the thesis\' claims (ours where the thesis '
        'text is not available: our reading), "ours" this project\'s.'
    )
    for exp_id in dict.fromkeys(overall["experiment"]):
        lines += ["", f"### `{exp_id}`", ""]
        lines.append(
            "| claim | source | comparison | stat | ε | expect | verdict | s / c / i of n | ratio median (range) |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        exp_rows = overall[overall["experiment"] == exp_id]
        for row in exp_rows.itertuples(index=False):
            pts = points[points["claim"] == row.claim]
            a = _side_text(row.a_variant, row.a_algorithm, (row.b_variant, row.b_algorithm))
            b = _side_text(row.b_variant, row.b_algorithm, (row.a_variant, row.a_algorithm))
            if row.a_variant == row.b_variant:
                a = f"{a} vs {b} (`{row.a_variant}`)"
            else:
                a = f"{a} vs {b}"
            eps = f"{_num(pts['epsilon'].min())}–{_num(pts['epsilon'].max())}" if len(pts) else "–"
            expect = row.expect if row.margin == 0 else f"{row.expect} (±{row.margin:g})"
            lines.append(
                f"| {row.claim} | {row.source} | {a} | {row.statistic} | {eps} | {expect} | "
                f"**{row.verdict}** | {row.supported} / {row.contradicted} / {row.inconclusive}"
                f" of {row.points} | {_num(row.ratio)} ({_num(row.ratio_lo)}–{_num(row.ratio_hi)}) |"
            )
        lines.append("")
        for row in exp_rows.itertuples(index=False):
            if row.statement:
                lines.append(f"- {row.claim}: {row.statement}")
            bad = points[(points["claim"] == row.claim) & (points["verdict"] == "contradicted")]
            if len(bad):
                where = "; ".join(
                    f"{p.dataset} ε={_num(p.epsilon)}: {_num(p.ratio)} [{_num(p.ratio_lo)}, {_num(p.ratio_hi)}]"
                    for p in bad.itertuples(index=False)
                )
                lines.append(f"  Contradicted at: {where}.")
    return "\n".join(lines) + "\n"


def replace_readme_block(readme: str, block: str, *, source: str = "") -> str:
    """``readme`` with the text between the claims markers replaced by ``block``.

    ``source`` (the claims table's path) is written into the begin marker.
    The markers are added at the end, under a heading, when the README has
    none; the text outside them is kept as it is.
    """
    tag = f" source={source}" if source else ""
    body = (
        f"{README_BEGIN}{tag} (generated by python -m dpreg.claims readme) -->\n"
        f"{block.rstrip()}\n{README_END}"
    )
    match = _BEGIN_RE.search(readme)
    if match and README_END in readme[match.end() :]:
        tail = readme[match.end() :].split(README_END, 1)[1]
        return readme[: match.start()] + body + tail
    return readme.rstrip("\n") + "\n\n## Claims and computed verdicts\n\n" + body + "\n"


def readme_block(readme: str) -> tuple[str, str] | None:
    """(source, block) of a README's generated block, or None when it has none."""
    match = _BEGIN_RE.search(readme)
    if not match or README_END not in readme[match.end() :]:
        return None
    block = readme[match.end() :].split(README_END, 1)[0]
    return match.group(1) or "", block.strip("\n")


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
def _load_config(path: str | Path) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh)
    if not isinstance(cfg, dict) or "experiments" not in cfg:
        raise DPRegError(f"{path}: not a dpreg configuration (no 'experiments' key)")
    return cfg


def _cli_trial_files(cfg: Mapping[str, Any], root: Path):
    """Trial files and row selection of every experiment with claims.

    The pipeline's layout is ``<root>/<dataset>/<shard>.parquet`` (every
    experiment's cells of a dataset in one place); the older
    ``<root>/<experiment>/<dataset>.csv.gz`` is read when present.
    """
    shared = sorted(root.glob("*/*.parquet"))
    default_r = (cfg.get("cv") or {}).get("repeats", 10)
    files: dict[str, list[Path]] = {}
    select: dict[str, dict[str, Any]] = {}
    for exp, spec in cfg["experiments"].items():
        if not parse_claims(exp, spec):
            continue
        found = sorted((root / exp).glob("*.csv.gz")) or shared
        if not found:
            print(
                f"note: no trial files for {exp} under {root}; its claims are left out",
                file=sys.stderr,
            )
            continue
        files[exp] = found
        select[exp] = {"repeats": spec.get("repeats", default_r)}
    return files, select


def _check_readme(readme: str, tables: str, provenance: str) -> int:
    from dpreg.quotes import table_values, unverified_numbers

    sources = sorted(Path(tables).glob("*.csv")) + [p for p in [Path(provenance)] if p.exists()]
    bad = unverified_numbers(Path(readme).read_text(encoding="utf-8"), table_values(sources))
    for number in bad:
        print(f"{readme}: {number} is in no table under {tables} (nor in {provenance})")
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dpreg.claims {evaluate,readme,check-readme}`` (see config/README.md)."""
    parser = argparse.ArgumentParser(
        prog="python -m dpreg.claims", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="trial files -> claims.csv")
    ev.add_argument("--config", default="config/config.yaml")
    ev.add_argument(
        "--trials",
        default="results/trials",
        help="folder of <dataset>/<shard>.parquet (or <experiment>/<dataset>.csv.gz)",
    )
    ev.add_argument("--out", default="results/tables/claims.csv")
    rd = sub.add_parser("readme", help="claims.csv -> the verdict block of results/README.md")
    rd.add_argument("--claims", default="results/tables/claims.csv")
    rd.add_argument("--readme", default="results/README.md")
    ck = sub.add_parser("check-readme", help="list README numbers found in no table")
    ck.add_argument("--readme", default="results/README.md")
    ck.add_argument("--tables", default="results/tables")
    ck.add_argument("--provenance", default="results/provenance.json")
    args = parser.parse_args(argv)
    try:
        if args.command == "check-readme":
            return _check_readme(args.readme, args.tables, args.provenance)
        if args.command == "evaluate":
            cfg = _load_config(args.config)
            files, select = _cli_trial_files(cfg, Path(args.trials))
            cfg = {
                **cfg,
                "experiments": {e: x for e, x in cfg["experiments"].items() if e in files},
            }
            write_claims(evaluate_claims(cfg, files, select=select), args.out)
        else:
            block = render_markdown(read_claims(args.claims))
            path = Path(args.readme)
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            write_text_atomic(path, replace_readme_block(text, block, source=args.claims))
    except DPRegError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
