"""Linear-regression algorithms on sufficient statistics, batched over repeats.

Every algorithm is a pure function of a :class:`~dpreg.stats.SuffStats`,
the privacy parameters and a keyword-only ``rng``; it draws ``size`` noise
repeats at once and solves them with one batched ``numpy.linalg.solve``.
A singular or failed solve marks that repeat as *failed* (``theta`` NaN,
``failed`` True): it is counted, never silently dropped.

Notation (SPEC section 3): ``A = X^T X + c I`` with ``c = xtx_offset``
(Wang's code adds ``I``), ``b = X^T y``, ``B_X``, ``B_Y`` the norm bounds.

The noise scales of each private algorithm are derived from its list of
releases (:meth:`Algorithm.releases`), the same list the privacy ledger
reports, so the scale used and the scale reported cannot disagree.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI.
(Algorithm 2 "AdaSSP"; public Matlab code.)
Kalaja, E. (2020). Adaptive algorithm in differential privacy: comparative
analysis of pre-processing methods. MSc thesis, Univ. Helsinki
(Algorithm 1 fixed SSP, Algorithm 3 fixed AdaSSP).
Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism for
differential privacy: analytical calibration and optimal denoising. ICML.
Dong, J., Roth, A. & Su, W. (2019). Gaussian differential privacy. JRSS-B.
Zhang, J. et al. (2012). Functional mechanism: regression analysis under
differential privacy. VLDB.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial

import numpy as np

from dpreg import mechanisms as mech
from dpreg._validation import DPRegError, check_choice, check_delta, check_epsilon
from dpreg.mechanisms import Release
from dpreg.stats import SuffStats

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "FitResult",
    "draw_noise",
    "get_algorithm",
    "solve_batched",
]


@dataclass(frozen=True)
class FitResult:
    """Coefficients of ``R`` repeats.

    Attributes
    ----------
    theta : ndarray, shape (R, d)
        Coefficients; NaN rows where the trial failed.
    lam : ndarray, shape (R,)
        The ridge parameter actually used (NaN where the algorithm has none).
    failed : ndarray of bool, shape (R,)
        Trials whose solve failed or gave non-finite coefficients.
    """

    theta: np.ndarray
    lam: np.ndarray
    failed: np.ndarray


def solve_batched(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``A[r] theta[r] = b[r]`` for all ``r`` in one call.

    Falls back to one solve per repeat only when the batched call reports a
    singular matrix, to find which repeats failed.  Returns
    ``(theta, failed)``; failed rows of ``theta`` are NaN.
    """
    R, d = b.shape
    try:
        theta = np.linalg.solve(A, b[..., None])[..., 0]
        failed = np.zeros(R, dtype=bool)
    except np.linalg.LinAlgError:
        theta = np.full((R, d), np.nan)
        failed = np.zeros(R, dtype=bool)
        for r in range(R):
            try:
                theta[r] = np.linalg.solve(A[r], b[r])
            except np.linalg.LinAlgError:
                failed[r] = True
    bad = ~np.all(np.isfinite(theta), axis=1)
    failed |= bad
    theta[failed] = np.nan
    return theta, failed


# --------------------------------------------------------------------------
# release lists (one per algorithm): the single source of noise scales
# --------------------------------------------------------------------------
def _gauss(name, sens, sigma, eps, delta, calibration, valid) -> Release:
    return Release(name, "gaussian", float(sens), float(sigma), eps, delta, calibration, valid)


def _wang_valid(eps_i: float, delta_i: float, s: float) -> bool:
    """Wang's scales come with no proof; a release counts as valid when the exact
    Gaussian privacy profile (sensitivity / sigma = 1 / s) meets its nominal
    (eps_i, delta_i) (Balle & Wang 2018, Theorem 8)."""
    return mech.gdp_delta(eps_i, 1.0 / s) <= delta_i


def _releases_ssp_wang(eps, delta, d, bx, by, rho):
    s = math.sqrt(math.log(4.0 / delta)) / eps
    valid = _wang_valid(eps / 2, delta / 2, s)
    return [
        _gauss("XtX", bx * bx, s * bx * bx, eps / 2, delta / 2, "wang", valid),
        _gauss("Xty", bx * by, s * bx * by, eps / 2, delta / 2, "wang", valid),
    ]


