"""Snakemake adapter: Wang's suite tables -> leaderboard.csv, leaderboard.md, CD diagram."""

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg._validation import DPRegError  # noqa: E402
from dpreg.algorithms import load_plugins  # noqa: E402
from dpreg.report.leaderboard import leaderboard_main  # noqa: E402

load_plugins(smk.config.get("plugins") or [])  # the run's plug-ins, before any name is used

argv = [*smk.input.tables, "--out-csv", smk.output.csv, "--out-md", smk.output.md]
if leaderboard_main([*argv, "--figure", smk.output.png]) != 0:
    raise DPRegError("the leaderboard was not written (the error is above)")
