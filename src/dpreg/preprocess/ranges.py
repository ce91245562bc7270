"""Public ranges and the raw moments of the rows clipped to them.

The ranges of every column (and ``y``) are declared in the config
(``public_ranges:``, with their source), never read from the data
(:class:`PublicRanges`); rows are clipped to them before any statistic is
taken, and :func:`raw_fold_moments` takes the per-fold sums of the clipped
rows that private pre-processing (:mod:`dpreg.preprocess.private`) releases
with noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpreg._validation import DPRegError
from dpreg.preprocess.spec import RowSource

__all__ = ["PublicRanges", "RawMoments", "raw_fold_moments"]


# --------------------------------------------------------------------------
# public ranges: declared in the config, never taken from the data
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class PublicRanges:
    """Per-column ranges ``[lo, hi]`` of ``X`` and ``[ylo, yhi]`` of ``y`` treated as public.

    Private pre-processing needs a priori ranges to bound its
    sensitivities.  They are domain knowledge declared in the config
    (:meth:`from_config`), listed in the ledger with their ``source``.
    """

    lo: np.ndarray
    hi: np.ndarray
    ylo: float
    yhi: float
    source: str = ""

    def __post_init__(self) -> None:
        lo = np.asarray(self.lo, dtype=float)
        hi = np.asarray(self.hi, dtype=float)
        if lo.shape != hi.shape or lo.ndim != 1:
            raise DPRegError("public ranges: lo and hi must be vectors of the same length")
        ok = np.isfinite(lo) & np.isfinite(hi) & (lo <= hi)
        if not ok.all() or not (math.isfinite(self.ylo) and math.isfinite(self.yhi)):
            raise DPRegError("public ranges must be finite with lo <= hi")
        if self.ylo > self.yhi:
            raise DPRegError(f"public range of y must have lo <= hi, got [{self.ylo}, {self.yhi}]")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def centre(self) -> np.ndarray:
        return (self.lo + self.hi) / 2

    @property
    def ycentre(self) -> float:
        return (self.ylo + self.yhi) / 2

    @property
    def radius(self) -> np.ndarray:
        """Half-widths ``r = (hi - lo) / 2``: ``|x_j - c_j| <= r_j`` for a clipped row."""
        return (self.hi - self.lo) / 2

    @property
    def yradius(self) -> float:
        return (self.yhi - self.ylo) / 2

    def clip(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows clipped to the declared ranges (done before any statistic is taken)."""
        return np.clip(X, self.lo, self.hi), np.clip(y, self.ylo, self.yhi)

    @classmethod
    def from_config(
        cls,
        declared: Mapping[str, Any] | None,
        *,
        dataset: str,
        features: Sequence[str],
        target: str,
    ) -> PublicRanges:
        """Ranges of one dataset from its config entry ``public_ranges.<dataset>``.

        ``declared`` is ``{"source": text, "columns": {name: [lo, hi], ...}}``
        naming every feature of the prepared table and its target.  Missing
        or unknown columns, a missing source and ``lo > hi`` are refused with
        a message naming the dataset and the columns.
        """
        where = f"public_ranges.{dataset}"
        names = [*features, target]
        source, cols = _declared_entry(declared, where=where, dataset=dataset, names=names)
        pairs = [_range_pair(cols[c], f"{where}.columns.{c}") for c in names]
        lo = np.array([p[0] for p in pairs[:-1]])
        hi = np.array([p[1] for p in pairs[:-1]])
        return cls(lo, hi, pairs[-1][0], pairs[-1][1], source)


def _declared_entry(
    declared: Mapping[str, Any] | None, *, where: str, dataset: str, names: list[str]
) -> tuple[str, Mapping[str, Any]]:
    """The checked ``(source, columns)`` of one dataset's ``public_ranges`` entry."""
    if declared is None:
        raise DPRegError(
            f"dataset {dataset!r}: private_stats needs public ranges declared under "
            f"{where}.columns (never taken from the data); missing columns: {', '.join(names)}"
        )
    if not isinstance(declared, Mapping) or set(declared) - {"source", "columns"}:
        raise DPRegError(f"{where} must be a mapping with keys 'source' and 'columns'")
    source = declared.get("source")
    if not isinstance(source, str) or not source.strip():
        raise DPRegError(f"{where}.source must say where the ranges come from (a text)")
    cols = declared.get("columns")
    if not isinstance(cols, Mapping):
        raise DPRegError(f"{where}.columns must map column names to [lo, hi]")
    missing = [c for c in names if c not in cols]
    if missing:
        raise DPRegError(
            f"dataset {dataset!r}: {where}.columns has no range for column(s) "
            f"{', '.join(missing)}; private_stats needs every column's range"
        )
    unknown = sorted(set(cols) - set(names))
    if unknown:
        raise DPRegError(
            f"{where}.columns: unknown column(s) {', '.join(map(str, unknown))}; "
            f"the prepared table has {', '.join(names)}"
        )
    return source.strip(), cols


