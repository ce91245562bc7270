# dpreg: a reproducible benchmark of differentially private linear regression.
#
#   snakemake --cores 4                                  # the default experiments
#   snakemake --cores 2 --directory .test                # the tiny CI configuration
#   snakemake --profile workflow/profiles/slurm          # on a SLURM cluster
#
# The configuration (config/config.yaml, relative to the working directory)
# is validated against workflow/schemas/config.schema.yaml; config/README.md
# documents every key.  Outputs: results/figures, results/tables,
# results/trials and results/provenance.json.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


report: "workflow/report/workflow.rst"


localrules:
    all,
    prepare_dataset,
    aggregate_experiment,
    plot_experiment,
    write_provenance,


rule all:
    input:
        all_outputs(),
    default_target: True
