"""The run planner: what the workflow runs, derived once from the validated config.

:meth:`Plan.from_config` takes the config as Snakemake holds it after
schema validation (defaults filled), checks the names it cross-references
(variants, datasets, algorithms and `run:` experiments; a `repeats` entry
naming an algorithm its experiment does not run) and drops the optional
algorithms whose package is not installed.  The resulting :class:`Plan`
answers every question the rules ask:

- names: the datasets, the experiments of the run and the datasets each uses;
- trials: the repeats of each (experiment, algorithm), the shard (trial file)
  of each algorithm, the sweep plan of each (dataset, shard);
- files: the run's outputs, the trial files each experiment reads, the local
  source files of each dataset;
- params of the jobs (sweep arguments, trial selections, plot settings);
- scheduling: priorities, and memory and runtime per attempt.

The module is pure: it imports no Snakemake, keeps no state between plans
and never changes the config it is given (the plan holds a deep copy); the
one outside effect is registering the config's ``plugins:`` in the algorithm
registry before any name is checked (:func:`dpreg.algorithms.load_plugins`).  The
only methods that look at the file system are :meth:`Plan.dataset_source_files`
and the priorities of the sweeps (data-file sizes, read once per plan), both
relative to the working directory.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS, get_algorithm, load_plugins
from dpreg.algorithms.fingerprint import code_fingerprint
from dpreg.engine.checks import check_algorithm_params, check_claim_scopes

__all__ = [
    "PRIORITY",
    "SWEEP_PRIORITY_BASE",
    "Plan",
    "cv_design",
    "available_algorithms",
    "shard_of",
]

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

#: rule -> priority of the rules other than run_sweep (whose priorities, from
#: Plan.sweep_priority, lie between SWEEP_PRIORITY_BASE and
#: SWEEP_PRIORITY_BASE + 2 x the number of datasets)
PRIORITY = {"prepare_dataset": 10_000, "write_claims": 2, "summarise_experiment": 1}

#: lowest priority of a sweep job (above every summary job)
SWEEP_PRIORITY_BASE = 10


def available_algorithms() -> tuple[set[str], dict[str, str]]:
    """Registry algorithms whose optional packages (``requires``) are installed.

    Returns (available, optional): names that run, and name -> install hint
    for entries whose package is missing.
    """
    available = {name for name, alg in ALGORITHMS.items() if alg.available}
    optional = {
        name: alg.install_hint or f"install {', '.join(alg.requires)}"
        for name, alg in ALGORITHMS.items()
        if not alg.available
    }
    return available, optional


def shard_of(algorithm: str) -> str:
    """The trial file an algorithm's trials go to: "stats" or "rows".

    Algorithms that work from sufficient statistics share one job per
    dataset ("stats"), so each (variant, fold)'s statistics are computed once
    for all of them; algorithms that fit on the rows (`needs_rows` in the
    registry) share a second one ("rows"), which runs
    beside the first.  Two jobs per dataset: each job pays its start-up and
    imports once (about a second), however many algorithms it runs.
    """
    return "rows" if get_algorithm(algorithm).needs_rows else "stats"


def cv_design(cv: Mapping[str, Any]) -> str:
    """The trials' split design in words, for figure notes and captions: "10 folds",
    or "5 partitions × 10 folds" with ``cv.partitions`` > 1 (each point's trials are
    this times its noise repeats per fold)."""
    P = int(cv.get("partitions", 1))
    return (f"{P} partitions × " if P > 1 else "") + f"{int(cv['folds'])} folds"


def _unknown(kind: str, name: str, where: str, known: Iterable[str]) -> DPRegError:
    return DPRegError(f"{where} names unknown {kind} {name!r}; known {kind}s: {', '.join(known)}")


def _check_experiments(cfg: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Cross-check names; drop the optional algorithms that are not installed (in `cfg`).

    Returns experiment id -> {skipped algorithm: install hint}.
    """
    datasets = list(cfg["datasets"])
    variants = list(cfg["variants"])
    registered, optional = available_algorithms()
    skipped: dict[str, dict[str, str]] = {}
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
                # dropped here, not in the sweep, so that installing the package
                # later changes the job's params and reruns the affected sweeps
                skipped.setdefault(exp_id, {})[name] = optional[name]
            else:
                raise _unknown("algorithm", name, where, sorted(registered | set(optional)))
        if not kept:
            raise DPRegError(f"{where}: none of its algorithms is available")
        exp["algorithms"] = kept
        check_claim_scopes(cfg, exp_id, exp)
    check_algorithm_params(cfg, sorted(registered | set(optional)))
    return skipped


