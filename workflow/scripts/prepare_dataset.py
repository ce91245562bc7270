"""Snakemake adapter: fetch, check and prepare one dataset (dpreg.data)."""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.data import prepare_dataset  # noqa: E402

meta = prepare_dataset(
    smk.wildcards.dataset,
    smk.params.entry,
    mirror_dir=smk.params.mirror,
    out_table=smk.output.table,
    out_meta=smk.output.meta,
)
logging.info(
    "prepared %s: n=%s d=%s sha256=%s",
    smk.wildcards.dataset,
    meta.get("n"),
    meta.get("d"),
    meta.get("sha256"),
)