def _releases_ssp(eps, delta, d, bx, by, rho):
    out = []
    for name, sens in (("XtX", bx * bx), ("Xty", bx * by)):
        sigma = mech.classical_sigma(epsilon=eps / 2, delta=delta / 2, sensitivity=sens)
        out.append(
            _gauss(
                name, sens, sigma, eps / 2, delta / 2, "classical", mech.classical_valid(eps / 2)
            )
        )
    return out


def _adassp_names(bx, by):
    return (("lambda_min", bx * bx), ("XtX", bx * bx), ("Xty", bx * by))


def _releases_adassp_wang(eps, delta, d, bx, by, rho):
    s = math.sqrt(math.log(6.0 / delta)) / (eps / 3)
    valid = _wang_valid(eps / 3, delta / 3, s)
    return [
        _gauss(n, sens, s * sens, eps / 3, delta / 3, "wang", valid)
        for n, sens in _adassp_names(bx, by)
    ]


def _releases_adassp(eps, delta, d, bx, by, rho):
    valid = mech.classical_valid(eps / 3)
    return [
        _gauss(
            n,
            sens,
            mech.classical_sigma(epsilon=eps / 3, delta=delta / 3, sensitivity=sens),
            eps / 3,
            delta / 3,
            "classical",
            valid,
        )
        for n, sens in _adassp_names(bx, by)
    ]


def _releases_adassp_analytic(eps, delta, d, bx, by, rho):
    mu = mech.gdp_mu(epsilon=eps / 3, delta=delta / 3)
    return [
        _gauss(n, sens, sens / mu, eps / 3, delta / 3, "analytic", True)
        for n, sens in _adassp_names(bx, by)
    ]


def _gdp_releases(names, eps, delta):
    k = len(names)
    mu = mech.gdp_mu(epsilon=eps, delta=delta)
    # every release gets mu / sqrt(k); its nominal share of the budget is
    # reported as eps / k, delta / k (the composed guarantee is exact).
    return [
        _gauss(n, sens, sens * math.sqrt(k) / mu, eps / k, delta / k, "gdp", True)
        for n, sens in names
    ]


def _releases_adassp_gdp(eps, delta, d, bx, by, rho):
    return _gdp_releases(_adassp_names(bx, by), eps, delta)


def _releases_ssp_gdp(eps, delta, d, bx, by, rho):
    return _gdp_releases((("XtX", bx * bx), ("Xty", bx * by)), eps, delta)


def functional_sensitivity(d: int, bound_x: float, bound_y: float) -> float:
    """L1 sensitivity of the functional mechanism's coefficients.

    The released coefficients of ``sum_i (y_i - x_i^T theta)^2`` are the
    degree-2 ones (``x_ij x_il``, ``sum_{j,l} |x_j x_l| = ||x||_1^2 <= d B_X^2``)
    and the degree-1 ones (``2 y_i x_ij``, ``sum_j |.| <= 2 B_Y sqrt(d) B_X``);
    adding or removing one row changes them by at most
    ``d B_X^2 + 2 sqrt(d) B_X B_Y`` in L1 (Zhang et al. 2012, Lemma 1, with
    L2-bounded rows).
    """
    return d * bound_x**2 + 2.0 * math.sqrt(d) * bound_x * bound_y


def _releases_functional(eps, delta, d, bx, by, rho):
    sens = functional_sensitivity(d, bx, by)
    return [
        Release("objective_coefficients", "laplace", sens, sens / eps, eps, 0.0, "laplace", True)
    ]


def _no_releases(eps, delta, d, bx, by, rho):
    return []


# --------------------------------------------------------------------------
# fits
# --------------------------------------------------------------------------
def _offset_matrix(stats: SuffStats, c: float) -> np.ndarray:
    """``X^T X + c I`` (cached per statistics object; treat as read-only)."""
    key = ("offset", c)
    if key not in stats._cache:
        stats._cache[key] = stats.xtx + c * np.eye(stats.d)
    return stats._cache[key]


