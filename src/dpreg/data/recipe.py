"""Recipes: a raw table -> numeric features and a target.

:func:`apply_recipe` runs the steps below in order, each a small function;
every refusal is one :class:`~dpreg.DPRegError` line naming the dataset, the
column(s) and what is allowed.

1. ``set_values``: corrections of single cells, by data row (1 = the row
   after the header) and column;
2. ``recode``: value maps (``{old: new}`` per column), e.g. category codes;
3. the target: ``target`` or the single column with role Target;
4. the features: Feature-role columns and ``include``, minus ``drop``, with
   ``dates`` columns expanded into numeric parts at their position (a column
   of times of day, ``HH:MM[:SS]``, into hour, minute, second);
5. infinite values (always an error) and the ``missing`` policy;
6. ``target_transform`` after checking its domain;
7. refusals: a constant target; a column whose float64 statistics (sum, sum
   of squares, centred sum of squares) are not finite, e.g. values of 1e300
   whose squares overflow.  Constant features are kept (standardisation makes
   them 0) but reported and logged as a warning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.entries import TIME_PARTS, fail, validate_entry
from dpreg.data.sources import RawDataset

__all__ = ["PreparedDataset", "apply_recipe"]

logger = logging.getLogger("dpreg.data")

_TIME_RE = re.compile(r"^\s*\d{1,2}:\d{2}(:\d{2})?\s*$")


@dataclass
class PreparedDataset:
    """Numeric features and target after the recipe.

    Attributes
    ----------
    features : pandas.DataFrame
        float64 columns, in order.
    target : pandas.Series
        float64, named after the target column.
    report : dict
        ``rows_raw``, ``cells_set`` (number of ``set_values`` corrections),
        ``recoded`` (column -> cells changed), ``dropped`` (column -> reason),
        ``date_parts`` (column -> new columns), ``rows_dropped_na``,
        ``na_filled`` (column -> count), ``constant`` (feature columns with
        one value).
    """

    features: pd.DataFrame
    target: pd.Series
    report: dict[str, Any] = field(default_factory=dict)


def _unknown_columns(name: str, key: str, names: list[str], columns: list[str]) -> None:
    unknown = [c for c in names if c not in columns]
    if unknown:
        raise fail(
            name,
            f"{key} names column(s) {', '.join(map(repr, unknown))} that the data does not "
            f"have; columns: {', '.join(columns)}",
        )


def _with_values(column: pd.Series, values: list[Any]) -> pd.Series:
    """A column with new values, its dtype inferred again (ints stay ints)."""
    return pd.Series(values, index=column.index, name=column.name)


# --------------------------------------------------------------------------
# 1-2: corrections and value maps


def _apply_set_values(name: str, frame: pd.DataFrame, fixes: Mapping[int, Mapping[str, Any]]):
    if not fixes:
        return frame, 0
    columns = list(frame.columns)
    too_far = [row for row in fixes if row > len(frame)]
    if too_far:
        raise fail(
            name, f"set_values names data row {too_far[0]}, but the data has {len(frame)} rows"
        )
    frame = frame.copy()
    cells = 0
    for col in dict.fromkeys(c for cellmap in fixes.values() for c in cellmap):
        _unknown_columns(name, "set_values", [col], columns)
        values = frame[col].tolist()
        for row, cellmap in fixes.items():
            if col in cellmap:
                values[row - 1] = cellmap[col]
                cells += 1
        frame[col] = _with_values(frame[col], values)
    return frame, cells


def _apply_recode(name: str, frame: pd.DataFrame, recode: Mapping[str, Mapping[Any, Any]]):
    if not recode:
        return frame, {}
    _unknown_columns(name, "recode", list(recode), list(frame.columns))
    frame = frame.copy()
    changed: dict[str, int] = {}
    for col, table in recode.items():
        present = set(frame[col].dropna().tolist())
        absent = [old for old in table if old not in present]
        if absent:
            raise fail(
                name,
                f"recode[{col!r}] maps value(s) {', '.join(map(repr, absent))} that column "
                f"{col!r} never holds (a typo, or a number given as text?)",
            )
        old = frame[col].tolist()
        new = [table.get(v, v) if v == v else v for v in old]  # v != v: NaN stays NaN
        changed[col] = sum(a is not b and a != b for a, b in zip(old, new, strict=True))
        frame[col] = _with_values(frame[col], new)
    return frame, changed


# --------------------------------------------------------------------------
# 3-4: target and features


def _choose_target(name: str, e: Mapping[str, Any], columns: list[str], roles) -> str:
    target = e["target"]
    if target is None:
        targets = [c for c in columns if roles[c] == "Target"]
        if len(targets) != 1:
            found = f"{len(targets)} ({', '.join(targets)})" if targets else "none"
            raise fail(
                name,
                f"set target: to one column; the source marks {found} as Target; "
                f"columns: {', '.join(columns)}",
            )
        target = targets[0]
    _unknown_columns(name, "target", [target], columns)
    for key in ("drop", "include", "dates", "recode"):
        if target in e[key]:
            raise fail(name, f"the target {target!r} cannot be listed in {key}")
    return target


def _parse_times(name: str, column: pd.Series, text: pd.Series, parts: list[str]) -> pd.Series:
    wrong = [p for p in parts if p not in TIME_PARTS]
    if wrong:
        raise fail(
            name,
            f"dates column {column.name!r} holds times of day (e.g. {text.dropna().iloc[0]!r}), "
            f"which have no {wrong[0]!r}; its parts are {', '.join(TIME_PARTS)}",
        )
    return pd.to_datetime("2000-01-01 " + text.str.strip(), format="mixed", errors="coerce")


def _parse_dates(text: pd.Series) -> pd.Series:
    try:
        return pd.to_datetime(text, format="ISO8601")
    except (ValueError, TypeError):
        return pd.to_datetime(text, format="mixed", errors="coerce")


def _expand_date(name: str, column: pd.Series, parts: list[str]) -> dict[str, pd.Series]:
    text = column.astype("string")
    present = text.dropna()
    if len(present) and present.str.match(_TIME_RE).all():
        parsed = _parse_times(name, column, text, parts)
    else:
        parsed = _parse_dates(text)
    bad = parsed.isna() & text.notna()
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise fail(
            name,
            f"dates column {column.name!r} has {int(bad.sum())} value(s) that are not dates "
            f"(first: {text.iloc[first]!r} in data row {first + 1}); fix them or drop the column",
        )
    attrs = {"weekday": "day_of_week", "dayofyear": "day_of_year"}
    return {
        f"{column.name}_{part}": getattr(parsed.dt, attrs.get(part, part)).astype("float64")
        for part in parts
    }


def _as_float(name: str, column: pd.Series, what: str) -> pd.Series:
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        return column.astype("float64")
    coerced = pd.to_numeric(column, errors="coerce")
    bad = coerced.isna() & column.notna()
    if not bad.any():
        return coerced.astype("float64")
    first = int(np.flatnonzero(bad.to_numpy())[0])
    raise fail(
        name,
        f"{what} column {column.name!r} is not numeric (e.g. {column.iloc[first]!r} in data "
        f"row {first + 1}); drop it (drop: [{column.name}]), list it under dates, map its "
        "values to numbers with recode, or convert it in the source",
    )


def _select_features(name, frame, roles, target, e, report) -> pd.DataFrame:
    columns = list(frame.columns)
    parts: dict[str, pd.Series] = {}
    for col in columns:
        if col == target:
            continue
        if col in e["drop"]:
            report["dropped"][col] = "drop"
        elif col in e["dates"]:
            new = _expand_date(name, frame[col], e["dates"][col])
            clash = [c for c in new if c in columns or c in parts]
            if clash:
                raise fail(name, f"dates column names {', '.join(clash)} exist already")
            parts.update(new)
            report["date_parts"][col] = list(new)
        elif roles[col] == "Feature" or col in e["include"]:
            parts[col] = _as_float(name, frame[col], "feature")
        else:
            report["dropped"][col] = f"{roles[col]} role"
    if not parts:
        raise fail(name, "no feature columns are left after the recipe")
    return pd.DataFrame(parts, index=frame.index)


# --------------------------------------------------------------------------
# 5-7: values


def _listing(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{c} ({k})" for c, k in counts.items())


def _handle_missing(name, X, y, policy, report):
    both = pd.concat([X, y], axis=1)
    inf = np.isinf(both.to_numpy())
    if inf.any():
        counts = {c: int(k) for c, k in zip(both.columns, inf.sum(axis=0), strict=True) if k}
        raise fail(
            name,
            f"infinite values in column(s) {_listing(counts)}; they are not treated as "
            "missing: fix the source or drop the column",
        )
    na = both.isna()
    if not na.to_numpy().any():
        return X, y
    counts = {c: int(k) for c, k in na.sum().items() if k}
    if policy == "error":
        raise fail(
            name,
            f"missing values in column(s) {_listing(counts)}; set missing: drop_rows or zero, "
            "or drop the column(s)",
        )
    if policy == "drop_rows":
        keep = ~na.any(axis=1)
        report["rows_dropped_na"] = int((~keep).sum())
        if not keep.any():
            raise fail(name, f"missing: drop_rows leaves no rows (missing in {_listing(counts)})")
        return X[keep], y[keep]
    report["na_filled"] = counts
    return X.fillna(0.0), y.fillna(0.0)


def _transform_target(name: str, y: pd.Series, transform: str) -> pd.Series:
    if transform == "none":
        return y
    values = y.to_numpy()
    bad = values <= 0 if transform == "log" else values <= -1
    if bad.any():
        need = "y > 0" if transform == "log" else "y > -1"
        raise fail(
            name,
            f"target_transform {transform} needs {need}, but {int(bad.sum())} row(s) of "
            f"{y.name!r} break it (min {values.min():g}); use another transform or none",
        )
    return pd.Series(getattr(np, transform)(values), index=y.index, name=y.name)


def _refuse_constant_target(name: str, y: pd.Series) -> None:
    values = y.to_numpy()
    if values.min() == values.max():
        raise fail(
            name,
            f"the target {y.name!r} is constant ({values[0]:g} in all {len(values)} rows); "
            "a regression needs a target that varies: choose another target column",
        )


def _finite_statistics(values: np.ndarray) -> bool:
    """Whether the float64 sum, sum of squares and centred sum of squares are finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = values.sum()
        squares = np.dot(values, values)
        centred = values - total / values.size
        return bool(np.isfinite([total, squares, np.dot(centred, centred)]).all())


