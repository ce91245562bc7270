# Summary table and figure of each experiment (one job each), and the claims.


rule summarise_experiment:
    """Trials of one experiment -> its summary table and figure (PNG and PDF)."""
    input:
        trials=experiment_trials,
        metas=experiment_metas,
    output:
        table=report(
            "results/tables/{experiment}.csv",
            caption="../report/table.rst",
            category="Tables",
            labels={"experiment": "{experiment}"},
        ),
        png=report(
            "results/figures/{experiment}.png",
            caption="../report/figure.rst",
            category="Figures",
            labels={"experiment": "{experiment}"},
        ),
        pdf="results/figures/{experiment}.pdf",
    log:
        "logs/summarise_experiment/{experiment}.log",
    benchmark:
        "logs/benchmarks/summarise_experiment/{experiment}.tsv"
    # after every ready sweep and the claims (dpreg.engine.plan: PRIORITY)
    priority: PRIORITY["summarise_experiment"]
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
        plot=plot_kwargs,
        design=split_design,
        figure=lambda wildcards: config["experiments"][wildcards.experiment].get("figure"),
    script:
        "../scripts/summarise_experiment.py"


rule write_claims:
    """One decision per claim (pooled effect, Holm-adjusted interval, status) -> claims.csv."""
    input:
        trials=claim_trials,
    output:
        claims=report(
            PLAN.claims_path,
            caption="../report/claims.rst",
            category="Tables",
        ),
    log:
        f"logs/write_claims{PLAN.run_suffix}.log",
    benchmark:
        f"logs/benchmarks/write_claims{PLAN.run_suffix}.tsv"
    # before the summaries: the longest summary-phase job must not run alone at the end
    priority: PRIORITY["write_claims"]
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
        # the claims' registration record (config/claims.lock): confirmatory or exploratory
        registration=config.get("claims_registration", {}),
    script:
        "../scripts/write_claims.py"
