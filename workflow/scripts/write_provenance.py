"""Snakemake adapter: config hash, package versions and data checksums -> JSON."""

import json
import logging
import sys

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

log_file = open(smk.log[0], "w", buffering=1)  # kept open for the whole job
sys.stderr = sys.stdout = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
)
logging.captureWarnings(True)

from dpreg.ledger import ledger_report  # noqa: E402
from dpreg.summary import provenance, write_json  # noqa: E402

metas = {}
for name, path in zip(smk.params.datasets, smk.input.metas, strict=True):
    with open(path, encoding="utf-8") as fh:
        metas[name] = json.load(fh)
tables = dict(zip(smk.params.experiments, smk.input.tables, strict=True))

record = provenance(config=smk.params.config, metas=metas, tables=tables)
record["privacy_ledger"] = ledger_report(
    smk.params.config, {name: int(meta["d"]) for name, meta in metas.items()}
)
write_json(record, smk.output.provenance)
logging.info("config sha256 %s", record["config_sha256"])
