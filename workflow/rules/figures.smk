# Summary table and figure of each experiment.


rule aggregate_experiment:
    input:
        trials=experiment_trials,
    output:
        table=report(
            "results/tables/{experiment}.csv",
            caption="../report/table.rst",
            category="Tables",
            labels={"experiment": "{experiment}"},
        ),
    params:
        experiment="{experiment}",
    log:
        "logs/aggregate_experiment/{experiment}.log",
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/aggregate_experiment.py"


rule plot_experiment:
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
    params:
        plot=plot_kwargs,
    log:
        "logs/plot_experiment/{experiment}.log",
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/plot_experiment.py"
