# Configuration checks and helper functions shared by every rule file.
#
# The config is validated against workflow/schemas/config.schema.yaml (unknown
# keys, wrong types and out-of-range values stop here, with defaults filled),
# then names are cross-checked: an experiment that names an unknown variant,
# dataset or algorithm stops with one message naming it and listing the
# known ones.

import re
from functools import lru_cache
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
    from dpreg.algorithms.peers import PEERS, diffprivlib_available

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
#: experiment id -> names of the optional algorithms that were not run
SKIPPED_ALGORITHMS = {}


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
                SKIPPED_ALGORITHMS.setdefault(exp_id, []).append(name)
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


def _run_experiments(cfg):
    """Experiment ids of this run: `run:` when given, else every experiment."""
    chosen = cfg.get("run") or list(cfg["experiments"])
    for exp_id in chosen:
        if exp_id not in cfg["experiments"]:
            raise _unknown("experiment", exp_id, "config: run", list(cfg["experiments"]))
    return list(chosen)


DATASETS = list(config["datasets"])
EXPERIMENTS = _run_experiments(config)


# ---------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------
def experiment_datasets(experiment):
    """Dataset names of an experiment, in config order."""
    chosen = config["experiments"][experiment]["datasets"]
    return DATASETS if chosen == "all" else list(chosen)


def used_datasets():
    """Datasets named by at least one experiment of the run, in config order."""
    used = {ds for exp in EXPERIMENTS for ds in experiment_datasets(exp)}
    return [ds for ds in DATASETS if ds in used]


def experiment_repeats(experiment):
    """Algorithm -> noise repeats per fold in one experiment (its `repeats`, else cv.repeats)."""
    exp = config["experiments"][experiment]
    default = config["cv"]["repeats"]
    given = exp.get("repeats", default)
    if isinstance(given, int):
        return {alg: given for alg in exp["algorithms"]}
    for alg in given:
        if alg not in exp["algorithms"] and alg not in SKIPPED_ALGORITHMS.get(experiment, ()):
            raise WorkflowError(
                f"config: experiments: {experiment}: repeats names {alg!r}, which is not one "
                f"of its algorithms ({', '.join(exp['algorithms'])})"
            )
    return {alg: given.get(alg, default) for alg in exp["algorithms"]}


def shard_of(algorithm):
    """The trial file an algorithm's trials go to: "stats" or "rows".

    Algorithms that work from sufficient statistics share one job per
    dataset ("stats"), so each (variant, fold)'s statistics are computed once
    for all of them; algorithms that fit on the rows (`needs_rows` in the
    registry) and external peers share a second one ("rows"), which runs
    beside the first.  Two jobs per dataset: each job pays its start-up and
    imports once (about a second), however many algorithms it runs.
    """
    from dpreg.algorithms.peers import PEERS

    if algorithm in PEERS:
        return "rows"
    from dpreg.algorithms import get_algorithm

    return "rows" if getattr(get_algorithm(algorithm), "needs_rows", False) else "stats"


def sweep_plan(dataset, shard):
    """variant -> {algorithm: repeats}: every trial of the run on one (dataset, shard).

    A (variant, algorithm) pair used by several experiments is swept once,
    with the largest number of repeats any of them asks for (trials are
    prefix-stable in the repeat index, so an experiment with fewer repeats
    reads the first ones).
    """
    plan = {}
    for exp in EXPERIMENTS:
        if dataset not in experiment_datasets(exp):
            continue
        repeats = experiment_repeats(exp)
        for variant in config["experiments"][exp]["variants"]:
            for alg in config["experiments"][exp]["algorithms"]:
                if shard_of(alg) != shard:
                    continue
                algs = plan.setdefault(variant, {})
                algs[alg] = max(algs.get(alg, 0), repeats[alg])
    return plan


def dataset_shards(dataset):
    """Trial files (shards) of one dataset that the run needs, in first-use order."""
    shards = {}
    for exp in EXPERIMENTS:
        if dataset in experiment_datasets(exp):
            for alg in config["experiments"][exp]["algorithms"]:
                shards[shard_of(alg)] = None
    return list(shards)


for _exp in EXPERIMENTS:
    experiment_repeats(_exp)  # a `repeats` entry naming a foreign algorithm stops here

#: trial-file shards of the run ("stats" and the row-based algorithms)
SHARDS = sorted({s for ds in used_datasets() for s in dataset_shards(ds)})


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    experiment="|".join(map(re.escape, EXPERIMENTS)),
    shard="|".join(map(re.escape, SHARDS)) or "stats",