def _refuse_overflow(name: str, X: pd.DataFrame, y: pd.Series) -> None:
    """Refuse columns whose float64 sum, sum of squares or centred sum of squares is not finite.

    One column at a time, so the check needs memory for one column only.
    """
    columns = [*((c, X[c]) for c in X.columns), (y.name, y)]
    bad = []
    for col, series in columns:
        values = series.to_numpy(np.float64)
        if not _finite_statistics(values):
            bad.append(f"{col} (largest |value| {np.abs(values).max():.3g})")
    if bad:
        raise fail(
            name,
            f"column(s) {', '.join(bad)} are too large for float64: their sums or sums of "
            "squares overflow, so no statistic of them is finite; rescale them in the source "
            "(e.g. another unit) or drop them",
        )


def _constant_features(name: str, X: pd.DataFrame) -> list[str]:
    values = X.to_numpy()
    constant = [
        c for c, lo, hi in zip(X.columns, values.min(0), values.max(0), strict=True) if lo == hi
    ]
    if constant:
        logger.warning(
            "dataset %r: constant feature column(s) %s kept; standardisation makes them 0",
            name,
            ", ".join(constant),
        )
    return constant


def apply_recipe(raw: RawDataset, entry: Mapping[str, Any] | None) -> PreparedDataset:
    """Turn a raw table into numeric features and a target, following the entry.

    The steps are listed in the module docstring of :mod:`dpreg.data.recipe`.

    Parameters
    ----------
    raw : RawDataset
    entry : mapping or None
        The dataset entry (validated here).

    Returns
    -------
    PreparedDataset

    Raises
    ------
    DPRegError
        Naming the dataset, the column(s) and what is allowed.
    """
    name = raw.name
    e = validate_entry(name, entry)
    report: dict[str, Any] = {
        "rows_raw": int(len(raw.frame)),
        "cells_set": 0,
        "recoded": {},
        "dropped": {},
        "date_parts": {},
        "rows_dropped_na": 0,
        "na_filled": {},
        "constant": [],
    }
    frame, report["cells_set"] = _apply_set_values(name, raw.frame, e["set_values"])
    frame, report["recoded"] = _apply_recode(name, frame, e["recode"])
    columns = list(frame.columns)
    roles = {c: raw.roles.get(c, "Feature") for c in columns}
    for key in ("drop", "include", "dates"):
        _unknown_columns(name, key, list(e[key]), columns)
    target = _choose_target(name, e, columns, roles)

    X = _select_features(name, frame, roles, target, e, report)
    y = _as_float(name, frame[target], "target").rename(target)
    X, y = _handle_missing(name, X, y, e["missing"], report)
    y = _transform_target(name, y, e["target_transform"])
    _refuse_constant_target(name, y)
    _refuse_overflow(name, X, y)
    report["constant"] = _constant_features(name, X)
    return PreparedDataset(X.reset_index(drop=True), y.reset_index(drop=True), report)
