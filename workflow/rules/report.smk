# What the run depended on: config hash, package versions, data checksums.


rule write_provenance:
    """Config hash, package versions, data and table checksums, privacy ledger -> JSON."""
    input:
        metas=all_metas,
        tables=all_tables,
    output:
        provenance=PLAN.provenance_path,
    log:
        f"logs/write_provenance{PLAN.run_suffix}.log",
    benchmark:
        f"logs/benchmarks/write_provenance{PLAN.run_suffix}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=5,
    params:
        config=PLAN.run_config(),
        datasets=PLAN.used_datasets(),
        experiments=list(PLAN.experiments),
    script:
        "../scripts/write_provenance.py"


# The leaderboard over Wang's suite and the results browser.
#
# The leaderboard needs the suite's table, so `rule all` asks for it only in a
# run that has the suite experiment (config/wang-suite.yaml); every run gets
# its browser, one folder per run set like provenance: results/browser for a
# run of every experiment, results/browser-<run set> with `run:`.  The browser
# of a suite run also shows the leaderboard.
SUITE = "wang-suite"
HAS_SUITE = SUITE in PLAN.experiments
#: experiments ranked with the suite when the run has them (same datasets and protocol)
SUITE_EXTRAS = [e for e in ("wang-frontier",) if e in PLAN.experiments]
BROWSER_DIR = f"results/browser{PLAN.run_suffix}"


#: the browser of the run, and the leaderboard when the run has the suite
REPORT_OUTPUTS = [f"{BROWSER_DIR}/index.html"] + (
    [
        "results/leaderboard.csv",
        "results/leaderboard.md",
        "results/figures/leaderboard-cd.png",
        "results/figures/leaderboard-cd.pdf",
    ]
    if HAS_SUITE
    else []
)
#: (text, href) of the page's links, hrefs relative to its folder
BROWSER_LINKS = [
    ("provenance", f"../provenance{PLAN.run_suffix}.json"),
    ("privacy audit", "../audit/audit.md"),
    ("results README", "../README.md"),
] + ([("leaderboard", "../leaderboard.md")] if HAS_SUITE else [])


rule write_leaderboard:
    """Wang's suite tables -> average ranks, Friedman/Nemenyi and sign tests, CD diagram."""
    input:
        tables=[f"results/tables/{e}.csv" for e in [SUITE, *SUITE_EXTRAS]],
    output:
        csv=report(
            "results/leaderboard.csv",
            caption="../report/leaderboard.rst",
            category="Leaderboard",
        ),
        md="results/leaderboard.md",
        png=report(
            "results/figures/leaderboard-cd.png",
            caption="../report/leaderboard-cd.rst",
            category="Leaderboard",
        ),
        pdf="results/figures/leaderboard-cd.pdf",
    log:
        "logs/write_leaderboard.log",
    benchmark:
        "logs/benchmarks/write_leaderboard.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=5,
    # the command's defaults (dpreg.report.leaderboard): median MSE, 1% tie margin,
    # alpha = 0.05, ties split, the corrected copies autos-fixed/machine-fixed left out
    script:
        "../scripts/write_leaderboard.py"


rule build_browser:
    """Summary tables, claims and leaderboard -> the static results browser (open index.html)."""
    input:
        tables=all_tables,
        claims=[PLAN.claims_path] if PLAN.claim_experiments() else [],
        leaderboard=["results/leaderboard.csv"] if HAS_SUITE else [],
        provenance=PLAN.provenance_path,
    output:
        # not a report item: the page needs its two siblings, which a report does not carry
        page=f"{BROWSER_DIR}/index.html",
        data=f"{BROWSER_DIR}/data.js",
        plotly=f"{BROWSER_DIR}/plotly.min.js",
    log:
        f"logs/build_browser{PLAN.run_suffix}.log",
    benchmark:
        f"logs/benchmarks/build_browser{PLAN.run_suffix}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=5,
    params:
        experiments=list(PLAN.experiments),
        titles={exp: PLAN.config["experiments"][exp].get("title", "") for exp in PLAN.experiments},
        links=BROWSER_LINKS,
    script:
        "../scripts/build_browser.py"
