"""Hyperparameters chosen privately: the best of a Poisson number of runs (``-tuned`` entries).

One protocol for every tunable method (Papernot & Steinke 2022, Theorem 6,
Poisson distribution).  A ``-tuned`` entry wraps a base entry and a small
public grid of ``J`` candidate hyperparameter settings:

1. draw ``K ~ Poisson(mu_K)`` with ``mu_K = J``;
2. ``K`` times run the base mechanism ``Q``: pick a candidate uniformly from
   the grid, fit the base entry with it, and release the fit's private score
   ``S = sum_i min((y_i - x_i^T theta)^2, C_S) + sigma_S xi`` over the training
   rows, with ``C_S = 4 B_Y^2`` (a failed fit scores ``n C_S`` before noise);
   the trivial predictor's loss is at most ``B_Y^2`` per row, so the clip
   rarely binds on a useful fit.  Its add/remove L2 sensitivity is ``C_S``;
3. output the fit with the smallest noisy score (ties: the first run); with
   ``K = 0`` output ``theta = 0`` (independent of the data, as the theorem
   allows).

Budget split and calibration
----------------------------
Every candidate's releases are the base entry's with every noise scale
multiplied by one factor (the base's split between its own releases is kept,
as the ``-tight`` entries do) so that each candidate's fit is
``mu_fit``-GDP, and the score is ``mu_S``-GDP, with the fixed split
``mu_S^2 = 0.1 mu_Q^2`` and ``mu_fit^2 = 0.9 mu_Q^2`` (:data:`SCORE_SHARE`):
a run of ``Q`` is ``mu_Q``-GDP whatever candidate it draws, so the uniform
mixture is too (joint quasi-convexity of the Renyi divergence and joint
convexity of the hockey-stick divergence;
:mod:`dpreg.privacy.selection`).  ``mu_Q`` is the largest at which
Papernot & Steinke's bound, converted to ``(epsilon, delta)`` optimally over
the Renyi order, meets the target: the entry's releases are written as a
function of one noise multiplier and calibrated by
:func:`dpreg.privacy.calibrate.calibrate_multiplier`, so the ledger's
``eps_exact`` is ``epsilon`` within 0.01% (never above).  That bound is an
upper bound on the protocol, tight for nothing else.

``mu_K = J``, Papernot & Steinke's suggestion of one expected run per
candidate: each run costs ``ln(mu_K) / (lambda - 1)`` in Renyi DP, so the
price grows slowly in ``J``; the chance of ``K = 0`` (the trivial output)
is ``e^{-J}``, at most 1.8% on these grids (``J >= 4``).

The entries and their grids (public, fixed before any data is seen)
-------------------------------------------------------------------
``dp-gd-tuned``
    DP-GD (:mod:`dpreg.algorithms.gd`, add/remove): ``T`` in {3, 10},
    ``eta`` in {0.25, 1}, residual clip ``C`` in {0.5, 1} ``B_Y`` (8
    candidates; DP-GD's hand-tuned ``T = 3, eta = 0.25, C = B_Y`` is one).
``bas-tuned``
    BoostedAdaSSP (:mod:`dpreg.algorithms.boosted`): ``T`` in {5, 10, 25, 50, 100}.
``adassp-tuned``
    AdaSSP (Kalaja's fixed version, the fit of ``adassp-tight``): its failure
    probability ``rho`` in {0.001, 0.01, 0.05, 0.2, 0.5} (the run's ``rho``
    argument is ignored).
``dpk-bas-tuned``
    DPKendall + BoostedAdaSSP (:mod:`dpreg.algorithms.kendall`): the number of
    selected features ``k`` in {2, 3, 5, 8} (capped at ``d``).  Its selection is a
    pure-DP exponential mechanism, so its candidates are not Gaussian: each runs the
    base at its own budget ``epsilon / z`` (the base's split kept), the score gets
    ``mu_S^2 = SCORE_SHARE / (1 - SCORE_SHARE)`` times the base's Gaussian ``mu^2``,
    and the accountant composes the pure part in Renyi DP
    (:func:`dpreg.privacy.selection.ps22_curve`).  The calibration does not
    depend on ``n`` and is computed once per ``(epsilon, delta, d, bounds)``.

TukeyEM's ``m`` is tuned by :mod:`dpreg.algorithms.tuning_tukey`: its
propose-test-release is not Renyi-DP, so Theorem 6 does not apply to it.

Randomness: one draw from the caller's generator seeds ``J + 2`` child
streams -- the repetitions and picks (repeat by repeat), the score noise (run
by run) and one per candidate (its runs in repeat order, one batched fit per
candidate) -- so repeats are prefix-stable and each trial is an exact run of
the protocol.  ``dpk-bas-tuned`` has an epsilon-free step
(:attr:`~dpreg.algorithms.base.Algorithm.epsilon_free_step`): with a shared
seed, the picks of repeat ``r`` come from its child 0 and every run of repeat
``r`` takes DPKendall's tie-breaking perturbation (K1) from its child ``(1,
r)``, so the perturbed rows and their Kendall vectors are computed once per
repeat for all its runs and every epsilon of a grid (one base fit per run).
Neither depends on the data or on epsilon.  The picks keep their law
(``K ~ Poisson(J)``, uniform candidates, independent of the runs), so each
trial is still an exact run of the protocol; trials at different epsilons
share them, as TukeyEM's shared partition (no claim is made about releasing
several epsilons' outputs together).  Conditionally on the perturbation each
run is the base mechanism on fixed perturbed rows (the Kendall scores'
sensitivity holds for any rows, and the output's law does not depend on the
row order, so a removed row's perturbation may be taken to be the last): the
bound holds conditionally, hence for the mixture.  Without a shared seed each
run perturbs from its candidate's stream.

References
----------
Papernot, N. & Steinke, T. (2022). Hyperparameter tuning with Renyi
differential privacy. ICLR (arXiv 2110.03620, Theorem 6).
Liu, J. & Talwar, K. (2019). Private selection from private candidates. STOC.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from itertools import product
from types import MappingProxyType
from typing import Any

import numpy as np

from dpreg._validation import epsilon_too_small
from dpreg.algorithms import adassp, boosted, gd, kendall
from dpreg.algorithms.base import Algorithm, Style, _cached_releases, _freeze, shared_child
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext, _as_result
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.calibrate import calibrate_multiplier
from dpreg.privacy.mechanisms import Release, selection_release
from dpreg.privacy.selection import candidate_groups, candidate_name, selection_epsilon

__all__ = ["BASES", "ENTRIES", "GRIDS", "SCORE_CLIP", "SCORE_SHARE", "Candidate"]

#: Share of ``mu_Q^2`` spent on the score release (the fit gets the rest).
SCORE_SHARE = 0.1
#: Clip of each row's squared residual in the score, in units of ``B_Y^2``.
SCORE_CLIP = 4.0
#: Calibration name of the tuned entries (and of their selection release).
CALIBRATION = "ps22"

#: A candidate: the base entry's hyperparameters and, for AdaSSP, its ``rho`` (else None).
Candidate = tuple[Mapping[str, Any], float | None]


def _entry(module, name: str) -> Algorithm:
    return {a.name: a for a in module.ENTRIES}[name]


#: tuned entry -> the base entry it runs
BASES: dict[str, Algorithm] = {
    "dp-gd-tuned": _entry(gd, "dp-gd"),
    "bas-tuned": _entry(boosted, "bas"),
    "adassp-tuned": _entry(adassp, "adassp"),
    "dpk-bas-tuned": _entry(kendall, "dpk-bas"),
}

#: tuned entries whose base makes pure-DP releases: calibrated through the base's budget
BY_BUDGET = frozenset({"dpk-bas-tuned"})

#: tuned entry -> its public candidate grid
GRIDS: dict[str, tuple[Candidate, ...]] = {
    "dp-gd-tuned": tuple(
        ({"T": T, "eta": eta, "clip": c}, None)
        for T, eta, c in product((3, 10), (0.25, 1.0), (0.5, 1.0))
    ),
    "bas-tuned": tuple(({"T": T, "eta": "1"}, None) for T in (5, 10, 25, 50, 100)),
    "adassp-tuned": tuple(({}, rho) for rho in (0.001, 0.01, 0.05, 0.2, 0.5)),
    "dpk-bas-tuned": tuple(({"k": k}, None) for k in (2, 3, 5, 8)),
}


def _score_clip(bound_y: float) -> float:
    return SCORE_CLIP * bound_y * bound_y


def _scaled(r: Release, name: str, z: float) -> Release:
    return mech.gaussian_release(
        name,
        sensitivity=r.sensitivity,
        sigma=r.scale * z,
        epsilon=r.epsilon,
        delta=r.delta,
        calibration=CALIBRATION,
        valid=True,
    )


def _release_fn(tuned: str):
    base, grid = BASES[tuned], GRIDS[tuned]

    def release_fn(ctx: ReleaseContext) -> list[Release]:
        if tuned in BY_BUDGET:  # independent of n: calibrated once per (epsilon, delta, d, ...)
            return list(_cached_releases(_BUDGET_FNS[tuned], replace(ctx, n=None)))
        groups = []
        for params, _ in grid:
            own = replace(ctx, params=_freeze({**base.hyperparameters, **params}))
            rel = base.release_fn(own)
            groups.append((rel, math.sqrt(sum(r.mu**2 for r in rel))))
        J = len(grid)
        c_s = _score_clip(ctx.bound_y)

        def releases_of(z: float) -> list[Release]:
            mu_fit = math.sqrt(1.0 - SCORE_SHARE) / z  # mu_Q = 1 / z
            out = [_selection(ctx, J)]
            for j, (rel, mu1) in enumerate(groups, start=1):
                out += [_scaled(r, candidate_name(j, r.name), mu1 / mu_fit) for r in rel]
                out.append(
                    mech.gaussian_release(
                        candidate_name(j, "score"),
                        sensitivity=c_s,
                        sigma=c_s * z / math.sqrt(SCORE_SHARE),
                        epsilon=SCORE_SHARE * ctx.epsilon,
                        delta=SCORE_SHARE * ctx.delta,
                        calibration=CALIBRATION,
                        valid=True,
                    )
                )
            return out

        # the bound is at least its value without noise in the runs (ln(mu_K) per order)
        if ctx.epsilon <= selection_epsilon(1e-9, float(J), delta=ctx.delta):
            raise epsilon_too_small(ctx.epsilon)
        z = calibrate_multiplier(releases_of, epsilon=ctx.epsilon, delta=ctx.delta)
        return releases_of(z)

    return release_fn


def _selection(ctx: ReleaseContext, J: int) -> Release:
    return selection_release(
        "selection",
        mean=float(J),
        candidates=J,
        epsilon=ctx.epsilon,
        delta=ctx.delta,
        calibration=CALIBRATION,
    )


def _budget_releases(ctx: ReleaseContext, base: Algorithm, grid) -> list[Release]:
    """A base with pure-DP releases (DPKendall's selection): every candidate runs the base
    at its own budget ``epsilon / z`` (its own split), the score at ``mu_S^2 = SCORE_SHARE /
    (1 - SCORE_SHARE)`` times the candidate's Gaussian ``mu^2``; ``z`` calibrated as above."""
    J = len(grid)
    c_s = _score_clip(ctx.bound_y)

    def releases_of(z: float) -> list[Release]:
        out = [_selection(ctx, J)]
        for j, (params, _) in enumerate(grid, start=1):
            own = replace(
                ctx, epsilon=ctx.epsilon / z, params=_freeze({**base.hyperparameters, **params})
            )
            rel = base.release_fn(own)
            out += [replace(r, name=candidate_name(j, r.name)) for r in rel]
            mu_fit = math.sqrt(sum(r.mu**2 for r in rel if r.mechanism == "gaussian"))
            mu_s = math.sqrt(SCORE_SHARE / (1.0 - SCORE_SHARE)) * mu_fit
            out.append(
                mech.gaussian_release(
                    candidate_name(j, "score"),
                    sensitivity=c_s,
                    sigma=c_s / mu_s,
                    epsilon=SCORE_SHARE * ctx.epsilon,
                    delta=SCORE_SHARE * ctx.delta,
                    calibration=CALIBRATION,
                    valid=True,
                )
            )
        return out

    if ctx.epsilon <= selection_epsilon(1e-9, float(J), delta=ctx.delta):
        raise epsilon_too_small(ctx.epsilon)
    z = calibrate_multiplier(releases_of, epsilon=ctx.epsilon, delta=ctx.delta)
    return releases_of(z)


#: the release functions of the entries calibrated through the base's budget
_BUDGET_FNS = {
    t: (lambda ctx, t=t: _budget_releases(ctx, BASES[t], GRIDS[t])) for t in sorted(BY_BUDGET)
}


def _base_releases(group: list[Release], j: int) -> list[Release]:
    """Candidate ``j``'s releases under the base entry's own names (what its fit reads)."""
    prefix = candidate_name(j, "")
    return [replace(r, name=r.name[len(prefix) :]) for r in group if not r.name.endswith("/score")]


def _plan(rng: np.random.Generator, size: int, J: int, mean: float, shared=None):
    """Per repeat ``K ~ Poisson(mean)`` picks; the streams of the score and of each candidate.

    With a ``shared`` seed (entries with an epsilon-free step) the picks come from its
    child 0 instead: they depend neither on the data nor on epsilon."""
    seed = np.random.SeedSequence(int(rng.integers(2**63)))
    g_sel, g_score, *g_cand = (np.random.default_rng(s) for s in seed.spawn(J + 2))
    if shared is not None:
        g_sel = np.random.default_rng(shared_child(shared, 0))
    runs: list[tuple[int, int]] = []  # (repeat, candidate index 0..J-1), repeat-major
    drawcheck.record("selection", "poisson", mean, (size,))
    for r in range(size):
        k = int(g_sel.poisson(mean))
        runs += [(r, int(j)) for j in g_sel.integers(J, size=k)]
    return runs, g_score, g_cand


def _fit_fn(tuned: str):
    base, grid = BASES[tuned], GRIDS[tuned]

    def fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
        X, y = opts.rows  # type: ignore[misc]
        n, d = X.shape
        R = opts.size
        wrapper, groups = candidate_groups(rel)
        J = wrapper.copies
        c_s = _score_clip(stats.bound_y)
        runs, g_score, g_cand = _plan(opts.rng, R, J, wrapper.scale, opts.shared_seed)  # type: ignore[arg-type]
        xi = mech.standard_normals((len(runs),), rng=g_score)
        thetas = np.full((len(runs), d), np.nan)
        scores = np.full(len(runs), np.nan)
        captured: dict[str, np.ndarray] = {}
        for j in range(J):
            idx = np.array([i for i, (_, c) in enumerate(runs) if c == j], dtype=int)
            params, rho = grid[j]
            own = FitOptions(
                rng=g_cand[j],
                size=len(idx),
                rho=opts.rho if rho is None else rho,
                xtx_offset=opts.xtx_offset,
                params=MappingProxyType({**base.hyperparameters, **params}),
                rows=opts.rows,
                solve=True,
                capture=opts.capture,
                noise_kinds=base.noise_kinds,
            )
            brel = _base_releases(groups[j + 1], j + 1)
            if not len(idx):
                if opts.capture:  # shapes of what this candidate would release (data discarded)
                    probe = base.fit_fn(
                        stats, brel, replace(own, size=1, rng=np.random.default_rng(0))
                    )
                    for k, v in (_as_result(probe).released or {}).items():
                        captured[candidate_name(j + 1, k)] = np.full((0, *np.shape(v)[1:]), np.nan)
                continue
            with drawcheck.prefixed(candidate_name(j + 1, "")):
                if opts.shared_seed is None:
                    res = _as_result(base.fit_fn(stats, brel, own))
                else:
                    reps = [runs[i][0] for i in idx]
                    res = _by_repeat(base, stats, brel, own, reps, opts)
            thetas[idx] = res.theta
            score_name = candidate_name(j + 1, "score")
            with np.errstate(over="ignore", invalid="ignore"):
                r2 = (y[:, None] - X @ np.nan_to_num(res.theta, nan=0.0).T) ** 2
            r2[:, res.failed] = c_s  # a failed fit: every row at the clip
            r2 = np.where(np.isfinite(r2), r2, c_s)
            sse = drawcheck.clip(r2, c_s, release=score_name, row_norm=1.0).sum(axis=0)
            score_rel = next(r for r in groups[j + 1] if r.name == score_name)
            scores[idx] = sse + drawcheck.scaled(xi[idx], score_rel.scale, release=score_name)
            if opts.capture:
                for k, v in (res.released or {}).items():
                    captured[candidate_name(j + 1, k)] = (idx, v)  # type: ignore[assignment]
                captured[score_name] = (idx, scores[idx])  # type: ignore[assignment]
        theta = np.zeros((R, d))
        failed = np.zeros(R, dtype=bool)
        chosen = np.zeros(R)  # the winning candidate (1..J); 0: K = 0
        winner = np.full(R, -1, dtype=int)  # index into runs
        run_repeat = np.array([r for r, _ in runs], dtype=int)
        for r in range(R):
            mine = np.flatnonzero(run_repeat == r)
            if not len(mine):
                continue
            w = int(mine[np.argmin(scores[mine])])  # first of equal scores
            winner[r] = w
            chosen[r] = runs[w][1] + 1
            theta[r] = thetas[w]
            failed[r] = not np.all(np.isfinite(thetas[w]))
        theta[failed] = np.nan
        released = _released(captured, grid, runs, winner, chosen) if opts.capture else None
        return FitResult(theta, np.full(R, np.nan), failed, released)

    return fit


def _by_repeat(base, stats, brel, own: FitOptions, reps: list[int], opts: FitOptions):
    """One base fit per run, in run order, run ``i`` of repeat ``r`` taking the base's
    epsilon-free step (DPKendall's tie-breaking perturbation and its Kendall vectors) from
    the shared seed's child ``(1, r)``: computed once per repeat for every run and every
    epsilon of a grid.  The candidate's stream is drawn as one batched call draws it."""
    parts = []
    for r in reps:
        one = replace(
            own,
            size=1,
            shared_seed=shared_child(shared_child(opts.shared_seed, 1), r),  # type: ignore[arg-type]
            cache=opts.cache.setdefault(("base-repeat", r), {}),
        )
        parts.append(_as_result(base.fit_fn(stats, brel, one)))
    released = None
    if own.capture:
        released = {k: np.concatenate([p.released[k] for p in parts]) for k in parts[0].released}  # type: ignore[index,union-attr]
    return FitResult(
        np.concatenate([p.theta for p in parts]),
        np.concatenate([p.lam for p in parts]),
        np.concatenate([p.failed for p in parts]),
        released,
    )


def _released(captured, grid, runs, winner, chosen) -> dict[str, np.ndarray]:
    """What one repeat releases: the winning run's values (NaN for the other candidates)."""
    R = len(winner)
    out: dict[str, np.ndarray] = {"selection": chosen}
    for name, value in captured.items():
        j = int(name.split("/", 1)[0][1:]) - 1
        if not isinstance(value, tuple):  # a candidate never run
            out[name] = np.full((R, *value.shape[1:]), np.nan)
            continue
        idx, v = value
        arr = np.full((R, *np.shape(v)[1:]), np.nan)
        pos = {int(i): p for p, i in enumerate(idx)}
        for r in range(R):
            w = winner[r]
            if w >= 0 and runs[w][1] == j:
                arr[r] = v[pos[w]]
        out[name] = arr
    for j in range(len(grid)):
        out.setdefault(candidate_name(j + 1, "score"), np.full(R, np.nan))
    return out


def _tuned(name: str, label: str, style: Style, what: str) -> Algorithm:
    base = BASES[name]
    names = sorted({k for params, _ in GRIDS[name] for k in params if _varies(name, k)})
    return Algorithm(
        name,
        label,
        private=True,
        calibration=CALIBRATION,
        release_fn=_release_fn(name),
        fit_fn=_fit_fn(name),
        needs_rows=True,
        tuned_privately=tuple(names) or ("rho",),
        epsilon_free_step=name in BY_BUDGET,
        neighbouring=base.neighbouring,
        style=style,
        reference=f"{base.label} with {what} chosen privately: best of K ~ Poisson(J) runs "
        "(Papernot & Steinke 2022, Thm 6), whole protocol at (ε, δ)",
    )


def _varies(name: str, key: str) -> bool:
    return len({params.get(key) for params, _ in GRIDS[name]}) > 1


ENTRIES = [
    _tuned("dp-gd-tuned", "DP-GD (tuned privately)", Style("indigo", ":", "x"), "T, η, clip"),
    _tuned("bas-tuned", "BoostedAdaSSP (tuned privately)", Style("mediumorchid", "-.", "<"), "T"),
    _tuned("adassp-tuned", "AdaSSP (tuned privately)", Style("steelblue", "-", "8"), "ρ"),
    _tuned(
        "dpk-bas-tuned",
        "DPKendall + BoostedAdaSSP (tuned privately)",
        Style("darkslateblue", "-.", ">"),
        "k",
    ),
]
