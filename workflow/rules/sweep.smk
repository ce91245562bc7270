# One sweep job per (experiment, dataset): every variant x algorithm x epsilon
# x fold x repeat of that experiment on that dataset.


rule run_sweep:
    input:
        table="results/prepared/{dataset}.parquet",
        meta="results/prepared/{dataset}.json",
    output:
        trials="results/trials/{experiment}/{dataset}.csv.gz",
    params:
        sweep=sweep_kwargs,
    log:
        "logs/run_sweep/{experiment}/{dataset}.log",
    benchmark:
        "logs/benchmarks/run_sweep/{experiment}/{dataset}.tsv"
    # one thread: linear algebra is d x d per trial, and a single BLAS thread
    # keeps results independent of the machine's core count
    threads: 1
    resources:
        mem_mb=sweep_mem_mb,
        runtime=sweep_runtime,
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/run_sweep.py"
