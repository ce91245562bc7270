"""The end-to-end audit layer: the real fit path on neighbouring datasets at the bounds.

What runs
---------
For a private algorithm of the registry, the neighbouring datasets ``D``
and ``D'`` are built as rows and go through the functions the sweep calls:
:meth:`~dpreg.preprocess.stats.SuffStats.from_arrays` (with its bound check) and
:meth:`Algorithm.fit <dpreg.algorithms.Algorithm.fit>` with ``capture=True``,
so what is audited is what the fit releases -- the noisy values it
actually went on to use (``FitResult.released``), whatever draws, scales
and layouts produced them.  For a private-stats variant the rows also go
through the private pre-processing the sweep calls
(:func:`~dpreg.preprocess.raw_fold_moments` with declared public ranges,
:func:`~dpreg.preprocess.private_stat_releases`,
:func:`~dpreg.preprocess.private_fold_data_runs` (the sweep's path), whose noisy statistics are
observed as well), and the algorithm's fit function runs on the resulting
statistics with the remaining budget
(:func:`~dpreg.preprocess.algorithm_budget`), exactly as the sweep calls it
there (releases computed once per fold and epsilon, ``capture=True``).

Neighbouring datasets
---------------------
``D`` holds ``e_2 .. e_d`` twice each (targets in ``[-1, 1]``); ``D'`` adds
one row at the bounds, ``y = 1`` and ``x = e_1`` (moves ``X^T X``,
``X^T y`` and ``lambda_min`` at their full sensitivities at once) or, for
an algorithm with a Laplace release, ``x = (1, .., 1)/sqrt(d)`` (attains
the functional mechanism's L1 sensitivity).  Under replace-one
neighbouring the last row of ``D`` is replaced instead.  An algorithm that
refuses so small a ``D`` (e.g. too few rows for its subsampled models, in its
fit or in its release list) is audited on a fixed dataset of ``2000 d`` rows
inside the bounds instead.  For private
pre-processing the declared public ranges are ``[-1, 1]`` for every column
and for ``y``, and the added row is the corner ``(1, .., 1)``, ``y = 1``,
which moves the column sums, sums of squares and the y sum at their full
sensitivities.  Some algorithms get further pairs, built to take branches
this pair never reaches (``pair=...``; :mod:`dpreg.audit.pairs`).

Test statistic
--------------
Nothing about the output's law is assumed.  A quarter of the draws of each
hypothesis (the *fitting* part) estimates, per released coordinate, the
means under ``D`` and ``D'`` and the pooled variance; exact duplicate
coordinates (mirrored triangles) are dropped, and a NaN becomes 0 plus an
indicator coordinate (for the coordinates NaN in some fitting draw of either
dataset; the same coordinates for every draw the statistic sees).  The statistic is the sum over releases of

* Gaussian or unknown releases: ``sum_j Delta_j (o_j - (m0_j + m1_j)/2) / v_j``
  (the log-likelihood ratio of independent Gaussian coordinates; with no
  noise at all ``v_j`` hits a tiny floor and the statistic separates the
  datasets perfectly);
* Laplace releases: ``sum_j (|o_j - m0_j| - |o_j - m1_j|) / b_j`` with
  ``b_j`` the pooled mean absolute deviation.

The remaining draws go to :func:`~dpreg.audit.bounds.distinguishing_test`
(half choose the test set, half evaluate it), so the fitted weights never
see the draws the bound is computed on and the Clopper-Pearson bound is
valid whatever the statistic.

Power
-----
Each record carries ``ceiling``, ``tightness`` and ``power``
(:func:`dpreg.audit.bounds.power_of`, at the number of draws the
distinguishing test sees; the ceiling is the Gaussian-DP profile's when every
release is Gaussian).

Claims and exact epsilon
------------------------
The claim is the run's total ``(epsilon, delta)`` (``delta = 0`` when every
release is Laplace); ``exact_epsilon`` is
:func:`dpreg.privacy.mechanisms.compose` over the ledger's releases of the run
(pre-processing releases included).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpreg._validation import DPRegError, check_positive_int
from dpreg.algorithms import ALGORITHMS
from dpreg.audit.bounds import ALPHA, distinguishing_test, judge, power_of, round_llr
from dpreg.audit.model import DEFAULT_D, PRIVATE_ALGORITHMS, base_rows, label_of
from dpreg.audit.pairs import PAIRS, candidate_pairs, neighbouring_rows
from dpreg.preprocess import (
    ArraySource,
    PublicRanges,
    VariantSpec,
    algorithm_budget,
    private_fold_data_runs,
    private_stat_releases,
    raw_fold_moments,
)
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import seed_sequence

__all__ = ["E2E_SAMPLES", "audit_end_to_end", "neighbouring_rows", "observation_statistic"]

#: Fits per hypothesis of the end-to-end layer (full mode).
E2E_SAMPLES = 200_000
#: Share of the draws that fits the statistic's weights.
FIT_SHARE = 0.25
#: Repeats fitted per call (bounds memory).
_BATCH = 50_000
_VAR_FLOOR = 1e-30


# --------------------------------------------------------------------------
# the statistic
# --------------------------------------------------------------------------
def _flatten(values: np.ndarray, n: int, cols: np.ndarray) -> np.ndarray:
    """Rows of ``values`` as vectors, NaN as 0, plus an indicator of NaN for each
    column in ``cols`` (the same columns for every sample a statistic sees)."""
    arr = np.asarray(values, dtype=float).reshape(n, -1)
    nan = np.isnan(arr)
    if nan.any() or cols.any():
        arr = np.hstack([np.where(nan, 0.0, arr), nan[:, cols].astype(float)])
    return arr


def _nan_columns(*samples: np.ndarray) -> np.ndarray:
    """Columns that are NaN in some draw of any of the fitting samples."""
    return np.logical_or.reduce(
        [np.isnan(np.asarray(v, dtype=float).reshape(len(v), -1)).any(axis=0) for v in samples]
    )


def observation_statistic(
    fit0: Mapping[str, np.ndarray],
    fit1: Mapping[str, np.ndarray],
    families: Mapping[str, str],
):
    """The statistic's weights from the fitting draws; returns ``stat(observed) -> values``.

    ``fit0``/``fit1`` map release name -> fitting draws under ``D``/``D'``;
    ``families`` release name -> ``"laplace"`` or anything else (Gaussian
    form).  See the module docstring.
    """
    parts = []
    for name in fit0:
        cols = _nan_columns(fit0[name], fit1[name])
        a0 = _flatten(fit0[name], len(fit0[name]), cols)
        a1 = _flatten(fit1[name], len(fit1[name]), cols)
        both = np.vstack([a0, a1])
        _, keep = np.unique(both.T, axis=0, return_index=True)
        keep = np.sort(keep)
        a0, a1 = a0[:, keep], a1[:, keep]
        if families.get(name) == "laplace":
            m0, m1 = np.median(a0, axis=0), np.median(a1, axis=0)
            b = 0.5 * (np.mean(np.abs(a0 - m0), axis=0) + np.mean(np.abs(a1 - m1), axis=0))
            b = np.maximum(b, _VAR_FLOOR)
            parts.append(("laplace", cols, keep, m0, m1, b))
        else:
            m0, m1 = a0.mean(axis=0), a1.mean(axis=0)
            v = 0.5 * (a0.var(axis=0) + a1.var(axis=0))
            v = np.maximum(v, _VAR_FLOOR)
            parts.append(("gaussian", cols, keep, m0, m1, v))

    def stat(observed: Mapping[str, np.ndarray]) -> np.ndarray:
        total = None
        for name, (fam, cols, keep, m0, m1, s) in zip(fit0, parts, strict=True):
            o = _flatten(observed[name], len(observed[name]), cols)[:, keep]
            if fam == "laplace":
                val = np.sum((np.abs(o - m0) - np.abs(o - m1)) / s, axis=1)
            else:
                val = (o - 0.5 * (m0 + m1)) @ ((m1 - m0) / s)
            total = val if total is None else total + val
        assert total is not None
        return round_llr(total)

    return stat


# --------------------------------------------------------------------------
# the real fit path
# --------------------------------------------------------------------------
def _regression_draws(
    alg, stats: SuffStats, rows, *, epsilon: float, delta: float, rng, n: int, rho: float
) -> dict[str, np.ndarray]:
    """``n`` captured releases of ``alg`` on ``stats`` (in batches, one generator)."""
    out: dict[str, list[np.ndarray]] = {}
    done = 0
    while done < n:
        size = min(_BATCH, n - done)
        res = alg.fit(
            stats,
            epsilon=epsilon,
            delta=delta,
            rng=rng,
            size=size,
            rho=rho,
            rows=rows if alg.needs_rows else None,
            capture=True,
            # the sweep's path: an epsilon-free step (TukeyEM's partition) from a
            # shared seed, a fresh one per batch so that every draw is independent
            shared_seed=np.random.SeedSequence(int(rng.integers(2**63)))
            if alg.epsilon_free_step
            else None,
        )
        if res.released is None:
            raise DPRegError(f"{alg.name}: fit(capture=True) recorded no released values")
        for k, v in res.released.items():
            out.setdefault(k, []).append(np.asarray(v))
        done += size
    return {k: np.concatenate(v) for k, v in out.items()}


def _regression_pair(alg, *, d, epsilon, delta, samples, rho, seeds, pair="bounds"):
    """Captured releases on ``D`` and ``D'``: the pair ``pair``, or for ``bounds`` the
    small dataset, or the bigger one when the algorithm refuses the small one (e.g.
    too few rows for its models)."""
    last: DPRegError | None = None
    for (X0, y0), (X1, y1) in candidate_pairs(
        alg, d=d, epsilon=epsilon, delta=delta, rho=rho, pair=pair
    ):
        st0, st1 = SuffStats.from_arrays(X0, y0), SuffStats.from_arrays(X1, y1)
        kw = {"epsilon": epsilon, "delta": delta, "n": samples, "rho": rho}
        try:
            # inside: a release list may depend on the public n (tukey-em-tuned's grid)
            releases = alg.releases(epsilon=epsilon, delta=delta, d=d, rho=rho, n=X0.shape[0])
            out0 = _regression_draws(alg, st0, (X0, y0), rng=np.random.default_rng(seeds[0]), **kw)
            out1 = _regression_draws(alg, st1, (X1, y1), rng=np.random.default_rng(seeds[1]), **kw)
        except DPRegError as err:
            last = err
            continue
        added = X1[-1]
        # the fit-versus-release check on D: what the fit draws against its releases
        mismatches = drawcheck.draw_check(
            alg,
            st0,
            epsilon=epsilon,
            delta=delta,
            rng=np.random.default_rng(seeds[0]),
            rows=(X0, y0),
            size=2,
        )
        return out0, out1, releases, added, mismatches
    assert last is not None
    raise last


_RANGES = {"lo": -1.0, "hi": 1.0}


def _audit_ranges(d: int) -> PublicRanges:
    return PublicRanges(
        np.full(d, _RANGES["lo"]),
        np.full(d, _RANGES["hi"]),
        _RANGES["lo"],
        _RANGES["hi"],
        "audit datasets: every column and y declared in [-1, 1]",
    )


def _private_stats_draws(
    alg,
    spec: VariantSpec,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    seed: np.random.SeedSequence,
    n: int,
    rho: float,
) -> tuple[dict[str, np.ndarray], list[Release]]:
    """``n`` runs of private pre-processing + ``alg``, as the sweep runs them.

    Fold 0 holds the training rows; fold 1 one fixed test row (the test
    statistics are never released).  As in the sweep, the statistics of the
    runs are drawn in turn from one generator and the algorithm's noise from
    another, and the algorithm's releases are computed once from the first
    run's statistics (every run has the same ``n``, ``d`` and bounds) and
    handed to its fit function with ``capture=True``.
    """
    d = X.shape[1]
    Xa = np.vstack([X, np.zeros((1, d))])
    ya = np.append(y, 0.0)
    fold = np.append(np.zeros(X.shape[0], dtype=np.int64), 1)
    ranges, moms = raw_fold_moments(ArraySource(Xa, ya, fold), 2, ranges=_audit_ranges(d))
    train, test = moms[0], moms[1]
    e_alg, d_alg = algorithm_budget(spec, epsilon=epsilon, delta=delta)
    stat_rel = private_stat_releases(ranges, epsilon=epsilon - e_alg, delta=delta - d_alg)
    g_stats, g_alg = (np.random.default_rng(c) for c in seed.spawn(2))
    # the sweep's own path: the n runs drawn in one call, run after run
    fds = private_fold_data_runs(
        spec, ranges, train, test, (0.0, 1.0), stat_rel, fold=1, rng=g_stats, size=n
    )
    st = fds[0].train
    alg_rel = alg.releases_for(st, epsilon=e_alg, delta=d_alg, rho=rho)
    # the sweep's own fit path for private-stats runs
    res = alg.fit_runs(
        [fd.train for fd in fds], epsilon=e_alg, delta=d_alg, rng=g_alg, rho=rho, capture=True
    )
    if res.released is None or any(fd.released is None for fd in fds):
        raise DPRegError(f"{alg.name}: the private-stats run recorded no released values")
    out: dict[str, list[np.ndarray]] = {}
    for fd in fds:
        for k, v in fd.released.items():  # type: ignore[union-attr]
            out.setdefault("stats:" + k, []).append(np.atleast_1d(np.asarray(v))[None, ...])
    for k, v in res.released.items():
        out[k] = [v]
    return {k: np.concatenate(v) for k, v in out.items()}, [*stat_rel, *alg_rel]


# --------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------
def audit_end_to_end(
    name: str,
    *,
    epsilon: float,
    delta: float,
    samples: int = E2E_SAMPLES,
    seed: int = 0,
    d: int = DEFAULT_D,
    private_stats: float | None = None,
    rho: float = 0.05,
    alpha: float = ALPHA,
    pair: str = "bounds",
) -> dict[str, Any]:
    """Audit one private algorithm (optionally behind private pre-processing) end to end.

    Parameters
    ----------
    name : str
        A private algorithm of :data:`dpreg.algorithms.ALGORITHMS`.
    epsilon, delta : float
        The run's total budget; the claim audited.
    samples : int
        Runs per hypothesis (a quarter fit the statistic, the rest go to
        the distinguishing test).
    seed : int
        Root seed; the record is a deterministic function of the arguments.
    d : int
        Dimension of the neighbouring datasets.
    private_stats : float or None
        ``epsilon_share`` of a private-stats variant (``maxnorm``, training
        statistics); None audits the algorithm on the rows directly.
    rho : float
        AdaSSP's failure probability.
    alpha : float
        Error probability of the lower bound.
    pair : str
        ``bounds`` (the pair described above) or a pair of
        :data:`dpreg.audit.pairs.PAIRS` for ``name`` (on the rows directly).

    Returns
    -------
    dict
        ``layer: "end-to-end"``, ``name``, ``variant``, ``label``,
        ``claimed_epsilon``, ``delta``, ``empirical_epsilon_lb``,
        ``exact_epsilon``, ``n_samples``, the three failure flags and
        ``verdict`` (see :func:`dpreg.audit.cli.failures`), plus the test
        set and the releases observed.
    """
    if name not in ALGORITHMS or not ALGORITHMS[name].private:
        raise DPRegError(
            f"unknown end-to-end audit target {name!r}; allowed: {', '.join(PRIVATE_ALGORITHMS)}"
        )
    if pair != "bounds" and (pair not in PAIRS.get(name, {}) or private_stats is not None):
        allowed = ", ".join(["bounds", *PAIRS.get(name, {})])
        raise DPRegError(
            f"pair {pair!r} is not an end-to-end pair of {name!r}"
            + (" behind private pre-processing" if private_stats is not None else "")
            + f"; allowed: {'bounds' if private_stats is not None else allowed}"
        )
    samples = check_positive_int(samples, "samples", minimum=40)
    d = check_positive_int(d, "d", minimum=2)
    alg = ALGORITHMS[name]
    t0 = time.perf_counter()
    variant = None if private_stats is None else f"private-stats-{private_stats:g}"
    if pair != "bounds":
        variant = f"pair:{pair}"
    ss = seed_sequence(seed, "audit-e2e", name, float(epsilon), float(delta), d, variant or "-")
    s0, s1 = ss.spawn(2)
    if private_stats is None:
        out0, out1, releases, added, mismatches = _regression_pair(
            alg,
            d=d,
            epsilon=epsilon,
            delta=delta,
            samples=samples,
            rho=rho,
            seeds=(s0, s1),
            pair=pair,
        )
    else:
        spec = VariantSpec.from_dict(
            {
                "stats": "train",
                "scale": "maxnorm",
                "private_stats": {"epsilon_share": private_stats},
            }
        )
        X0, y0 = base_rows(d)
        X1, y1 = np.vstack([X0, np.ones(d)]), np.append(y0, 1.0)
        kw: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "n": samples, "rho": rho}
        out0, releases = _private_stats_draws(alg, spec, X0, y0, seed=s0, **kw)
        out1, _ = _private_stats_draws(alg, spec, X1, y1, seed=s1, **kw)
        added = X1[-1]
        mismatches = None  # the private-statistics path draws through the pre-processing
    families = {r.name: r.mechanism for r in releases}
    families.update({"stats:" + r.name: r.mechanism for r in releases})
    k = max(int(FIT_SHARE * samples), 10)
    stat = observation_statistic(
        {n: v[:k] for n, v in out0.items()}, {n: v[:k] for n, v in out1.items()}, families
    )
    llr0 = stat({n: v[k:] for n, v in out0.items()})
    llr1 = stat({n: v[k:] for n, v in out1.items()})
    claimed_delta = 0.0 if all(r.mechanism == "laplace" for r in releases) else float(delta)
    test = distinguishing_test(llr0, llr1, delta=claimed_delta, alpha=alpha)
    total = mech.compose(releases, delta=float(delta)) if releases else None
    exact = (
        None if total is None or total["exact_epsilon"] is None else float(total["exact_epsilon"])
    )
    private = [r for r in releases if r.mechanism != "none"]
    gaussian = bool(private) and all(r.mechanism == "gaussian" for r in private)
    mu = None if total is None or not gaussian else total["gdp_mu"]
    power = power_of(
        test["epsilon_lb"],
        float(epsilon),
        test["n_selection"] + test["n_evaluation"],
        delta=claimed_delta,
        mu=None if mu is None else float(mu),  # type: ignore[arg-type]
        alpha=alpha,
    )
    return {
        "layer": "end-to-end",
        "name": name,
        "variant": variant,
        "label": label_of(name, releases),
        "kind": "algorithm",
        "claimed_epsilon": float(epsilon),
        "delta": claimed_delta,
        "empirical_epsilon_lb": test["epsilon_lb"],
        "exact_epsilon": exact,
        **judge(test["epsilon_lb"], exact, float(epsilon)),
        **power,
        "n_samples": int(samples),
        "seed": seed,
        "d": d,
        "observed": sorted(out0),
        "releases": [r.as_dict() for r in releases],
        "pair": {"name": pair, "added_x": [float(v) for v in added], "added_y": 1.0},
        # dpreg.privacy.drawcheck: [] when the fit draws exactly what its releases declare
        "draw_check": mismatches,
        "test": test,
        "seconds": round(time.perf_counter() - t0, 3),
    }
