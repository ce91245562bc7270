"""Snakemake adapter: every trial of one (dataset, shard) -> a Parquet trial file."""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.engine.sources import sweep_dataset  # noqa: E402
from dpreg.io.trials import write_trials  # noqa: E402

kwargs = dict(smk.params.sweep)
logging.info("sweep %s/%s: %s", smk.wildcards.dataset, smk.wildcards.shard, kwargs)
trials = sweep_dataset(smk.input.table, **kwargs)
write_trials(trials, smk.output.trials)
logging.info("%d trials, %d failed", len(trials), int(trials["failed"].sum()))
