"""Snakemake adapter: trial files of one experiment -> its summary table."""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.summary import read_trials, summarise, write_table  # noqa: E402

trials = read_trials(smk.input.trials)
table = summarise(trials, experiment=smk.params.experiment)
write_table(table, smk.output.table)
logging.info(
    "%d trials -> %d rows; %d failed trials", len(trials), len(table), int(table["failed"].sum())
)