def _range_pair(v: object, where: str) -> tuple[float, float]:
    ok = (
        isinstance(v, Sequence)
        and not isinstance(v, str)
        and len(v) == 2
        and all(isinstance(t, int | float) and not isinstance(t, bool) for t in v)
    )
    if not ok or not (math.isfinite(v[0]) and math.isfinite(v[1]) and v[0] <= v[1]):  # type: ignore[index]
        raise DPRegError(f"{where} must be [lo, hi] with finite numbers lo <= hi, got {v!r}")
    return float(v[0]), float(v[1])  # type: ignore[index]


# --------------------------------------------------------------------------
# raw moments of the clipped rows
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class RawMoments:
    """Raw moments of clipped rows shifted by the public centre ``c`` of their ranges.

    ``sx = sum (x - c)``, ``sxx = sum (x - c)(x - c)^T``, ``sxy``, ``sy``, ``syy``
    (``y`` shifted by ``c_y``).  Additive, so a training fold is the total
    minus its test fold.  ``xlo``/``xhi``/``ylo``/``yhi`` are per-column
    extremes of the clipped rows, used only by the bound check (a
    difference keeps the extremes of its left operand, a superset of the
    rows, which keeps the check valid).
    """

    n: float
    sx: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray
    sy: float
    syy: float
    xlo: np.ndarray
    xhi: np.ndarray
    ylo: float
    yhi: float

    @classmethod
    def zeros(cls, d: int) -> RawMoments:
        inf = np.full(d, np.inf)
        return cls(
            0.0, np.zeros(d), np.zeros((d, d)), np.zeros(d), 0.0, 0.0, inf, -inf, np.inf, -np.inf
        )

    @classmethod
    def of_rows(cls, A: np.ndarray, b: np.ndarray) -> RawMoments:
        """Moments of centred clipped rows ``A = x - c``, ``b = y - c_y``."""
        return cls(
            float(A.shape[0]),
            A.sum(0),
            A.T @ A,
            A.T @ b,
            float(b.sum()),
            float(b @ b),
            A.min(0),
            A.max(0),
            float(b.min()),
            float(b.max()),
        )

    def __sub__(self, o: RawMoments) -> RawMoments:
        return RawMoments(
            self.n - o.n,
            self.sx - o.sx,
            self.sxx - o.sxx,
            self.sxy - o.sxy,
            self.sy - o.sy,
            self.syy - o.syy,
            self.xlo,
            self.xhi,
            self.ylo,
            self.yhi,
        )

    def __add__(self, o: RawMoments) -> RawMoments:
        return RawMoments(
            self.n + o.n,
            self.sx + o.sx,
            self.sxx + o.sxx,
            self.sxy + o.sxy,
            self.sy + o.sy,
            self.syy + o.syy,
            np.minimum(self.xlo, o.xlo),
            np.maximum(self.xhi, o.xhi),
            min(self.ylo, o.ylo),
            max(self.yhi, o.yhi),
        )


def raw_fold_moments(
    source: RowSource, folds: int, *, ranges: PublicRanges | None = None
) -> tuple[PublicRanges, list[RawMoments]]:
    """Per-fold raw moments of the rows clipped to the declared public ranges (one pass).

    ``ranges`` must come from the config (:meth:`PublicRanges.from_config`);
    nothing about the ranges is read from the data.  Returns ``(ranges,
    moments)``.
    """
    if ranges is None:
        raise DPRegError(
            "private pre-processing needs declared public ranges (config key public_ranges); "
            "they are never taken from the data"
        )
    if ranges.lo.size != source.d:
        raise DPRegError(
            f"public ranges cover {ranges.lo.size} feature columns, the data has {source.d}"
        )
    mom = [RawMoments.zeros(source.d) for _ in range(folds)]
    for X, y, f in source.chunks():
        Xc, yc = ranges.clip(X, y)
        A = Xc - ranges.centre
        b = yc - ranges.ycentre
        for k in range(folds):
            m = f == k
            if m.any():
                mom[k] = mom[k] + RawMoments.of_rows(A[m], b[m])
    return ranges, mom