def _fit_trivial(stats, rel, *, rng, size, rho, xtx_offset, solve=True):
    return FitResult(np.zeros((size, stats.d)), np.full(size, np.nan), np.zeros(size, bool))


def _fit_ols(stats, rel, *, rng, size, rho, xtx_offset, solve=True):
    theta = np.linalg.lstsq(stats.xtx, stats.xty, rcond=None)[0]
    ok = bool(np.all(np.isfinite(theta)))
    theta = np.tile(theta if ok else np.nan, (size, 1)) if ok else np.full((size, stats.d), np.nan)
    return FitResult(theta, np.full(size, np.nan), np.full(size, not ok))


def _fit_ridge(stats, rel, *, rng, size, rho, xtx_offset, solve=True):
    A = np.broadcast_to(_offset_matrix(stats, 1.0), (size, stats.d, stats.d))
    b = np.broadcast_to(stats.xty, (size, stats.d))
    return _finish(A, b, np.ones(size), solve)


def _finish(A: np.ndarray, b: np.ndarray, lam: np.ndarray, solve: bool):
    """Solve the noisy systems, or hand them back for one stacked solve."""
    if not solve:
        return A, b, lam
    theta, failed = solve_batched(A, b)
    return FitResult(theta, lam, failed)


def draw_noise(
    kinds: tuple[str, ...], releases: list[Release], d: int, *, rng: np.random.Generator, size: int
) -> list[np.ndarray]:
    """The noise of every release of one run, ``size`` repeats at once.

    Gaussian releases: each repeat consumes one contiguous block of standard
    normals, ``[release 1 | release 2 | ...]`` in the order of ``releases``
    (``kinds`` says how each part is shaped: ``scalar``, ``vector`` or a
    matrix kind of :func:`dpreg.mechanisms.matrix_from_normals`).  The
    functional mechanism (``kinds == ("functional",)``) draws one block of
    Laplace variables per repeat: the ``d(d+1)/2`` quadratic coefficients,
    then the ``d`` linear ones.  One generator, one call, repeat-major: the
    first ``R`` repeats do not change when ``size`` grows.

    Returns one array per release (``(size,)``, ``(size, d)`` or
    ``(size, d, d)``); for the functional mechanism the symmetric noise on
    ``X^T X`` and the noise on ``X^T y``, both already halved where the
    objective's coefficient is twice the statistic.
    """
    if kinds == ("functional",):
        b = releases[0].scale
        m = d * (d + 1) // 2
        lap = mech.laplace_noise((size, m + d), scale=b, rng=rng)
        iu = mech._triu(d)
        quad = lap[:, :m].copy()
        quad[:, iu[0] != iu[1]] *= 0.5  # noise on the coefficient 2 M_jl -> half on M_jl
        return [mech.matrix_from_normals("symmetric", quad, d, 1.0), 0.5 * lap[:, m:]]
    widths = [mech.noise_width(k, d) for k in kinds]
    z = rng.standard_normal((size, sum(widths)))
    out = []
    lo = 0
    for kind, width, rel in zip(kinds, widths, releases, strict=True):
        part = z[:, lo : lo + width]
        lo += width
        if kind == "scalar":
            out.append(part[:, 0] * rel.scale)
        elif kind == "vector":
            out.append(part * rel.scale)
        else:
            out.append(mech.matrix_from_normals(kind, part, d, rel.scale))
    return out


def _fit_ssp_like(stats, rel, *, rng, size, rho, xtx_offset, kinds, solve=True):
    E, e = draw_noise(kinds, rel, stats.d, rng=rng, size=size)
    A = _offset_matrix(stats, xtx_offset) + E
    b = stats.xty + e
    return _finish(A, b, np.full(size, np.nan), solve)


