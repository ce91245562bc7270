# Configuration checks and helper functions shared by every rule file.
#
# The config is validated against workflow/schemas/config.schema.yaml (unknown
# keys, wrong types and out-of-range values stop here, with defaults filled),
# then names are cross-checked: an experiment that names an unknown variant,
# dataset or algorithm stops with one message naming it and listing the
# known ones.

import re
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate


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


_validate_config(config)


def _available_algorithms():
    """Registry algorithms plus the external peers whose package is installed.

    Returns (available, optional): names that run, and peer name -> install hint
    for peers whose package is missing.
    """
    from dpreg.algorithms import ALGORITHMS
    from dpreg.peers import PEERS, diffprivlib_available

    available = set(ALGORITHMS)
    optional = {}
    for name in PEERS:
        if name == "diffprivlib" and not diffprivlib_available():
            optional[name] = "pip install 'dpreg[peers]'"
        else:
            available.add(name)
    return available, optional


def _unknown(kind, name, where, known):
    return WorkflowError(
        f"{where} names unknown {kind} {name!r}; known {kind}s: {', '.join(known)}"
    )


#: experiment id -> notes on optional algorithms that were not run
SKIPPED = {}


def _check_experiments(cfg):
    """Cross-check names; drop optional algorithms that are not installed."""
    datasets = list(cfg["datasets"])
    variants = list(cfg["variants"])
    registered, optional = _available_algorithms()
    for exp_id, exp in cfg["experiments"].items():
        where = f"config: experiments: {exp_id}"
        for name in exp["variants"]:
            if name not in cfg["variants"]:
                raise _unknown("variant", name, where, variants)
        if exp["datasets"] != "all":
            for name in exp["datasets"]:
                if name not in cfg["datasets"]:
                    raise _unknown("dataset", name, where, datasets)
        kept = []
        for name in exp["algorithms"]:
            if name in registered:
                kept.append(name)
            elif name in optional:
                SKIPPED.setdefault(exp_id, []).append(f"{name} not installed ({optional[name]})")
                # dropped here, not in the sweep, so that installing the package
                # later changes the job's params and reruns the affected sweeps
                logger.warning(
                    f"{where}: algorithm {name!r} is not installed and is skipped "
                    f"(install it with: {optional[name]})"
                )
            else:
                raise _unknown("algorithm", name, where, sorted(registered | set(optional)))
        if not kept:
            raise WorkflowError(f"{where}: none of its algorithms is available")
        exp["algorithms"] = kept


def _check_datasets(cfg):
    """The dataset entries as dpreg.data sees them (e.g. each needs a source)."""
    from dpreg import DPRegError
    from dpreg.data import validate_entry

    for name, entry in cfg["datasets"].items():
        try:
            validate_entry(name, entry, mirror_dir=cfg["mirror"])
        except DPRegError as err:
            raise WorkflowError(f"config: datasets: {err}") from None


_check_datasets(config)
_check_experiments(config)

DATASETS = list(config["datasets"])
EXPERIMENTS = list(config["experiments"])


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    experiment="|".join(map(re.escape, EXPERIMENTS)),


# ---------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------
def experiment_datasets(experiment):
    """Dataset names of an experiment, in config order."""
    chosen = config["experiments"][experiment]["datasets"]
    return DATASETS if chosen == "all" else list(chosen)


def used_datasets():
    """Datasets named by at least one experiment, in config order."""
    used = {ds for exp in EXPERIMENTS for ds in experiment_datasets(exp)}
    return [ds for ds in DATASETS if ds in used]


# ---------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------
def all_outputs():
    """Figures, tables and provenance: what `rule all` asks for."""
    out = []
    for exp in EXPERIMENTS:
        out += [
            f"results/figures/{exp}.png",
            f"results/figures/{exp}.pdf",
            f"results/tables/{exp}.csv",
        ]
    out.append("results/provenance.json")
    return out


