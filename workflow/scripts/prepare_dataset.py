"""Snakemake adapter: fetch, check and prepare one dataset (dpreg.data).

Bad input stops the job with one line on the console and in the log (see
dpreg.joblog) and leaves no output.  A constant feature column is kept; it is
named in the log (as a warning from dpreg.data) and on the console.
"""

import logging
import sys

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
constant = meta["report"]["constant"]
if constant and sys.__stderr__ is not None:
    sys.__stderr__.write(
        f"WARNING dataset {smk.wildcards.dataset!r}: constant feature column(s) "
        f"{', '.join(constant)} kept; standardisation makes them 0 (details in {smk.log[0]})\n"
    )
    sys.__stderr__.flush()
