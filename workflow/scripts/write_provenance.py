"""Snakemake adapter: config hash, package versions and data checksums -> JSON."""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.algorithms import load_plugins  # noqa: E402
from dpreg.data.prepared import read_prepared_meta  # noqa: E402

load_plugins(smk.config.get("plugins") or [])  # the run's plug-ins, before any name is used

from dpreg.engine.run_ledger import ledger_report  # noqa: E402
from dpreg.io.tables import write_json  # noqa: E402
from dpreg.report.provenance import provenance  # noqa: E402

metas = {}
for name, path in zip(smk.params.datasets, smk.input.metas, strict=True):
    metas[name] = read_prepared_meta(path)  # its checksum verified
tables = dict(zip(smk.params.experiments, smk.input.tables, strict=True))

record = provenance(config=smk.params.config, metas=metas, tables=tables)
record["privacy_ledger"] = ledger_report(
    smk.params.config, {name: int(meta["d"]) for name, meta in metas.items()}
)
write_json(record, smk.output.provenance)
logging.info("config sha256 %s", record["config_sha256"])
