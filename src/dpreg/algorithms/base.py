"""The algorithm contract: what one registry entry declares and how it runs.

An algorithm is one :class:`Algorithm` entry in the ``ENTRIES`` list of its
family module (``dpreg.algorithms.<family>``); :mod:`dpreg.algorithms.registry`
collects every family.  The entry is the single source of the algorithm's
facts: name and legend label, its release list (what is released, with which
sensitivity, calibration and validity), the layout of its noise, its fit
function, its hyperparameters and their defaults, its plot style and the
neighbouring relation its guarantee assumes.  The config schema, plots,
ledger, audit and sweep derive everything from it.

Fit functions
-------------
``fit_fn(stats, releases, opts) -> FitResult | PendingSolve`` where ``stats``
is the training fold's :class:`~dpreg.preprocess.stats.SuffStats` (rows already checked
against ``stats.bound_x``/``stats.bound_y``), ``releases`` the list returned by
the entry's release function for this run, and ``opts`` a :class:`FitOptions`
(``rng``, ``size`` repeats, ``rho``, ``xtx_offset``, resolved hyperparameters,
the training rows for row-based algorithms, ``solve`` and ``capture``).

* The noise scales a fit uses must be read from ``releases`` (never
  recomputed), so the scale used and the scale the ledger reports cannot
  disagree.
* Every draw goes through :func:`draw_noise` or :mod:`dpreg.privacy.mechanisms`
  (naming the release it serves); a scale, clip threshold or safety margin
  the fit applies by hand goes through :func:`dpreg.privacy.drawcheck.scaled`,
  :func:`~dpreg.privacy.drawcheck.clip` or :func:`~dpreg.privacy.drawcheck.margin`, so the
  fit-versus-release check (:func:`dpreg.privacy.drawcheck.draw_check`, run on every
  entry by the contract tests and by the end-to-end audit) sees what the fit
  really draws.
* A fit whose last step is one linear solve per repeat may return a
  :class:`PendingSolve` when ``opts.solve`` is false; the sweep then stacks
  the systems of the whole epsilon grid into one batched solve.
* With ``opts.capture`` true a private fit records, under each release's
  name, the noisy value it actually went on to use (``FitResult.released``):
  the end-to-end privacy audit reads exactly these.  Post-processing after
  the releases needs no record.

Randomness: ``opts.rng`` is a :class:`numpy.random.Generator` owned by the
caller; algorithms whose noise is a block of standard normals of the same
layout (:attr:`Algorithm.noise_kinds`) share one stream per (dataset,
variant, fold, epsilon) -- common random numbers, see
:attr:`Algorithm.noise_stream`.  An algorithm with a random step that is not
privacy noise and does not depend on epsilon (TukeyEM's partition of the rows
and its batch fits; :attr:`Algorithm.epsilon_free_step`) takes that step's
randomness from ``opts.shared_seed`` when the caller passes one: every
epsilon of a grid then uses the same seed, and the step is computed once per
:meth:`Algorithm.fit_grid` call (``opts.cache``).  Each trial is still an
exact run of the algorithm; trials at different epsilons share that step,
as common random numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from dpreg._validation import DPRegError, check_delta, check_epsilon, check_noise_scale
from dpreg.algorithms.fits import (
    FitOptions,
    FitResult,
    PendingSolve,
    ReleaseContext,
    _as_result,
    _stack,
)
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy.kinds import Neighbouring, check_kind
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = ["Algorithm", "Style", "shared_child"]


@dataclass(frozen=True)
class Style:
    """How an algorithm is drawn: matplotlib colour, line style and marker."""

    color: str
    linestyle: str = "-"
    marker: str = ""


@lru_cache(maxsize=8192)
def _cached_releases(fn: Callable, ctx: ReleaseContext) -> tuple[Release, ...]:
    """Release lists are pure functions of their context; calibrations that run a
    root finder (analytic, GDP, Renyi) are computed once."""
    return tuple(fn(ctx))


def _freeze(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


@dataclass(frozen=True, eq=False)
class Algorithm:
    """A registered algorithm (one entry of a family module's ``ENTRIES``).

    Attributes
    ----------
    name : str
        Config name.
    label : str
        Legend label.
    private : bool
        Whether the algorithm releases only noisy statistics.
    calibration : str
        ``none``, ``wang``, ``classical``, ``analytic``, ``gdp``, ``laplace``,
        or another calibration named by the family.
    release_fn : callable
        ``ReleaseContext -> list[Release]``: the releases of one run.
    fit_fn : callable
        ``(stats, releases, opts) -> FitResult | PendingSolve``.
    noise_kinds : tuple of str
        Layout of the block of standard normals :func:`draw_noise` draws, one
        kind per release; empty when the fit draws in another way.
    has_lambda : bool
        Whether a ridge parameter is reported per trial.
    needs_rows : bool
        Whether the fit needs the training rows (``opts.rows``), not only
        the sufficient statistics.
    reproduction : bool
        A reproduction of published code whose privacy the project does not
        claim (e.g. Wang's scales); labelled in the ledger and audit.
    hyperparameters : mapping
        Name -> default; a config may override them (unknown names refused).
    tuned_nonprivately : tuple of str
        Hyperparameters whose defaults were tuned on data without privacy by
        their authors (labelled in tables and figures).
    tuned_privately : tuple of str
        Hyperparameters the entry chooses on the data inside its privacy
        budget (a private selection, :mod:`dpreg.algorithms.tuning`; labelled).
    neighbouring : str
        ``"add/remove"`` or ``"replace-one"``: the relation the releases'
        sensitivities are computed under.
    stacks_runs : bool
        Whether ``fit_fn`` accepts statistics of several runs stacked on a
        leading axis (:meth:`SuffStats.stack`) with ``size`` = number of runs,
        giving what one ``size=1`` call per run, drawing from the same
        generator in turn, gives -- bit for bit (checked for every entry in
        ``tests/algorithms/test_registry.py``).  :meth:`fit_runs` then makes one call.
    epsilon_free_step : bool
        Whether the fit has a random step that is not privacy noise and does
        not depend on epsilon (TukeyEM: partition and batch fits), drawn from
        ``opts.shared_seed`` when one is passed (see the module docstring).
    bound_free : bool
        Whether the guarantee holds without data bounds (no sensitivity
        depends on ``B_X``/``B_Y``); ``False``: the bounds are given.
    style : Style
        Colour, line style and marker in every figure.
    reference : str
        Short citation of where the algorithm (and its formulas) come from.
    requires : tuple of str
        Optional packages (import names) the fit needs, e.g. the library an
        entry wraps; when one is missing the entry stays known but is skipped
        with ``install_hint`` (:attr:`available`), and provenance records
        their versions.
    install_hint : str
        How to install ``requires`` (e.g. ``pip install 'dpreg[peers]'``).
    note : str
        A caveat printed under every figure that draws the algorithm.
    """

    name: str
    label: str
    private: bool
    calibration: str
    release_fn: Callable[[ReleaseContext], list[Release]] = field(repr=False)
    fit_fn: Callable[..., FitResult | PendingSolve] = field(repr=False)
    noise_kinds: tuple[str, ...] = ()
    has_lambda: bool = False
    needs_rows: bool = False
    reproduction: bool = False
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    tuned_nonprivately: tuple[str, ...] = ()
    tuned_privately: tuple[str, ...] = ()
    neighbouring: str = "add/remove"
    stacks_runs: bool = False
    epsilon_free_step: bool = False
    bound_free: bool = False
    style: Style = Style("0.3")
    reference: str = ""
    requires: tuple[str, ...] = ()
    install_hint: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hyperparameters", MappingProxyType(dict(self.hyperparameters)))
        check_kind(self.neighbouring, Neighbouring, f"{self.name}: neighbouring")

    @property
    def available(self) -> bool:
        """Whether every package of :attr:`requires` is importable (not imported here)."""
        import importlib.util

        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    @property
    def noise_stream(self) -> str:
        """Name of the random stream this algorithm's noise comes from.

        Algorithms whose noise is a standard-normal block of the same layout
        share a stream (common random numbers: paired differences between,
        e.g., AdaSSP under three calibrations have small variance); any other
        algorithm draws from a stream named after itself.  Either way the
        stream does not depend on which other algorithms are configured.
        """
        if self.noise_kinds:
            return "normals:" + "+".join(self.noise_kinds)
        return self.name

    def resolve_params(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults overridden by ``params``; an unknown name is refused."""
        out = dict(self.hyperparameters)
        for key, value in (params or {}).items():
            if key not in out:
                allowed = ", ".join(sorted(out)) or "none"
                raise DPRegError(
                    f"algorithm {self.name!r} has no hyperparameter {key!r} (allowed: {allowed})"
                )
            out[key] = value
        return out

    def releases(
        self,
        *,
        epsilon: float,
        delta: float,
        d: int,
        bound_x: float = 1.0,
        bound_y: float = 1.0,
        rho: float = 0.05,
        n: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> list[Release]:
        """The noisy releases this algorithm makes in one run at (epsilon, delta)."""
        if not self.private:
            return []
        ctx = ReleaseContext(
            check_epsilon(epsilon),
            check_delta(delta),
            int(d),
            float(bound_x),
            float(bound_y),
            float(rho),
            None if n is None else int(n),
            _freeze(self.resolve_params(params)),
        )
        out = list(_cached_releases(self.release_fn, ctx))
        for r in out:
            if r.mechanism in ("gaussian", "laplace"):
                check_noise_scale(r.scale, epsilon=r.epsilon, name=f"{self.name} {r.name} scale")
        return out

    def releases_for(
        self,
        stats: SuffStats,
        *,
        epsilon: float,
        delta: float,
        rho: float = 0.05,
        params: Mapping[str, Any] | None = None,
    ) -> list[Release]:
        """:meth:`releases` of one run on ``stats`` (its ``d``, ``n`` and bounds)."""
        return self.releases(
            epsilon=epsilon,
            delta=delta,
            d=stats.d,
            bound_x=stats.bound_x,
            bound_y=stats.bound_y,
            rho=rho,
            n=stats.n,
            params=params,
        )

    def outside_validity(self, **kw: Any) -> bool:
        """Whether any release of the run misses its nominal budget (``Release.valid``).

        Takes the keyword arguments of :meth:`releases`; this is the one
        definition of validity the ledger, tables and figures use.
        """
        return not all(r.valid for r in self.releases(**kw))

    def fit(
        self,
        stats: SuffStats,
        *,
        epsilon: float,
        delta: float,
        rng: np.random.Generator | None,
        size: int = 1,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
        params: Mapping[str, Any] | None = None,
        rows: tuple[np.ndarray, np.ndarray] | None = None,
        capture: bool = False,
        shared_seed: np.random.SeedSequence | None = None,
    ) -> FitResult:
        """Draw ``size`` repeats of the algorithm on ``stats``.

        Parameters
        ----------
        stats : SuffStats
            Training statistics; their rows were checked against
            ``stats.bound_x`` and ``stats.bound_y`` when they were built.
        epsilon, delta : float
            Total privacy budget of one run (``epsilon > 0``, ``0 < delta < 1``).
        rng : None, int, SeedSequence or Generator
            Source of all noise (keyword-only; normalised once with
            :func:`dpreg.seeding.as_generator`; never global state).
        size : int
            Number of noise repeats drawn and solved in one batch.
        rho : float
            AdaSSP failure probability (Wang 2018), in (0, 1).
        xtx_offset : float
            ``c`` in ``A = X^T X + c I`` (Wang's code: 1).
        params : mapping, optional
            Hyperparameters overriding the entry's defaults.
        rows : (X, y), optional
            The training rows, required when :attr:`needs_rows`.
        capture : bool
            Record the noisy released values (see :class:`FitResult`).
        shared_seed : SeedSequence, optional
            Seed of the epsilon-free step of an algorithm with
            :attr:`epsilon_free_step` (repeat ``r`` uses its child ``r``, so
            repeats are prefix-stable); ignored by the others.  ``None``: that
            step draws from ``rng``.
        """
        return self.fit_grid(
            stats,
            epsilons=[epsilon],
            delta=delta,
            rngs=[rng],
            size=size,
            rho=rho,
            xtx_offset=xtx_offset,
            params=params,
            rows=rows,
            capture=capture,
            shared_seed=shared_seed,
        )

    def fit_grid(
        self,
        stats: SuffStats,
        *,
        epsilons: Sequence[float],
        delta: float,
        rngs: Sequence[np.random.Generator | None],
        size: int = 1,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
        params: Mapping[str, Any] | None = None,
        rows: tuple[np.ndarray, np.ndarray] | None = None,
        capture: bool = False,
        shared_seed: np.random.SeedSequence | None = None,
    ) -> FitResult:
        """:meth:`fit` for every epsilon of a grid, each with its own ``rng``.

        Non-private algorithms draw nothing (their ``rngs`` may be None) and
        are fitted once.  For private ones the noise of each epsilon is drawn
        from its own generator exactly as :meth:`fit` draws it; systems handed
        back as :class:`PendingSolve` are solved in one stacked call, which is
        bit-identical to solving them per epsilon (a batched solve treats
        every matrix independently).  With ``shared_seed`` (see :meth:`fit`)
        the epsilon-free step is computed once for the whole grid; the result
        equals per-epsilon :meth:`fit` calls with the same ``shared_seed``.
        """
        _check_run_params(stats, rho, xtx_offset)
        if self.needs_rows:
            _check_rows(self.name, stats, rows)
        resolved = self.resolve_params(params)
        shared = _check_shared_seed(shared_seed)
        base = FitOptions(
            rng=None,
            size=int(size),
            rho=float(rho),
            xtx_offset=float(xtx_offset),
            params=MappingProxyType(resolved),
            rows=rows if self.needs_rows else None,
            solve=False,
            capture=bool(capture),
            noise_kinds=self.noise_kinds,
            shared_seed=shared if self.epsilon_free_step else None,
        )
        if not self.private:
            one = _as_result(self.fit_fn(stats, [], base))
            k = len(epsilons)
            return FitResult(
                np.tile(one.theta, (k, 1)), np.tile(one.lam, k), np.tile(one.failed, k)
            )
        parts = []
        for eps, rng in zip(epsilons, rngs, strict=True):
            rng = as_generator(rng)  # SPEC 7: None/int/SeedSequence/Generator, normalised once
            rel = self.releases_for(stats, epsilon=eps, delta=delta, rho=rho, params=resolved)
            parts.append(self.fit_fn(stats, rel, replace(base, rng=rng)))
        return _stack(parts, capture)

    def fit_runs(
        self,
        runs: Sequence[SuffStats],
        *,
        epsilon: float,
        delta: float,
        rng: np.random.Generator | None,
        rho: float = 0.05,
        xtx_offset: float = 1.0,
        params: Mapping[str, Any] | None = None,
        capture: bool = False,
    ) -> FitResult:
        """One repeat on each of several statistics, e.g. the runs of private pre-processing.

        Run ``r`` is one call of the fit function with ``size=1`` on
        ``runs[r]``, drawing from ``rng`` in turn; the releases are computed
        once from ``runs[0]`` (every run has the same ``n``, ``d`` and bounds).
        Systems handed back unsolved are solved in one stacked call.  An entry
        with :attr:`stacks_runs` does the same in one call on the stacked
        statistics (the same draws in the same order).  This is the path the
        sweep and the end-to-end audit share.
        """
        if not runs:
            raise DPRegError(f"{self.name}: fit_runs needs at least one run")
        first = runs[0]
        _check_run_params(first, rho, xtx_offset)
        if self.needs_rows:
            raise DPRegError(
                f"algorithm {self.name!r} needs the training rows and cannot run on "
                "privately pre-processed statistics"
            )
        resolved = self.resolve_params(params)
        rel = self.releases_for(first, epsilon=epsilon, delta=delta, rho=rho, params=resolved)
        opts = FitOptions(
            rng=as_generator(rng) if self.private else None,
            size=1,
            rho=float(rho),
            xtx_offset=float(xtx_offset),
            params=MappingProxyType(resolved),
            solve=False,
            capture=bool(capture),
            noise_kinds=self.noise_kinds,
        )
        if self.stacks_runs:
            stacked = SuffStats.stack(list(runs))
            return _stack([self.fit_fn(stacked, rel, replace(opts, size=len(runs)))], capture)
        return _stack([self.fit_fn(st, rel, opts) for st in runs], capture)


def _check_shared_seed(seed: object) -> np.random.SeedSequence | None:
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed
    raise DPRegError(
        f"shared_seed must be None or a numpy SeedSequence, got {type(seed).__name__} {seed!r}"
    )


def shared_child(seed: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    """Child ``index`` of ``seed``, as ``seed.spawn`` would make it, without spawning.

    ``SeedSequence.spawn`` advances a counter, so two calls give different
    children; the epsilon-free step of every epsilon of a grid needs the
    same ones.
    """
    return np.random.SeedSequence(
        seed.entropy, spawn_key=(*seed.spawn_key, int(index)), pool_size=seed.pool_size
    )


def _check_run_params(stats: object, rho: float, xtx_offset: float) -> None:
    if not isinstance(stats, SuffStats):
        raise DPRegError("stats must be a dpreg.preprocess.stats.SuffStats")
    if not (0.0 < rho < 1.0):
        raise DPRegError(f"rho must lie in (0, 1), got {rho!r}")
    if not (xtx_offset >= 0 and math.isfinite(xtx_offset)):
        raise DPRegError(f"xtx_offset must be a finite number >= 0, got {xtx_offset!r}")


def _check_rows(name: str, stats: SuffStats, rows: object) -> None:
    if rows is None:
        raise DPRegError(f"algorithm {name!r} needs the training rows (rows=(X, y))")
    X, y = cast(tuple[np.ndarray, np.ndarray], rows)
    if X.shape != (stats.n, stats.d) or y.shape != (stats.n,):
        raise DPRegError(
            f"algorithm {name!r}: rows of shape {X.shape}, {y.shape} do not match the "
            f"statistics (n={stats.n}, d={stats.d})"
        )
