"""The ``dpreg`` command's subcommands: help, delegation and one-line errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpreg import cli
from dpreg.io.tables import write_table


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: dpreg {command}")


def test_top_level_help_lists_every_subcommand(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name}" in out for name in ("audit", "claims", "suite"))


@pytest.mark.parametrize(
    ("command", "module"),
    [(["claims"], "dpreg.report.claims"), (["suite"], "dpreg.report.suite")],
)
def test_old_module_entry_points_are_aliases_of_the_subcommands(command, module):
    # python -m <module> --help and dpreg <command> --help print the same usage
    outs = [
        subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        for argv in (
            [sys.executable, "-m", "dpreg", *command, "--help"],
            [sys.executable, "-m", module, "--help"],
        )
    ]
    assert [o.returncode for o in outs] == [0, 0], [o.stderr for o in outs]
    assert outs[0].stdout == outs[1].stdout


def _suite_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(["suite", *argv])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert captured.err.count("\n") == 1  # one line
    return captured.err


def test_suite_on_a_missing_table_is_one_clear_error(tmp_path, capsys):
    err = _suite_error([str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")], capsys)
    assert err.startswith("dpreg suite: error: suite table ")
    assert "nope.csv" in err and "does not exist" in err and "wang-suite.yaml" in err
    assert not (tmp_path / "o").exists()


def test_suite_on_a_table_that_is_not_a_suite_table_is_one_clear_error(tmp_path, capsys):
    table = tmp_path / "tables" / "other.csv"
    table.parent.mkdir()
    rows = pd.DataFrame(
        {
            "dataset": ["d"] * 2,
            "algorithm": ["ridge", "some-method"],
            "epsilon": [1.0, 1.0],
            "mse_mean": [1.0, 2.0],
            "mse_mean_lo": [0.9, 1.8],
            "mse_mean_hi": [1.1, 2.2],
        }
    )
    write_table(rows, table)
    err = _suite_error([str(table), "--out", str(tmp_path / "o")], capsys)
    assert "other.csv" in err and "is not a wang-suite summary table" in err
    assert "ssp-wang" in err and "some-method" in err
    write_table(pd.DataFrame({"a": np.arange(3)}), table)  # wrong columns
    err = _suite_error([str(table)], capsys)
    assert "is not a wang-suite summary table" in err and "lacks columns" in err


def test_suite_on_a_damaged_table_names_it_and_how_to_rebuild(tmp_path, capsys):
    table = tmp_path / "tables" / "wang-suite.csv"
    table.parent.mkdir()
    write_table(pd.DataFrame({"a": np.arange(30)}), table)
    table.write_bytes(table.read_bytes()[:10])
    err = _suite_error([str(table)], capsys)
    assert "wang-suite.csv" in err and "damaged or incomplete" in err and "--forcerun" in err


def test_suite_on_a_file_that_is_not_csv_is_one_clear_error(tmp_path, capsys):
    from dpreg.io.checksum import write_checksum

    table = tmp_path / "binary.csv"
    table.write_bytes(bytes(range(256)) * 4)
    write_checksum(table)
    err = _suite_error([str(table)], capsys)
    assert "binary.csv" in err
