"""Snakemake adapter: trial files of one experiment -> its summary table and figure.

One job per experiment: the table (bootstrap intervals) is written first and
the figure (PNG, PDF) is drawn from the table as written, so it shows exactly
the committed numbers; the imports (pandas, matplotlib, dpreg) are paid once.
"""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.algorithms import load_plugins  # noqa: E402

load_plugins(smk.config.get("plugins") or [])  # the run's plug-ins, before any name is used

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from dpreg.data.prepared import read_prepared_meta  # noqa: E402
from dpreg.inference.bands import curve_bands  # noqa: E402
from dpreg.inference.claims import bootstrap_settings  # noqa: E402
from dpreg.io.tables import read_table, write_table  # noqa: E402
from dpreg.io.trials import read_trials, trial_file_columns  # noqa: E402
from dpreg.report.ratios import band_comparisons, draw_figure  # noqa: E402
from dpreg.report.summary import SUMMARY_TRIAL_COLUMNS, summarise  # noqa: E402

# --- the table --------------------------------------------------------------
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
medians: dict = {}  # replicate medians of the table, reused by a ratio figure's bands
table = summarise(
    trials,
    experiment=smk.params.experiment,
    seed=seed,
    level=level,
    resamples=resamples,
    median_cache=medians,
)
write_table(table, smk.output.table)
# a ratio figure: the paired intervals and simultaneous bands of its curves, from the trials
figure = smk.params.get("figure", None) or smk.config["experiments"][smk.params.experiment].get(
    "figure"
)
pairs = band_comparisons(
    sorted(set(zip(table["variant"].astype(str), table["algorithm"].astype(str), strict=True))),
    figure,
)
bands = None
if pairs:
    statistic = smk.params.plot.get("statistic") or smk.config["experiments"][
        smk.params.experiment
    ].get("statistic", "median")
    bands = curve_bands(
        trials,
        pairs,
        statistic=statistic,
        seed=seed,
        level=level,
        resamples=resamples,
        median_cache=medians,
    )
logging.info(
    "%d trials -> %d rows; %d failed trials; %.0f%% intervals from %d bootstrap replicates",
    len(trials),
    len(table),
    int(table["failed"].sum()),
    100 * level,
    resamples,
)
del trials, table, medians

# --- the figure -------------------------------------------------------------
plot = smk.params.plot
experiment = smk.config["experiments"][plot["experiment"]]
# the plotted statistic (median unless the experiment asks for the mean) and the
# confidence level of the interval bars; from params when the rule passes them
statistic = plot.get("statistic") or experiment.get("statistic", "median")
plot_level = plot.get("level") or (smk.config.get("bootstrap") or {}).get("level", 0.95)
cap = plot["cap"] if "cap" in plot else experiment.get("plot_cap", 10.0)
dataset_info = {}
for name, path in zip(plot["datasets"], smk.input.metas, strict=True):
    meta = read_prepared_meta(path)  # its checksum verified
    dataset_info[name] = (meta["n"], meta["d"])

draw_figure(
    read_table(smk.output.table),  # the numbers as written (rounded), as a reader sees them
    figure=figure,
    experiment=plot["experiment"],
    title=plot["title"],
    dataset_info=dataset_info,
    out_png=smk.output.png,
    out_pdf=smk.output.pdf,
    variants=plot["variants"],
    algorithms=plot["algorithms"],
    note=plot.get("note"),
    statistic=statistic,
    level=plot_level,
    cap=cap,
    **({"bands": bands} if bands is not None else {}),
)
logging.info("figure -> %s, %s", smk.output.png, smk.output.pdf)
