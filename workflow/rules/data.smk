# Fetch (offline mirror, UCI, url or local path), checksum and prepare each dataset.


rule prepare_dataset:
    """Fetch, checksum and prepare one dataset -> a Parquet table and its JSON sidecar."""
    input:
        dataset_source_files,
    output:
        table="results/prepared/{dataset}.parquet",
        meta="results/prepared/{dataset}.json",
    log:
        "logs/prepare_dataset/{dataset}.log",
    benchmark:
        "logs/benchmarks/prepare_dataset/{dataset}.tsv"
    # first: every sweep waits for its dataset (dpreg.engine.plan: PRIORITY)
    priority: PRIORITY["prepare_dataset"]
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        entry=dataset_entry,
        mirror=config["mirror"],
    script:
        "../scripts/prepare_dataset.py"
