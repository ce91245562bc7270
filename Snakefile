# dpreg: a reproducible benchmark of differentially private linear regression.
#
#   snakemake --cores 4                                  # the default experiments
#   snakemake --cores 2 --directory .test                # the tiny CI configuration
#   snakemake --profile workflow/profiles/slurm          # on a SLURM cluster
#
# The configuration (config/config.yaml, relative to the working directory)
# is validated against workflow/schemas/config.schema.yaml; config/README.md
# documents every key.  Outputs: results/figures, results/tables,
# results/trials (one Parquet file per dataset and shard; not committed) and
# results/provenance.json.
#
# After an interrupted run (a killed terminal, a crash, kill -9):
#   snakemake --unlock && snakemake --cores 2 --rerun-incomplete
# (README.md, "Recovering an interrupted run").

import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

from dpreg import DPRegError
from dpreg.configfile import check_config_files

min_version("9.0")

os.environ["DPREG_ROOT"] = workflow.basedir  # the rules' conda env installs dpreg from here


envvars:
    "DPREG_ROOT",


# every config file, read strictly before Snakemake's own reader merges the
# default one: a repeated key, an alias bomb, a binary or empty file stops here
# with the file and line (dpreg.configfile)
try:
    check_config_files(
        [*workflow.configfiles, *[p for p in ["config/config.yaml"] if os.path.exists(p)]]
    )
except DPRegError as err:
    raise WorkflowError(str(err)) from None


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


report: "workflow/report/workflow.rst"


onerror:
    # after Snakemake's own message: the one place that says how to resume
    print(
        "dpreg: the run stopped early; outputs of finished jobs are kept. Fix the "
        "error above and rerun the same command. If the run was killed, recover with: "
        "snakemake --unlock && snakemake --cores 2 --rerun-incomplete "
        "(README.md, 'Recovering an interrupted run').",
        file=sys.stderr,
    )


localrules:
    all,
    prepare_dataset,
    summarise_experiment,
    write_claims,
    write_provenance,
    write_leaderboard,
    build_browser,


rule all:
    """Every figure and table of the run, its provenance, browser and (suite) leaderboard."""
    default_target: True
    input:
        PLAN.all_outputs(),
        REPORT_OUTPUTS,
