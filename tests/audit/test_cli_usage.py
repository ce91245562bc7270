"""`dpreg audit` refuses every argument it cannot honour, before it runs:
one usage message naming the flag and what is allowed, exit status 2, and no
output written (a run that judges nothing must not report that all passed)."""

from __future__ import annotations

import os

import pytest

from dpreg.audit.cli import main

BAD_ARGUMENTS = [
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "nan"], "--epsilon"),
    (["--epsilon", "inf"], "--epsilon"),
    (["--epsilon", "1e300"], "--epsilon"),
    (["--delta", "0"], "--delta"),
    (["--delta", "1"], "--delta"),
    (["--delta", "nan"], "--delta"),
    (["--algorithms", ""], "--algorithms"),
    (["--algorithms", ",,"], "--algorithms"),
    (["--seed=-1"], "--seed"),
    (["--samples", "1e12"], "--samples"),
    (["--e2e-samples", "1e12"], "--e2e-samples"),
    (["--ps-shares", "0"], "--ps-shares"),
    (["--ps-shares", "1.5"], "--ps-shares"),
    (["--noise-factor", "0"], "--noise-factor"),
    (["--check-samples", "-3"], "--check-samples"),
]


@pytest.mark.parametrize(
    ("argv", "flag"), BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS]
)
def test_bad_argument_is_a_usage_error_naming_the_flag(argv, flag, capsys, tmp_path):
    out = tmp_path / "audit"
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--out", str(out), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err
    assert err.count("error:") == 1  # one message
    assert not out.exists()  # nothing written


def test_out_at_an_existing_file_is_refused_before_the_run(capsys, tmp_path):
    target = tmp_path / "taken"
    target.write_text("keep me")
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--algorithms", "ssp", "--out", str(target)])
    assert exc.value.code == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert target.read_text() == "keep me"


def test_out_under_an_unwritable_directory_is_refused(capsys, tmp_path, monkeypatch):
    # root may write anywhere, so the permission answer is simulated: the
    # check must consult it for the nearest existing ancestor
    asked = []

    def access(path, mode):
        asked.append(os.fspath(path))
        return False

    monkeypatch.setattr(os, "access", access)
    with pytest.raises(SystemExit):
        main(["--quick", "--algorithms", "ssp", "--out", str(tmp_path / "new" / "audit")])
    assert "is not writable" in capsys.readouterr().err
    assert asked == [str(tmp_path)]


def test_out_below_a_file_is_refused(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--algorithms", "ssp", "--out", str(tmp_path / "file" / "audit")])
    assert exc.value.code == 2
    assert "is not a directory" in capsys.readouterr().err


def test_json_out_at_a_directory_is_refused(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--algorithms", "ssp", "--json-out", str(tmp_path)])
    assert exc.value.code == 2
    assert "is a directory" in capsys.readouterr().err


def test_good_arguments_still_run(tmp_path):
    """The checks admit the values the committed runs use (quick, one target)."""
    code = main(
        [
            "--quick",
            "--layer",
            "declared",
            "--algorithms",
            "ssp",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--seed",
            "0",
            "--out",
            str(tmp_path / "a"),
        ]
    )
    assert code == 0
    assert (tmp_path / "a" / "audit.csv").exists()
