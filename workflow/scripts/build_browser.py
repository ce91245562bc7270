"""Snakemake adapter: summary tables, claims and leaderboard -> the results browser."""

import logging
from pathlib import Path

smk = snakemake  # noqa: F821 (injected by Snakemake's script directive)

from dpreg.joblog import log_to_file  # noqa: E402 (light: only logging)

log_file = log_to_file(smk.log[0])

from dpreg.algorithms import load_plugins  # noqa: E402
from dpreg.report.browser import build_browser  # noqa: E402

load_plugins(smk.config.get("plugins") or [])  # the run's plug-ins, before any name is used

page = build_browser(
    Path(smk.output.page).parent,
    dict(zip(smk.params.experiments, smk.input.tables, strict=True)),
    claims=smk.input.claims[0] if smk.input.claims else None,
    leaderboard=smk.input.leaderboard[0] if smk.input.leaderboard else None,
    links=[tuple(link) for link in smk.params.links],
    titles=dict(smk.params.titles),
)
logging.info("results browser: %s", page)
