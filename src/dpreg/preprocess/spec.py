"""Variant specification and row sources of the pre-processing (SPEC section 4).

A variant is a frozen :class:`VariantSpec` read from a config ``variants:``
entry; rows reach the pre-processing as chunks of a :class:`RowSource`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np

from dpreg._validation import DPRegError, check_choice

__all__ = [
    "SCALES",
    "STATS_SOURCES",
    "VARIANT_KEYS",
    "INTERCEPTS",
    "ArraySource",
    "PrivateStatsSpec",
    "RowSource",
    "VariantSpec",
    "nonprivate_statistics",
]

SCALES = ("rownorm", "rownorm-y", "maxnorm")
STATS_SOURCES = ("global", "train")
#: Values of the variant key ``intercept``: none, today's column of ones
#: divided by ``x_max`` with the features (``true`` is an alias of
#: ``scaled``), or the thesis' form (Kalaja 2020, Eq. 3.6) with the ones
#: column left at 1.
INTERCEPTS = (False, True, "scaled", "thesis")


@dataclass(frozen=True)
class PrivateStatsSpec:
    """Release the transform statistics privately (thesis option 3).

    ``epsilon_share`` of the total epsilon (and the same share of delta) is
    spent on the column means, sds and y scale; the rest goes to the
    regression algorithm.

    ``exact=True`` is the control of that variant, *not* private in its
    statistics: the same public ranges (clipping, ``y_scale``, and ``x_max``
    from the ranges) but the exact training-fold means, sds and y centre of
    the clipped rows, no statistics release, and the whole (epsilon, delta)
    for the algorithm (``epsilon_share`` is 0).  Against the private variant
    it isolates the cost of the noisy statistics; against ``stats: train``
    without ``private_stats`` the cost of the public ranges.
    """

    epsilon_share: float = 0.1
    exact: bool = False


@dataclass(frozen=True)
class VariantSpec:
    """One pre-processing variant (config ``variants:`` entry).

    Parameters
    ----------
    stats : {"global", "train"}
        Where means, sds and maxima come from.
    clip_sigma : float or None
        ``c`` of the upper clipping threshold ``mean + c sd``; None: no clipping.
    clip_test : bool
        Also clip test rows with the training thresholds (Eq. 3.9).
    center_y : bool
        Subtract the mean of ``y`` before scaling it.
    standardize : bool
        Standardise the columns of ``X``.
    intercept : {False, True, "scaled", "thesis"}
        Append a column of ones after standardising.  ``"scaled"`` (or
        ``True``): the ones column is mapped to the unit ball with the
        features, so under ``maxnorm`` it becomes ``1 / x_max`` and rows keep
        norm at most 1.  ``"thesis"``: Kalaja (2020), Eq. 3.6, the
        prediction is ``theta_0 + sum_j theta_j (x_j - mean_j) / (x_max sd_j)``
        -- the ones column stays 1 and only the features are divided by
        ``x_max`` (their largest norm); a row then has norm at most
        ``sqrt(2)``, the bound the sensitivities are computed with
        (:attr:`row_bound`).  Needs ``scale: maxnorm``.
    scale : {"rownorm", "rownorm-y", "maxnorm"}
        Mapping to the unit ball.
    private_stats : PrivateStatsSpec or None
        Release the transform statistics with noise (see :class:`PrivateStatsSpec`).
    """

    stats: str = "train"
    clip_sigma: float | None = None
    clip_test: bool = False
    center_y: bool = True
    standardize: bool = True
    intercept: bool | str = False
    scale: str = "maxnorm"
    private_stats: PrivateStatsSpec | None = None

    def __post_init__(self) -> None:
        check_choice(self.stats, "variant key 'stats'", STATS_SOURCES)
        check_choice(self.scale, "variant key 'scale'", SCALES)
        if self.clip_sigma is not None:
            c = self.clip_sigma
            if isinstance(c, bool) or not isinstance(c, int | float) or not (c > 0):
                raise DPRegError(
                    f"variant key 'clip_sigma' must be null or a number > 0, got {c!r}"
                )
        for key in ("clip_test", "center_y", "standardize"):
            if not isinstance(getattr(self, key), bool):
                raise DPRegError(f"variant key {key!r} must be true or false")
        if self.clip_test and self.clip_sigma is None:
            raise DPRegError(
                "variant key 'clip_test': true clips test rows at the training clip, "
                "which needs 'clip_sigma' (a number > 0); set clip_sigma or drop clip_test"
            )
        if not (isinstance(self.intercept, bool) or self.intercept in ("scaled", "thesis")):
            raise DPRegError(
                "variant key 'intercept' must be false, true, 'scaled' or 'thesis', "
                f"got {self.intercept!r}"
            )
        if self.intercept == "thesis" and self.scale != "maxnorm":
            raise DPRegError(
                f"variant key 'intercept': 'thesis' (Eq. 3.6) needs scale 'maxnorm', "
                f"got scale {self.scale!r}"
            )
        if self.private_stats is not None:
            share, exact = self.private_stats.epsilon_share, self.private_stats.exact
            if not isinstance(exact, bool):
                raise DPRegError(
                    f"variant key 'private_stats.exact' must be true or false, got {exact!r}"
                )
            if exact and share != 0:
                raise DPRegError(
                    "variant key 'private_stats.exact': true takes the statistics without "
                    f"noise and spends no budget on them; drop epsilon_share (got {share!r})"
                )
            if not exact and not (
                isinstance(share, int | float) and not isinstance(share, bool) and 0 < share < 1
            ):
                raise DPRegError(
                    f"variant key 'private_stats.epsilon_share' must lie in (0, 1), got {share!r}"
                )

    @property
    def releases_statistics(self) -> bool:
        """Whether the transform statistics are released with noise (private_stats, not exact)."""
        return self.private_stats is not None and not self.private_stats.exact

    @property
    def has_intercept(self) -> bool:
        """Whether a column of ones is appended."""
        return self.intercept is not False

    @property
    def intercept_form(self) -> str | None:
        """``None``, ``"scaled"`` (today's form) or ``"thesis"`` (Eq. 3.6)."""
        if self.intercept is False:
            return None
        return "thesis" if self.intercept == "thesis" else "scaled"

    @property
    def row_bound(self) -> float:
        """Norm bound ``B_X`` of a mapped training row: ``sqrt(2)`` for the thesis'
        intercept (features of norm <= 1 plus a coordinate equal to 1), else 1."""
        return math.sqrt(2.0) if self.intercept_form == "thesis" else 1.0

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any] | VariantSpec, name: str = "variant") -> VariantSpec:
        """Build from a config mapping; unknown keys are named in the error."""
        if isinstance(spec, VariantSpec):
            return spec
        if not isinstance(spec, Mapping):
            raise DPRegError(f"variant {name!r} must be a mapping of options, got {spec!r}")
        unknown = sorted(set(spec) - set(VARIANT_KEYS))
        if unknown:
            raise DPRegError(
                f"variant {name!r}: unknown key(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(VARIANT_KEYS)}"
            )
        kw = dict(spec)
        ps = kw.get("private_stats")
        if ps is not None:
            if not isinstance(ps, Mapping) or set(ps) - {"epsilon_share", "exact"}:
                raise DPRegError(
                    f"variant {name!r}: private_stats must be a mapping with key epsilon_share "
                    "(or exact: true)"
                )
            ps = dict(ps)
            if ps.get("exact") is True:
                ps.setdefault("epsilon_share", 0.0)
            try:
                kw["private_stats"] = PrivateStatsSpec(**ps)
            except TypeError as err:
                raise DPRegError(f"variant {name!r}: private_stats: {err}") from None
        c = kw.get("clip_sigma")
        if isinstance(c, int) and not isinstance(c, bool):
            kw["clip_sigma"] = float(kw["clip_sigma"])
        try:
            return cls(**kw)
        except DPRegError as err:
            raise DPRegError(f"variant {name!r}: {err}") from None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.private_stats is not None:
            ps = self.private_stats
            out["private_stats"] = (
                {"exact": True} if ps.exact else {"epsilon_share": ps.epsilon_share}
            )
        return out


