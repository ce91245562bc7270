# Fetch (offline mirror, UCI, url or local path), checksum and prepare each dataset.


rule prepare_dataset:
    input:
        dataset_source_files,
    output:
        table="results/prepared/{dataset}.parquet",
        meta="results/prepared/{dataset}.json",
    params:
        entry=dataset_entry,
        mirror=config["mirror"],
    log:
        "logs/prepare_dataset/{dataset}.log",
    benchmark:
        "logs/benchmarks/prepare_dataset/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/prepare_dataset.py"
