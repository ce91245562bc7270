"""Snakemake adapter: trial files of one experiment -> its summary table."""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.claims import bootstrap_settings  # noqa: E402
from dpreg.summary import SUMMARY_TRIAL_COLUMNS, summarise  # noqa: E402
from dpreg.tables import read_trials, trial_file_columns, write_table  # noqa: E402

# rows of this experiment (variants, algorithms, repeats) when the trial files are shared
select = dict(smk.params.get("select", None) or {})
# seed and bootstrap settings: from params when the rule passes them (so a change reruns
# the job), else from the workflow config
settings = smk.params.get("bootstrap", None) or smk.config
seed, level, resamples = bootstrap_settings(settings)

# only the columns the summary uses (the ledger ones when the trials carry them)
present = set(trial_file_columns(smk.input.trials[0]))
columns = [c for c in SUMMARY_TRIAL_COLUMNS if c in present]
trials = read_trials(smk.input.trials, columns=columns, **select)
table = summarise(
    trials, experiment=smk.params.experiment, seed=seed, level=level, resamples=resamples
)
write_table(table, smk.output.table)
logging.info(
    "%d trials -> %d rows; %d failed trials; %.0f%% intervals from %d bootstrap replicates",
    len(trials),
    len(table),
    int(table["failed"].sum()),
    100 * level,
    resamples,
)
