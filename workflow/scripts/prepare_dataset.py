"""Snakemake adapter: fetch, check and prepare one dataset (dpreg.data)."""

import logging
import sys

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

log_file = open(smk.log[0], "w", buffering=1)  # kept open for the whole job
sys.stderr = sys.stdout = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
)
logging.captureWarnings(True)

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
