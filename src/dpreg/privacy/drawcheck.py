"""What a fit actually draws, checked against the releases its entry declares.

While :func:`recording` is active, every privacy-noise draw made through
:mod:`dpreg.privacy.mechanisms` (and every scale, clip threshold or safety margin a
family applies by hand through :func:`scaled`, :func:`clip` and
:func:`margin`) appends a :class:`Draw` -- the release it serves, the draw
family, its shape and the scale actually applied -- to a context-local log.
Outside :func:`recording` the hooks cost one :class:`contextvars.ContextVar`
lookup each and record nothing (the sweep never records).

:func:`compare_draws` then checks, deterministically and without
statistics, that the draws agree with the releases:

* a named noise draw has the mechanism family its release declares
  (Gaussian for ``gaussian`` and for the stated mechanisms that add Gaussian
  noise -- ``objpert``, ``ops``, ``noisysgd``, ``sheffet-jl``,
  ``renyi-mixing``, ``gaussian-mixing`` --, Laplace for ``laplace``, Gumbel for ``exponential``,
  Poisson -- the number of runs, scale its mean -- for ``poisson-selection``)
  and the release's scale within a relative ``1e-9`` (or at most that scale
  where the release declares the largest scale any repeat can use,
  ``bound=True``);
* a draw that states the sensitivity it assumes (``noisysgd``, whose scale
  follows a data-dependent Lipschitz bound) has the release's noise-to-
  sensitivity ratio;
* a clip of per-row contributions at ``C`` on rows of norm ``<= B`` implies
  a sensitivity ``B C`` (``2 B C`` under replace-one), which must equal the
  release's;
* a safety margin of ``x`` noise scales fails with probability ``Phi(-x)``
  (Gaussian) or ``exp(-x)/2`` (Laplace): equal to the delta of the
  ``failure`` release it is declared as, or within the delta of the
  release it protects;
* every release that adds noise, and every ``failure`` release, is matched
  by at least one draw (except the candidates' releases inside a private
  selection, :mod:`dpreg.privacy.selection`: a candidate is run a random
  number of times, possibly none -- but a candidate that ran drew every one
  of its releases).

:func:`draw_check` fits an entry once under :func:`recording` and returns
the mismatches; the contract tests run it on every registry entry.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from dpreg.privacy.accounting import Release

__all__ = [
    "DRAW_FAMILY",
    "Draw",
    "active",
    "clip",
    "compare_draws",
    "draw_check",
    "margin",
    "prefixed",
    "record",
    "recording",
    "scaled",
    "serving",
]

#: The noise family each release mechanism draws from (``None``: adds no noise itself).
DRAW_FAMILY: dict[str, str | None] = {
    "gaussian": "gaussian",
    "laplace": "laplace",
    "objpert": "gaussian",
    "ops": "gaussian",
    "noisysgd": "gaussian",
    "sheffet-jl": "gaussian",
    "renyi-mixing": "gaussian",
    "gaussian-mixing": "gaussian",
    "exponential": "gumbel",
    "external": None,
    "poisson-selection": "poisson",
    "failure": None,
    "none": None,
}

#: Relative tolerance of "the same scale within rounding".
RTOL = 1e-9


@dataclass(frozen=True)
class Draw:
    """One recorded privacy draw, clip or margin.

    Attributes
    ----------
    release : str or None
        Name of the release it serves; ``None`` for draws whose scale is
        applied later (standard normals scaled by :func:`scaled`) or that are
        not privacy noise.
    mechanism : str
        ``gaussian``, ``laplace``, ``gumbel``, ``clip``, ``margin-gaussian``
        or ``margin-laplace``.
    shape : tuple of int
    scale : float
        Noise sd, Laplace ``b``, Gumbel scale (``1 / coefficient`` of the
        score), the sensitivity a clip implies, or a margin in noise scales.
        For draws with several scales (one per repeat) the largest.
    bound : bool
        The release declares the largest scale any repeat can use: the draw
        must not exceed it (instead of equalling it).
    sensitivity : float or None
        The sensitivity the fit assumed for this draw, where it is data
        dependent (its ratio to ``scale`` is then compared).
    """

    release: str | None
    mechanism: str
    shape: tuple[int, ...]
    scale: float
    bound: bool = False
    sensitivity: float | None = None


_LOG: ContextVar[list[Draw] | None] = ContextVar("dpreg_draw_log", default=None)
_SERVING: ContextVar[str | None] = ContextVar("dpreg_draw_serving", default=None)
_PREFIX: ContextVar[str] = ContextVar("dpreg_draw_prefix", default="")


def active() -> bool:
    """Whether draws are being recorded (for hooks whose arguments cost something)."""
    return _LOG.get() is not None


@contextmanager
def recording() -> Iterator[list[Draw]]:
    """Record every draw made inside the block; yields the (growing) list of draws."""
    log: list[Draw] = []
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


@contextmanager
def serving(release: str | None) -> Iterator[None]:
    """Draws recorded inside the block without a release name serve ``release``.

    For a draw function that calls another (the objective's Laplace noise
    through :func:`dpreg.privacy.mechanisms.laplace_noise`): the inner draw records
    the scale it really applies, under the outer call's release.  A no-op
    when not recording.
    """
    if release is None or _LOG.get() is None:
        yield
        return
    token = _SERVING.set(release)
    try:
        yield
    finally:
        _SERVING.reset(token)


@contextmanager
def prefixed(prefix: str) -> Iterator[None]:
    """Draws, clips and margins recorded inside the block serve ``prefix + release``.

    For a wrapper that runs another entry's fit under its own release names
    (a candidate of a private selection, :mod:`dpreg.privacy.selection`).  A
    no-op when not recording.
    """
    if _LOG.get() is None:
        yield
        return
    token = _PREFIX.set(_PREFIX.get() + prefix)
    try:
        yield
    finally:
        _PREFIX.reset(token)


def record(
    release: str | None,
    mechanism: str,
    scale: Any,
    shape: Sequence[int] = (),
    *,
    bound: bool = False,
    sensitivity: Any = None,
) -> None:
    """Append one draw to the active log (no-op when not recording).

    ``scale`` (and ``sensitivity``) may be arrays (one value per repeat):
    the largest is recorded (and the smallest too, unless ``bound``), and
    with ``sensitivity`` the ratio is checked for every repeat (the one
    furthest from the first repeat's is kept).
    """
    log = _LOG.get()
    if log is None:
        return
    if release is None:
        release = _SERVING.get()
    if release is not None:
        release = _PREFIX.get() + release
    s = np.asarray(scale, dtype=float)
    if sensitivity is not None:
        se = np.broadcast_to(np.asarray(sensitivity, dtype=float), s.shape)
        ratio = s / se
        # keep the ratio furthest from the first one, expressed at sensitivity 1
        flat = ratio.ravel()
        worst = float(flat[np.argmax(np.abs(flat - flat[0]))]) if flat.size else math.nan
        log.append(Draw(release, mechanism, tuple(int(k) for k in shape), worst, bound, 1.0))
        return
    shp = tuple(int(k) for k in shape)
    if not s.size:
        log.append(Draw(release, mechanism, shp, math.nan, bound))
        return
    hi = float(np.max(s))
    log.append(Draw(release, mechanism, shp, hi, bound))
    lo = float(np.min(s))
    if lo != hi and not bound:  # per-repeat scales that must all equal the declared one
        log.append(Draw(release, mechanism, shp, lo, bound))


def scaled(
    z: np.ndarray,
    scale: Any,
    *,
    release: str,
    bound: bool = False,
    sensitivity: Any = None,
) -> np.ndarray:
    """``z * scale`` for standard-normal ``z``, recorded as a Gaussian draw of ``release``.

    ``scale`` is a number or one value per repeat (leading axis of ``z``).
    """
    s = np.asarray(scale, dtype=float)
    record(release, "gaussian", s, np.shape(z), bound=bound, sensitivity=sensitivity)
    if s.ndim:
        return z * s.reshape(s.shape + (1,) * (np.ndim(z) - s.ndim))
    return z * s


def clip(
    values: np.ndarray,
    threshold: float,
    *,
    release: str,
    row_norm: float,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``clip(values, -C, C)``, recorded as implying sensitivity ``row_norm * C`` for ``release``.

    For per-row contributions ``x_i clip(r_i, -C, C)`` with ``||x_i|| <= row_norm``.
    ``out``: an array of the same shape to write into (as :func:`numpy.clip`).
    """
    record(release, "clip", row_norm * threshold, np.shape(values))
    return np.clip(values, -threshold, threshold, out=out)


def margin(release: str, sds: Any, *, tail: str = "gaussian") -> None:
    """Record a safety margin of ``sds`` noise scales protecting (or declared as) ``release``.

    ``tail``: ``gaussian`` (fails with ``Phi(-sds)``) or ``laplace``
    (``exp(-sds)/2``).  With one margin per repeat the smallest is recorded.
    """
    s = np.asarray(sds, dtype=float)
    log = _LOG.get()
    if log is None:
        return
    release = _PREFIX.get() + release
    log.append(Draw(release, f"margin-{tail}", s.shape, float(np.min(s)) if s.size else math.nan))


def _tail(draw: Draw) -> float:
    if draw.mechanism == "margin-gaussian":
        return 0.5 * math.erfc(draw.scale / math.sqrt(2.0))
    return 0.5 * math.exp(-draw.scale)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=0.0)