def _run_experiments(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """Experiment ids of this run: `run:` when given, else every experiment."""
    chosen = cfg.get("run") or list(cfg["experiments"])
    for exp_id in chosen:
        if exp_id not in cfg["experiments"]:
            raise _unknown("experiment", exp_id, "config: run", list(cfg["experiments"]))
    return tuple(chosen)


@dataclass(frozen=True, eq=False)
class Plan:
    """Every planning decision of one run; build it with :meth:`from_config`.

    Attributes
    ----------
    config : dict
        A deep copy of the validated config, with the optional algorithms
        that are not installed removed from the experiments' `algorithms`.
    experiments : tuple of str
        Experiment ids of the run (`run:` when given, else every experiment).
    skipped : mapping
        Experiment id -> {optional algorithm not run: install hint}.
    """

    config: dict[str, Any]
    experiments: tuple[str, ...]
    skipped: Mapping[str, Mapping[str, str]]

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Plan:
        """The plan of a schema-validated config (left unchanged).

        Raises :class:`~dpreg._validation.DPRegError` naming the experiment
        and the unknown variant, dataset, algorithm or `run:` experiment
        (listing the known ones), an experiment none of whose algorithms is
        available, or a `repeats` entry naming an algorithm its experiment
        does not run.
        """
        config = copy.deepcopy(dict(cfg))
        load_plugins(config.get("plugins") or [])  # before any name is checked
        skipped = _check_experiments(config)
        plan = cls(config=config, experiments=_run_experiments(config), skipped=skipped)
        for exp in plan.experiments:
            plan.repeats(exp)  # a `repeats` entry naming a foreign algorithm stops here
        return plan

    # -- names ---------------------------------------------------------------
    @property
    def datasets(self) -> list[str]:
        """Every dataset of the config, in config order."""
        return list(self.config["datasets"])

    def experiment_datasets(self, experiment: str) -> list[str]:
        """Dataset names of an experiment, in config order."""
        chosen = self.config["experiments"][experiment]["datasets"]
        return self.datasets if chosen == "all" else list(chosen)

    def used_datasets(self) -> list[str]:
        """Datasets named by at least one experiment of the run, in config order."""
        used = {ds for exp in self.experiments for ds in self.experiment_datasets(exp)}
        return [ds for ds in self.datasets if ds in used]

    def algorithms(self, experiment: str) -> list[str]:
        """Algorithms an experiment runs (without the skipped optional ones)."""
        return list(self.config["experiments"][experiment]["algorithms"])

    def claim_experiments(self) -> list[str]:
        """Experiments of the run that state claims (checked in results/tables/claims.csv)."""
        return [exp for exp in self.experiments if self.config["experiments"][exp].get("claims")]

    def warnings(self) -> list[str]:
        """One message per optional algorithm not run, naming its experiment."""
        return [
            f"config: experiments: {exp}: algorithm {name!r} is not installed and is skipped "
            f"(install it with: {hint})"
            for exp, algs in self.skipped.items()
            for name, hint in algs.items()
        ]

    # -- trials --------------------------------------------------------------
    def repeats(self, experiment: str) -> dict[str, int]:
        """Algorithm -> noise repeats per fold in one experiment (its `repeats`, else cv.repeats)."""
        exp = self.config["experiments"][experiment]
        default = self.config["cv"]["repeats"]
        given = exp.get("repeats", default)
        if isinstance(given, int):
            return {alg: given for alg in exp["algorithms"]}
        for alg in given:
            if alg not in exp["algorithms"] and alg not in self.skipped.get(experiment, ()):
                raise DPRegError(
                    f"config: experiments: {experiment}: repeats names {alg!r}, which is not one "
                    f"of its algorithms ({', '.join(exp['algorithms'])})"
                )
        return {alg: given.get(alg, default) for alg in exp["algorithms"]}

    def sweep_plan(self, dataset: str, shard: str) -> dict[str, dict[str, int]]:
        """variant -> {algorithm: repeats}: every trial of the run on one (dataset, shard).

        A (variant, algorithm) pair used by several experiments is swept once,
        with the largest number of repeats any of them asks for (trials are
        prefix-stable in the repeat index, so an experiment with fewer repeats
        reads the first ones).
        """
        plan: dict[str, dict[str, int]] = {}
        for exp in self.experiments:
            if dataset not in self.experiment_datasets(exp):
                continue
            repeats = self.repeats(exp)
            for variant in self.config["experiments"][exp]["variants"]:
                for alg in self.config["experiments"][exp]["algorithms"]:
                    if shard_of(alg) != shard:
                        continue
                    algs = plan.setdefault(variant, {})
                    algs[alg] = max(algs.get(alg, 0), repeats[alg])
        return plan

    def dataset_shards(self, dataset: str) -> list[str]:
        """Trial files (shards) of one dataset that the run needs, in first-use order."""
        shards: dict[str, None] = {}
        for exp in self.experiments:
            if dataset in self.experiment_datasets(exp):
                for alg in self.config["experiments"][exp]["algorithms"]:
                    shards[shard_of(alg)] = None
        return list(shards)

    @property
    def shards(self) -> list[str]:
        """Trial-file shards of the run ("stats" and the row-based algorithms), sorted."""
        return sorted({s for ds in self.used_datasets() for s in self.dataset_shards(ds)})

    # -- files ---------------------------------------------------------------
    @property
    def run_suffix(self) -> str:
        """``""`` for a run of every experiment, else ``-<ids joined by +>`` (set by ``run:``)."""
        return f"-{'+'.join(self.experiments)}" if self.config.get("run") else ""

    @property
    def trials_dir(self) -> str:
        """``results/trials``, or ``results/trials-<run set>`` with ``run:`` (run sets sweep
        different (variant, algorithm) plans on the same datasets and must not overwrite each
        other)."""
        return f"results/trials{self.run_suffix}"

    @property
    def provenance_path(self) -> str:
        """results/provenance.json for a run of every experiment, else one file per run set."""
        return f"results/provenance{self.run_suffix}.json"

    @property
    def claims_path(self) -> str:
        """results/tables/claims.csv for a run of every experiment, else one file per run set."""
        return f"results/tables/claims{self.run_suffix}.csv"

    def all_outputs(self) -> list[str]:
        """Figures, tables and provenance: what `rule all` asks for."""
        out = []
        for exp in self.experiments:
            out += [
                f"results/figures/{exp}.png",
                f"results/figures/{exp}.pdf",
                f"results/tables/{exp}.csv",
            ]
        if self.claim_experiments():
            out.append(self.claims_path)
        out.append(self.provenance_path)
        return out

    def trial_files(self, experiment: str) -> list[str]:
        """Trial files an experiment reads: its datasets x the shards of its algorithms."""
        shards = list(dict.fromkeys(shard_of(alg) for alg in self.algorithms(experiment)))
        return [
            f"{self.trials_dir}/{ds}/{shard}.parquet"
            for ds in self.experiment_datasets(experiment)
            for shard in shards
        ]

    def claim_trials(self) -> list[str]:
        """Trial files of every experiment that states claims."""
        return list(
            dict.fromkeys(f for exp in self.claim_experiments() for f in self.trial_files(exp))
        )

    def dataset_source_files(self, dataset: str) -> list[str]:
        """Local files a dataset is read from, so editing them reruns its preparation.

        A `path:` entry is read from that file (or from data.csv and metadata.json
        when it names a folder); otherwise the offline mirror is used when it holds
        the dataset (mirror/<name>/data.csv, metadata.json and mirror/SHA256SUMS).
        Downloads (uci_id, url, or refresh: true) have no local input.  Paths are
        relative to the working directory.
        """
        entry = self.config["datasets"][dataset]
        if "path" in entry:
            path = Path(entry["path"])
            if path.is_dir():
                return [str(p) for p in (path / "data.csv", path / "metadata.json") if p.exists()]
            return [entry["path"]]
        if entry.get("refresh"):
            return []
        mirror = Path(self.config["mirror"])
        folder = mirror / dataset
        files = [folder / "data.csv", folder / "metadata.json", mirror / "SHA256SUMS"]
        if not files[0].exists():
            return []
        return [str(p) for p in files if p.exists()]

    # -- params --------------------------------------------------------------
    def dataset_entry(self, dataset: str) -> dict[str, Any]:
        """The config entry (source + recipe) of one dataset."""
        return dict(self.config["datasets"][dataset])

    def run_config(self) -> dict[str, Any]:
        """The config restricted to the experiments of this run (for provenance)."""
        cfg = self.config
        return {**cfg, "experiments": {e: cfg["experiments"][e] for e in self.experiments}}

    def sweep_kwargs(self, dataset: str, shard: str) -> dict[str, Any]:
        """Keyword arguments of dpreg.engine.sources.sweep_dataset for one (dataset, shard)."""
        cfg = self.config
        plan = self.sweep_plan(dataset, shard)
        return {
            "dataset": dataset,
            "variants": {name: dict(cfg["variants"][name]) for name in plan},
            "plan": plan,
            "epsilons": list(cfg["epsilons"]),
            "delta": cfg["delta"],
            "folds": cfg["cv"]["folds"],
            "partitions": cfg["cv"].get("partitions", 1),
            "seed": cfg["seed"],
            "rho": cfg["rho"],
            "xtx_offset": cfg["xtx_offset"],
            "memory_budget_mb": cfg["memory_budget_mb"],
            "algorithm_params": {
                alg: dict(p)
                for alg, p in cfg.get("algorithm_params", {}).items()
                if any(alg in algs for algs in plan.values())
            },
            "public_ranges": cfg.get("public_ranges", {}).get(dataset),
        }

    def sweep_code(self, dataset: str, shard: str) -> dict[str, str]:
        """Algorithm -> code fingerprint (dpreg.algorithms.fingerprint) of one sweep's
        algorithms: a param of the job, so editing an algorithm reruns its sweeps only."""
        algs = sorted({a for algs in self.sweep_plan(dataset, shard).values() for a in algs})
        return {a: code_fingerprint(a) for a in algs}

    def trial_selection(self, experiment: str) -> dict[str, Any]:
        """Which trials of its files an experiment summarises (see dpreg.io.trials.read_trials)."""
        exp = self.config["experiments"][experiment]
        return {
            "variants": list(exp["variants"]),
            "algorithms": list(exp["algorithms"]),
            "repeats": self.repeats(experiment),
        }

    def bootstrap_params(self) -> dict[str, Any]:
        """Seed and bootstrap settings of the summaries (a change reruns them)."""
        return {"seed": self.config["seed"], "bootstrap": self.config.get("bootstrap", {})}

    def claims_config(self) -> dict[str, Any]:
        """Settings and the experiments whose claims write_claims checks."""
        return {
            **self.bootstrap_params(),
            "experiments": {
                exp: self.config["experiments"][exp] for exp in self.claim_experiments()
            },
        }

    def claims_files(self) -> dict[str, list[str]]:
        """Experiment id -> its trial files, for the experiments with claims."""
        return {exp: self.trial_files(exp) for exp in self.claim_experiments()}

    def claims_select(self) -> dict[str, dict[str, dict[str, int]]]:
        """Experiment id -> its repeats per algorithm (rows of shared trial files)."""
        return {exp: {"repeats": self.repeats(exp)} for exp in self.claim_experiments()}

    def figure_notes(self, experiment: str) -> list[str]:
        """Notes under an experiment's figure: skipped optional algorithms, repeats
        other than cv.repeats, the entries' own notes (e.g. numerically chaotic fits)."""
        notes = [
            f"{name} not installed ({hint})"
            for name, hint in self.skipped.get(experiment, {}).items()
        ]
        cv = self.config["cv"]
        default = cv["repeats"]
        if cv.get("partitions", 1) > 1:  # one partition: the caption states the design
            notes.append(f"trials per point: {cv_design(cv)} × {default} repeats")
        odd = {a: r for a, r in self.repeats(experiment).items() if r != default}
        if odd:
            listed = ", ".join(f"{a} {r}" for a, r in odd.items())
            notes.append(f"repeats per fold: {listed} (others {default})")
        algs = self.algorithms(experiment)
        notes += [f"{a}: {ALGORITHMS[a].note}" for a in algs if ALGORITHMS[a].note]
        variants = self.config.get("variants") or {}
        for v in self.config["experiments"][experiment].get("variants", []):
            ps = (variants.get(v) or {}).get("private_stats") or {}
            if ps.get("exact") is True:  # the control of private pre-processing
                notes.append(f"{v}: public ranges with exact statistics (not private)")
        return notes

    def plot_kwargs(self, experiment: str) -> dict[str, Any]:
        """Title, legend order and note of one experiment's figure."""
        exp = self.config["experiments"][experiment]
        return {
            "experiment": experiment,
            "title": exp.get("title") or experiment,
            "variants": list(exp["variants"]),
            "algorithms": list(exp["algorithms"]),
            "datasets": self.experiment_datasets(experiment),
            "note": "; ".join(self.figure_notes(experiment)) or None,
            "statistic": exp.get("statistic", "median"),
            "level": self.config.get("bootstrap", {}).get("level", 0.95),
            "cap": exp.get("plot_cap", 10),
        }

    # -- scheduling ----------------------------------------------------------
    def dataset_bytes(self, dataset: str) -> int:
        """Size of a dataset's local data file (0 for a download): a proxy for its rows."""
        files = self.dataset_source_files(dataset)  # the data file first
        return Path(files[0]).stat().st_size if files and Path(files[0]).is_file() else 0

    @cached_property
    def sweep_ranks(self) -> dict[str, int]:
        """Dataset of the run -> rank by data-file size (smallest 0), read on first use."""
        by_size = sorted(self.used_datasets(), key=lambda ds: (self.dataset_bytes(ds), ds))
        return {ds: i for i, ds in enumerate(by_size)}

    def sweep_priority(self, dataset: str, shard: str) -> int:
        """Priority of one sweep job, above every summary job.

        "stats" shards before the others, and within a shard larger datasets
        (by the size of their data file) first.
        """
        ranks = self.sweep_ranks
        base = SWEEP_PRIORITY_BASE + (len(ranks) if shard == "stats" else 0)
        return base + ranks.get(dataset, 0)

    # -- resources (for cluster executors; mem_mb in MB, runtime in minutes) --
    def sweep_mem_mb(self, attempt: int = 1) -> int:
        """Memory of a sweep job: the streaming budget plus headroom, doubled on retry."""
        budget = self.config["memory_budget_mb"] or 2048
        return int(min(budget, 65536) + 1024) * attempt

    def sweep_runtime(self, dataset: str, shard: str, attempt: int = 1) -> int:
        """Minutes of a sweep job; grows with its number of trials, doubled on retry."""
        plan = self.sweep_plan(dataset, shard)
        per_point = sum(r for algs in plan.values() for r in algs.values())
        cv = self.config["cv"]
        trials = per_point * len(self.config["epsilons"]) * cv["folds"] * cv.get("partitions", 1)
        return int(30 + trials // 20000) * attempt
