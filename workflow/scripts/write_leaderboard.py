"""Snakemake adapter: Wang's suite table -> leaderboard.csv, leaderboard.md, CD diagram."""

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.report.leaderboard import leaderboard_main  # noqa: E402

argv = [
    smk.input.table,
    "--out-csv",
    smk.output.csv,
    "--out-md",
    smk.output.md,
    "--figure",
    smk.output.png,
    "--margin",
    str(smk.params.margin),
    "--alpha",
    str(smk.params.alpha),
    "--ties",
    smk.params.ties,
    "--exclude",
    *smk.params.exclude,
    "--figure-epsilons",
    *map(str, smk.params.figure_epsilons),
]
leaderboard_main(argv)