def compare_draws(
    releases: Sequence[Release], draws: Sequence[Draw], *, neighbouring: str = "add/remove"
) -> list[str]:
    """Every disagreement between what was drawn and what the releases declare.

    See the module docstring for the rules; an empty list means the fit
    drew exactly what its releases say.
    """
    problems: list[str] = []
    by_name = {r.name: r for r in releases}
    served: set[str] = set()
    factor = 2.0 if neighbouring == "replace-one" else 1.0
    for dr in draws:
        if dr.release is None:
            continue
        r = by_name.get(dr.release)
        if r is None:
            problems.append(f"{dr.mechanism} draw for undeclared release {dr.release!r}")
            continue
        if dr.mechanism == "clip":
            implied = dr.scale * factor
            if not _close(implied, r.sensitivity):
                problems.append(
                    f"{r.name}: clip implies sensitivity {implied:.10g}, "
                    f"the release declares {r.sensitivity:.10g}"
                )
            continue
        if dr.mechanism.startswith("margin-"):
            p = _tail(dr)
            served.add(r.name)
            if r.mechanism == "failure":
                if not _close(p, r.delta):
                    problems.append(
                        f"{r.name}: margin of {dr.scale:.10g} scales fails with probability "
                        f"{p:.10g}, the ledger counts {r.delta:.10g}"
                    )
            elif p > r.delta * (1 + RTOL):
                problems.append(
                    f"{r.name}: margin of {dr.scale:.10g} scales fails with probability "
                    f"{p:.10g} > the release's delta {r.delta:.10g}"
                )
            continue
        family = DRAW_FAMILY.get(r.mechanism)
        if family != dr.mechanism:
            problems.append(
                f"{r.name}: drew {dr.mechanism} noise, the release declares {r.mechanism} "
                f"(draws {family})"
            )
            continue
        served.add(r.name)
        if dr.sensitivity is not None:
            want = r.scale / r.sensitivity
            if not _close(dr.scale / dr.sensitivity, want):
                problems.append(
                    f"{r.name}: noise/sensitivity {dr.scale / dr.sensitivity:.10g}, "
                    f"the release declares {want:.10g}"
                )
        elif dr.bound:
            if dr.scale > r.scale * (1 + RTOL):
                problems.append(
                    f"{r.name}: drew scale {dr.scale:.10g} above the declared largest "
                    f"{r.scale:.10g}"
                )
        elif not _close(dr.scale, r.scale):
            problems.append(
                f"{r.name}: drew {dr.mechanism} scale {dr.scale:.10g}, "
                f"the release declares {r.scale:.10g}"
            )
    from dpreg.privacy.selection import incomplete_candidates, optional_releases

    optional = optional_releases(releases)
    problems += incomplete_candidates(releases, served)
    for r in releases:
        if (DRAW_FAMILY.get(r.mechanism) is not None or r.mechanism == "failure") and (
            r.name not in served and r.name not in optional
        ):
            if r.mechanism == "failure" and r.delta == 0.0:
                continue  # a tail that underflows to 0 needs no margin
            problems.append(f"{r.name}: declared ({r.mechanism}) but never drawn or applied")
    return problems


def draw_check(
    algorithm: Any,
    stats: Any,
    *,
    epsilon: float,
    delta: float,
    rng: Any,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
    size: int = 2,
    params: Any = None,
) -> list[str]:
    """Fit ``algorithm`` once while recording and compare its draws with its releases.

    ``algorithm`` is an :class:`~dpreg.algorithms.base.Algorithm` (built-in
    or plug-in); returns the list of mismatches (empty: the fit draws what
    the ledger says).  A non-private entry must draw no named noise.
    """
    with recording() as log:
        algorithm.fit(
            stats,
            epsilon=epsilon,
            delta=delta,
            rng=rng,
            size=size,
            params=params,
            rows=rows if algorithm.needs_rows else None,
        )
    releases = algorithm.releases_for(stats, epsilon=epsilon, delta=delta, params=params)
    return compare_draws(releases, log, neighbouring=algorithm.neighbouring)
