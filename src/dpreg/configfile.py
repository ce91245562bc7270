"""Reading YAML configuration files strictly.

PyYAML's safe loader accepts what a researcher almost never means: a key
written twice (the second silently wins, so a duplicated ``epsilons:`` line
replaces the grid), anchors and aliases that expand to billions of values
(the "billion laughs" document: cheap to load because aliases are shared, but
every later walk over the config, schema validation included, expands it),
and a binary or empty file.  :func:`load_config_file` refuses each with one
message naming the file, the line and what is allowed; the pipeline checks
every config file with it before the schema does (see the Snakefile).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dpreg._validation import DPRegError

__all__ = ["MAX_CONFIG_BYTES", "MAX_CONFIG_VALUES", "check_config_files", "load_config_file"]

#: Largest config file read (the default config is about 20 KiB).
MAX_CONFIG_BYTES = 1 << 20
#: Largest number of values a config may hold once its aliases are expanded
#: (the default config holds a few thousand).
MAX_CONFIG_VALUES = 100_000


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<: *defaults" merges, it does not repeat a key
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DPRegError(
                    f"line {line}: key {key!r} is given twice in one mapping "
                    f"(first on line {seen[key]}); a YAML key may appear once"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping
)


def _expanded_size(obj: Any, memo: dict[int, int], limit: int) -> int:
    """Number of values in ``obj`` with shared (aliased) parts counted at every use,
    computed once per distinct object, so a bomb is measured without expanding it."""
    if not isinstance(obj, dict | list):
        return 1
    key = id(obj)
    if key in memo:
        return memo[key]
    memo[key] = limit + 1  # a self-referencing document counts as too large
    children = obj.items() if isinstance(obj, dict) else enumerate(obj)
    total = 1
    for _, value in children:
        total += _expanded_size(value, memo, limit)
        if total > limit:
            break
    memo[key] = total
    return total


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in YAML (or JSON) file ``path``, read strictly.

    Raises
    ------
    DPRegError
        naming ``path`` (and the line where it applies) when the file is
        missing, larger than :data:`MAX_CONFIG_BYTES`, not UTF-8 text, not
        valid YAML, repeats a key, expands to more than
        :data:`MAX_CONFIG_VALUES` values, or does not hold a mapping.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise DPRegError(f"config file {path}: cannot be read ({err.strerror})") from None
    if size > MAX_CONFIG_BYTES:
        raise DPRegError(
            f"config file {path}: {size:,} bytes; a config file may hold at most "
            f"{MAX_CONFIG_BYTES:,} bytes"
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DPRegError(
            f"config file {path}: not UTF-8 text (byte {err.start}); "
            "a config file is YAML or JSON text"
        ) from None
    if "\0" in text:
        raise DPRegError(f"config file {path}: holds NUL bytes; a config file is YAML or JSON text")
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except DPRegError as err:
        raise DPRegError(f"config file {path}: {err}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = err.problem or err.context or "not valid YAML"
        raise DPRegError(f"config file {path}: {where}{what} (not valid YAML)") from None
    except yaml.YAMLError as err:
        raise DPRegError(f"config file {path}: not valid YAML ({err})") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise DPRegError(
            f"config file {path}: is {kind}; a config file holds a mapping of keys "
            "(seed:, epsilons:, datasets:, ...)"
        )
    if _expanded_size(data, {}, MAX_CONFIG_VALUES) > MAX_CONFIG_VALUES:
        raise DPRegError(
            f"config file {path}: its anchors and aliases expand to more than "
            f"{MAX_CONFIG_VALUES:,} values; write the values out or use fewer aliases"
        )
    return data


def check_config_files(paths: list[str] | tuple[str, ...]) -> None:
    """:func:`load_config_file` on every path (the files a Snakemake run reads)."""
    for path in paths:
        load_config_file(path)
