"""Reading YAML configuration files strictly.

PyYAML's safe loader accepts what a researcher almost never means: a key
written twice (the second silently wins, so a duplicated ``epsilons:`` line
replaces the grid), anchors and aliases that expand to billions of values
(the "billion laughs" document: cheap to load because aliases are shared, but
every later walk over the config, schema validation included, expands it),
and a binary or empty file.  :func:`load_config_file` refuses each with one
message naming the file, the line and what is allowed; the pipeline checks
every config file with it before the schema does (see the Snakefile).

One way of giving a config escapes it: Snakemake reads a ``--configfile``
itself, before any workflow code runs. Snakemake 9 builds its
``ConfigSettings`` from the command line first; the Snakefile, its
``configfile:`` directive, ``onstart``/``onerror`` and the profile come
later or run no code. So for a file Snakemake cannot parse, the user sees
only Snakemake's "Config file is not valid JSON or YAML", with no file or
line (or a ``UnicodeDecodeError`` traceback for a binary file).
``dpreg config check FILE`` (:func:`config_main`) gives this module's message
for such a file. A file Snakemake can parse is checked here on every run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dpreg._validation import DPRegError

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_VALUES",
    "check_config_files",
    "config_main",
    "load_config_file",
]

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
        if "\\t" in what:  # PyYAML shows the tab as '\t'
            what += "; YAML indents with spaces, never tabs"
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


def config_main(argv: Sequence[str] | None = None) -> int:
    """The ``dpreg config check FILE...`` command: each file read as the pipeline reads it.

    Prints ``FILE: ok (...)`` for a good file and the reader's one-line message
    (file, line and column, what is allowed) for a bad one. Returns 0 when
    every file is good, 1 when one is not, 2 on a usage error. Use it on a file
    for ``--configfile``: Snakemake reads that file before this workflow can
    (module docstring). The schema is checked by ``snakemake -n --configfile FILE``.
    """
    parser = argparse.ArgumentParser(
        prog="dpreg config",
        description="Check config files strictly, as the pipeline reads them: YAML syntax "
        "(file, line, column), a key given twice, alias bombs, binary, empty or "
        "non-mapping files.",
    )
    sub = parser.add_subparsers(dest="action", required=True, metavar="check")
    check = sub.add_parser("check", help="read each FILE strictly; exit 1 if one is bad")
    check.add_argument("files", nargs="+", metavar="FILE", help="a YAML or JSON config file")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    status = 0
    for name in args.files:
        try:
            data = load_config_file(name)
        except DPRegError as err:
            print(f"dpreg config check: {err}", file=sys.stderr)
            status = 1
            continue
        keys = ", ".join(map(str, list(data)[:6])) + (", ..." if len(data) > 6 else "")
        print(f"{name}: ok (a mapping of {len(data)} top-level keys: {keys})")
    return status