VARIANT_KEYS = tuple(f.name for f in fields(VariantSpec))


# --------------------------------------------------------------------------
# row sources
# --------------------------------------------------------------------------
class RowSource(Protocol):
    """Chunks of ``(X, y, fold)`` rows: ``fold[i]`` in ``0..K-1``."""

    @property
    def n(self) -> int: ...

    @property
    def d(self) -> int: ...

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]: ...


@dataclass
class ArraySource:
    """In-memory rows, served in chunks of ``chunk_rows`` (None: one chunk)."""

    X: np.ndarray
    y: np.ndarray
    fold: np.ndarray
    chunk_rows: int | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        step = self.chunk_rows or max(self.n, 1)
        for lo in range(0, self.n, step):
            yield self.X[lo : lo + step], self.y[lo : lo + step], self.fold[lo : lo + step]


def nonprivate_statistics(spec: VariantSpec) -> list[str]:
    """Statistics a variant takes from its statistics rows without noise."""
    rows = "all rows" if spec.stats == "global" else "training rows"
    out = [f"n (row count of the {rows})"]
    if spec.private_stats is not None:
        out.append(
            "public column ranges declared in the config (public_ranges.<dataset>, with their "
            "source): assumed known a priori, never taken from the data"
        )
        if spec.private_stats.exact:  # public ranges, exact statistics: not private
            if spec.standardize:
                out.append(f"column means and sds of the clipped {rows}, without noise")
            if spec.center_y:
                out.append(f"y centre of the clipped {rows}, without noise")
        return out
    if spec.clip_sigma is not None:
        out.append(f"clip thresholds mean + {spec.clip_sigma:g} sd ({rows})")
    if spec.standardize:
        out.append(f"column means and sds ({rows})")
    out.append(f"y centre and scale max|y| ({rows})")
    if spec.scale == "maxnorm":
        out.append(f"x_max, largest row norm ({rows})")
    elif spec.scale == "rownorm-y":
        out.append(f"y_max2, largest |y|/||x|| ({rows})")
    return out
