"""Snakemake adapter: trial files of one experiment -> its summary table."""

import logging
import sys

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

log_file = open(smk.log[0], "w", buffering=1)  # kept open for the whole job
sys.stderr = sys.stdout = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
)
logging.captureWarnings(True)

from dpreg.summary import read_trials, summarise, write_table  # noqa: E402

trials = read_trials(smk.input.trials)
table = summarise(trials, experiment=smk.params.experiment)
write_table(table, smk.output.table)
logging.info(
    "%d trials -> %d rows; %d failed trials", len(trials), len(table), int(table["failed"].sum())
)
