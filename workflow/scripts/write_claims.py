"""Snakemake adapter: trial files of the experiments that state claims -> claims.csv (one decision per claim)."""

import logging

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.algorithms import load_plugins  # noqa: E402

load_plugins(smk.config.get("plugins") or [])  # the run's plug-ins, before any name is used

from dpreg.inference.evaluation import evaluate_claims  # noqa: E402
from dpreg.io.tables import write_claims  # noqa: E402

# params.files: experiment id -> its trial files; params.select: experiment id ->
# {"repeats": ...} (the rows of the experiment when trial files are shared)
claims = evaluate_claims(
    smk.params.config,
    dict(smk.params.files),
    select=dict(smk.params.get("select", None) or {}),
    registration=dict(smk.params.get("registration", None) or {}),
)
write_claims(claims, smk.output.claims)
overall = claims[claims["scope"] == "overall"]
for row in overall.itertuples(index=False):
    logging.info(
        "%s (%s): %s, pooled ratio %.4g [%.4g, %.4g] at %.4g over %d datasets",
        row.claim,
        row.status,
        row.verdict,
        row.ratio,
        row.ratio_lo,
        row.ratio_hi,
        row.level,
        row.datasets,
    )
