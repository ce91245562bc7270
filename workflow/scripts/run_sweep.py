"""Snakemake adapter: every trial of one (experiment, dataset) -> a trial file."""

import logging
import sys

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

log_file = open(smk.log[0], "w", buffering=1)  # kept open for the whole job
sys.stderr = sys.stdout = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
)
logging.captureWarnings(True)

from dpreg.summary import write_trials  # noqa: E402
from dpreg.sweep import sweep_dataset  # noqa: E402

kwargs = dict(smk.params.sweep)
logging.info("sweep %s/%s: %s", smk.wildcards.experiment, smk.wildcards.dataset, kwargs)
trials = sweep_dataset(smk.input.table, **kwargs)
write_trials(trials, smk.output.trials)
logging.info("%d trials, %d failed", len(trials), int(trials["failed"].sum()))