def _fit_adassp_like(stats, rel, *, rng, size, rho, xtx_offset, kinds, shift_factor, solve=True):
    """AdaSSP (Wang 2018, Algorithm 2) with every scale written through sigma_lambda.

    ``lam_tilde = max(lam_min + sigma_l z - shift * sigma_l, 0)``,
    ``lam = max(0, sqrt(d ln(2 d^2 / rho)) sigma_l - lam_tilde)``,
    ``theta = (A + E + lam I)^{-1} (b + e)``.
    """
    d = stats.d
    sigma_l = rel[0].scale
    noise_l, E, e = draw_noise(kinds, rel, d, rng=rng, size=size)
    lam_min = stats.lambda_min(xtx_offset)
    lam_tilde = np.maximum(lam_min + noise_l - shift_factor * sigma_l, 0.0)
    lam = np.maximum(0.0, math.sqrt(d * math.log(2.0 * d * d / rho)) * sigma_l - lam_tilde)
    A = _offset_matrix(stats, xtx_offset) + E
    idx = np.arange(d)
    A[:, idx, idx] += lam[:, None]
    b = stats.xty + e
    return _finish(A, b, lam, solve)


def _fit_functional(stats, rel, *, rng, size, rho, xtx_offset, solve=True):
    """Functional mechanism (Zhang et al. 2012) for the squared loss.

    The objective ``theta^T M theta - 2 beta^T theta`` with ``M = X^T X``,
    ``beta = X^T y`` has monomial coefficients ``M_jj`` (degree 2, diagonal),
    ``2 M_jl`` (j < l) and ``-2 beta_j``.  Each coefficient gets i.i.d.
    ``Laplace(b)`` noise, ``b = sensitivity / epsilon``; the noisy minimiser
    solves ``(M~ + c I) theta = beta~`` (``c = xtx_offset`` keeps it
    comparable with the SSP family).
    """
    E, v = draw_noise(("functional",), rel, stats.d, rng=rng, size=size)
    A = _offset_matrix(stats, xtx_offset) + E
    return _finish(A, stats.xty + v, np.full(size, np.nan), solve)


def _check_run_params(stats: object, rho: float, xtx_offset: float) -> None:
    if not isinstance(stats, SuffStats):
        raise DPRegError("stats must be a dpreg.stats.SuffStats")
    if not (0.0 < rho < 1.0):
        raise DPRegError(f"rho must lie in (0, 1), got {rho!r}")
    if not (xtx_offset >= 0 and math.isfinite(xtx_offset)):
        raise DPRegError(f"xtx_offset must be a finite number >= 0, got {xtx_offset!r}")


@lru_cache(maxsize=4096)
def _cached_releases(fn, eps, delta, d, bx, by, rho) -> tuple[Release, ...]:
    """Release lists are pure functions of their arguments; the analytic and
    GDP calibrations run a root finder, so they are computed once."""
    return tuple(fn(eps, delta, d, bx, by, rho))


