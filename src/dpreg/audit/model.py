"""The declared-scale model: releases, their noise blocks and the neighbouring datasets.

The faster audit layer simulates each release from its *declared* scale
with the project's draw functions (:mod:`dpreg.privacy.mechanisms`).  Which draw a
release uses is derived from the registry entry: its
:attr:`~dpreg.algorithms.Algorithm.noise_kinds` (one normal-block kind per
release: ``scalar`` observes ``lambda_min``, ``vector`` ``X^T y``, a matrix
kind ``X^T X``), or, for an entry without normal-block noise whose one
release is Laplace-calibrated, the objective-coefficient layout of
:func:`dpreg.privacy.mechanisms.objective_laplace_noise` (the functional mechanism).
Entries whose noise follows neither layout are audited end to end only
(:mod:`dpreg.audit.endtoend`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from dpreg._validation import (
    DPRegError,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_int,
)
from dpreg.algorithms import ALGORITHMS, draw_noise
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = [
    "AUDITED",
    "DEFAULT_D",
    "MECHANISMS",
    "PRIVATE_ALGORITHMS",
    "Block",
    "blocks_for",
    "claimed_releases",
    "declared_layout",
    "reproduces_fit",
    "label_of",
    "neighbouring_pair",
    "simulate_releases",
]

#: Dimension of the audit datasets.
DEFAULT_D = 3
#: Raw mechanisms audited on their own (one release of ``X^T y``, sensitivity 1).
MECHANISMS = ("gaussian-classical", "gaussian-analytic", "laplace")
#: Every algorithm the project calls private, in registry order.
PRIVATE_ALGORITHMS = tuple(name for name, alg in ALGORITHMS.items() if alg.private)
#: Everything the CLI audits by default.
AUDITED = MECHANISMS + PRIVATE_ALGORITHMS


@dataclass(frozen=True)
class Block:
    """One independently drawn part of a release.

    Attributes
    ----------
    release : str
        Name of the :class:`~dpreg.privacy.mechanisms.Release` it belongs to.
    family : str
        ``"gaussian"`` or ``"laplace"``.
    draw : str
        ``symmetric``, ``wang``, ``full`` (``X^T X``), ``vector``
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
        return self.draw in ("symmetric", "wang", "full", "functional-quadratic")

    def statistic(self, stats: SuffStats) -> np.ndarray:
        """The exact (noise-free) released quantity, in the algorithm's layout."""
        if self._matrix:
            return stats.xtx
        if self.draw == "scalar":
            return np.array(stats.lambda_min())
        return stats.xty

    def noise(self, *, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` noise draws in the algorithm's layout, with the project's draw functions."""
        rng = as_generator(rng)
        d, s = self.d, self.scale
        if self.draw == "symmetric":
            return mech.symmetric_noise(d, scale=s, rng=rng, size=size)
        if self.draw == "wang":
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
            if self.draw == "wang":
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


def declared_layout(name: str, releases: list[Release]) -> list[tuple[str, str]] | None:
    """``(family, draw)`` per noise block of a registered algorithm, or None.

    Derived from the entry: a normal-block layout (``noise_kinds``, one kind
    per release) or the objective-coefficient Laplace layout of an entry
    with a single Laplace-calibrated release and no normal-block noise
    (two blocks: quadratic, then linear coefficients).  None when neither
    fits (such entries are audited end to end only).
    """
    alg = ALGORITHMS[name]
    kinds = tuple(alg.noise_kinds)
    if kinds and len(kinds) == len(releases) and all(r.mechanism == "gaussian" for r in releases):
        if all(k in ("scalar", "vector", *mech.MATRIX_KINDS) for k in kinds):
            return [("gaussian", k) for k in kinds]
        return None
    if (
        not kinds
        and len(releases) == 1
        and releases[0].mechanism == "laplace"
        and alg.calibration == "laplace"
    ):
        return [("laplace", "functional-quadratic"), ("laplace", "functional-linear")]
    return None


def blocks_for(name: str, releases: list[Release], *, d: int, noise_factor: float) -> list[Block]:
    """The noise blocks of a target, in the order its fit draws them.

    Raw mechanisms release ``X^T y`` (``vector`` or ``laplace-vector``);
    registered algorithms follow :func:`declared_layout`.
    """
    if name in MECHANISMS:
        draw = {"gaussian": "vector", "laplace": "laplace-vector"}
        return [
            Block(r.name, r.mechanism, draw[r.mechanism], d, r.scale * noise_factor)
            for r in releases
        ]
    layout = declared_layout(name, releases)
    if layout is None:
        raise DPRegError(
            f"the declared-scale audit has no model of {name!r}'s noise; audit it end to end"
        )
    if len(layout) == len(releases):
        pairs = list(zip(releases, layout, strict=True))
    else:  # one Laplace release drawn as two blocks
        pairs = [(releases[0], fam_draw) for fam_draw in layout]
    return [Block(r.name, fam, draw, d, r.scale * noise_factor) for r, (fam, draw) in pairs]


def mechanism_releases(name: str, *, epsilon: float, delta: float, d: int) -> list[Release]:
    """The one release of a raw mechanism target: ``X^T y`` with ``B_X = B_Y = 1``."""
    if name == "gaussian-analytic":
        sigma = mech.analytic_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
        return [
            mech.gaussian_release(
                "query",
                sensitivity=1.0,
                sigma=sigma,
                epsilon=epsilon,
                delta=delta,
                calibration="analytic",
                valid=True,
            )
        ]
    if name == "gaussian-classical":
        sigma = mech.classical_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
        return [
            mech.gaussian_release(
                "query",
                sensitivity=1.0,
                sigma=sigma,
                epsilon=epsilon,
                delta=delta,
                calibration="classical",
                valid=mech.classical_valid(epsilon),
            )
        ]
    # Laplace on X^T y: L1 sensitivity of x y is ||x||_1 |y| <= sqrt(d) B_X B_Y
    sens = math.sqrt(d)
    return [mech.laplace_release("query", sensitivity=sens, b=sens / epsilon, epsilon=epsilon)]


def claimed_releases(name: str, *, epsilon: float, delta: float, d: int) -> list[Release]:
    check_choice(name, "audit target", AUDITED)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if name in MECHANISMS:
        return mechanism_releases(name, epsilon=eps, delta=dlt, d=d)
    n = base_rows(d)[0].shape[0]  # the audit dataset D (for n-dependent calibrations)
    return ALGORITHMS[name].releases(epsilon=eps, delta=dlt, d=d, n=n)


# --------------------------------------------------------------------------
# neighbouring datasets
# --------------------------------------------------------------------------
def base_rows(d: int) -> tuple[np.ndarray, np.ndarray]:
    rows = [np.eye(d)[j] for j in range(1, d) for _ in range(2)]
    X = np.array(rows) if rows else np.zeros((0, d))
    y = np.resize(np.array([0.5, -0.5, 0.25, 1.0]), X.shape[0])
    return X, y


def candidate_rows(d: int) -> list[np.ndarray]:
    return [np.eye(d)[0], np.full(d, 1.0 / math.sqrt(d))]


def block_delta(block: Block, s0: SuffStats, s1: SuffStats) -> np.ndarray:
    return block.mean(s1) - block.mean(s0)


def loss_bound(block: Block, delta_obs: np.ndarray) -> float:
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
    X, y = base_rows(d)
    s0 = SuffStats.from_arrays(X, y)
    best = None
    for x in candidate_rows(d):
        s1 = SuffStats.from_arrays(np.vstack([X, x]), np.append(y, 1.0))
        score = sum(loss_bound(b, block_delta(b, s0, s1)) for b in blocks)
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
    rng = as_generator(rng)
    size = check_positive_int(size, "size")
    rel = claimed_releases(name, epsilon=epsilon, delta=delta, d=stats.d)
    blocks = blocks_for(name, rel, d=stats.d, noise_factor=noise_factor)
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


def reproduces_fit(name: str, *, epsilon: float, delta: float, d: int = DEFAULT_D) -> bool:
    """Whether :func:`simulate_releases` gives exactly the values the fit captures.

    The declared-scale layer audits a model of the releases; it is used for
    an entry only when, with one generator state, the model's releases equal
    those ``Algorithm.fit(capture=True)`` records (``lambda_min`` is captured
    with the ``X^T X`` offset ``c = 1`` added; the functional mechanism's
    coefficients as ``[M.ravel(), beta]``).  A model that does not reproduce
    the fit would audit something else, so the entry is left to the
    end-to-end layer.
    """
    rng = np.random.default_rng(7)
    X = rng.standard_normal((40, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    stats = SuffStats.from_arrays(X, np.clip(X[:, 0] * 0.5, -1.0, 1.0))
    size = 4
    try:
        fit = ALGORITHMS[name].fit(
            stats,
            epsilon=epsilon,
            delta=delta,
            rng=np.random.default_rng(11),
            size=size,
            capture=True,
        )
        sim = simulate_releases(
            name, stats, epsilon=epsilon, delta=delta, rng=np.random.default_rng(11), size=size
        )
        rel = claimed_releases(name, epsilon=epsilon, delta=delta, d=d)
    except DPRegError:
        return False
    got = fit.released or {}
    layout = declared_layout(name, rel) or []
    if [dr for _, dr in layout] == ["functional-quadratic", "functional-linear"]:
        want = {rel[0].name: np.concatenate([sim[0].reshape(size, -1), sim[1]], axis=1)}
    else:
        want = {
            r.name: v + (1.0 if draw == "scalar" else 0.0)
            for r, (_, draw), v in zip(rel, layout, sim, strict=True)
        }
    return set(want) == set(got) and all(
        np.shape(got[k]) == np.shape(v) and np.allclose(got[k], v, rtol=1e-10, atol=1e-12)
        for k, v in want.items()
    )


def label_of(name: str, releases: list[Release] | None = None) -> str:
    """``reproduction`` (published code whose privacy the project does not claim),
    ``outside-validity`` (a release the ledger marks invalid: a calibration used
    outside its theorem) or ``private``; only ``private`` records decide the
    exit status."""
    if name in ALGORITHMS and ALGORITHMS[name].reproduction:
        return "reproduction"
    if releases is not None and not all(r.valid for r in releases):
        return "outside-validity"
    return "private"
