# What the run depended on: config hash, package versions, data checksums.


rule write_provenance:
    """Config hash, package versions, data and table checksums, privacy ledger -> JSON."""
    input:
        metas=all_metas,
        tables=all_tables,
    output:
        provenance=PLAN.provenance_path,
    log:
        f"logs/write_provenance{PLAN.run_suffix}.log",
    benchmark:
        f"logs/benchmarks/write_provenance{PLAN.run_suffix}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=5,
    params:
        config=PLAN.run_config(),
        datasets=PLAN.used_datasets(),
        experiments=list(PLAN.experiments),
    script:
        "../scripts/write_provenance.py"
