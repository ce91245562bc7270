"""Which lines a figure draws, and their labels and styles.

Labels, colours, line styles and markers come from the algorithm registry
(:data:`dpreg.algorithms.ALGORITHMS`: ``label`` and ``style``), with
fallbacks for names it does not hold (old tables).  A
private algorithm is one line per variant; a non-private reference is drawn
once, or once per variant when its curves differ between the variants of a
figure; an algorithm keeps its registry style in every figure, the marker fill
tells variants apart (:func:`_private_lines`,
:func:`_reference_lines`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS

__all__ = [
    "VARIANT_FILLS",
    "VARIANT_LOOKS",
    "algorithm_label",
    "algorithm_style",
    "is_reference",
    "panel_grid",
    "variant_look",
]


#: Styles of names the registry does not hold (old tables); every one has a marker.
_FALLBACK_STYLES: dict[str, tuple[str, str, str]] = {
    "ridge": ("black", ":", "d"),
    "trivial": ("0.5", ":", "."),
    "ols": ("darkslategray", "-.", "d"),
}
_FALLBACK_STYLE = ("0.3", "-", "o")
_NON_PRIVATE_FALLBACK = frozenset({"ridge", "trivial", "ols"})

#: Marker fill of an algorithm's curve under the k-th variant of a figure: the
#: colour, marker and line style stay the registry's (identical in every
#: figure), the fill tells the variants apart, in greyscale too.
VARIANT_FILLS: tuple[str, ...] = ("full", "none", "left", "bottom", "right", "top")

#: (marker, line style) of the k-th variant when the curves *are* the variants
#: (one algorithm compared across variants): distinct in greyscale.
VARIANT_LOOKS: tuple[tuple[str, str], ...] = (
    ("o", "-"),
    ("s", "--"),
    ("^", "-."),
    ("D", ":"),
    ("v", "-"),
    ("P", "--"),
    ("X", "-."),
    ("*", ":"),
)


# --------------------------------------------------------------------------
# registry lookups
# --------------------------------------------------------------------------
def _registry() -> Mapping[str, Any]:
    return ALGORITHMS


def is_reference(algorithm: str) -> bool:
    """Whether ``algorithm`` is non-private (drawn as a reference curve).

    Names the registry does not know (e.g. a plug-in not loaded) count as
    private unless they are ``ridge``, ``trivial`` or ``ols``.
    """
    spec = _registry().get(algorithm)
    if spec is None:
        return algorithm in _NON_PRIVATE_FALLBACK
    return not spec.private


def algorithm_label(algorithm: str) -> str:
    """Legend label of an algorithm: the registry's ``label`` (else the name)."""
    spec = _registry().get(algorithm)
    label = getattr(spec, "label", None) if spec is not None else None
    return str(label or algorithm)


def algorithm_style(algorithm: str) -> tuple[Any, Any, str]:
    """(colour, line style, marker) from the registry's ``style`` (else a fallback).

    An entry without a marker (a plug-in) is drawn with circles: every
    plotted point has a marker.
    """
    spec = _registry().get(algorithm)
    style = getattr(spec, "style", None) if spec is not None else None
    if style is not None:
        return style.color, style.linestyle, style.marker or "o"
    return _FALLBACK_STYLES.get(algorithm, _FALLBACK_STYLE)


def panel_grid(count: int) -> tuple[int, int]:
    """(rows, columns) of the panel grid: 1 x k up to three panels, 2 x 2 for four."""
    if count < 1:
        raise DPRegError("a figure needs at least one dataset")
    if count <= 3:
        return 1, count
    if count == 4:
        return 2, 2
    cols = 3
    return math.ceil(count / cols), cols


# --------------------------------------------------------------------------
# what is drawn
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Line:
    """One curve of the figure (``variant`` None: a reference shared by all)."""

    variant: str | None
    algorithm: str
    label: str
    color: Any
    linestyle: Any
    marker: str
    reference: bool
    dodge: float = 1.0  # x multiplier, so the interval bars of nearby curves do not overlap
    fill: str = "full"  # marker fill (matplotlib fillstyle): tells variants apart

    def plot_kwargs(self) -> dict[str, Any]:
        """Colour, line style, marker and layer of this curve for ``Axes.plot``: the
        one look every figure gives an algorithm (its registry style)."""
        return {
            "color": self.color,
            "ls": self.linestyle,
            "marker": self.marker or "o",
            "ms": 5,
            "fillstyle": self.fill,
            "mfc": self.color if self.fill == "full" else "white",
            "mfcalt": "white",
            "mec": self.color,
            "mew": 1.8 if self.marker in ("+", "x") else 1.0,  # line markers: thick enough to see
            "zorder": 1.5 if self.reference else 2,
        }


