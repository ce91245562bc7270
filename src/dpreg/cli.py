"""The ``dpreg`` command: one entry point with subcommands.

- ``dpreg audit [options]`` runs the empirical privacy audit
  (:func:`dpreg.audit.main`; ``dpreg-audit`` and ``python -m dpreg.audit`` are
  aliases);
- ``dpreg claims {register,evaluate,readme,check-readme}`` registers the
  claims before their trials are drawn, evaluates them outside Snakemake and
  keeps the results README's verdict block
  (:func:`dpreg.report.claims.main`; alias ``python -m dpreg.report.claims``);
- ``dpreg suite TABLE`` draws Wang's suite figures and tables
  (:func:`dpreg.report.suite.main`; alias ``python -m dpreg.report.suite``);
- ``dpreg leaderboard TABLE`` ranks the methods of Wang's suite
  (:func:`dpreg.report.leaderboard.leaderboard_main`);
- ``dpreg browser TABLES...`` writes the static results browser
  (:func:`dpreg.report.browser.browser_main`);
- ``dpreg config check FILE...`` reads config files as the pipeline does and
  names the file, line and column of what is wrong
  (:func:`dpreg.configfile.config_main`).

``dpreg <command> --help`` lists a command's options; ``dpreg --version``
prints the package version.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from dpreg._version import __version__

__all__ = ["COMMANDS", "main"]

#: subcommand -> ("module:function" whose ``function(argv)`` runs it, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("dpreg.audit:main", "empirical privacy audit of every private algorithm"),
    "claims": (
        "dpreg.report.claims:main",
        "register claims, evaluate them, write or check the README verdicts",
    ),
    "suite": ("dpreg.report.suite:main", "Wang (2018)'s suite: figures and win counts"),
    "leaderboard": (
        "dpreg.report.leaderboard:leaderboard_main",
        "rank the methods over Wang's suite (Friedman, Nemenyi, sign tests)",
    ),
    "browser": ("dpreg.report.browser:browser_main", "write the static results browser"),
    "config": (
        "dpreg.configfile:config_main",
        "check config files as the pipeline reads them (file, line, column)",
    ),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: dpreg [-h] [--version] <command> [options]",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()),
        "",
        "`dpreg <command> --help` lists the options of a command.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpreg <command> [options]``; returns the command's exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    if args[0] == "--version":
        print(f"dpreg {__version__}")
        return 0
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        known = ", ".join(sorted(COMMANDS))
        print(f"dpreg: unknown command {command!r}; known commands: {known}", file=sys.stderr)
        return 2
    module, function = COMMANDS[command][0].split(":")
    run: Callable[[list[str]], int | None] = getattr(import_module(module), function)
    return int(run(rest) or 0)


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(main())
