# Summary table and figure of each experiment.


rule aggregate_experiment:
    """Trials of one experiment -> its summary table results/tables/<experiment>.csv."""
    input:
        trials=experiment_trials,
    output:
        table=report(
            "results/tables/{experiment}.csv",
            caption="../report/table.rst",
            category="Tables",
            labels={"experiment": "{experiment}"},
        ),
    log:
        "logs/aggregate_experiment/{experiment}.log",
    benchmark:
        "logs/benchmarks/aggregate_experiment/{experiment}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        experiment="{experiment}",
        select=trial_selection,
        bootstrap=bootstrap_params,
    script:
        "../scripts/aggregate_experiment.py"


rule plot_experiment:
    """Summary table of one experiment -> its figure (PNG and PDF)."""
    input:
        table="results/tables/{experiment}.csv",
        metas=experiment_metas,
    output:
        png=report(
            "results/figures/{experiment}.png",
            caption="../report/figure.rst",
            category="Figures",
            labels={"experiment": "{experiment}"},
        ),
        pdf="results/figures/{experiment}.pdf",
    log:
        "logs/plot_experiment/{experiment}.log",
    benchmark:
        "logs/benchmarks/plot_experiment/{experiment}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        plot=plot_kwargs,
    script:
        "../scripts/plot_experiment.py"


rule write_claims:
    """Paired-bootstrap verdicts of the claims the experiments state -> claims.csv."""
    input:
        trials=claim_trials,
    output:
        claims=report(
            claims_path(),
            caption="../report/claims.rst",
            category="Tables",
        ),
    log:
        f"logs/write_claims{_run_suffix()}.log",
    benchmark:
        f"logs/benchmarks/write_claims{_run_suffix()}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        config=claims_config,
        files=claims_files,
        select=claims_select,
    script:
        "../scripts/write_claims.py"
