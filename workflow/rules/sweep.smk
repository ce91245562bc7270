# Sweeps: one job per (dataset, shard).  The "stats" shard runs every
# algorithm that works from sufficient statistics, for every variant any
# experiment of the run uses on that dataset, so each (variant, fold)'s
# statistics are computed once; the "rows" shard runs the algorithms that fit
# on the rows.  What runs is derived from the config (dpreg.engine.plan:
# Plan.sweep_plan), so adding algorithms (built-in or plug-in), variants or
# experiments needs no change here.  params.code holds the code fingerprint of
# each algorithm the sweep runs (dpreg.algorithms.fingerprint): editing an
# algorithm's module (or plug-in file) changes it, so Snakemake reruns exactly
# the sweeps that run that algorithm.


rule run_sweep:
    """Every trial of one dataset and shard -> results/trials/<dataset>/<shard>.parquet."""
    input:
        table="results/prepared/{dataset}.parquet",
        meta="results/prepared/{dataset}.json",
    output:
        trials=f"{PLAN.trials_dir}/{{dataset}}/{{shard}}.parquet",
    log:
        "logs/run_sweep/{dataset}/{shard}.log",
    benchmark:
        "logs/benchmarks/run_sweep/{dataset}/{shard}.tsv"
    # before every summary; "stats" shards and large datasets first (dpreg.engine.plan)
    priority: sweep_priority
    conda:
        "../envs/dpreg.yaml"
    # one thread: linear algebra is d x d per trial, and a single BLAS thread
    # keeps results independent of the machine's core count
    threads: 1
    resources:
        mem_mb=sweep_mem_mb,
        runtime=sweep_runtime,
    params:
        sweep=sweep_kwargs,
        code=sweep_code,
    script:
        "../scripts/run_sweep.py"
