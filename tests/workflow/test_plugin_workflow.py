"""The example plug-in (examples/plugin) end to end through Snakemake.

A temporary copy of ``examples/plugin`` (its one-file method and its tiny
config, plus a third dataset run by a second experiment without the
plug-in) is run through the repository's Snakefile: the plug-in's trials
carry their ledger columns in the summary table, its claim gets a verdict,
provenance records its code fingerprint, and the audit command audits it
end to end.  Then the copied plug-in file is edited: ``snakemake -n``
lists the sweeps that run the plug-in and no other sweep.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
EXAMPLE = REPO / "examples" / "plugin"

pytestmark = pytest.mark.workflow


def run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: float = 600):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-6000:]}"
        )
    return proc


def snakemake(workdir: Path, *args: str):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir)]
    return run([*cmd, *args], workdir)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory) -> Path:
    """A finished run of the example in ``<tmp>/run`` (the mirror at ``<tmp>/resources``)."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "resources").symlink_to(REPO / "resources", target_is_directory=True)
    work = root / "run"
    (work / "config").mkdir(parents=True)
    shutil.copy(EXAMPLE / "my_method.py", work / "my_method.py")
    for name in ("claims.yaml", "claims.lock"):  # the claim and its registration record
        shutil.copy(EXAMPLE / "config" / name, work / "config" / name)
    cfg = yaml.safe_load((EXAMPLE / "config" / "config.yaml").read_text())
    assert cfg["plugins"] == ["my_method.py"]  # the example names its file, relative
    cfg["mirror"] = "../resources/mirror"
    assert cfg["experiments"]["skew"]["datasets"] == "all"
    cfg["experiments"]["skew"]["datasets"] = ["airfoil", "concrete"]
    # a dataset and an experiment that do not use the plug-in: their sweep must not rerun
    cfg["datasets"]["servo"] = {"target_transform": "log"}
    cfg["experiments"]["other"] = {
        "algorithms": ["adassp", "trivial"],
        "variants": ["maxnorm"],
        "datasets": ["servo"],
    }
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake(work, "--cores", "1")
    return work


def test_plugin_trials_carry_their_ledger_in_the_table(example_run):
    table = pd.read_csv(example_run / "results" / "tables" / "skew.csv")
    mine = table[table["algorithm"] == "adassp-skew"]
    assert sorted(mine["dataset"].unique()) == ["airfoil", "concrete"]
    assert sorted(mine["epsilon"].unique()) == [0.5, 5.0]
    assert (mine["trials"] == 4).all()  # 2 folds x 2 repeats
    for _, row in mine.iterrows():
        # its three releases, with the shares the plug-in declares (10% on lambda_min)
        parts = row["releases"].split(";")
        assert [p.split(":")[0] for p in parts] == ["lambda_min", "XtX", "Xty"]
        shares = [float(re.search(r"@\(([^,]+),", p).group(1)) for p in parts]
        eps = row["epsilon"]
        assert shares == pytest.approx([0.1 * eps, 0.45 * eps, 0.45 * eps], rel=1e-5)
        assert row["eps_basic"] == pytest.approx(eps, rel=1e-9)
        assert 0 < row["eps_exact"] < eps  # exact accounting is tighter than basic


def test_plugin_claim_gets_a_verdict(example_run):
    claims = pd.read_csv(example_run / "results" / "tables" / "claims.csv")
    overall = claims[(claims["claim"] == "skew-beats-trivial") & (claims["scope"] == "overall")]
    assert len(overall) == 1
    assert overall["verdict"].iloc[0] in ("supported", "contradicted", "inconclusive")
    assert overall["points"].iloc[0] == 4  # 2 datasets x 2 epsilons


def test_provenance_records_the_plugin_code(example_run):
    record = json.loads((example_run / "results" / "provenance.json").read_text())
    code = record["algorithms"]["adassp-skew"]
    assert code["plugin_file"] == "my_method.py"
    assert re.fullmatch(r"[0-9a-f]{64}", code["fingerprint"])
    assert record["plugins"] == ["my_method.py"]
    assert record["algorithms"]["adassp"]["module"] == "dpreg.algorithms.adassp"
    assert "adassp-skew" in record["privacy_ledger"]["algorithms"]


def test_audit_command_audits_the_plugin(example_run):
    env = {**os.environ, "DPREG_PLUGINS": "my_method.py"}
    out = example_run / "audit.jsonl"
    cmd = [sys.executable, "-m", "dpreg", "audit", "--algorithms", "adassp-skew", "--quick"]
    run([*cmd, "--layer", "end-to-end", "--json-out", str(out)], example_run, env=env)
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    direct = [r for r in records if r["name"] == "adassp-skew" and r["variant"] is None]
    assert len(direct) == 1
    assert direct[0]["layer"] == "end-to-end" and direct[0]["verdict"] == "ok"
    assert direct[0]["claimed_epsilon"] == 1.0


def test_editing_the_plugin_reruns_exactly_its_sweeps(example_run):
    dry = snakemake(example_run, "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr
    plugin = example_run / "my_method.py"
    original = plugin.read_text()
    try:
        plugin.write_text(original + "\n# an edit: the fingerprint changes\n")
        dry = snakemake(example_run, "-n")
        text = dry.stdout + dry.stderr
        sweeps = set(re.findall(r"results/trials/(\w+)/(\w+)\.parquet", _jobs(text, "run_sweep")))
        assert sweeps == {("airfoil", "stats"), ("concrete", "stats")}
        assert "rule prepare_dataset" not in text
        # the two sweeps rerun because their params (the code fingerprints) changed
        assert text.count("reason: Params have changed") == 2
    finally:
        plugin.write_text(original)
    dry = snakemake(example_run, "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr


def _jobs(text: str, rule: str) -> str:
    """The output lines of every job of ``rule`` in a dry-run listing."""
    blocks = re.split(r"\n(?=(?:local)?rule \w+:)", text)
    return "\n".join(
        line
        for block in blocks
        if re.match(rf"(?:local)?rule {rule}:", block.strip())
        for line in block.splitlines()
        if "output:" in line
    )


def test_a_broken_plugin_stops_the_workflow_with_one_message(tmp_path):
    work = tmp_path / "run"
    (work / "config").mkdir(parents=True)
    (tmp_path / "resources").symlink_to(REPO / "resources", target_is_directory=True)
    # the example with the name of a built-in: the contract refuses it
    text = (EXAMPLE / "my_method.py").read_text().replace('"adassp-skew",', '"adassp",')
    (work / "my_method.py").write_text(text)
    cfg = yaml.safe_load((EXAMPLE / "config" / "config.yaml").read_text())
    cfg["mirror"] = "../resources/mirror"
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(work)]
    proc = subprocess.run([*cmd, "-n"], capture_output=True, text=True, timeout=300, cwd=work)
    assert proc.returncode != 0
    message = (
        "plugin my_method.py: entry 'adassp' clashes with the built-in algorithm of that "
        "name; rename it"
    )
    assert message in proc.stdout + proc.stderr