# ---------------------------------------------------------------------------
# input functions
# ---------------------------------------------------------------------------
def dataset_source_files(wildcards):
    """Local files a dataset is read from, so editing them reruns its preparation.

    A `path:` entry is read from that file (or from data.csv and metadata.json
    when it names a folder); otherwise the offline mirror is used when it holds
    the dataset (mirror/<name>/data.csv, metadata.json and mirror/SHA256SUMS).
    Downloads (uci_id, url, or refresh: true) have no local input.
    """
    entry = config["datasets"][wildcards.dataset]
    if "path" in entry:
        path = Path(entry["path"])
        if path.is_dir():
            return [str(p) for p in (path / "data.csv", path / "metadata.json") if p.exists()]
        return [entry["path"]]
    if entry.get("refresh"):
        return []
    mirror = Path(config["mirror"])
    folder = mirror / wildcards.dataset
    files = [folder / "data.csv", folder / "metadata.json", mirror / "SHA256SUMS"]
    if not files[0].exists():
        return []
    return [str(p) for p in files if p.exists()]


def experiment_trials(wildcards):
    """Trial files of one experiment, one per dataset."""
    return [
        f"results/trials/{wildcards.experiment}/{ds}.csv.gz"
        for ds in experiment_datasets(wildcards.experiment)
    ]


def experiment_metas(wildcards):
    """Meta sidecars of the datasets of one experiment."""
    return [
        f"results/prepared/{ds}.json" for ds in experiment_datasets(wildcards.experiment)
    ]


def all_metas(wildcards):
    """Meta sidecars of every dataset an experiment uses."""
    return [f"results/prepared/{ds}.json" for ds in used_datasets()]


def all_tables(wildcards):
    """Summary tables of every experiment."""
    return [f"results/tables/{exp}.csv" for exp in EXPERIMENTS]


# ---------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------
def dataset_entry(wildcards):
    """The config entry (source + recipe) of one dataset."""
    return dict(config["datasets"][wildcards.dataset])


def sweep_kwargs(wildcards):
    """Keyword arguments of dpreg.sweep.sweep_dataset for one (experiment, dataset)."""
    exp = config["experiments"][wildcards.experiment]
    return {
        "dataset": wildcards.dataset,
        "variants": {name: dict(config["variants"][name]) for name in exp["variants"]},
        "algorithms": list(exp["algorithms"]),
        "epsilons": list(config["epsilons"]),
        "delta": config["delta"],
        "folds": config["cv"]["folds"],
        "repeats": config["cv"]["repeats"],
        "seed": config["seed"],
        "rho": config["rho"],
        "xtx_offset": config["xtx_offset"],
        "memory_budget_mb": config["memory_budget_mb"],
    }


def plot_kwargs(wildcards):
    """Title and legend order of one experiment's figure."""
    exp = config["experiments"][wildcards.experiment]
    return {
        "experiment": wildcards.experiment,
        "title": exp.get("title") or wildcards.experiment,
        "variants": list(exp["variants"]),
        "algorithms": list(exp["algorithms"]),
        "datasets": experiment_datasets(wildcards.experiment),
        "note": "; ".join(SKIPPED.get(wildcards.experiment, [])) or None,
    }


# ---------------------------------------------------------------------------
# resources (for cluster executors; mem_mb in MB, runtime in minutes)
# ---------------------------------------------------------------------------
def sweep_mem_mb(wildcards, attempt):
    """Memory of a sweep job: the streaming budget plus headroom, doubled on retry."""
    budget = config["memory_budget_mb"] or 2048
    return int(min(budget, 65536) + 1024) * attempt


def sweep_runtime(wildcards, attempt):
    """Minutes of a sweep job; grows with the grid, doubled on retry."""
    exp = config["experiments"][wildcards.experiment]
    trials = (
        len(exp["variants"])
        * len(exp["algorithms"])
        * len(config["epsilons"])
        * config["cv"]["folds"]
        * config["cv"]["repeats"]
    )
    return int(30 + trials // 2000) * attempt