# ---------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------
def _run_suffix():
    """ "" for a run of every experiment, else "-<ids joined by +>" (set by `run:`)."""
    return f"-{'+'.join(EXPERIMENTS)}" if config.get("run") else ""


def trials_dir():
    """results/trials, or results/trials-<run set> with `run:` (run sets sweep different
    (variant, algorithm) plans on the same datasets and must not overwrite each other)."""
    return f"results/trials{_run_suffix()}"


def provenance_path():
    """results/provenance.json for a run of every experiment, else one file per run set."""
    return f"results/provenance{_run_suffix()}.json"


def claims_path():
    """results/tables/claims.csv for a run of every experiment, else one file per run set."""
    return f"results/tables/claims{_run_suffix()}.csv"


def all_outputs():
    """Figures, tables and provenance: what `rule all` asks for."""
    out = []
    for exp in EXPERIMENTS:
        out += [
            f"results/figures/{exp}.png",
            f"results/figures/{exp}.pdf",
            f"results/tables/{exp}.csv",
        ]
    if claim_experiments():
        out.append(claims_path())
    out.append(provenance_path())
    return out


def claim_experiments():
    """Experiments of the run that state claims (checked in results/tables/claims.csv)."""
    return [exp for exp in EXPERIMENTS if config["experiments"][exp].get("claims")]


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


def trial_files(experiment):
    """Trial files an experiment reads: its datasets x the shards of its algorithms."""
    exp = config["experiments"][experiment]
    shards = list(dict.fromkeys(shard_of(alg) for alg in exp["algorithms"]))
    return [
        f"{trials_dir()}/{ds}/{shard}.parquet"
        for ds in experiment_datasets(experiment)
        for shard in shards
    ]


def experiment_trials(wildcards):
    """Trial files of one experiment (input function)."""
    return trial_files(wildcards.experiment)


def claim_trials(wildcards):
    """Trial files of every experiment that states claims."""
    return list(dict.fromkeys(f for exp in claim_experiments() for f in trial_files(exp)))


def experiment_metas(wildcards):
    """Meta sidecars of the datasets of one experiment."""
    return [f"results/prepared/{ds}.json" for ds in experiment_datasets(wildcards.experiment)]


def all_metas(wildcards):
    """Meta sidecars of every dataset an experiment of the run uses."""
    return [f"results/prepared/{ds}.json" for ds in used_datasets()]


def run_config():
    """The validated config restricted to the experiments of this run (for provenance)."""
    return {**config, "experiments": {e: config["experiments"][e] for e in EXPERIMENTS}}


def all_tables(wildcards):
    """Summary tables of every experiment of the run."""
    return [f"results/tables/{exp}.csv" for exp in EXPERIMENTS]


# ---------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------
def dataset_entry(wildcards):
    """The config entry (source + recipe) of one dataset."""
    return dict(config["datasets"][wildcards.dataset])


def sweep_kwargs(wildcards):
    """Keyword arguments of dpreg.sweep.sweep_dataset for one (dataset, shard)."""
    plan = sweep_plan(wildcards.dataset, wildcards.shard)
    return {
        "dataset": wildcards.dataset,
        "variants": {name: dict(config["variants"][name]) for name in plan},
        "plan": plan,
        "epsilons": list(config["epsilons"]),
        "delta": config["delta"],
        "folds": config["cv"]["folds"],
        "seed": config["seed"],
        "rho": config["rho"],
        "xtx_offset": config["xtx_offset"],
        "memory_budget_mb": config["memory_budget_mb"],
        "algorithm_params": {
            alg: dict(p)
            for alg, p in config.get("algorithm_params", {}).items()
            if any(alg in algs for algs in plan.values())
        },
        "public_ranges": config.get("public_ranges", {}).get(wildcards.dataset),
    }


def trial_selection(wildcards):
    """Which trials of its files an experiment summarises (see dpreg.tables.read_trials)."""
    exp = config["experiments"][wildcards.experiment]
    return {
        "variants": list(exp["variants"]),
        "algorithms": list(exp["algorithms"]),
        "repeats": experiment_repeats(wildcards.experiment),
    }


def bootstrap_params(wildcards):
    """Seed and bootstrap settings of the summaries (a change reruns them)."""
    return {"seed": config["seed"], "bootstrap": config.get("bootstrap", {})}


def claims_config(wildcards):
    """Settings and the experiments whose claims write_claims checks."""
    exps = claim_experiments()
    return {
        **bootstrap_params(wildcards),
        "experiments": {exp: config["experiments"][exp] for exp in exps},
    }


def claims_files(wildcards):
    """Experiment id -> its trial files, for the experiments with claims."""
    return {exp: trial_files(exp) for exp in claim_experiments()}


