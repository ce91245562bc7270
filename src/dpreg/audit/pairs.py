"""Neighbouring pairs chosen per algorithm so that the end-to-end audit takes each branch.

The default pair of the end-to-end layer (``bounds``,
:func:`neighbouring_rows`) starts from ``e_2 .. e_d``
twice each: ``lambda_min(X^T X) = 0``, residuals inside the clip, a handful
of rows.  On it some branches of some algorithms are never taken, so a bug
there could not be seen.  :data:`PAIRS` maps an algorithm to further pairs
built to take them, each audited as its own record (``variant`` is
``pair:<name>``):

``sketch-ols`` (Sheffet 2017; :mod:`dpreg.algorithms.sketch`)
    The sketch is noise-free when the noisy test
    ``lambda_min(A^T A) - Lap(b)`` exceeds ``w^2 + b ln(1/delta)``
    (``A = [X y]``, ``b`` the test's Laplace scale, ``w`` the sketch's noise
    level, both read from the releases).  ``D`` holds ``(e_1, 1)`` ``a``
    times, ``(e_1, -1)``, ``e_2`` and ``e_3`` (``y = 0``) ``M = 2a + 100``
    times each, so ``A^T A`` has its smallest eigenvalue ``2a`` along
    ``(e_1, 1)/sqrt(2)``; ``D'`` adds the row ``(e_1, 1)`` (squared norm
    ``B_X^2 + B_Y^2 = 2``), which raises ``lambda_min`` by the full
    sensitivity 2.  ``lambda-above``: ``2a`` is 15 Laplace scales above the
    threshold (the noise-free branch on both datasets except with
    probability ``e^-15 / 2``); ``lambda-at``: ``2a`` at the threshold (each
    branch about half the time, and ``D'`` moves the odds).
``ihm`` (Lev et al. 2026)
    The Hessian sketches are noise-free when ``lambda_min(X^T X) + sigma_l z
    - sigma_l tau >= gamma`` (``z ~ N(0, 1)``; ``gamma = sigma_l sqrt(k)``
    and ``tau`` from :func:`dpreg.algorithms.sketch.ihm_sizes`, ``sigma_l``
    the ``lambda_min`` release's scale).  ``D`` holds ``e_1`` ``a`` times and
    ``e_2 .. e_d`` ``a + 200`` times (``y = 0``); ``D'`` adds ``(e_1, 1)``,
    which raises ``lambda_min`` by the full sensitivity ``B_X^2 = 1``.
    ``margin-above``: ``a = gamma + sigma_l (tau + 5)`` (noise-free except with
    probability ``Phi(-5)``); ``margin-at``: ``a = gamma + sigma_l tau``.
``dp-gd`` (and ``dp-gd-lev``)
    ``residual-clip``: ``D`` holds ``(e_1, -1)`` 200 times, which pulls
    ``theta_1`` to about ``-eta`` after one step; ``D'`` adds (or, under
    replace-one, puts in place of the last row) ``(e_1, 1)``, whose residual
    is ``C`` at the first step and ``1 - theta_1 > C`` at the later ones, so
    the clip binds exactly on the row that differs.
``tukey-em`` (Amin et al. 2023; replace-one)
    ``k-hat-move``: the rows cycle through ``e_1 .. e_d`` with ``y = 0``
    except ``r`` of the ``e_1`` rows, which have ``y = 1``, and ``n = 2 d m``
    (``m`` models of ``2 d`` rows under the default ``m = n/(2d)``).  Every
    batch without a ``y = 1`` row fits the model 0 exactly (a rank-deficient
    batch gets the minimum-norm 0 too), every batch with one fits a positive
    first coordinate, so the depth volumes fall by a factor about
    ``10^-10`` (the tie-breaking spread) at the depth ``q*`` = number of such
    batches in the first coordinate; a certificate of
    ``ptr_distance`` (:mod:`dpreg.algorithms.tukey`) cannot span that
    fall, so ``k_hat = t - q* - 2`` once ``q*`` exceeds the ``g`` the
    certificate needs (``2 (ln(8 e^eps2 / delta) + d ln 2) / eps2``; ``q*``
    is 50 above it and ``m = 4 (q* + 50)``).  ``D'`` puts ``(e_1, 1)`` in place
    of the last row (an ``e_d`` row with ``y = 0``): in a batch that had no
    ``y = 1`` row it makes one more positive model, so ``k_hat`` drops by
    exactly 1 (the full sensitivity of the PTR release) in about 80% of the
    partitions at ``epsilon = 1``.  The size grows as ``1/epsilon``; the pair
    is audited only where ``m <= TUKEY_MAX_MODELS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms.sketch import ihm_sizes
from dpreg.audit.model import base_rows
from dpreg.privacy.mechanisms import Release

__all__ = [
    "PAIRS",
    "Datasets",
    "build_pair",
    "candidate_pairs",
    "neighbouring_rows",
    "pair_names",
]

Datasets = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
Builder = Callable[..., Datasets]

#: Laplace scales between the sketch's noisy test and its threshold in ``lambda-above``.
SKETCH_ABOVE = 15.0
#: Standard deviations of ``lambda_min``'s noise above IHM's margin in ``margin-above``.
IHM_ABOVE = 5.0
#: Rows ``(e_1, -1)`` of DP-GD's ``residual-clip`` dataset.
GD_ROWS = 200


def _rows(blocks: list[tuple[np.ndarray, float, int]]) -> tuple[np.ndarray, np.ndarray]:
    X = np.vstack([np.tile(x, (k, 1)) for x, _, k in blocks])
    y = np.concatenate([np.full(k, yv) for _, yv, k in blocks])
    return X, y


def _add(
    base: tuple[np.ndarray, np.ndarray], x: np.ndarray, y: float, neighbouring: str
) -> Datasets:
    X, yy = base
    if neighbouring == "replace-one":
        X1, y1 = X.copy(), yy.copy()
        X1[-1], y1[-1] = x, y
        return (X, yy), (X1, y1)
    return (X, yy), (np.vstack([X, x]), np.append(yy, y))


def _release(releases: list[Release], name: str) -> Release:
    return next(r for r in releases if r.name == name)


def sketch_threshold(releases: list[Release], *, delta: float) -> tuple[float, float]:
    """``(w^2 + b ln(1/delta), b)``: the value ``lambda_min(A^T A) - Lap(b)`` must exceed
    for Sheffet's noise-free sketch (the fit's ``w^2 + 4 B^2 ln(1/delta)/eps``, with
    ``b = 4 B^2/eps``)."""
    b = _release(releases, "lambda_min_test").scale
    w = _release(releases, "sketch").scale
    return w * w + b * math.log(1.0 / delta), b


def _sketch(target: str) -> Builder:
    def build(releases: list[Release], *, d: int, delta: float, neighbouring: str) -> Datasets:
        thr, b = sketch_threshold(releases, delta=delta)
        lam = thr + (SKETCH_ABOVE * b if target == "above" else 0.0)
        a = math.ceil(lam / 2.0)
        M = 2 * a + 100
        e = np.eye(d)
        blocks = [(e[0], 1.0, a), (e[0], -1.0, M)] + [(e[j], 0.0, M) for j in range(1, d)]
        return _add(_rows(blocks), e[0], 1.0, neighbouring)

    return build


def ihm_threshold(releases: list[Release], *, d: int, T: int = 3) -> tuple[float, float]:
    """``(gamma + sigma_l tau, sigma_l)``: ``lambda_min(X^T X)`` at which IHM's sketches
    are noise-free half the time (the fit's ``lam~ >= gamma`` at ``z = 0``)."""
    lam = _release(releases, "lambda_min")
    k, tau, _ = ihm_sizes(d, 4.0 * lam.delta, T)
    sigma_l = lam.scale
    return sigma_l * math.sqrt(k) + sigma_l * tau, sigma_l


def _ihm(target: str) -> Builder:
    def build(releases: list[Release], *, d: int, delta: float, neighbouring: str) -> Datasets:
        thr, sigma_l = ihm_threshold(releases, d=d)
        a = math.ceil(thr + (IHM_ABOVE * sigma_l if target == "above" else 0.0))
        e = np.eye(d)
        blocks = [(e[0], 0.0, a)] + [(e[j], 0.0, a + 200) for j in range(1, d)]
        return _add(_rows(blocks), e[0], 1.0, neighbouring)

    return build


def _gd_clip(releases: list[Release], *, d: int, delta: float, neighbouring: str) -> Datasets:
    e = np.eye(d)
    return _add(_rows([(e[0], -1.0, GD_ROWS)]), e[0], 1.0, neighbouring)


#: Largest number of models of TukeyEM's ``k-hat-move`` pair (its cost grows as 1/epsilon).
TUKEY_MAX_MODELS = 1000


def tukey_sizes(*, epsilon: float, delta: float, d: int) -> tuple[int, int, int]:
    """``(m, q*, r)`` of TukeyEM's ``k-hat-move`` pair: models, target number of
    positive models, rows with ``y = 1`` (``r = -m ln(1 - q*/m)`` fills about
    ``q*`` distinct batches)."""
    eps2 = epsilon / 2.0
    g = 2.0 * (math.log(8.0 * math.exp(eps2) / delta) + d * math.log(2.0)) / eps2
    q = math.ceil(g) + 50
    m = 4 * (q + 50)
    return m, q, round(-m * math.log(1.0 - q / m))


def _tukey(
    releases: list[Release], *, d: int, delta: float, neighbouring: str, epsilon: float
) -> Datasets:
    m, _, r = tukey_sizes(epsilon=epsilon, delta=delta, d=d)
    n = 2 * d * m
    X = np.tile(np.eye(d), (n // d, 1))
    y = np.zeros(n)
    y[np.flatnonzero(X[:, 0] == 1.0)[:r]] = 1.0
    return _add((X, y), np.eye(d)[0], 1.0, neighbouring)


_SKETCH = {"lambda-above": _sketch("above"), "lambda-at": _sketch("at")}
_IHM = {"margin-above": _ihm("above"), "margin-at": _ihm("at")}
#: algorithm -> {pair name -> builder(releases, d=, delta=, neighbouring=) -> (D, D')}
PAIRS: dict[str, dict[str, Builder]] = {
    "sketch-ols": _SKETCH,
    "ihm": _IHM,
    "dp-gd": {"residual-clip": _gd_clip},
    "dp-gd-lev": {"residual-clip": _gd_clip},
    "tukey-em": {"k-hat-move": _tukey},
}


def pair_names(name: str, *, epsilon: float, delta: float, d: int) -> list[str]:
    """The extra pairs of algorithm ``name`` audited at ``(epsilon, delta)`` (none for most;
    TukeyEM's only where its size is at most :data:`TUKEY_MAX_MODELS` models)."""
    names = list(PAIRS.get(name, {}))
    if "k-hat-move" in names and tukey_sizes(epsilon=epsilon, delta=delta, d=d)[0] > (
        TUKEY_MAX_MODELS
    ):
        names.remove("k-hat-move")
    return names


def build_pair(
    name: str,
    pair: str,
    releases: list[Release],
    *,
    d: int,
    epsilon: float,
    delta: float,
    neighbouring: str,
) -> Datasets:
    """``(D, D')`` of pair ``pair`` of algorithm ``name``."""
    kw = {"epsilon": epsilon} if pair == "k-hat-move" else {}
    return PAIRS[name][pair](releases, d=d, delta=delta, neighbouring=neighbouring, **kw)


# --------------------------------------------------------------------------
# neighbouring rows
# --------------------------------------------------------------------------
def _added_row(releases: list[Release], d: int) -> np.ndarray:
    if any(r.mechanism == "laplace" for r in releases):
        return np.full(d, 1.0 / math.sqrt(d))
    return np.eye(d)[0]


def neighbouring_rows(
    releases: list[Release],
    *,
    d: int,
    neighbouring: str = "add/remove",
    base: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``((X, y), (X', y'))``: ``D`` and ``D'`` differing in one row at the bounds.

    ``base`` is ``D`` (default: ``e_2 .. e_d`` twice each).
    """
    X, y = base_rows(d) if base is None else base
    x = _added_row(releases, d)
    if neighbouring == "replace-one":
        X1, y1 = X.copy(), y.copy()
        X1[-1], y1[-1] = x, 1.0
        return (X, y), (X1, y1)
    return (X, y), (np.vstack([X, x]), np.append(y, 1.0))


def _large_rows(d: int, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A bigger fixed dataset inside the bounds (default ``2000 d`` rows), for
    algorithms that need many rows: subsample-and-aggregate ones such as
    TukeyEM pass their safety test at epsilon 1 from about this size, so the
    audit sees their released estimates and not only refusals."""
    n = 2000 * d if n is None else int(n)
    rng = np.random.default_rng(20200601)
    X = rng.standard_normal((n, d))
    X *= (rng.uniform(0.2, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ np.linspace(0.5, -0.5, d) + 0.1 * rng.standard_normal(n), -1.0, 1.0)
    return X, y


def candidate_pairs(alg, *, d, epsilon, delta, rho, pair):
    """``(D, D')`` candidates in turn: the pair ``pair`` of :data:`~dpreg.audit.pairs.PAIRS`,
    or (``bounds``) the small dataset, then the bigger one."""
    if pair != "bounds":
        releases = alg.releases(epsilon=epsilon, delta=delta, d=d, rho=rho, n=1000)
        yield build_pair(
            alg.name,
            pair,
            releases,
            d=d,
            epsilon=epsilon,
            delta=delta,
            neighbouring=alg.neighbouring,
        )
        return
    for i, base in enumerate((base_rows(d), _large_rows(d))):
        n0 = base[0].shape[0]
        try:  # a release list may refuse the public n (tukey-em-tuned's grid)
            releases = alg.releases(epsilon=epsilon, delta=delta, d=d, rho=rho, n=n0)
        except DPRegError:
            if i:
                raise
            continue
        yield neighbouring_rows(releases, d=d, neighbouring=alg.neighbouring, base=base)
