"""Empirical privacy audit of the mechanisms and private algorithms.

``python -m dpreg.audit`` (console script ``dpreg-audit``) computes, for every
raw mechanism and every private algorithm, a statistically valid *lower*
bound on the epsilon it really has at its claimed delta, and compares it
with the claim.  A lower bound above the claim is a proven violation (at
confidence ``1 - 1e-3``); a lower bound below the claim is consistent with
the claim but does not prove it (an audit can only refute).

What is audited
---------------
The privacy argument of every algorithm goes through its list of releases
(:meth:`dpreg.algorithms.Algorithm.releases`): ``lambda_min``, ``X^T X``,
``X^T y`` (Gaussian) or the functional mechanism's objective coefficients
(Laplace).  The coefficients ``theta`` are post-processing of those releases,
so the audit observes the releases themselves -- the strongest view, and the
one the claim is made about.  The releases are simulated with the very draw
functions the algorithm uses (:func:`~dpreg.mechanisms.symmetric_noise`,
:func:`~dpreg.mechanisms.wang_symmetric_noise`,
:func:`~dpreg.mechanisms.full_noise`, :func:`~dpreg.mechanisms.vector_noise`,
:func:`~dpreg.mechanisms.laplace_noise`), spawned from the generator in the
same order as :meth:`Algorithm.fit` does, so with equal seeds the audit
draws exactly the noise the algorithm adds (``tests/test_audit.py`` rebuilds
``fit``'s coefficients from :func:`simulate_releases` to check this).

Neighbouring datasets
---------------------
``D`` holds each of ``e_2 .. e_d`` twice as rows (``d = 3`` by default, so
``X^T X = diag(0, 2, .., 2)``); ``D' = D`` plus one row at the bound,
``||x|| = B_X = 1``, ``y = B_Y = 1``.  The added row is the candidate (``e_1``
or ``(1, .., 1)/sqrt(d)``) with the largest privacy-loss bound for the
algorithm: ``e_1`` moves ``X^T X`` by ``e_1 e_1^T`` (Frobenius norm ``B_X^2``),
``X^T y`` by ``e_1`` and ``lambda_min`` by exactly ``B_X^2``, so every Gaussian
release is hit at its full sensitivity at once; ``(1, .., 1)/sqrt(d)`` attains
the functional mechanism's L1 sensitivity ``d B_X^2 + 2 sqrt(d) B_X B_Y``.
Every output line reports whether the pair attains each release's sensitivity.

Test statistic and composition
------------------------------
The optimal (Neyman-Pearson) test between ``D`` and ``D'`` thresholds the
log-likelihood ratio of the whole output.  Releases are independent, so it
is the sum of per-release log-likelihood ratios:

* Gaussian release, observed coordinates ``o`` with mean ``m`` under ``D``,
  ``m + Delta`` under ``D'``, independent coordinates of variance ``v``:
  ``LLR = sum Delta (o - m) / v - 1/2 sum Delta^2 / v``, i.e. the projection of
  the noise on the sensitivity direction, weighted by the per-entry noise
  variances.  A symmetric matrix is observed through its upper triangle
  (diagonal included; the lower triangle is an exact mirror, which the audit
  checks): variance ``sigma^2`` everywhere for ``symmetric_noise``, ``sigma^2``
  on the diagonal and ``sigma^2 / 2`` off it for ``wang_symmetric_noise``; a
  full non-symmetric matrix (``full_noise``) is observed through all ``d^2``
  entries.
* Laplace coordinates with scale ``b``: ``LLR = sum (|o - m| - |o - m'|) / b``.

Summing the per-release statistics means the audit tests the algorithm's
whole ``(epsilon, delta)`` claim, not one release at a time
(:func:`audit_release` audits a single release against its own share).

Two ways to draw the statistic (the output's ``method`` says which was used)
-----------------------------------------------------------------------------
* ``direct``: draw the full noisy releases with the project's draw functions
  on ``D`` and on ``D'`` and compute the LLR from them.
* ``shortcut`` (the big sample): each release's LLR drawn from its exact law
  under the independent-coordinate model above.  For a Gaussian release it is
  ``N(-mu^2/2, mu^2)`` under ``D`` and ``N(mu^2/2, mu^2)`` under ``D'`` with
  ``mu^2 = sum Delta^2 / v`` -- one scalar per release instead of a matrix.
  For a Laplace release it is a sum over the coordinates with
  ``Delta != 0`` of ``(|e| - |e - Delta|) / b`` (``D``) or ``(|e + Delta| - |e|) / b``
  (``D'``), ``e`` drawn by :func:`~dpreg.mechanisms.laplace_noise`.
  The shortcut is used only after a *verification sample*
  (``check_samples`` direct draws per hypothesis, default 20,000) confirms
  the model: per-coordinate noise means and variances, pairwise
  correlations, exact mirroring of symmetric draws, and a
  Kolmogorov-Smirnov test of the direct per-release LLR against the
  shortcut's law under both hypotheses.  If any check fails the big sample
  is drawn directly instead (``shortcut_verified: false``, ``method: direct``).

The LLR is rounded to 9 decimals before thresholding: the last bits of a
floating-point release depend on which mean the noise was added to
(Mironov 2012), and a threshold placed between a few ulps of an LLR atom
would measure that side channel rather than the noise calibration.

Lower bound
-----------
For a test set ``S`` (``LLR >= t`` or ``LLR <= t``), ``(epsilon, delta)``-DP
requires ``P_D'(S) <= e^epsilon P_D(S) + delta`` (and the same with ``D``, ``D'``
swapped), so ``epsilon >= ln((P_D'(S) - delta) / P_D(S))``.  The audit puts
one-sided Clopper-Pearson bounds on both probabilities, each at level
``alpha / 2`` (union bound, overall confidence ``1 - alpha``, ``alpha = 1e-3``):
``epsilon_lb = ln((P1_lower - delta) / P0_upper)``.  The threshold and the
direction are chosen on the first half of the samples (scored with the same
formula over a grid of tail quantiles); the bound is computed once, on the
second half, so no Bonferroni correction is needed for the thresholds tried
on the first half.  A bound below zero is reported as 0 (``epsilon >= 0``
always holds).

Each line also carries ``exact_epsilon``: the exact epsilon at the claimed
delta of the audited releases from the Gaussian-DP accounting
(:func:`dpreg.mechanisms.compose`; for Laplace releases the sum of
``sensitivity / b``).  For a correct algorithm
``empirical_epsilon_lb <= exact_epsilon <= claimed_epsilon``.

Power (what the audit can and cannot see)
-----------------------------------------
An empirical bound is limited by the sample size: at delta = 1e-6 with
10^7 samples per hypothesis a Gaussian release with ``mu`` gives a bound of
roughly ``3 mu`` (about 0.7 for ``mu = 0.237``, the exact ``(1, 1e-6)``
budget).  So violations of a few tens of percent in epsilon at small epsilon
are beyond its reach; the ``exact_epsilon`` field covers those analytically.

Output
------
One JSON object per (target, epsilon): ``name``, ``label`` (``private``, or
``reproduction`` for ``ssp-wang`` and ``adassp-wang``, Wang's published
scales, which are audited and reported but do not decide the exit status),
``kind`` (``mechanism`` or ``algorithm``), ``claimed_epsilon``, ``delta`` (the
claimed delta; 0 for the pure-DP Laplace targets), ``empirical_epsilon_lb``,
``exact_epsilon``, ``exact_exceeds_claim``, ``n_samples`` (per hypothesis),
``verdict`` (``violation`` iff the lower bound exceeds the claim, else
``ok``), ``method``, ``noise_factor`` and ``seed``; ``--full`` adds the test set,
the per-release sensitivities and scales, the neighbouring pair and the
verification checks.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv
from scipy.stats import ks_2samp, kstest, norm

from dpreg import mechanisms as mech
from dpreg._validation import (
    DPRegError,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_int,
)
from dpreg.algorithms import ALGORITHMS, draw_noise
from dpreg.mechanisms import Release
from dpreg.seeding import seed_sequence
from dpreg.stats import SuffStats

__all__ = [
    "ALPHA",
    "AUDITED",
    "CHECK_SAMPLES",
    "DEFAULT_SAMPLES",
    "MECHANISMS",
    "audit_algorithm",
    "audit_release",
    "clopper_pearson",
    "distinguishing_test",
    "epsilon_lower_bound",
    "main",
    "neighbouring_pair",
    "simulate_releases",
]

#: Overall error probability of one lower bound (confidence 1 - ALPHA).
ALPHA = 1e-3
#: Draws of the test statistic per hypothesis (half select, half evaluate).
DEFAULT_SAMPLES = 10_000_000
#: Direct draws per hypothesis that verify the scalar shortcut.
CHECK_SAMPLES = 20_000
#: Dimension of the audit datasets.
DEFAULT_D = 3
#: Raw mechanisms audited on their own (one release of ``X^T y``, sensitivity 1).
MECHANISMS = ("gaussian-classical", "gaussian-analytic", "laplace")
#: Private algorithms of the registry, in registry order.
PRIVATE_ALGORITHMS = tuple(name for name, alg in ALGORITHMS.items() if alg.private)
#: Everything the CLI audits by default.
AUDITED = MECHANISMS + PRIVATE_ALGORITHMS

_CHUNK = 1 << 20
_N_CANDIDATES = 400
#: Family-wise error of the shortcut verification checks of one audit.
_CHECK_ALPHA = 1e-4
#: Decimals the log-likelihood ratio is rounded to (see :func:`_round_llr`).
_LLR_DECIMALS = 9

# draw function of the X^T X release of each Gaussian algorithm (as in algorithms.py)
_MATRIX_DRAW = {
    "ssp-wang": "full",
    "ssp": "symmetric",
    "ssp-gdp": "symmetric",
    "adassp-wang": "wang_symmetric",
    "adassp": "symmetric",
    "adassp-analytic": "symmetric",
    "adassp-gdp": "symmetric",
}


# --------------------------------------------------------------------------
# release blocks: one independent group of noisy coordinates
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """One independently drawn part of a release.

    Attributes
    ----------
    release : str
        Name of the :class:`~dpreg.mechanisms.Release` it belongs to.
    family : str
        ``"gaussian"`` or ``"laplace"``.
    draw : str
        ``symmetric``, ``wang_symmetric``, ``full`` (``X^T X``), ``vector``
        (``X^T y``), ``scalar`` (``lambda_min``), ``functional-quadratic``,
        ``functional-linear`` (the functional mechanism's two noise draws) or
        ``laplace-vector`` (the raw Laplace mechanism on ``X^T y``).
    d : int
        Dimension.
    scale : float
        Gaussian ``sigma`` or Laplace ``b`` actually used (after any noise factor).
    """

    release: str
    family: str
    draw: str
    d: int
    scale: float

    @property
    def _matrix(self) -> bool:
        return self.draw in ("symmetric", "wang_symmetric", "full", "functional-quadratic")

    def statistic(self, stats: SuffStats) -> np.ndarray:
        """The exact (noise-free) released quantity, in the algorithm's layout."""
        if self._matrix:
            return stats.xtx
        if self.draw == "scalar":
            return np.array(stats.lambda_min())
        return stats.xty

    def noise(self, *, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` noise draws in the algorithm's layout, with the project's draw functions."""
        d, s = self.d, self.scale
        if self.draw == "symmetric":
            return mech.symmetric_noise(d, scale=s, rng=rng, size=size)
        if self.draw == "wang_symmetric":
            return mech.wang_symmetric_noise(d, scale=s, rng=rng, size=size)
        if self.draw == "full":
            return mech.full_noise(d, scale=s, rng=rng, size=size)
        if self.draw == "vector":
            return mech.vector_noise(d, scale=s, rng=rng, size=size)
        if self.draw == "scalar":
            # algorithms.py: sigma_l * rng.standard_normal(size) -- the same stream
            return mech.vector_noise(1, scale=s, rng=rng, size=size)[:, 0]
        if self.draw == "functional-quadratic":
            iu = np.triu_indices(d)
            z = mech.laplace_noise((size, iu[0].size), scale=s, rng=rng)
            z[:, iu[0] != iu[1]] *= 0.5  # noise on the coefficient 2 M_jl
            out = np.empty((size, d, d))
            out[:, iu[0], iu[1]] = z
            out[:, iu[1], iu[0]] = z
            return out
        if self.draw == "functional-linear":
            return 0.5 * mech.laplace_noise((size, d), scale=s, rng=rng)
        if self.draw == "laplace-vector":
            return mech.laplace_noise((size, d), scale=s, rng=rng)
        raise DPRegError(f"unknown draw {self.draw!r}")  # pragma: no cover

    def observe(self, values: np.ndarray) -> np.ndarray:
        """Observed coordinates ``(size, m)`` of releases in the algorithm's layout.

        Symmetric matrices: the upper triangle (the rest is a mirror); a
        full matrix: all ``d^2`` entries; vectors and scalars as they are.
        """
        if self.draw == "full":
            return values.reshape(values.shape[0], -1)
        if self._matrix:
            iu = np.triu_indices(self.d)
            return values[:, iu[0], iu[1]]
        if self.draw == "scalar":
            return values[:, None]
        return values

    def coordinate_scales(self) -> np.ndarray:
        """Per observed coordinate: the noise sd (Gaussian) or Laplace ``b``."""
        s = self.scale
        if self.draw == "full":
            return np.full(self.d * self.d, s)
        if self._matrix:
            iu = np.triu_indices(self.d)
            off = iu[0] != iu[1]
            if self.draw == "wang_symmetric":
                return np.where(off, s / math.sqrt(2.0), s)
            if self.draw == "functional-quadratic":
                return np.where(off, s / 2.0, s)
            return np.full(iu[0].size, s)
        if self.draw == "scalar":
            return np.array([s])
        if self.draw == "functional-linear":
            return np.full(self.d, s / 2.0)
        return np.full(self.d, s)

    def mean(self, stats: SuffStats) -> np.ndarray:
        return self.observe(np.asarray(self.statistic(stats))[None, ...])[0]


def _blocks_for(name: str, releases: list[Release], *, d: int, noise_factor: float) -> list[Block]:
    """The noise blocks of a target, in the order its ``fit`` spawns generators."""
    out = []
    for r in releases:
        scale = r.scale * noise_factor
        if r.name == "lambda_min":
            out.append(Block(r.name, "gaussian", "scalar", d, scale))
        elif r.name == "XtX":
            if name not in _MATRIX_DRAW:  # pragma: no cover - new algorithms must be mapped
                raise DPRegError(f"the audit does not know which draw {name!r} uses for XtX")
            out.append(Block(r.name, "gaussian", _MATRIX_DRAW[name], d, scale))
        elif r.name == "Xty":
            out.append(Block(r.name, "gaussian", "vector", d, scale))
        elif r.name == "objective_coefficients":
            out.append(Block(r.name, "laplace", "functional-quadratic", d, scale))
            out.append(Block(r.name, "laplace", "functional-linear", d, scale))
        elif r.name == "query" and r.mechanism == "gaussian":
            out.append(Block(r.name, "gaussian", "vector", d, scale))
        elif r.name == "query" and r.mechanism == "laplace":
            out.append(Block(r.name, "laplace", "laplace-vector", d, scale))
        else:  # pragma: no cover - a new release kind must be taught to the audit
            raise DPRegError(f"the audit does not know how {name!r} draws release {r.name!r}")
    return out


def _mechanism_releases(name: str, *, epsilon: float, delta: float, d: int) -> list[Release]:
    if name == "gaussian-classical":
        sigma = mech.classical_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
        valid = mech.classical_valid(epsilon)
        return [Release("query", "gaussian", 1.0, sigma, epsilon, delta, "classical", valid)]
    if name == "gaussian-analytic":
        sigma = mech.analytic_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
        return [Release("query", "gaussian", 1.0, sigma, epsilon, delta, "analytic", True)]
    # Laplace on X^T y: L1 sensitivity of x y is ||x||_1 |y| <= sqrt(d) B_X B_Y
    sens = math.sqrt(d)
    return [Release("query", "laplace", sens, sens / epsilon, epsilon, 0.0, "laplace", True)]


def _claimed_releases(name: str, *, epsilon: float, delta: float, d: int) -> list[Release]:
    check_choice(name, "audit target", AUDITED)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if name in MECHANISMS:
        return _mechanism_releases(name, epsilon=eps, delta=dlt, d=d)
    return ALGORITHMS[name].releases(epsilon=eps, delta=dlt, d=d)


# --------------------------------------------------------------------------
# neighbouring datasets
# --------------------------------------------------------------------------
def _base_rows(d: int) -> tuple[np.ndarray, np.ndarray]:
    rows = [np.eye(d)[j] for j in range(1, d) for _ in range(2)]
    X = np.array(rows) if rows else np.zeros((0, d))
    y = np.resize(np.array([0.5, -0.5, 0.25, 1.0]), X.shape[0])
    return X, y


def _candidate_rows(d: int) -> list[np.ndarray]:
    return [np.eye(d)[0], np.full(d, 1.0 / math.sqrt(d))]


def _block_delta(block: Block, s0: SuffStats, s1: SuffStats) -> np.ndarray:
    return block.mean(s1) - block.mean(s0)


def _loss_bound(block: Block, delta_obs: np.ndarray) -> float:
    """``mu^2`` (Gaussian) or ``sum |Delta| / b`` (Laplace) of one block for a pair."""
    sc = block.coordinate_scales()
    if block.family == "gaussian":
        return float(np.sum((delta_obs / sc) ** 2))
    return float(np.sum(np.abs(delta_obs) / sc))


def neighbouring_pair(
    blocks: list[Block], *, d: int
) -> tuple[SuffStats, SuffStats, np.ndarray, float]:
    """``(stats(D), stats(D'), x, y)``: ``D'`` adds the row ``(x, y = 1)`` to ``D``.

    Among the candidate rows (``e_1`` and ``(1, .., 1)/sqrt(d)``, both of norm
    ``B_X = 1``) the one with the largest privacy-loss bound for ``blocks`` is
    chosen (Gaussian: total ``mu^2``; Laplace: total ``sum |Delta| / b``).
    The rows pass :meth:`SuffStats.from_arrays`' bound check.
    """
    X, y = _base_rows(d)
    s0 = SuffStats.from_arrays(X, y)
    best = None
    for x in _candidate_rows(d):
        s1 = SuffStats.from_arrays(np.vstack([X, x]), np.append(y, 1.0))
        score = sum(_loss_bound(b, _block_delta(b, s0, s1)) for b in blocks)
        if best is None or score > best[0] * (1 + 1e-12):
            best = (score, s1, x)
    assert best is not None
    return s0, best[1], best[2], 1.0


def simulate_releases(
    name: str,
    stats: SuffStats,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    size: int,
    noise_factor: float = 1.0,
) -> list[np.ndarray]:
    """The noisy releases of ``name`` on ``stats``, one array per noise block.

    For a registered algorithm the noise comes from
    :func:`dpreg.algorithms.draw_noise`, the very function
    :meth:`Algorithm.fit` draws with (one block per repeat: ``lambda_min``,
    ``X^T X``, ``X^T y``; the functional mechanism's quadratic then linear
    coefficients), so the same generator state gives exactly the noise
    ``fit`` adds.  Raw mechanisms draw each block from ``rng.spawn(k)``.
    Matrices are ``(size, d, d)`` without ``xtx_offset``; ``lambda_min`` is
    of ``X^T X``.
    """
    size = check_positive_int(size, "size")
    rel = _claimed_releases(name, epsilon=epsilon, delta=delta, d=stats.d)
    blocks = _blocks_for(name, rel, d=stats.d, noise_factor=noise_factor)
    if name in ALGORITHMS:
        scaled = [dataclasses.replace(r, scale=r.scale * noise_factor) for r in rel]
        kinds = ALGORITHMS[name].noise_kinds
        if kinds:
            noise = draw_noise(kinds, scaled, stats.d, rng=rng, size=size)
        else:  # the functional mechanism: Laplace noise on the objective
            noise = list(
                mech.objective_laplace_noise(stats.d, scale=scaled[0].scale, rng=rng, size=size)
            )
        return [b.statistic(stats) + n for b, n in zip(blocks, noise, strict=True)]
    gens = rng.spawn(len(blocks))
    return [
        b.statistic(stats) + b.noise(rng=g, size=size) for b, g in zip(blocks, gens, strict=True)
    ]


# --------------------------------------------------------------------------
# log-likelihood ratio statistics
# --------------------------------------------------------------------------
def _round_llr(llr: np.ndarray) -> np.ndarray:
    """Round to ``_LLR_DECIMALS`` so no test set resolves floating-point last bits.

    The low-order bits of a floating-point noisy release depend on which
    mean it was added to (Mironov 2012); the atoms of a Laplace LLR (e.g. at
    ``-epsilon``) are computed with a few ulps of such spread, and a
    threshold placed between those ulps measures that side channel, not the
    noise calibration this audit is about.
    """
    return np.round(llr, _LLR_DECIMALS)


def _block_llr(block: Block, obs: np.ndarray, m0: np.ndarray, m1: np.ndarray) -> np.ndarray:
    sc = block.coordinate_scales()
    if block.family == "gaussian":
        w = (m1 - m0) / sc**2
        return (obs - m0) @ w - 0.5 * float((m1 - m0) @ w)
    return np.sum((np.abs(obs - m0) - np.abs(obs - m1)) / sc, axis=1)


def _direct_llr(
    blocks: list[Block],
    stats: SuffStats,
    means: list[tuple[np.ndarray, np.ndarray]],
    *,
    seed: np.random.SeedSequence,
    n: int,
) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """LLR of ``n`` full releases drawn on ``stats`` with the project's draw functions.

    Returns the total LLR, the per-block LLRs and the noise of the first
    chunk (for the verification checks).
    """
    total = np.zeros(n)
    per_block = [np.zeros(n) for _ in blocks]
    first_noise: list[np.ndarray] = []
    starts = range(0, n, _CHUNK)
    for c, (start, chunk_seed) in enumerate(zip(starts, seed.spawn(len(starts)), strict=True)):
        size = min(_CHUNK, n - start)
        gens = np.random.default_rng(chunk_seed).spawn(len(blocks))
        for i, (b, g) in enumerate(zip(blocks, gens, strict=True)):
            noise = b.noise(rng=g, size=size)
            obs = b.observe(b.statistic(stats) + noise)
            llr = _block_llr(b, obs, *means[i])
            per_block[i][start : start + size] = llr
            total[start : start + size] += llr
            if c == 0:
                first_noise.append(noise)
    return _round_llr(total), per_block, first_noise


def _shortcut_block(
    block: Block, delta_obs: np.ndarray, *, rng: np.random.Generator, n: int, hypothesis: int
) -> np.ndarray:
    """One block's LLR drawn from its exact law under the independent-coordinate model.

    Gaussian: ``mu Z - mu^2/2`` under ``D`` and ``mu Z + mu^2/2`` under ``D'``
    (``Z ~ N(0, 1)``, ``mu^2 = sum Delta^2 / v``): one scalar per release.
    Laplace: one :func:`~dpreg.mechanisms.laplace_noise` scalar ``e`` per
    coordinate with ``Delta != 0``, ``(|e| - |e - Delta|) / b`` under ``D`` and
    ``(|e + Delta| - |e|) / b`` under ``D'``; coordinates with ``Delta = 0`` add 0.
    """
    out = np.zeros(n)
    sc = block.coordinate_scales()
    if block.family == "gaussian":
        mu = math.sqrt(_loss_bound(block, delta_obs))
        sign = 1.0 if hypothesis == 1 else -1.0
        for start in range(0, n, _CHUNK):
            size = min(_CHUNK, n - start)
            out[start : start + size] = mu * rng.standard_normal(size) + sign * 0.5 * mu * mu
        return out
    for dk, bk in zip(delta_obs, sc, strict=True):
        if dk == 0.0:
            continue
        for start in range(0, n, _CHUNK):
            size = min(_CHUNK, n - start)
            e = mech.laplace_noise((size,), scale=float(bk), rng=rng)
            if hypothesis == 0:
                out[start : start + size] += (np.abs(e) - np.abs(e - dk)) / bk
            else:
                out[start : start + size] += (np.abs(e + dk) - np.abs(e)) / bk
    return out


def _shortcut_llr(
    blocks: list[Block],
    means: list[tuple[np.ndarray, np.ndarray]],
    *,
    seed: np.random.SeedSequence,
    n: int,
    hypothesis: int,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Total (rounded) and per-block shortcut LLRs of ``n`` outputs."""
    gens = np.random.default_rng(seed).spawn(len(blocks))
    per_block = [
        _shortcut_block(b, m1 - m0, rng=g, n=n, hypothesis=hypothesis)
        for b, (m0, m1), g in zip(blocks, means, gens, strict=True)
    ]
    return _round_llr(np.sum(per_block, axis=0)), per_block


def _verify_shortcut(
    blocks: list[Block],
    means: list[tuple[np.ndarray, np.ndarray]],
    s0: SuffStats,
    s1: SuffStats,
    *,
    seeds: Sequence[np.random.SeedSequence],
    n: int,
) -> dict:
    """Direct draws that check the model behind the scalar shortcut.

    For every block, from ``n`` direct draws per hypothesis: each observed
    noise coordinate has mean 0 and the modelled variance (``sigma^2`` or
    ``2 b^2``), observed coordinates are uncorrelated, symmetric draws are
    exact mirrors (so the upper triangle is the whole release), and the
    direct per-block LLR has the shortcut's law under both hypotheses
    (Kolmogorov-Smirnov: against ``N(0, 1)`` after standardising for
    Gaussian blocks, two-sample against ``n`` shortcut draws for Laplace
    blocks).  Tolerances make a correct model fail with probability about
    ``_CHECK_ALPHA`` in all.
    """
    _, llr0, noise0 = _direct_llr(blocks, s0, means, seed=seeds[0], n=n)
    _, llr1, _ = _direct_llr(blocks, s1, means, seed=seeds[1], n=n)
    n_tests = 6 * len(blocks)  # mean, variance, correlation, mirror, two KS per block
    p_min = _CHECK_ALPHA / n_tests
    z_tol = float(norm.isf(p_min / 2.0))
    out: dict = {"n": n, "blocks": [], "verified": True}
    for i, b in enumerate(blocks):
        m0, m1 = means[i]
        noise = noise0[i]
        k = noise.shape[0]
        obs_noise = b.observe(noise)
        gaussian = b.family == "gaussian"
        sd = b.coordinate_scales() * (1.0 if gaussian else math.sqrt(2.0))
        kurtosis = 3.0 if gaussian else 6.0
        zmean = np.abs(obs_noise.mean(axis=0)) / (sd / math.sqrt(k))
        var_err = np.abs(obs_noise.var(axis=0) / sd**2 - 1.0)
        tol_var = z_tol * math.sqrt((kurtosis - 1.0) / k)
        if obs_noise.shape[1] > 1:
            corr = np.corrcoef(obs_noise, rowvar=False)
            max_corr = float(np.max(np.abs(corr - np.eye(corr.shape[0]))))
        else:
            max_corr = 0.0
        mirror_ok = True
        if noise.ndim == 3 and b.draw != "full":
            mirror_ok = bool(np.array_equal(noise, np.swapaxes(noise, 1, 2)))
        if gaussian:
            mu = math.sqrt(_loss_bound(b, m1 - m0))
            p0 = float(kstest((llr0[i] + 0.5 * mu * mu) / mu, "norm").pvalue)
            p1 = float(kstest((llr1[i] - 0.5 * mu * mu) / mu, "norm").pvalue)
        else:
            ref = np.random.default_rng(seeds[2]).spawn(2)
            r0 = _shortcut_block(b, m1 - m0, rng=ref[0], n=n, hypothesis=0)
            r1 = _shortcut_block(b, m1 - m0, rng=ref[1], n=n, hypothesis=1)
            p0 = float(ks_2samp(_round_llr(llr0[i]), _round_llr(r0)).pvalue)
            p1 = float(ks_2samp(_round_llr(llr1[i]), _round_llr(r1)).pvalue)
        ok = (
            bool(np.all(zmean < z_tol))
            and bool(np.all(var_err < tol_var))
            and max_corr < z_tol / math.sqrt(k)
            and mirror_ok
            and min(p0, p1) >= p_min
        )
        out["blocks"].append(
            {
                "release": b.release,
                "draw": b.draw,
                "max_mean_z": float(zmean.max()),
                "max_variance_rel_error": float(var_err.max()),
                "max_abs_correlation": max_corr,
                "mirror_exact": mirror_ok,
                "ks_pvalue_D": p0,
                "ks_pvalue_D_prime": p1,
                "ok": ok,
            }
        )
        out["verified"] = out["verified"] and ok
    return out


# --------------------------------------------------------------------------
# Clopper-Pearson and the distinguishing test
# --------------------------------------------------------------------------
def clopper_pearson(k, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds ``(lower, upper)`` for ``k`` of ``n``, each at level ``alpha``.

    ``P(p >= lower) >= 1 - alpha`` and ``P(p <= upper) >= 1 - alpha``.
    """
    k = np.asarray(k, dtype=float)
    lower = np.where(k > 0, betaincinv(np.maximum(k, 1.0), n - k + 1.0, alpha), 0.0)
    upper = np.where(k < n, betaincinv(k + 1.0, np.maximum(n - k, 1.0), 1.0 - alpha), 1.0)
    return lower, upper


def epsilon_lower_bound(
    k1, n1: int, k0, n0: int, *, delta: float, alpha: float = ALPHA
) -> np.ndarray:
    """``ln((P1_lower - delta) / P0_upper)`` with one-sided CP bounds at ``alpha / 2`` each.

    ``k1`` of ``n1`` outputs of the "more likely" dataset fell in the test set,
    ``k0`` of ``n0`` of the other.  ``-inf`` where ``P1_lower <= delta``.
    """
    p1, _ = clopper_pearson(k1, n1, alpha / 2.0)
    _, p0 = clopper_pearson(k0, n0, alpha / 2.0)
    num = p1 - delta
    safe = np.where(num > 0, num, 1.0)
    return np.where(num > 0, np.log(safe / p0), -np.inf)


def distinguishing_test(
    llr0: np.ndarray, llr1: np.ndarray, *, delta: float, alpha: float = ALPHA
) -> dict:
    """Empirical epsilon lower bound from LLR samples under ``D`` (``llr0``) and ``D'`` (``llr1``).

    The first half of each sample chooses the test set -- ``LLR >= t``
    (``D'`` more likely) or ``LLR <= t`` (``D`` more likely) with ``t`` on a grid
    of about 400 tail quantiles -- by the same lower-bound formula; the
    second half evaluates that one test set.
    """
    n0, n1 = llr0.size, llr1.size
    h0, h1 = n0 // 2, n1 // 2
    s0 = np.sort(llr0[:h0])
    s1 = np.sort(llr1[:h1])
    best: tuple[float, str, float] = (-np.inf, ">=", math.inf)
    m = np.unique(np.geomspace(5.0, max(h0, h1) / 2.0, _N_CANDIDATES).astype(np.int64))
    # upper tail: thresholds from the D' sample, P_D'(S) against P_D(S)
    t_up = np.unique(s1[np.clip(h1 - m, 0, h1 - 1)])
    k1 = h1 - np.searchsorted(s1, t_up, side="left")
    k0 = h0 - np.searchsorted(s0, t_up, side="left")
    e_up = epsilon_lower_bound(k1, h1, k0, h0, delta=delta, alpha=alpha)
    # lower tail: thresholds from the D sample, P_D(S) against P_D'(S)
    t_lo = np.unique(s0[np.clip(m - 1, 0, h0 - 1)])
    k0l = np.searchsorted(s0, t_lo, side="right")
    k1l = np.searchsorted(s1, t_lo, side="right")
    e_lo = epsilon_lower_bound(k0l, h0, k1l, h1, delta=delta, alpha=alpha)
    if e_up.size and np.max(e_up) > best[0]:
        j = int(np.argmax(e_up))
        best = (float(e_up[j]), ">=", float(t_up[j]))
    if e_lo.size and np.max(e_lo) > best[0]:
        j = int(np.argmax(e_lo))
        best = (float(e_lo[j]), "<=", float(t_lo[j]))
    sel_eps, direction, t = best
    e0, e1 = llr0[h0:], llr1[h1:]
    m0, m1 = e0.size, e1.size
    if direction == ">=":  # P_D'(S) <= e^eps P_D(S) + delta is tested
        c1, c0 = int(np.count_nonzero(e1 >= t)), int(np.count_nonzero(e0 >= t))
        (k_num, n_num), (k_den, n_den) = (c1, m1), (c0, m0)
    else:  # P_D(S) <= e^eps P_D'(S) + delta is tested
        c1, c0 = int(np.count_nonzero(e1 <= t)), int(np.count_nonzero(e0 <= t))
        (k_num, n_num), (k_den, n_den) = (c0, m0), (c1, m1)
    eps = float(epsilon_lower_bound(k_num, n_num, k_den, n_den, delta=delta, alpha=alpha))
    p_num_lower, _ = clopper_pearson(k_num, n_num, alpha / 2)
    _, p_den_upper = clopper_pearson(k_den, n_den, alpha / 2)
    return {
        "epsilon_lb_raw": eps if math.isfinite(eps) else None,
        "epsilon_lb": max(eps, 0.0),
        "test_set": f"LLR {direction} t",
        "threshold": t if math.isfinite(t) else None,
        "selection_epsilon_lb": sel_eps if math.isfinite(sel_eps) else None,
        "n_selection": int(h0),
        "n_evaluation": int(m0),
        "count_D": c0,
        "count_D_prime": c1,
        # CP bounds on the more likely dataset's probability of S and the other's
        "p_numerator_lower": float(p_num_lower),
        "p_denominator_upper": float(p_den_upper),
        "confidence": 1.0 - alpha,
    }


# --------------------------------------------------------------------------
# audits
# --------------------------------------------------------------------------
def _exact_epsilon(releases: list[Release], *, delta: float) -> tuple[float | None, float | None]:
    if releases and all(r.mechanism == "gaussian" for r in releases):
        c = mech.compose(releases, delta=delta)
        return float(c["exact_epsilon"]), float(c["gdp_mu"])
    if releases and all(r.mechanism == "laplace" for r in releases):
        return float(sum(r.sensitivity / r.scale for r in releases)), None
    return None, None  # pragma: no cover - no mixed targets exist


def _run(
    name: str,
    releases: list[Release],
    *,
    claimed_epsilon: float,
    claimed_delta: float,
    samples: int,
    seed: int,
    noise_factor: float,
    d: int,
    check_samples: int,
    method: str,
    key: tuple,
) -> dict:
    samples = check_positive_int(samples, "samples", minimum=4)
    check_samples = check_positive_int(check_samples, "check_samples", minimum=10)
    if not (noise_factor > 0 and math.isfinite(noise_factor)):
        raise DPRegError(f"noise_factor must be a finite number > 0, got {noise_factor!r}")
    check_choice(method, "method", ("auto", "direct", "shortcut"))
    t_start = time.perf_counter()
    blocks = _blocks_for(name, releases, d=d, noise_factor=noise_factor)
    s0, s1, x, y = neighbouring_pair(blocks, d=d)
    means = [(b.mean(s0), b.mean(s1)) for b in blocks]
    ss = seed_sequence(seed, "audit", *key, noise_factor)
    c0, c1, c2, b0, b1 = ss.spawn(5)

    check = _verify_shortcut(blocks, means, s0, s1, seeds=(c0, c1, c2), n=check_samples)
    use_shortcut = method == "shortcut" or (method == "auto" and check["verified"])
    if use_shortcut:
        llr0 = _shortcut_llr(blocks, means, seed=b0, n=samples, hypothesis=0)[0]
        llr1 = _shortcut_llr(blocks, means, seed=b1, n=samples, hypothesis=1)[0]
    else:
        llr0 = _direct_llr(blocks, s0, means, seed=b0, n=samples)[0]
        llr1 = _direct_llr(blocks, s1, means, seed=b1, n=samples)[0]
    test = distinguishing_test(llr0, llr1, delta=claimed_delta)

    actual = [dataclasses.replace(r, scale=r.scale * noise_factor) for r in releases]
    exact, mu = _exact_epsilon(actual, delta=claimed_delta)
    rel_info = []
    for r in actual:
        mine = [i for i, b in enumerate(blocks) if b.release == r.name]
        bound = sum(_loss_bound(blocks[i], means[i][1] - means[i][0]) for i in mine)
        if r.mechanism == "gaussian":
            pair_loss, claimed_loss = math.sqrt(bound), r.sensitivity / r.scale
        else:
            pair_loss, claimed_loss = bound, r.sensitivity / r.scale
        rel_info.append(
            {
                "name": r.name,
                "mechanism": r.mechanism,
                "draw": "+".join(blocks[i].draw for i in mine),
                "sensitivity": r.sensitivity,
                "scale": r.scale,
                "epsilon": r.epsilon,
                "delta": r.delta,
                "calibration": r.calibration,
                "valid": r.valid,
                # mu (Gaussian) or sensitivity/b (Laplace): the pair's and the claimed one
                "pair_loss": pair_loss,
                "sensitivity_loss": claimed_loss,
                "pair_attains_sensitivity": bool(pair_loss >= claimed_loss * (1 - 1e-9)),
            }
        )
    lb = test["epsilon_lb"]
    return {
        "name": name,
        "claimed_epsilon": claimed_epsilon,
        "delta": claimed_delta,
        "empirical_epsilon_lb": lb,
        "exact_epsilon": exact,
        "n_samples": samples,
        "verdict": "violation" if lb > claimed_epsilon else "ok",
        "label": _label(name),
        "kind": "mechanism" if name in MECHANISMS else "algorithm",
        "exact_exceeds_claim": None
        if exact is None
        else bool(exact > claimed_epsilon * (1 + 1e-9)),
        "gdp_mu": mu,
        "noise_factor": noise_factor,
        "method": "shortcut" if use_shortcut else "direct",
        "shortcut_verified": bool(check["verified"]),
        "seed": seed,
        "d": d,
        "pair": {"added_x": [float(v) for v in x], "added_y": y},
        "test": test,
        "releases": rel_info,
        "check": check,
        "seconds": round(time.perf_counter() - t_start, 3),
    }


def _label(name: str) -> str:
    if name in ALGORITHMS and ALGORITHMS[name].reproduction:
        return "reproduction"
    return "private"


def audit_algorithm(
    name: str,
    *,
    epsilon: float,
    delta: float,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    noise_factor: float = 1.0,
    d: int = DEFAULT_D,
    check_samples: int = CHECK_SAMPLES,
    method: str = "auto",
) -> dict:
    """Audit the whole ``(epsilon, delta)`` claim of a private algorithm or raw mechanism.

    Parameters
    ----------
    name : str
        A private algorithm of :data:`~dpreg.algorithms.ALGORITHMS` or one of
        :data:`MECHANISMS`.
    epsilon, delta : float
        The budget the algorithm is run at; the claim audited is
        ``(epsilon, delta)`` (``(epsilon, 0)`` for Laplace targets).
    samples : int
        Draws of the test statistic per hypothesis (half choose the test set,
        half evaluate it).
    seed : int
        Root seed; the result is a deterministic function of the arguments.
    noise_factor : float
        Multiplies every noise scale (``0.25``: the deliberately broken
        ``sigma / 4`` versions the tests use to show the audit's power).
    d : int
        Dimension of the neighbouring datasets.
    check_samples : int
        Direct draws per hypothesis that verify the scalar shortcut.
    method : {"auto", "shortcut", "direct"}
        ``auto`` uses the shortcut when verified, else draws directly.

    Returns
    -------
    dict
        The JSON record (see the module docstring and :func:`main`).
    """
    d = check_positive_int(d, "d", minimum=2)
    releases = _claimed_releases(name, epsilon=epsilon, delta=delta, d=d)
    claimed_delta = 0.0 if all(r.mechanism == "laplace" for r in releases) else float(delta)
    return _run(
        name,
        releases,
        claimed_epsilon=float(epsilon),
        claimed_delta=claimed_delta,
        samples=samples,
        seed=seed,
        noise_factor=noise_factor,
        d=d,
        check_samples=check_samples,
        method=method,
        key=(name, float(epsilon), float(delta), d),
    )


def audit_release(
    name: str,
    release: str,
    *,
    epsilon: float,
    delta: float,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    noise_factor: float = 1.0,
    d: int = DEFAULT_D,
    check_samples: int = CHECK_SAMPLES,
    method: str = "auto",
) -> dict:
    """Audit one release of ``name`` (run at ``(epsilon, delta)``) against its own share.

    The claim audited is the release's nominal ``(epsilon_i, delta_i)``
    (e.g. ``(epsilon/2, delta/2)`` for SSP's ``XtX``); for the GDP algorithms
    these shares are nominal only (their guarantee is the composed one), so
    use :func:`audit_algorithm` for them.  Other arguments as there.
    """
    d = check_positive_int(d, "d", minimum=2)
    releases = _claimed_releases(name, epsilon=epsilon, delta=delta, d=d)
    chosen = [r for r in releases if r.name == release]
    if not chosen:
        check_choice(release, f"release of {name}", [r.name for r in releases])
    r = chosen[0]
    out = _run(
        name,
        [r],
        claimed_epsilon=float(r.epsilon),
        claimed_delta=float(r.delta),
        samples=samples,
        seed=seed,
        noise_factor=noise_factor,
        d=d,
        check_samples=check_samples,
        method=method,
        key=(name, release, float(epsilon), float(delta), d),
    )
    out["release"] = release
    return out


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
_SUMMARY_KEYS = (
    "name",
    "label",
    "kind",
    "claimed_epsilon",
    "delta",
    "empirical_epsilon_lb",
    "exact_epsilon",
    "n_samples",
    "verdict",
    "exact_exceeds_claim",
    "method",
    "noise_factor",
    "seed",
)


def _parse_samples(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value >= 4 and value == int(value)):
        raise argparse.ArgumentTypeError(f"samples must be an integer >= 4, got {text!r}")
    return int(value)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dpreg-audit",
        description=(
            "Empirical privacy audit: a Clopper-Pearson lower bound on epsilon at the "
            "claimed delta for each raw mechanism and private algorithm, from the optimal "
            "likelihood-ratio test between neighbouring datasets. Prints one JSON line per "
            "(target, epsilon). Exit status 1 iff a target labelled 'private' has a lower "
            "bound above its claim (ssp-wang and adassp-wang are 'reproduction' and do not "
            "count); 2 on a usage error."
        ),
    )
    p.add_argument(
        "--samples",
        type=_parse_samples,
        default=DEFAULT_SAMPLES,
        help=f"draws per hypothesis, e.g. 1e7 (default {DEFAULT_SAMPLES:.0e})",
    )
    p.add_argument("--seed", type=int, default=20200601, help="root seed (default 20200601)")
    p.add_argument(
        "--epsilon",
        type=float,
        nargs="+",
        default=[0.1, 1.0],
        help="total epsilon(s) to audit at (default 0.1 1)",
    )
    p.add_argument("--delta", type=float, default=1e-6, help="claimed delta (default 1e-6)")
    p.add_argument(
        "--algorithms",
        nargs="+",
        default=None,
        help=f"targets (space or comma separated; default all): {', '.join(AUDITED)}",
    )
    p.add_argument("--json-out", default=None, help="also write the JSON lines to this file")
    p.add_argument(
        "--noise-factor",
        type=float,
        default=1.0,
        help="multiply every noise scale (e.g. 0.25 to show a broken version is caught)",
    )
    p.add_argument(
        "--check-samples",
        type=int,
        default=CHECK_SAMPLES,
        help=f"direct draws that verify the scalar shortcut (default {CHECK_SAMPLES})",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="print the full record (test set, releases, checks), not just the summary",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the audit; return 1 iff a 'private' target is violated, else 0 (2: bad arguments)."""
    args = _parser().parse_args(argv)
    names: list[str] = []
    for item in args.algorithms or list(AUDITED):
        names.extend(s for s in item.split(",") if s)
    records: list[dict] = []
    lines: list[str] = []
    try:
        for name in names:
            check_choice(name, "audit target", AUDITED)
        for eps in args.epsilon:
            for name in names:
                rec = audit_algorithm(
                    name,
                    epsilon=eps,
                    delta=args.delta,
                    samples=args.samples,
                    seed=args.seed,
                    noise_factor=args.noise_factor,
                    check_samples=args.check_samples,
                )
                out = rec if args.full else {k: rec[k] for k in _SUMMARY_KEYS}
                line = json.dumps(out, allow_nan=False)
                print(line, flush=True)
                records.append(rec)
                lines.append(line)
    except DPRegError as exc:
        print(f"dpreg-audit: error: {exc}", file=sys.stderr)
        return 2
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    violated = sorted(
        {r["name"] for r in records if r["verdict"] == "violation" and r["label"] == "private"}
    )
    if violated:
        print(
            f"dpreg-audit: privacy violation detected for: {', '.join(violated)}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