def claims_select(wildcards):
    """Experiment id -> its repeats per algorithm (rows of shared trial files)."""
    return {exp: {"repeats": experiment_repeats(exp)} for exp in claim_experiments()}


def _repeats_note(experiment):
    """Figure note on algorithms run with fewer or more repeats than cv.repeats."""
    default = config["cv"]["repeats"]
    odd = {a: r for a, r in experiment_repeats(experiment).items() if r != default}
    if not odd:
        return []
    listed = ", ".join(f"{a} {r}" for a, r in odd.items())
    return [f"repeats per fold: {listed} (others {default})"]


#: peers whose fits are numerically chaotic: their trials change across machines
#: (BLAS rounding; README.md, "Reproducibility"), so their figures say so
CHAOTIC_PEERS = ("diffprivlib",)


def plot_kwargs(wildcards):
    """Title, legend order and note of one experiment's figure."""
    exp = config["experiments"][wildcards.experiment]
    notes = SKIPPED.get(wildcards.experiment, []) + _repeats_note(wildcards.experiment)
    chaotic = [a for a in exp["algorithms"] if a in CHAOTIC_PEERS]
    if chaotic:
        notes.append(f"{', '.join(chaotic)}: numerically chaotic fits, differ across machines")
    return {
        "experiment": wildcards.experiment,
        "title": exp.get("title") or wildcards.experiment,
        "variants": list(exp["variants"]),
        "algorithms": list(exp["algorithms"]),
        "datasets": experiment_datasets(wildcards.experiment),
        "note": "; ".join(notes) or None,
        "statistic": exp.get("statistic", "median"),
        "level": config.get("bootstrap", {}).get("level", 0.95),
        "cap": exp.get("plot_cap", 10),
    }


# ---------------------------------------------------------------------------
# scheduling priorities (among the jobs ready to run, higher starts first)
# ---------------------------------------------------------------------------
# The order only changes wall time, never a result (every trial's noise comes
# from its own seed).  On a few cores a run ends soonest when no core waits
# at the end and long jobs do not start last: the dataset preparations come
# first (short, and every sweep waits for one), then the sweeps, then
# write_claims (the longest summary job; it needs every sweep, and started as
# soon as they end it does not run alone at the tail), then the short
# per-experiment summaries.  Among the sweeps the "stats" shards come first:
# every experiment's summary waits for them, while only the experiments with
# row-based algorithms (and the claims) wait for the "rows" shards, so the
# other summaries can fill a core while the last row-based shards run.
# Within a shard, larger datasets first.

#: rule -> priority of the rules other than run_sweep (whose priorities,
#: from sweep_priority, lie between 10 and 10 + 2 x the number of datasets)
PRIORITY = {"prepare_dataset": 10_000, "write_claims": 2, "summarise_experiment": 1}


def _dataset_bytes(dataset):
    """Size of a dataset's local data file (0 for a download): a proxy for its rows."""
    from types import SimpleNamespace

    files = dataset_source_files(SimpleNamespace(dataset=dataset))  # the data file first
    return Path(files[0]).stat().st_size if files and Path(files[0]).is_file() else 0


@lru_cache(maxsize=1)
def _sweep_rank():
    """dataset -> rank by data-file size (smallest 0), computed once per run."""
    by_size = sorted(used_datasets(), key=lambda ds: (_dataset_bytes(ds), ds))
    return {ds: i for i, ds in enumerate(by_size)}


def sweep_priority(wildcards):
    """Priority of one sweep job, above every summary job.

    "stats" shards before the others, and within a shard larger datasets
    (by the size of their data file) first.
    """
    ranks = _sweep_rank()
    base = 10 + (len(ranks) if wildcards.shard == "stats" else 0)
    return base + ranks.get(wildcards.dataset, 0)


# ---------------------------------------------------------------------------
# resources (for cluster executors; mem_mb in MB, runtime in minutes)
# ---------------------------------------------------------------------------
def sweep_mem_mb(wildcards, attempt):
    """Memory of a sweep job: the streaming budget plus headroom, doubled on retry."""
    budget = config["memory_budget_mb"] or 2048
    return int(min(budget, 65536) + 1024) * attempt


def sweep_runtime(wildcards, attempt):
    """Minutes of a sweep job; grows with its number of trials, doubled on retry."""
    plan = sweep_plan(wildcards.dataset, wildcards.shard)
    per_point = sum(r for algs in plan.values() for r in algs.values())
    trials = per_point * len(config["epsilons"]) * config["cv"]["folds"]
    return int(30 + trials // 20000) * attempt
