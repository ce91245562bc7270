"""Snakemake adapter: summary table of one experiment -> its figure (PNG, PDF)."""

import json

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from dpreg.plots import plot_experiment  # noqa: E402
from dpreg.tables import read_table  # noqa: E402

plot = smk.params.plot
experiment = smk.config["experiments"][plot["experiment"]]
# the plotted statistic (median unless the experiment asks for the mean) and the
# confidence level of the interval bars; from params when the rule passes them
statistic = plot.get("statistic") or experiment.get("statistic", "median")
level = plot.get("level") or (smk.config.get("bootstrap") or {}).get("level", 0.95)
cap = plot["cap"] if "cap" in plot else experiment.get("plot_cap", 10.0)
dataset_info = {}
for name, path in zip(plot["datasets"], smk.input.metas, strict=True):
    with open(path, encoding="utf-8") as fh:
        meta = json.load(fh)
    dataset_info[name] = (meta["n"], meta["d"])

plot_experiment(
    read_table(smk.input.table),
    experiment=plot["experiment"],
    title=plot["title"],
    dataset_info=dataset_info,
    out_png=smk.output.png,
    out_pdf=smk.output.pdf,
    variants=plot["variants"],
    algorithms=plot["algorithms"],
    note=plot.get("note"),
    statistic=statistic,
    level=level,
    cap=cap,
)
