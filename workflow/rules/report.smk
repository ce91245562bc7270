# What the run depended on: config hash, package versions, data checksums.


rule write_provenance:
    input:
        metas=all_metas,
        tables=all_tables,
    output:
        provenance="results/provenance.json",
    params:
        config=config,
        datasets=used_datasets(),
        experiments=EXPERIMENTS,
    log:
        "logs/write_provenance.log",
    threads: 1
    resources:
        mem_mb=1024,
        runtime=5,
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/write_provenance.py"
