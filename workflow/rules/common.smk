# Configuration checks and the input functions shared by every rule file.
#
# The config is validated against workflow/schemas/config.schema.yaml (unknown
# keys, wrong types and out-of-range values stop here, with defaults filled)
# and each dataset entry by dpreg.data; then dpreg.engine.plan builds the run's
# plan once (PLAN), cross-checking names: an experiment that names an unknown
# variant, dataset or algorithm stops with one message naming it and listing
# the known ones.  Everything the rules derive from the config (which shards,
# sweep plans, repeats, priorities, resources, outputs) is a method of PLAN;
# the functions below only adapt it to Snakemake's wildcards.

import re

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

from dpreg._validation import DPRegError
from dpreg.data import validate_entry
from dpreg.engine.plan import PRIORITY, Plan, cv_design


def _describe(error):
    """One line naming where a config value is wrong and what is allowed."""
    import difflib

    where = ": ".join(["config", *map(str, error.absolute_path)])
    allowed = list(error.schema.get("properties", {})) if isinstance(error.schema, dict) else []
    if error.validator == "additionalProperties" and allowed:
        unknown = [k for k in error.instance if k not in allowed]
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return f"{where}: unknown key {', '.join(hints)}; allowed keys: {', '.join(allowed)}"
    if error.validator == "maxLength" and isinstance(error.instance, str):
        return (
            f"{where}: {error.instance[:24]!r}... is {len(error.instance)} characters long; "
            f"at most {error.validator_value} are allowed (names become file names)"
        )
    return f"{where}: {error.message}"


def _validate_config(cfg):
    """validate() against the schema, with a one-line message on failure."""
    import jsonschema

    try:
        validate(cfg, schema="../schemas/config.schema.yaml")
    except WorkflowError as err:
        cause = err.__context__
        if not isinstance(cause, jsonschema.ValidationError):
            raise
        raise WorkflowError(f"invalid configuration: {_describe(cause)}") from None


def _attach_claims(cfg):
    """The claims file's claims into the experiments, and its registration record."""
    from dpreg.inference.registry import attach_claims

    try:
        attach_claims(cfg)
    except DPRegError as err:
        raise WorkflowError(str(err)) from None


_attach_claims(config)
_validate_config(config)


def _check_datasets(cfg):
    """The dataset entries as dpreg.data sees them (e.g. each needs a source)."""
    for name, entry in cfg["datasets"].items():
        try:
            validate_entry(name, entry, mirror_dir=cfg["mirror"])
        except DPRegError as err:
            raise WorkflowError(f"config: datasets: {err}") from None


def _make_plan(cfg):
    """The run's plan (dpreg.engine.plan); a bad cross-reference stops here."""
    try:
        plan = Plan.from_config(cfg)
    except DPRegError as err:
        raise WorkflowError(str(err)) from None
    for message in plan.warnings():
        logger.warning(message)
    return plan


_check_datasets(config)
#: every planning decision of the run: which shards, repeats, priorities, resources
PLAN = _make_plan(config)


def _claim_run_directory(plan):
    """.snakemake and the output folders writable, and no other run active here
    (dpreg.io.rundir); checked once, in the main Snakemake process (not in jobs)."""
    import sys
    from pathlib import Path

    from dpreg.io.rundir import claim_run_directory

    if not workflow.is_main_process:
        return
    folders = sorted({Path(p).parts[0] for p in plan.all_outputs()} | {"logs"})
    try:
        claim_run_directory(folders, sys.argv, warn=logger.warning)
    except DPRegError as err:
        raise WorkflowError(str(err)) from None


_claim_run_directory(PLAN)


wildcard_constraints:
    dataset="|".join(map(re.escape, PLAN.datasets)),
    experiment="|".join(map(re.escape, PLAN.experiments)),
    shard="|".join(map(re.escape, PLAN.shards)) or "stats",


# ---------------------------------------------------------------------------
# input functions
# ---------------------------------------------------------------------------
def dataset_source_files(wildcards):
    """Local files a dataset is read from, so editing them reruns its preparation."""
    return PLAN.dataset_source_files(wildcards.dataset)


def experiment_trials(wildcards):
    """Trial files of one experiment: its datasets x the shards of its algorithms."""
    return PLAN.trial_files(wildcards.experiment)


def claim_trials(wildcards):
    """Trial files of every experiment that states claims."""
    return PLAN.claim_trials()


def experiment_metas(wildcards):
    """Meta sidecars of the datasets of one experiment."""
    return [f"results/prepared/{ds}.json" for ds in PLAN.experiment_datasets(wildcards.experiment)]


def all_metas(wildcards):
    """Meta sidecars of every dataset an experiment of the run uses."""
    return [f"results/prepared/{ds}.json" for ds in PLAN.used_datasets()]


def all_tables(wildcards):
    """Summary tables of every experiment of the run."""
    return [f"results/tables/{exp}.csv" for exp in PLAN.experiments]


# ---------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------
def dataset_entry(wildcards):
    """The config entry (source + recipe) of one dataset."""
    return PLAN.dataset_entry(wildcards.dataset)


def sweep_kwargs(wildcards):
    """Keyword arguments of dpreg.engine.sources.sweep_dataset for one (dataset, shard)."""
    return PLAN.sweep_kwargs(wildcards.dataset, wildcards.shard)


def sweep_code(wildcards):
    """Algorithm -> code fingerprint of one sweep's algorithms: editing one reruns its sweeps."""
    return PLAN.sweep_code(wildcards.dataset, wildcards.shard)


def trial_selection(wildcards):
    """Which trials of its files an experiment summarises (see dpreg.io.trials.read_trials)."""
    return PLAN.trial_selection(wildcards.experiment)


def bootstrap_params(wildcards):
    """Seed and bootstrap settings of the summaries (a change reruns them)."""
    return PLAN.bootstrap_params()


def claims_config(wildcards):
    """Settings and the experiments whose claims write_claims checks."""
    return PLAN.claims_config()


def claims_files(wildcards):
    """Experiment id -> its trial files, for the experiments with claims."""
    return PLAN.claims_files()


def claims_select(wildcards):
    """Experiment id -> its repeats per algorithm (rows of shared trial files)."""
    return PLAN.claims_select()


def plot_kwargs(wildcards):
    """Title, legend order and note of one experiment's figure."""
    return PLAN.plot_kwargs(wildcards.experiment)


def split_design(wildcards):
    """The trials' split design in words (the figure caption's; dpreg.engine.plan.cv_design)."""
    return cv_design(config["cv"])


# ---------------------------------------------------------------------------
# priorities and resources (dpreg.engine.plan: PRIORITY and why that order)
# ---------------------------------------------------------------------------
def sweep_priority(wildcards):
    """Priority of one sweep job: "stats" shards, then larger datasets first."""
    return PLAN.sweep_priority(wildcards.dataset, wildcards.shard)


def sweep_mem_mb(wildcards, attempt):
    """Memory of a sweep job (MB): the streaming budget plus headroom, doubled on retry."""
    return PLAN.sweep_mem_mb(attempt)


def sweep_runtime(wildcards, attempt):
    """Minutes of a sweep job; grows with its number of trials, doubled on retry."""
    return PLAN.sweep_runtime(wildcards.dataset, wildcards.shard, attempt)
