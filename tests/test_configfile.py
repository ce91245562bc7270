"""Config files are read strictly: one message naming the file and line for a
repeated key, an alias bomb, a binary, empty or non-mapping file, bad syntax."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dpreg import DPRegError
from dpreg.configfile import MAX_CONFIG_BYTES, MAX_CONFIG_VALUES, load_config_file

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(
    [
        *ROOT.glob("config/*.yaml"),
        *ROOT.glob(".test/config/*.yaml"),
        *ROOT.glob("examples/**/*.yaml"),
    ]
)

BOMB = """
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def _write(tmp_path, body: str | bytes, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    (path.write_bytes if isinstance(body, bytes) else path.write_text)(body)
    return path


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_configs_read_as_pyyaml_reads_them(path):
    assert load_config_file(path) == yaml.safe_load(path.read_text())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("seed: 1\nepsilons: [1]\nepsilons: [5]\n", "line 3: key 'epsilons' is given twice"),
        (
            "datasets:\n  bike: {uci_id: 275}\n  airfoil: {uci_id: 291}\n  bike: {uci_id: 1}\n",
            "line 4: key 'bike' is given twice in one mapping (first on line 2)",
        ),
        ("seed: 1\n\tdelta: 1\n", "line 2, column 1"),
        ("seed: [1\n", "not valid YAML"),
        ("", "is empty"),
        ("- 1\n- 2\n", "is a list"),
        ("just text\n", "is a str"),
        (BOMB, f"expand to more than {MAX_CONFIG_VALUES:,} values"),
    ],
    ids=["top-level-key", "dataset-key", "tab", "syntax", "empty", "list", "scalar", "alias-bomb"],
)
def test_bad_config_is_one_message_naming_file_and_what_is_wrong(tmp_path, body, message):
    path = _write(tmp_path, body)
    t0 = time.perf_counter()
    with pytest.raises(DPRegError) as err:
        load_config_file(path)
    assert str(path) in str(err.value) and message in str(err.value)
    # the bomb is measured without being expanded (9**9 values): a generous bound
    # that an expansion (minutes, gigabytes) could never meet
    assert time.perf_counter() - t0 < 5


def test_merge_keys_and_small_aliases_are_allowed(tmp_path):
    body = "base: &b {folds: 10}\ncv:\n  <<: *b\n  repeats: 2\nother: *b\n"
    assert load_config_file(_write(tmp_path, body))["cv"] == {"folds": 10, "repeats": 2}


def test_binary_file_is_refused(tmp_path):
    path = _write(tmp_path, bytes(range(256)))
    with pytest.raises(DPRegError, match="not UTF-8 text"):
        load_config_file(path)


def test_nul_bytes_are_refused(tmp_path):
    with pytest.raises(DPRegError, match="NUL"):
        load_config_file(_write(tmp_path, "seed: 1\0\n"))


def test_oversized_file_is_refused_before_reading(tmp_path):
    path = _write(tmp_path, "#" * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(DPRegError, match="at most"):
        load_config_file(path)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(DPRegError, match="cannot be read"):
        load_config_file(tmp_path / "nope.yaml")


@pytest.mark.workflow
def test_snakemake_stops_on_a_repeated_key_before_running(tmp_path):
    cfg = _write(tmp_path, "seed: 1\nseed: 2\n", "dup.yaml")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            str(cfg),
            "--directory",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ},
        timeout=300,
    )
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "key 'seed' is given twice" in text and str(cfg) in text


# --------------------------------------------------------------------------
# `dpreg config check`: the strict reader for a file given with --configfile
# --------------------------------------------------------------------------
BAD = {  # name -> (body, what the message says besides the file)
    "syntax": ("seed: [1\n", "line 2, column 1: expected ',' or ']'"),
    "tab": ("seed: 1\n\tdelta: 1\n", "line 2, column 1: found character '\\t'"),
    "empty": ("", "is empty; a config file holds a mapping of keys"),
    "list": ("- 1\n- 2\n", "is a list; a config file holds a mapping of keys"),
    "binary": (bytes(range(128, 256)), "not UTF-8 text (byte 0)"),
    "repeated-key": ("seed: 1\nseed: 2\n", "line 2: key 'seed' is given twice"),
    "alias-bomb": (BOMB, f"expand to more than {MAX_CONFIG_VALUES:,} values"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_config_check_names_file_line_and_column(tmp_path, capsys, case):
    from dpreg.cli import main

    body, message = BAD[case]
    path = _write(tmp_path, body)
    assert main(["config", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dpreg config check: config file {path}: ")
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_config_check_passes_good_files_and_fails_if_one_is_bad(tmp_path, capsys):
    from dpreg.cli import main

    good = ROOT / "config" / "config.yaml"
    bad = _write(tmp_path, BAD["tab"][0])
    assert main(["config", "check", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{good}: ok (a mapping of {len(yaml.safe_load(good.read_text()))} ")
    assert main(["config", "check", str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert f"{good}: ok" in captured.out and str(bad) in captured.err


@pytest.mark.parametrize("argv", [["config"], ["config", "check"], ["config", "lint", "x"]])
def test_config_usage_errors_exit_2(argv, capsys):
    from dpreg.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: dpreg config" in capsys.readouterr().err


def _snakemake_n(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-n", *args],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=300,
    )


@pytest.mark.workflow
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_default_config_stops_the_workflow_with_file_and_line(tmp_path, case):
    """config/config.yaml (and every file Snakemake can parse) goes through the
    strict reader before Snakemake's own: one message, the file and the line."""
    body, message = BAD[case]
    (tmp_path / "config").mkdir()
    _write(tmp_path / "config", body)
    proc = _snakemake_n(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    # named as the run names it, relative to its working directory
    assert "config file config/config.yaml: " in out and message in out, out[-3000:]
    assert "Traceback" not in out and "not valid JSON or YAML" not in out


@pytest.mark.workflow
def test_configfile_snakemake_cannot_parse_gets_its_message_and_check_names_the_line(tmp_path):
    """The documented limit (README, Troubleshooting): Snakemake parses --configfile
    before the workflow runs, so a file with a tab gets Snakemake's message without
    file or line; `dpreg config check` on the same file names both. If Snakemake
    starts naming the file, this test fails and the README's advice is to be revised."""
    path = _write(tmp_path, BAD["tab"][0], "overlay.yaml")
    proc = _snakemake_n(ROOT, "--configfile", str(path), "--directory", str(ROOT))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Config file is not valid JSON or YAML" in out and str(path) not in out
    check = subprocess.run(
        [sys.executable, "-m", "dpreg", "config", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 1
    assert f"config file {path}: line 2, column 1:" in check.stderr


@pytest.mark.workflow
def test_a_claims_file_given_with_config_goes_through_the_strict_reader(tmp_path):
    """`--config claims_file=FILE` (the one file `--config` can name) is read strictly too."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text((ROOT / "config" / "config.yaml").read_text())
    claims = _write(tmp_path, "modern: []\nmodern: []\n", "claims.yaml")
    proc = _snakemake_n(tmp_path, "--config", f"claims_file={claims}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"config file {claims}: line 2: key 'modern' is given twice" in out, out[-3000:]
    assert "Traceback" not in out