def _ordered(present: Sequence[str], preferred: Sequence[str] | None) -> list[str]:
    """Names in ``present``, in the order of ``preferred`` first, then sorted."""
    seen = list(dict.fromkeys(present))
    head = [x for x in (preferred or []) if x in seen]
    return head + sorted(x for x in seen if x not in head)


def _same_curves(table: pd.DataFrame, algorithm: str, variants: Sequence[str], stat: str) -> bool:
    """Whether ``algorithm`` has the same curve under every variant in ``variants``."""
    sub = table[table["algorithm"] == algorithm]
    keyed = sub.set_index(["dataset", "epsilon", "variant"])[stat].unstack("variant")
    base = keyed[variants[0]].to_numpy(dtype=float)
    return all(
        np.allclose(keyed[v].to_numpy(dtype=float), base, rtol=1e-9, atol=0.0, equal_nan=True)
        for v in variants[1:]
    )


def variant_look(k: int) -> tuple[Any, str, str]:
    """(colour, line style, marker) of the k-th variant when the curves are variants."""
    marker, style = VARIANT_LOOKS[k % len(VARIANT_LOOKS)]
    return _palette(max(k + 1, 10))[k], style, marker


def _private_lines(table, var_order, alg_order) -> list[_Line]:
    """Private curves: the registry's style per algorithm, the marker fill per variant.

    When one algorithm is compared across variants the curves are the
    variants: each takes a colour, marker and line style of its own
    (:func:`variant_look`).
    """
    pairs = [
        (v, a)
        for a in alg_order
        if not is_reference(a)
        for v in var_order
        if ((table["algorithm"] == a) & (table["variant"] == v)).any()
    ]
    algs = list(dict.fromkeys(a for _, a in pairs))
    variants = list(dict.fromkeys(v for v, _ in pairs))
    several = len(var_order) > 1
    lines = []
    for i, (v, a) in enumerate(pairs):
        colour, style, marker = algorithm_style(a)
        fill = "full"
        if len(algs) == 1 and len(variants) > 1:  # one algorithm, compared across variants
            colour, style, marker = variant_look(variants.index(v))
        elif len(variants) > 1:  # several algorithms and variants: the fill tells the variant
            fill = VARIANT_FILLS[variants.index(v) % len(VARIANT_FILLS)]
        label = algorithm_label(a) + (f" · {v}" if several else "")
        dodge = 10 ** (0.018 * (i - (len(pairs) - 1) / 2))
        lines.append(_Line(v, a, label, colour, style, marker, False, dodge, fill))
    return lines


def _reference_lines(table, var_order, alg_order, stat, variant_colours=None) -> list[_Line]:
    """Reference curves: once when equal under every variant, else once per variant.

    A per-variant reference keeps its registry style; it takes the variant's
    colour when the private curves are coloured by variant
    (``variant_colours``), else its marker fill tells the variants apart.
    """
    lines = []
    several = len(var_order) > 1
    for a in alg_order:
        if not is_reference(a):
            continue
        present = [
            v for v in var_order if ((table["algorithm"] == a) & (table["variant"] == v)).any()
        ]
        colour, style, marker = algorithm_style(a)
        if len(present) == 1 or _same_curves(table, a, present, stat):
            suffix = " (every variant)" if several and len(present) > 1 else ""
            if several and len(present) == 1:
                suffix = f" · {present[0]}"
            lines.append(_Line(None, a, algorithm_label(a) + suffix, colour, style, marker, True))
            continue
        for k, v in enumerate(present):
            tone, fill = colour, VARIANT_FILLS[k % len(VARIANT_FILLS)]
            if variant_colours and v in variant_colours:
                tone, fill = variant_colours[v], "full"
            label = f"{algorithm_label(a)} · {v}"
            lines.append(_Line(v, a, label, tone, style, marker, True, fill=fill))
    return lines


def _palette(count: int) -> list[Any]:
    cmap = colormaps["tab10" if count <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(max(count, 1))]