# --------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm.

    Attributes
    ----------
    name, label : str
        Config name and a human label for legends.
    private : bool
        Whether the algorithm releases only noisy statistics.
    calibration : str
        ``none``, ``wang``, ``classical``, ``analytic``, ``gdp`` or ``laplace``.
    has_lambda : bool
        Whether a ridge parameter is reported per trial.
    validity_epsilon : float or None
        Total epsilon from which the per-release epsilon reaches 1, i.e. the
        classical bound is no longer proven (``None``: always valid).
    reproduction : bool
        A reproduction of published code whose privacy the project does not
        claim (Wang's scales).
    """

    name: str
    label: str
    private: bool
    calibration: str
    has_lambda: bool
    validity_epsilon: float | None
    _releases: Callable[..., list[Release]] = field(repr=False)
    _fit: Callable[..., FitResult] = field(repr=False)
    reproduction: bool = False
    description: str = ""
    noise_kinds: tuple[str, ...] = ()

    def outside_validity(self, epsilon: float) -> bool:
        """Whether ``epsilon`` puts a classical-style calibration outside its proof."""
        return self.validity_epsilon is not None and epsilon >= self.validity_epsilon

    def releases(
        self,
        *,
        epsilon: float,
        delta: float,
        d: int,
        bound_x: float = 1.0,
        bound_y: float = 1.0,
        rho: float = 0.05,
    ) -> list[Release]:
        """The noisy releases this algorithm makes at (epsilon, delta)."""
        eps = check_epsilon(epsilon)
        dlt = check_delta(delta)
        return list(
            _cached_releases(self._releases, eps, dlt, int(d), float(bound_x), float(bound_y), rho)
        )

    def fit(
        self,
        stats: SuffStats,
        *,
        epsilon: float,
        delta: float,
        rng: np.random.Generator,
        size: int = 1,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
    ) -> FitResult:
        """Draw ``size`` repeats of the algorithm on ``stats``.

        Parameters
        ----------
        stats : SuffStats
            Training statistics; their rows were checked against
            ``stats.bound_x`` and ``stats.bound_y`` when they were built.
        epsilon, delta : float
            Total privacy budget of one run (``epsilon > 0``, ``0 < delta < 1``).
        rng : numpy.random.Generator
            Source of all noise (keyword-only; never global state).
        size : int
            Number of noise repeats drawn and solved in one batch.
        rho : float
            AdaSSP failure probability (Wang 2018), in (0, 1).
        xtx_offset : float
            ``c`` in ``A = X^T X + c I`` (Wang's code: 1).
        """
        return self.fit_grid(
            stats,
            epsilons=[epsilon],
            delta=delta,
            rngs=[rng],
            size=size,
            rho=rho,
            xtx_offset=xtx_offset,
        )

    def fit_grid(
        self,
        stats: SuffStats,
        *,
        epsilons: list[float],
        delta: float,
        rngs: list[np.random.Generator | None],
        size: int = 1,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
    ) -> FitResult:
        """:meth:`fit` for every epsilon of a grid, each with its own ``rng``.

        Non-private algorithms draw nothing (their ``rngs`` may be None).
        The noise of each epsilon is drawn from its own generator exactly as
        :meth:`fit` draws it; all ``len(epsilons) * size`` noisy systems are
        then solved in one stacked call.  Results are bit-identical to
        calling :meth:`fit` per epsilon and concatenating (a batched solve
        treats every matrix independently).
        """
        _check_run_params(stats, rho, xtx_offset)
        if not self.private:
            # no noise: every epsilon gives the same coefficients; fit them once
            one = self._fit(
                stats, [], rng=None, size=int(size), rho=float(rho), xtx_offset=float(xtx_offset)
            )
            k = len(epsilons)
            return FitResult(
                np.tile(one.theta, (k, 1)), np.tile(one.lam, k), np.tile(one.failed, k)
            )
        parts = []
        for eps, rng in zip(epsilons, rngs, strict=True):
            rel = self.releases(
                epsilon=eps,
                delta=delta,
                d=stats.d,
                bound_x=stats.bound_x,
                bound_y=stats.bound_y,
                rho=rho,
            )
            parts.append(
                self._fit(
                    stats,
                    rel,
                    rng=rng,
                    size=int(size),
                    rho=float(rho),
                    xtx_offset=float(xtx_offset),
                    solve=False,
                )
            )
        if isinstance(parts[0], FitResult):
            return FitResult(
                np.concatenate([p.theta for p in parts]),
                np.concatenate([p.lam for p in parts]),
                np.concatenate([p.failed for p in parts]),
            )
        A = np.concatenate([p[0] for p in parts])
        b = np.concatenate([p[1] for p in parts])
        theta, failed = solve_batched(A, b)
        return FitResult(theta, np.concatenate([p[2] for p in parts]), failed)


#: How each private algorithm's noise block is laid out (see :func:`draw_noise`).
_KINDS = {
    "ssp-wang": ("full", "vector"),
    "ssp": ("symmetric", "vector"),
    "ssp-gdp": ("symmetric", "vector"),
    "adassp-wang": ("scalar", "wang", "vector"),
    "adassp": ("scalar", "symmetric", "vector"),
    "adassp-analytic": ("scalar", "symmetric", "vector"),
    "adassp-gdp": ("scalar", "symmetric", "vector"),
    "functional": ("functional",),
}


def _adassp_fit(name: str, shift: Callable[[float], float]) -> Callable:
    def fit(stats, rel, **kw):
        delta = 3.0 * rel[0].delta  # each AdaSSP release carries delta / 3
        return _fit_adassp_like(stats, rel, kinds=_KINDS[name], shift_factor=shift(delta), **kw)

    return fit


def _wang_shift(delta: float) -> float:
    """Wang's code: L = ln(6/delta); the shift L/(eps/3) B^2 equals sqrt(L) sigma."""
    return math.sqrt(math.log(6.0 / delta))


def _kalaja_shift(delta: float) -> float:
    """Kalaja's Algorithm 3: L' = 2 ln(3.75/delta) replaces L everywhere."""
    return math.sqrt(2.0 * math.log(3.75 / delta))


def _make_registry() -> dict[str, Algorithm]:
    ssp_wang_fit = partial(_fit_ssp_like, kinds=_KINDS["ssp-wang"])
    ssp_fit = partial(_fit_ssp_like, kinds=_KINDS["ssp"])
    algs = [
        Algorithm(
            "trivial",
            "trivial (θ = 0)",
            False,
            "none",
            False,
            None,
            _no_releases,
            _fit_trivial,
            description="theta = 0",
        ),
        Algorithm(
            "ols",
            "OLS (non-private)",
            False,
            "none",
            False,
            None,
            _no_releases,
            _fit_ols,
            description="least squares, no privacy",
        ),
        Algorithm(
            "ridge",
            "ridge λ=1 (non-private)",
            False,
            "none",
            True,
            None,
            _no_releases,
            _fit_ridge,
            description="(XtX + I)^-1 Xty, no privacy",
        ),
        Algorithm(
            "ssp-wang",
            "SSP (Wang's code)",
            True,
            "wang",
            False,
            2.0,
            _releases_ssp_wang,
            ssp_wang_fit,
            reproduction=True,
            description="Wang's SSP: full non-symmetric noise, s = sqrt(ln(4/δ))/ε",
        ),
        Algorithm(
            "ssp",
            "SSP (fixed)",
            True,
            "classical",
            False,
            2.0,
            _releases_ssp,
            ssp_fit,
            description="Kalaja Alg. 1: (ε/2, δ/2) classical Gaussian, symmetric noise",
        ),
        Algorithm(
            "ssp-gdp",
            "SSP (GDP)",
            True,
            "gdp",
            False,
            None,
            _releases_ssp_gdp,
            ssp_fit,
            description="SSP with exact mu-GDP accounting",
        ),
        Algorithm(
            "adassp-wang",
            "AdaSSP (Wang's code)",
            True,
            "wang",
            True,
            3.0,
            _releases_adassp_wang,
            _adassp_fit("adassp-wang", _wang_shift),
            reproduction=True,
            description="Wang's Algorithm 2 as in his code",
        ),
        Algorithm(
            "adassp",
            "AdaSSP (fixed)",
            True,
            "classical",
            True,
            3.0,
            _releases_adassp,
            _adassp_fit("adassp", _kalaja_shift),
            description="Kalaja Alg. 3: classical Gaussian at (ε/3, δ/3)",
        ),
        Algorithm(
            "adassp-analytic",
            "AdaSSP (analytic)",
            True,
            "analytic",
            True,
            None,
            _releases_adassp_analytic,
            _adassp_fit("adassp-analytic", _wang_shift),
            description="AdaSSP with the analytic Gaussian at (ε/3, δ/3)",
        ),
        Algorithm(
            "adassp-gdp",
            "AdaSSP (GDP)",
            True,
            "gdp",
            True,
            None,
            _releases_adassp_gdp,
            _adassp_fit("adassp-gdp", _wang_shift),
            description="AdaSSP with exact mu-GDP accounting",
        ),
        Algorithm(
            "functional",
            "functional mechanism",
            True,
            "laplace",
            False,
            None,
            _releases_functional,
            _fit_functional,
            description="Zhang et al. 2012, Laplace noise on the objective",
        ),
    ]
    return {a.name: replace(a, noise_kinds=_KINDS.get(a.name, ())) for a in algs}


ALGORITHMS: dict[str, Algorithm] = _make_registry()


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by config name (the error lists the known names)."""
    if name not in ALGORITHMS:
        from dpreg.peers import PEERS

        if name in PEERS:
            raise DPRegError(
                f"{name!r} is an external peer run by the sweep, not a registry algorithm"
            )
        check_choice(name, "algorithm", [*ALGORITHMS, *PEERS])
    return ALGORITHMS[name]
