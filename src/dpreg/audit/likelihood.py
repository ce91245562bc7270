"""Log-likelihood-ratio statistics of the declared-scale layer: direct draws,
the scalar shortcut and the verification sample that licenses it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import ks_2samp, kstest, norm

from dpreg.audit.bounds import round_llr
from dpreg.audit.model import Block, loss_bound
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.seeding import as_generator

__all__ = ["block_llr", "direct_llr", "shortcut_block", "shortcut_llr", "verify_shortcut"]

CHUNK = 1 << 20
#: Family-wise error of the shortcut verification checks of one audit.
VERIFY_ALPHA = 1e-4


def block_llr(block: Block, obs: np.ndarray, m0: np.ndarray, m1: np.ndarray) -> np.ndarray:
    sc = block.coordinate_scales()
    if block.family == "gaussian":
        w = (m1 - m0) / sc**2
        return (obs - m0) @ w - 0.5 * float((m1 - m0) @ w)
    return np.sum((np.abs(obs - m0) - np.abs(obs - m1)) / sc, axis=1)


def direct_llr(
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
    starts = range(0, n, CHUNK)
    for c, (start, chunk_seed) in enumerate(zip(starts, seed.spawn(len(starts)), strict=True)):
        size = min(CHUNK, n - start)
        gens = np.random.default_rng(chunk_seed).spawn(len(blocks))
        for i, (b, g) in enumerate(zip(blocks, gens, strict=True)):
            noise = b.noise(rng=g, size=size)
            obs = b.observe(b.statistic(stats) + noise)
            llr = block_llr(b, obs, *means[i])
            per_block[i][start : start + size] = llr
            total[start : start + size] += llr
            if c == 0:
                first_noise.append(noise)
    return round_llr(total), per_block, first_noise


def shortcut_block(
    block: Block, delta_obs: np.ndarray, *, rng: np.random.Generator, n: int, hypothesis: int
) -> np.ndarray:
    """One block's LLR drawn from its exact law under the independent-coordinate model.

    Gaussian: ``mu Z - mu^2/2`` under ``D`` and ``mu Z + mu^2/2`` under ``D'``
    (``Z ~ N(0, 1)``, ``mu^2 = sum Delta^2 / v``): one scalar per release.
    Laplace: one :func:`~dpreg.privacy.mechanisms.laplace_noise` scalar ``e`` per
    coordinate with ``Delta != 0``, ``(|e| - |e - Delta|) / b`` under ``D`` and
    ``(|e + Delta| - |e|) / b`` under ``D'``; coordinates with ``Delta = 0`` add 0.
    """
    rng = as_generator(rng)
    out = np.zeros(n)
    sc = block.coordinate_scales()
    if block.family == "gaussian":
        mu = math.sqrt(loss_bound(block, delta_obs))
        sign = 1.0 if hypothesis == 1 else -1.0
        for start in range(0, n, CHUNK):
            size = min(CHUNK, n - start)
            out[start : start + size] = mu * rng.standard_normal(size) + sign * 0.5 * mu * mu
        return out
    for dk, bk in zip(delta_obs, sc, strict=True):
        if dk == 0.0:
            continue
        for start in range(0, n, CHUNK):
            size = min(CHUNK, n - start)
            e = mech.laplace_noise((size,), scale=float(bk), rng=rng)
            if hypothesis == 0:
                out[start : start + size] += (np.abs(e) - np.abs(e - dk)) / bk
            else:
                out[start : start + size] += (np.abs(e + dk) - np.abs(e)) / bk
    return out


def shortcut_llr(
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
        shortcut_block(b, m1 - m0, rng=g, n=n, hypothesis=hypothesis)
        for b, (m0, m1), g in zip(blocks, means, gens, strict=True)
    ]
    return round_llr(np.sum(per_block, axis=0)), per_block


def verify_shortcut(
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
    ``VERIFY_ALPHA`` in all.
    """
    _, llr0, noise0 = direct_llr(blocks, s0, means, seed=seeds[0], n=n)
    _, llr1, _ = direct_llr(blocks, s1, means, seed=seeds[1], n=n)
    n_tests = 6 * len(blocks)  # mean, variance, correlation, mirror, two KS per block
    p_min = VERIFY_ALPHA / n_tests
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
            mu = math.sqrt(loss_bound(b, m1 - m0))
            p0 = float(kstest((llr0[i] + 0.5 * mu * mu) / mu, "norm").pvalue)
            p1 = float(kstest((llr1[i] - 0.5 * mu * mu) / mu, "norm").pvalue)
        else:
            ref = np.random.default_rng(seeds[2]).spawn(2)
            r0 = shortcut_block(b, m1 - m0, rng=ref[0], n=n, hypothesis=0)
            r1 = shortcut_block(b, m1 - m0, rng=ref[1], n=n, hypothesis=1)
            p0 = float(ks_2samp(round_llr(llr0[i]), round_llr(r0)).pvalue)
            p1 = float(ks_2samp(round_llr(llr1[i]), round_llr(r1)).pvalue)
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
