"""Atomic writes with the umask (dpreg.io.atomic) and checksum sidecars (dpreg.io.checksum)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from dpreg import DPRegError
from dpreg.io.atomic import atomic_path, umask_mode, write_bytes_atomic, write_text_atomic
from dpreg.io.checksum import file_sha256, sidecar, verify, write_checked
from dpreg.io.tables import read_table, write_table
from dpreg.io.trials import read_trials, trial_file_columns, write_trials
from dpreg.report.provenance import provenance

matplotlib.use("Agg")


@pytest.fixture
def umask():
    """Set a umask for one test and restore the previous one after it."""
    old = os.umask(0o022)
    os.umask(old)

    def set_(mask: int) -> None:
        os.umask(mask)

    yield set_
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _savefig(tmp: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure()
    fig.subplots().plot([0, 1], [1, 0])
    fig.savefig(tmp, format="pdf")


WRITERS = {
    "bytes": lambda p: write_bytes_atomic(p, b"new"),
    "text": lambda p: write_text_atomic(p, "new"),
    "checked": lambda p: write_checked(p, b"new"),
    "savefig": lambda p: _savefig_atomic(p),
}


def _savefig_atomic(path: Path) -> None:
    with atomic_path(path) as tmp:
        _savefig(tmp)


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_files_get_the_umask_mode(tmp_path, umask, writer, mask, mode):
    umask(mask)
    path = tmp_path / "out.bin"
    WRITERS[writer](path)
    assert _mode(path) == mode
    # what open() gives a new file under the same umask
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert _mode(plain) == mode == umask_mode()


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_failure_mid_write_keeps_the_previous_file_and_leaves_no_temp(tmp_path, writer):
    path = tmp_path / "out.bin"
    path.write_bytes(b"previous complete file")
    # fail inside the write itself (after the temporary file has been opened)
    with (
        pytest.raises(DPRegError, match=f"cannot write {path}: no space left"),
        atomic_path(path) as tmp,
    ):
        tmp.write_bytes(b"half")
        raise OSError(28, "No space left on device")
    assert path.read_bytes() == b"previous complete file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    WRITERS[writer](path)  # and the next write works
    assert path.read_bytes() != b"previous complete file"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_interrupt_during_savefig_keeps_the_previous_figure(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    path = tmp_path / "fig.pdf"
    _savefig_atomic(path)
    before = path.read_bytes()

    def stop(self, *args, **kwargs):
        Path(args[0]).write_bytes(b"%PDF-1.4 truncated")  # a partial file, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", stop)
    with pytest.raises(KeyboardInterrupt), atomic_path(path) as tmp:
        Figure().savefig(tmp, format="pdf")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["fig.pdf"]


def test_plot_experiment_writes_figures_atomically(tmp_path, monkeypatch):
    # savefig sees only temporary names; the figures appear whole, with the umask's mode
    from matplotlib.figure import Figure

    from dpreg.report.figures import _save

    seen = []
    real = Figure.savefig

    def spy(self, fname, *args, **kwargs):
        seen.append(Path(fname).name)
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    fig = Figure()
    fig.subplots().plot([0, 1], [0, 1])
    _save(fig, tmp_path / "f.png", tmp_path / "f.pdf", dpi=20)
    assert len(seen) == 2 and all(n.startswith((".f.png.", ".f.pdf.")) for n in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.pdf", "f.png"]
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"
    assert _mode(tmp_path / "f.png") == umask_mode()


# --------------------------------------------------------------------------
# checksums
# --------------------------------------------------------------------------
def _trials() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "dataset": ["d"] * 40,
            "algorithm": ["a", "b"] * 20,
            "repeat": np.repeat(np.arange(20), 2),
            "mse": rng.random(40),
        }
    )


def _truncate_keeping_mtime(path: Path) -> None:
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("name", ["t.parquet", "t.csv.gz"])
def test_sidecar_is_sha256sum_format_and_verified(tmp_path, name):
    path = tmp_path / name
    write_trials(_trials(), path)
    line = sidecar(path).read_text()
    assert line == f"{file_sha256(path)}  {name}\n"  # `sha256sum -c` reads this
    assert verify(path) == file_sha256(path)
    pd.testing.assert_frame_equal(read_trials([path]), _trials(), check_dtype=False)


@pytest.mark.parametrize("name", ["t.parquet", "t.csv.gz"])
def test_truncated_trial_file_with_its_mtime_kept_is_refused(tmp_path, name):
    folder = tmp_path / "results" / "trials" / "d"
    folder.mkdir(parents=True)
    path = folder / name
    write_trials(_trials(), path)
    _truncate_keeping_mtime(path)
    for read in (lambda: read_trials([path]), lambda: trial_file_columns(path)):
        with pytest.raises(DPRegError) as exc:
            read()
        msg = str(exc.value)
        assert str(path) in msg and "damaged or incomplete" in msg
        assert (
            f"snakemake --cores 2 --forcerun {path}" in msg
            and "--forcerun run_sweep" in msg
            and "delete it" in msg
        )


def test_file_without_sidecar_is_refused_unless_missing_ok(tmp_path):
    path = tmp_path / "tables" / "e.csv"
    path.parent.mkdir()
    path.write_text("a\n1\n")
    with pytest.raises(DPRegError, match=r"no readable checksum file 'e.csv.sha256'.*summarise"):
        read_table(path)
    assert verify(path, missing_ok=True) is None
    sidecar(path).write_text("0" * 64 + "  e.csv\n")  # a sidecar that exists must match
    with pytest.raises(DPRegError, match="damaged or incomplete"):
        verify(path, missing_ok=True)


def test_verification_is_cached_only_while_the_file_is_unchanged(tmp_path):
    path = tmp_path / "t.parquet"
    write_trials(_trials(), path)
    verify(path)
    verify(path)  # cached: same stat
    _truncate_keeping_mtime(path)  # the ctime moves, so it is hashed again
    with pytest.raises(DPRegError, match="damaged"):
        verify(path)


def test_provenance_refuses_a_truncated_results_table(tmp_path):
    table = tmp_path / "results" / "tables" / "e.csv"
    table.parent.mkdir(parents=True)
    write_table(pd.DataFrame({"a": np.arange(50.0), "b": np.arange(50.0) ** 2}), table)
    rec = provenance(config={"seed": 1}, metas={}, tables={"e": table})
    assert rec["tables"]["e"] == file_sha256(table)
    _truncate_keeping_mtime(table)
    with pytest.raises(DPRegError) as exc:
        provenance(config={"seed": 1}, metas={}, tables={"e": table})
    msg = str(exc.value)
    assert str(table) in msg and "--forcerun summarise_experiment" in msg


def test_prepared_table_and_record_carry_checksums(tmp_path):
    from dpreg.data import prepare_dataset, prepared_shape, read_prepared_meta

    csv = tmp_path / "toy.csv"
    pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [0.5, 0.1, 0.2, 0.9], "y": [1.0, 0, 1, 2]}).to_csv(
        csv, index=False
    )
    out = tmp_path / "results" / "prepared"
    entry = {"path": str(csv), "target": "y"}
    prepare_dataset(
        "toy", entry, mirror_dir=None, out_table=out / "toy.parquet", out_meta=out / "toy.json"
    )
    assert prepared_shape(out / "toy.parquet") == (4, 2)
    assert read_prepared_meta(out / "toy.json")["n"] == 4
    for name in ("toy.parquet", "toy.json"):
        _truncate_keeping_mtime(out / name)
    with pytest.raises(
        DPRegError, match=r"prepared table .*toy.parquet.*--forcerun prepare_dataset"
    ):
        prepared_shape(out / "toy.parquet")
    with pytest.raises(DPRegError, match=r"prepared dataset record .*toy.json.*damaged"):
        read_prepared_meta(out / "toy.json")
