"""Snakemake adapter: every trial of one (dataset, shard) -> a Parquet trial file.

The run's plug-ins (config ``plugins:``) are registered before the sweep, so
this process knows the same algorithms as the planner; ``params.code`` (the
code fingerprint of each algorithm of the sweep) is not read here: it is a
param so that editing an algorithm reruns exactly the sweeps that run it.
"""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.algorithms import load_plugins  # noqa: E402

load_plugins(smk.config.get("plugins") or [])  # the run's plug-ins, before any name is used

from dpreg.data import read_prepared_meta  # noqa: E402
from dpreg.engine.sources import sweep_dataset  # noqa: E402
from dpreg.io.trials import write_trials  # noqa: E402

kwargs = dict(smk.params.sweep)
logging.info("sweep %s/%s: %s", smk.wildcards.dataset, smk.wildcards.shard, kwargs)
logging.info("code fingerprints: %s", dict(smk.params.code))
# a synthetic dataset's known answer: each trial's coef_err is measured against it
theta_star = read_prepared_meta(smk.input.meta).get("theta_star")
trials = sweep_dataset(smk.input.table, **kwargs, theta_star=theta_star)
write_trials(trials, smk.output.trials)
logging.info("%d trials, %d failed", len(trials), int(trials["failed"].sum()))
