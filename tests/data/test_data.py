"""Tests of dpreg.data: every source end to end, checksums, recipes, failures.

Downloads are served by a local http.server on 127.0.0.1 (started per test
in a thread); the ucimlrepo path runs the real ucimlrepo code against a local
copy of the UCI API, so nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import ucimlrepo.fetch
import yaml

import dpreg.data.prepared as tables_mod
from dpreg._validation import DPRegError
from dpreg.data import (
    DATASET_KEYS,
    DEFAULT_DATASETS,
    RawDataset,
    apply_recipe,
    fetch_raw,
    iter_prepared,
    prepare_dataset,
    prepared_shape,
    read_prepared,
    validate_entry,
)

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT / "resources" / "mirror"

# n x d after Wang's recipes (SPEC section 1; Wang 2018's table for bike: d = 17).
EXPECTED_SHAPES = {
    "airfoil": (1503, 5),
    "concrete": (1030, 8),
    "bike": (17379, 17),
    "elevators": (16599, 18),
    "wine-red": (1599, 11),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mirror_sums() -> dict[str, str]:
    sums = {}
    for line in (MIRROR / "SHA256SUMS").read_text().splitlines():
        digest, path = line.split()
        sums[path] = digest
    return sums


def _prepare(name, entry, tmp_path, **kw):
    kw.setdefault("mirror_dir", MIRROR)
    table, meta = tmp_path / "out" / f"{name}.parquet", tmp_path / "out" / f"{name}.json"
    result = prepare_dataset(name, entry, out_table=table, out_meta=meta, **kw)
    return result, table, meta


def _assert_no_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    left = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert left == [], f"outputs left behind: {left}"


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    err = exc.value  # no chained traceback is shown to the user
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)
    return msg


def _closed_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the network was used")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.fixture
def server():
    """A local HTTP server: ``routes`` maps a path (with query) to bytes."""
    routes: dict[str, bytes] = {}
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            hits.append(self.path)
            body = routes.get(self.path)
            if body is None:
                self.send_error(404)
                return
            if callable(body):  # a handler of its own (slow or broken servers)
                body(self)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield base, routes, hits
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _serve_uci(base, routes, monkeypatch, uci_id: int, folder: Path) -> str:
    """Serve ``folder`` (mirror layout) the way the UCI API does; return the data URL."""
    meta = json.loads((folder / "metadata.json").read_text())
    data_url = f"{base}/static/public/{uci_id}/data.csv"
    answer = {
        "status": 200,
        "statusCode": 200,
        "message": "OK",
        "data": {
            "uci_id": uci_id,
            "name": meta["name"],
            "data_url": data_url,
            "num_instances": meta["num_instances"],
            "variables": [dict(v, description=None, units=None) for v in meta["variables"]],
            "additional_info": {"summary": "served by the test"},
            "intro_paper": None,
        },
    }
    routes[f"/api/dataset?id={uci_id}"] = json.dumps(answer).encode()
    routes[f"/static/public/{uci_id}/data.csv"] = (folder / "data.csv").read_bytes()
    monkeypatch.setattr(ucimlrepo.fetch, "API_BASE_URL", f"{base}/api/dataset")
    return data_url


def _write_csv(path: Path, frame: pd.DataFrame) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def _fetch_and_recipe(name, entry, mirror_dir=None):
    return apply_recipe(fetch_raw(name, entry, mirror_dir=mirror_dir), entry)


def _raw(frame: pd.DataFrame, roles=None, name="toy") -> RawDataset:
    roles = roles or dict.fromkeys(frame.columns, "Feature")
    return RawDataset(frame, roles, "path", "0" * 64, "test frame", name)


# --------------------------------------------------------------------------
# the mirror and the default recipes


@pytest.mark.parametrize("name", sorted(EXPECTED_SHAPES))
def test_default_datasets_prepare_offline_from_mirror(name, tmp_path, no_network):
    meta, table, meta_path = _prepare(name, DEFAULT_DATASETS[name], tmp_path)
    n, d = EXPECTED_SHAPES[name]
    assert (meta["n"], meta["d"]) == (n, d)
    assert meta["source"] == "mirror"
    assert meta["sha256"] == _mirror_sums()[f"{name}/data.csv"]
    assert json.loads(meta_path.read_text()) == meta
    assert prepared_shape(table) == (n, d)
    schema = pq.read_schema(table)
    assert schema.names == [*meta["features"], meta["target"]]
    assert all(str(t) == "double" for t in schema.types)
    X, y, features, target = read_prepared(table)
    assert X.shape == (n, d) and y.shape == (n,) and X.dtype == y.dtype == np.float64
    assert features == meta["features"] and target == meta["target"]
    assert np.isfinite(X).all() and np.isfinite(y).all()
    chunks = list(iter_prepared(table, chunk_rows=700))
    assert all(len(cy) <= 700 for _, cy in chunks)
    np.testing.assert_array_equal(np.vstack([cx for cx, _ in chunks]), X)
    np.testing.assert_array_equal(np.concatenate([cy for _, cy in chunks]), y)


def test_bike_recipe_matches_wang(tmp_path):
    meta, table, _ = _prepare("bike", DEFAULT_DATASETS["bike"], tmp_path)
    assert meta["features"] == [
        "dteday_year", "dteday_month", "dteday_day", "season", "yr", "mnth", "hr",
        "holiday", "weekday", "workingday", "weathersit", "temp", "atemp", "hum",
        "windspeed", "casual", "registered",
    ]  # fmt: skip
    assert meta["report"]["dropped"] == {"instant": "drop"}
    assert meta["report"]["date_parts"] == {"dteday": ["dteday_year", "dteday_month", "dteday_day"]}
    X, y, _, target = read_prepared(table)
    raw = pd.read_csv(MIRROR / "bike" / "data.csv")
    assert target == "cnt"
    np.testing.assert_allclose(y, np.log(raw["cnt"].to_numpy()))
    np.testing.assert_array_equal(X[0, :3], [2011, 1, 1])
    np.testing.assert_array_equal(X[-1, :3], [2012, 12, 31])
    np.testing.assert_array_equal(X[:, 15], raw["casual"])


def test_elevators_goal_is_positive_so_log_is_defined():
    goal = pd.read_csv(MIRROR / "elevators" / "data.csv")["Goal"]
    assert goal.min() > 0


def test_defaults_validate_and_agree_with_config():
    for name, entry in DEFAULT_DATASETS.items():
        e = validate_entry(name, entry, mirror_dir=MIRROR)
        assert set(e) == set(DATASET_KEYS)
    configured = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["datasets"]
    shared = sorted(set(configured) & set(DEFAULT_DATASETS))
    assert {"airfoil", "concrete", "bike", "elevators"} <= set(shared)
    for name in shared:
        got = {k: v for k, v in configured[name].items() if k != "description"}
        want = {k: v for k, v in DEFAULT_DATASETS[name].items() if k != "description"}
        assert got == want, name


def test_mirror_is_pinned_and_its_readme_names_every_dataset():
    text = (MIRROR / "README.md").read_text()
    folders = sorted(p.name for p in MIRROR.iterdir() if p.is_dir())
    assert len(folders) == 26 and sorted(n.split("/")[0] for n in _mirror_sums()) == folders
    for name in folders:
        assert _sha((MIRROR / name / "data.csv").read_bytes()) == _mirror_sums()[f"{name}/data.csv"]
        meta = json.loads((MIRROR / name / "metadata.json").read_text())
        assert meta["name"] in text and meta["license"] in text


def test_corrupted_mirror_is_an_error_naming_both_sums(tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(MIRROR / "airfoil", mirror / "airfoil")
    shutil.copy(MIRROR / "SHA256SUMS", mirror / "SHA256SUMS")
    csv = mirror / "airfoil" / "data.csv"
    csv.write_bytes(csv.read_bytes().replace(b"126.201", b"126.202", 1))
    with pytest.raises(DPRegError) as exc:
        _prepare("airfoil", DEFAULT_DATASETS["airfoil"], tmp_path, mirror_dir=mirror)
    msg = _one_line(exc)
    assert _mirror_sums()["airfoil/data.csv"] in msg and _sha(csv.read_bytes()) in msg
    assert "'airfoil'" in msg
    _assert_no_outputs(tmp_path)


def test_unpinned_mirror_folder_is_refused(tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(MIRROR / "concrete", mirror / "concrete")
    (mirror / "SHA256SUMS").write_text("")
    with pytest.raises(DPRegError, match="no line for concrete/data.csv"):
        fetch_raw("concrete", {}, mirror_dir=mirror)


def test_mirror_only_entry_without_mirror_says_how_to_supply_it(tmp_path):
    with pytest.raises(DPRegError) as exc:
        _prepare("elevators", DEFAULT_DATASETS["elevators"], tmp_path, mirror_dir=tmp_path)
    msg = _one_line(exc)
    assert "'elevators'" in msg and "path:" in msg
    _assert_no_outputs(tmp_path)


# --------------------------------------------------------------------------
# path sources; adding a dataset without code


def test_new_dataset_from_a_csv_and_an_entry(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(50, 3)), columns=["a", "b", "c"])
    frame["y"] = frame @ [1.0, -2.0, 0.5]
    csv = _write_csv(tmp_path / "data" / "mine.csv", frame)
    entry = {"path": str(csv), "target": "y", "description": "my data"}
    meta, table, _ = _prepare("mine", entry, tmp_path)
    assert (meta["n"], meta["d"], meta["source"]) == (50, 3, "path")
    assert meta["sha256"] == _sha(csv.read_bytes()) and meta["description"] == "my data"
    X, y, features, target = read_prepared(table)
    assert (features, target) == (["a", "b", "c"], "y")
    np.testing.assert_allclose(X, frame[["a", "b", "c"]].to_numpy())
    np.testing.assert_allclose(y, frame["y"].to_numpy())


def test_path_csv_without_target_asks_for_one(tmp_path):
    csv = _write_csv(tmp_path / "x.csv", pd.DataFrame({"a": [1, 2], "b": [3, 4]}))
    with pytest.raises(DPRegError, match=r"set target: .*none.*columns: a, b"):
        _fetch_and_recipe("x", {"path": str(csv)})


def test_path_folder_uses_roles_and_include(tmp_path):
    folder = tmp_path / "shop"
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "x1": [0.5, 1.5, 2.5, 3.5],
            "x2": [1, 0, 1, 0],
            "side": [9, 8, 7, 6],
            "note": [5, 5, 5, 5],
            "sales": [10.0, 20.0, 30.0, 40.0],
        }
    )
    _write_csv(folder / "data.csv", frame)
    roles = {"id": "ID", "x1": "Feature", "x2": "Feature", "side": "Other", "note": "Other"}
    variables = [{"name": k, "role": v} for k, v in roles.items()]
    variables.append({"name": "sales", "role": "Target"})
    (folder / "metadata.json").write_text(json.dumps({"name": "Shop", "variables": variables}))
    entry = {
        "path": str(folder),
        "include": ["side"],
        "sha256": _sha(frame.to_csv(index=False).encode()),
    }
    prepared = _fetch_and_recipe("shop", entry)
    assert list(prepared.features.columns) == ["x1", "x2", "side"]
    assert prepared.target.name == "sales"
    assert prepared.report["dropped"] == {"id": "ID role", "note": "Other role"}


def test_whitespace_file_via_path(tmp_path):
    txt = tmp_path / "w.txt"
    txt.write_text("u v  target\n1 2 3\n4   5 6\n")
    prepared = _fetch_and_recipe(
        "w", {"path": str(txt), "format": "whitespace", "target": "target"}
    )
    np.testing.assert_array_equal(prepared.features.to_numpy(), [[1, 2], [4, 5]])


def test_two_target_roles_need_a_choice(tmp_path):
    frame = pd.DataFrame({"x": [1.0, 2.0], "t1": [1.0, 2.0], "t2": [3.0, 4.0]})
    roles = {"x": "Feature", "t1": "Target", "t2": "Target"}
    with pytest.raises(DPRegError, match=r"set target: .*2 \(t1, t2\)"):
        apply_recipe(_raw(frame, roles), {})
    prepared = apply_recipe(_raw(frame, roles), {"target": "t2"})
    assert prepared.target.name == "t2" and prepared.report["dropped"] == {"t1": "Target role"}


# --------------------------------------------------------------------------
# url sources (local http.server)

TOY = pd.DataFrame(
    {"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 1.0, 0.0, 2.0], "y": [1.5, 2.5, 3.5, 4.0]}
)


def test_url_csv_with_pin(server, tmp_path):
    base, routes, _ = server
    body = TOY.to_csv(index=False).encode()
    routes["/toy.csv"] = body
    entry = {"url": f"{base}/toy.csv", "target": "y", "sha256": _sha(body).upper()}
    meta, table, _ = _prepare("toy", entry, tmp_path)
    assert (meta["source"], meta["sha256"], meta["n"], meta["d"]) == ("url", _sha(body), 4, 2)
    X, y, _, _ = read_prepared(table)
    np.testing.assert_array_equal(y, TOY["y"])


def test_url_archives_zip_and_tgz(server, tmp_path):
    base, routes, _ = server
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("inner/toy.csv", TOY.to_csv(index=False))
    routes["/toy.zip"] = buf.getvalue()
    entry = {"url": f"{base}/toy.zip", "target": "y", "sha256": _sha(buf.getvalue())}
    prepared = _fetch_and_recipe("z", entry)
    np.testing.assert_array_equal(prepared.features.to_numpy(), TOY[["a", "b"]].to_numpy())

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for member, text in [
            ("Toy/toy.domain", "a: continuous.\n"),
            ("Toy/toy.data", TOY.to_string(index=False) + "\n"),  # whitespace-separated
        ]:
            info = tarfile.TarInfo(member)
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    routes["/toy.tgz"] = buf.getvalue()
    pin = _sha(buf.getvalue())
    entry = {"url": f"{base}/toy.tgz", "member": "Toy/toy.data", "target": "y", "sha256": pin}
    raw = fetch_raw("t", entry, mirror_dir=MIRROR)
    assert raw.sha256 == _sha(buf.getvalue()) and raw.source == "url"
    np.testing.assert_array_equal(apply_recipe(raw, entry).target, TOY["y"])
    with pytest.raises(DPRegError, match=r"holds 2 files; choose one with member: "):
        fetch_raw("t", {"url": f"{base}/toy.tgz", "target": "y", "sha256": pin}, mirror_dir=None)


def test_url_checksum_mismatch_names_both_sums_and_leaves_nothing(server, tmp_path):
    base, routes, _ = server
    body = TOY.to_csv(index=False).encode()
    routes["/toy.csv"] = body
    out = tmp_path / "out"
    out.mkdir()
    (out / "toy.parquet").write_text("stale")  # an earlier run's output must not survive
    pin = "ab" * 32
    with pytest.raises(DPRegError) as exc:
        _prepare("toy", {"url": f"{base}/toy.csv", "target": "y", "sha256": pin}, tmp_path)
    msg = _one_line(exc)
    assert pin in msg and _sha(body) in msg and "'toy'" in msg
    _assert_no_outputs(tmp_path)


def test_url_connection_refused_is_one_line_with_offline_hint(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/toy.csv"
    with pytest.raises(DPRegError) as exc:
        _prepare("toy", {"url": url, "target": "y"}, tmp_path)
    msg = _one_line(exc)
    assert "'toy'" in msg and "could not be fetched" in msg and "path:" in msg
    assert "refused" in msg.lower()
    _assert_no_outputs(tmp_path)


def test_url_http_error_is_reported(server):
    base, _, _ = server
    with pytest.raises(DPRegError, match=r"'gone'.*HTTP 404.*path:"):
        fetch_raw("gone", {"url": f"{base}/missing.csv", "target": "y"}, mirror_dir=None)


def test_download_cache_serves_reruns_offline(server, tmp_path):
    base, routes, hits = server
    body = TOY.to_csv(index=False).encode()
    routes["/toy.csv"] = body
    entry = {"url": f"{base}/toy.csv", "target": "y", "sha256": _sha(body)}
    first = fetch_raw("toy", entry, mirror_dir=None, cache_dir=tmp_path / "cache")
    routes.clear()  # the server now answers 404 to everything
    again = fetch_raw("toy", entry, mirror_dir=None, cache_dir=tmp_path / "cache")
    assert again.sha256 == first.sha256 == _sha(body) and "cached" in again.detail
    assert hits == ["/toy.csv"]
    pd.testing.assert_frame_equal(again.frame, first.frame)
    with pytest.raises(DPRegError, match="HTTP 404"):
        fetch_raw("toy", {**entry, "refresh": True}, mirror_dir=None, cache_dir=tmp_path / "cache")


# --------------------------------------------------------------------------
# uci_id sources: real ucimlrepo code against a local copy of the UCI API


def test_uci_refresh_downloads_through_ucimlrepo(server, tmp_path, monkeypatch):
    base, routes, hits = server
    data_url = _serve_uci(base, routes, monkeypatch, 275, MIRROR / "bike")
    entry = {**DEFAULT_DATASETS["bike"], "refresh": True}
    meta, table, _ = _prepare("bike", entry, tmp_path)
    assert meta["source"] == "uci" and data_url in meta["detail"]
    assert "/api/dataset?id=275" in hits
    assert meta["sha256"] == _mirror_sums()["bike/data.csv"]
    mirror_meta, mirror_table, _ = _prepare("bike", DEFAULT_DATASETS["bike"], tmp_path / "m")
    assert mirror_meta["source"] == "mirror"
    for a, b in zip(read_prepared(table), read_prepared(mirror_table), strict=True):
        np.testing.assert_array_equal(a, b)


def test_uci_roles_are_kept(server, tmp_path, monkeypatch):
    base, routes, _ = server
    _serve_uci(base, routes, monkeypatch, 275, MIRROR / "bike")
    entry = {
        "uci_id": 275,
        "dates": {"dteday": ["weekday", "dayofyear"]},
        "sha256": _mirror_sums()["bike/data.csv"],
    }
    raw = fetch_raw("bike-uci", entry, mirror_dir=MIRROR)  # not in the mirror: downloads
    assert raw.source == "uci"
    assert (raw.roles["instant"], raw.roles["casual"], raw.roles["cnt"]) == (
        "ID",
        "Other",
        "Target",
    )
    prepared = apply_recipe(raw, entry)
    assert prepared.report["dropped"] == {
        "instant": "ID role",
        "casual": "Other role",
        "registered": "Other role",
    }
    assert prepared.target.name == "cnt" and prepared.features.shape == (17379, 14)
    # 2011-01-01 was a Saturday (weekday 5 with Monday = 0), day 1 of the year
    np.testing.assert_array_equal(prepared.features.iloc[0, :2], [5, 1])


def test_uci_connection_refused_is_one_line_with_offline_hint(tmp_path, monkeypatch):
    monkeypatch.setattr(
        ucimlrepo.fetch, "API_BASE_URL", f"http://127.0.0.1:{_closed_port()}/api/dataset"
    )
    with pytest.raises(DPRegError) as exc:
        _prepare("airfoil", {"uci_id": 291, "refresh": True}, tmp_path)
    msg = _one_line(exc)
    assert "'airfoil'" in msg and "UCI" in msg and "path:" in msg
    _assert_no_outputs(tmp_path)


# --------------------------------------------------------------------------
# recipe rules


NA_FRAME = pd.DataFrame(
    {
        "a": [1.0, np.nan, 3.0, 4.0, 5.0],
        "b": [1.0, 2.0, np.nan, np.nan, 5.0],
        "y": [1.0, 2.0, 3.0, 4.0, 5.0],
    }
)


def test_missing_values_error_names_columns_counts_and_policies():
    with pytest.raises(DPRegError) as exc:
        apply_recipe(_raw(NA_FRAME), {"target": "y"})
    msg = str(exc.value)
    assert "a (1), b (2)" in msg and "drop_rows" in msg and "zero" in msg and "'toy'" in msg


def test_missing_values_drop_rows_and_zero():
    dropped = apply_recipe(_raw(NA_FRAME), {"target": "y", "missing": "drop_rows"})
    assert dropped.report["rows_dropped_na"] == 3
    np.testing.assert_array_equal(dropped.target, [1.0, 5.0])
    zero = apply_recipe(_raw(NA_FRAME), {"target": "y", "missing": "zero"})
    assert zero.report["na_filled"] == {"a": 1, "b": 2}
    np.testing.assert_array_equal(zero.features["b"], [1.0, 2.0, 0.0, 0.0, 5.0])
    assert not zero.features.isna().any().any()


def test_infinite_values_are_errors():
    frame = pd.DataFrame({"a": [1.0, np.inf], "y": [1.0, 2.0]})
    with pytest.raises(DPRegError, match=r"infinite values in column\(s\) a \(1\)"):
        apply_recipe(_raw(frame), {"target": "y", "missing": "zero"})


def test_non_numeric_column_is_named_with_options():
    frame = pd.DataFrame({"a": [1.0, 2.0], "colour": ["red", "blue"], "y": [1.0, 2.0]})
    with pytest.raises(DPRegError) as exc:
        apply_recipe(_raw(frame), {"target": "y"})
    msg = str(exc.value)
    assert "'colour'" in msg and "'red'" in msg and "drop" in msg and "dates" in msg


def test_constant_column_is_kept_and_reported(tmp_path):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "k": [7, 7, 7], "y": [0.1, 0.2, 0.3]})
    csv = _write_csv(tmp_path / "k.csv", frame)
    meta, table, _ = _prepare("k", {"path": str(csv), "target": "y"}, tmp_path)
    assert meta["report"]["constant"] == ["k"] and meta["features"] == ["a", "k"]
    X, _, _, _ = read_prepared(table)
    assert np.isfinite(X).all()
    np.testing.assert_array_equal(X[:, 1], 7.0)


@pytest.mark.parametrize(
    ("transform", "values", "count"), [("log", [1.0, 0.0, -2.0], 2), ("log1p", [0.0, -1.0, 5.0], 1)]
)
def test_log_of_out_of_domain_target_counts_rows(transform, values, count):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": values})
    with pytest.raises(DPRegError) as exc:
        apply_recipe(_raw(frame), {"target": "y", "target_transform": transform})
    assert f"{count} row(s) of 'y'" in str(exc.value) and transform in str(exc.value)


def test_drop_of_unknown_column_lists_the_columns():
    with pytest.raises(DPRegError, match=r"drop names column\(s\) 'zz'.*columns: a, b, y"):
        apply_recipe(_raw(TOY), {"target": "y", "drop": ["zz"]})


def test_bad_date_value_is_named():
    frame = pd.DataFrame({"when": ["2020-01-02", "not a date"], "y": [1.0, 2.0]})
    with pytest.raises(DPRegError, match=r"'when'.*1 value\(s\).*'not a date' in data row 2"):
        apply_recipe(_raw(frame), {"target": "y", "dates": {"when": ["year"]}})


# --------------------------------------------------------------------------
# entry validation


def test_unknown_key_is_named_with_the_allowed_ones():
    with pytest.raises(DPRegError) as exc:
        validate_entry("bike", {"uci_id": 275, "traget": "cnt"})
    msg = str(exc.value)
    assert "'traget'" in msg and "did you mean 'target'" in msg
    assert all(key in msg for key in DATASET_KEYS)


@pytest.mark.parametrize(
    ("entry", "pattern"),
    [
        (
            {"uci_id": 1, "url": "http://x/y.csv"},
            "exactly one of uci_id, url, path, synthetic; got uci_id, url",
        ),
        ({"uci_id": True}, "uci_id must be a positive integer"),
        ({"url": "ftp://x/y.csv"}, "http:// or https://"),
        (
            {"path": "a.csv", "format": "xlsx"},
            "unknown format value 'xlsx'; known: csv, tgz, whitespace, zip",
        ),
        ({"uci_id": 3, "format": "csv"}, "format applies to url and path"),
        ({"path": "a.csv", "member": "b.csv"}, "set format: zip or tgz"),
        ({"path": "a.csv", "sha256": "abc"}, "sha256 must be 64 hex digits"),
        ({"path": "a.csv", "refresh": True}, "refresh: true needs uci_id or url"),
        (
            {"path": "a.csv", "target_transform": "sqrt"},
            "unknown target_transform value 'sqrt'; known: log, log1p, none",
        ),
        (
            {"path": "a.csv", "missing": "mean"},
            "unknown missing value 'mean'; known: drop_rows, error, zero",
        ),
        ({"path": "a.csv", "drop": "x"}, "drop must be a list of column names"),
        ({"path": "a.csv", "drop": ["x"], "include": ["x"]}, "both in drop and in include"),
        ({"path": "a.csv", "dates": {"d": ["week"]}}, "unknown part 'week'"),
        ({"path": "a.csv", "dates": {"d": []}}, r"dates\['d'\] must be a non-empty list"),
        ({}, "not in the mirror"),
    ],
)
def test_invalid_entries_are_explained(entry, pattern):
    with pytest.raises(DPRegError, match=pattern):
        validate_entry("ds", entry, mirror_dir=MIRROR)


def test_validate_entry_fills_defaults_and_infers_format():
    e = validate_entry("ds", {"url": "https://example.org/f.tar.gz", "member": "x.data"})
    assert e["format"] == "tgz" and e["missing"] == "error" and e["target_transform"] == "none"
    assert e["drop"] == [] and e["dates"] == {} and e["refresh"] is False
    with pytest.raises(DPRegError, match="dataset name 'a/b' is not allowed"):
        validate_entry("a/b", {})


# --------------------------------------------------------------------------
# prepared tables


def test_prepared_table_is_written_in_row_groups_and_streams(tmp_path, monkeypatch):
    monkeypatch.setattr(tables_mod, "ROW_GROUP_ROWS", 5000)
    meta, table, _ = _prepare("bike", DEFAULT_DATASETS["bike"], tmp_path)
    md = pq.ParquetFile(table).metadata
    assert md.num_row_groups == 4 and md.row_group(0).num_rows == 5000
    X, y, _, _ = read_prepared(table)
    sizes = [len(cy) for _, cy in iter_prepared(table, chunk_rows=4096)]
    assert max(sizes) <= 4096 and sum(sizes) == meta["n"]
    np.testing.assert_array_equal(
        np.concatenate([cy for _, cy in iter_prepared(table, chunk_rows=4096)]), y
    )
    with pytest.raises(DPRegError, match="chunk_rows must be an integer >= 1"):
        next(iter_prepared(table, chunk_rows=0))


def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def broken_write(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 half a table")
        raise OSError("disk full")

    monkeypatch.setattr(tables_mod.pq, "write_table", broken_write)
    with pytest.raises(OSError, match="disk full"):
        _prepare("airfoil", DEFAULT_DATASETS["airfoil"], tmp_path)
    _assert_no_outputs(tmp_path)


# --------------------------------------------------------------------------
# downloads: pins, deadlines, announced lengths (local http.server)


def test_url_without_pin_stops_with_the_hash_to_paste(server, tmp_path):
    base, routes, _ = server
    body = TOY.to_csv(index=False).encode()
    routes["/toy.csv"] = body
    with pytest.raises(DPRegError) as exc:
        _prepare("toy", {"url": f"{base}/toy.csv", "target": "y"}, tmp_path)
    msg = _one_line(exc)
    assert f"sha256: {_sha(body)}" in msg and "'toy'" in msg and f"{base}/toy.csv" in msg
    _assert_no_outputs(tmp_path)
    meta, _, _ = _prepare(
        "toy", {"url": f"{base}/toy.csv", "target": "y", "sha256": _sha(body)}, tmp_path
    )
    assert meta["sha256"] == _sha(body)


def _trickle(handler, *, announced: int, byte_every: float, limit: int = 100) -> None:
    """Announce ``announced`` bytes, then send one every ``byte_every`` s (at most ``limit``)."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(announced))
    handler.end_headers()
    for _ in range(limit):
        try:
            handler.wfile.write(b"1")
            handler.wfile.flush()
        except OSError:  # the client gave up: stop
            return
        time.sleep(byte_every)


def test_download_deadline_stops_a_trickling_server_and_names_the_key(server, tmp_path):
    base, routes, _ = server
    routes["/slow.csv"] = lambda h: _trickle(h, announced=1000, byte_every=0.1)
    entry = {"url": f"{base}/slow.csv", "target": "y", "sha256": "0" * 64, "download_deadline": 0.5}
    start = time.monotonic()
    with pytest.raises(DPRegError) as exc:
        _prepare("slow", entry, tmp_path)
    elapsed = time.monotonic() - start
    msg = _one_line(exc)
    # each read returns within 0.1 s, so the run stops one read after the deadline
    assert 0.5 <= elapsed < 2.0, elapsed
    assert "download_deadline = 0.5 s" in msg and "'slow'" in msg and "path:" in msg
    _assert_no_outputs(tmp_path)


def test_a_stalled_server_is_cut_off_by_the_deadline(server, tmp_path):
    base, routes, _ = server

    def stall(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "10")
        handler.end_headers()
        time.sleep(1.5)  # bounded: the test's client gives up after 0.3 s

    routes["/stall.csv"] = stall
    entry = {
        "url": f"{base}/stall.csv",
        "target": "y",
        "sha256": "0" * 64,
        "download_deadline": 0.3,
    }
    start = time.monotonic()
    with pytest.raises(DPRegError, match=r"'stall'.*no data within 0.3 s") as exc:
        fetch_raw("stall", entry, mirror_dir=None)
    assert time.monotonic() - start < 1.4
    _one_line(exc)


def test_body_shorter_than_its_content_length_is_refused(server, tmp_path):
    base, routes, _ = server
    body = TOY.to_csv(index=False).encode()

    def short(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body) + 25))
        handler.end_headers()
        handler.wfile.write(body)
        handler.close_connection = True

    routes["/short.csv"] = short
    entry = {"url": f"{base}/short.csv", "target": "y", "sha256": _sha(body)}
    with pytest.raises(DPRegError) as exc:
        _prepare("short", entry, tmp_path)
    msg = _one_line(exc)
    assert f"{len(body)} of the {len(body) + 25} bytes" in msg and "Content-Length" in msg
    _assert_no_outputs(tmp_path)


def test_body_cut_short_without_a_length_is_caught_by_the_pin(server, tmp_path):
    base, routes, _ = server
    body = TOY.to_csv(index=False).encode()

    def unannounced(handler):  # HTTP/1.0 style: the end of the body is the closed connection
        handler.send_response(200)
        handler.end_headers()
        handler.wfile.write(body[: len(body) // 2])
        handler.close_connection = True

    routes["/cut.csv"] = unannounced
    entry = {"url": f"{base}/cut.csv", "target": "y", "sha256": _sha(body)}
    with pytest.raises(
        DPRegError,
        match=f"sha256 mismatch.*expected {_sha(body)}, got {_sha(body[: len(body) // 2])}",
    ):
        _prepare("cut", entry, tmp_path)
    _assert_no_outputs(tmp_path)


# --------------------------------------------------------------------------
# bad input: one clear line each, nothing written


def _prepare_csv(tmp_path, text: str, **entry):
    csv = tmp_path / "in.csv"
    csv.write_text(text)
    return _prepare("bad", {"path": str(csv), "target": "y", **entry}, tmp_path)


def test_constant_target_is_refused(tmp_path):
    with pytest.raises(DPRegError) as exc:
        _prepare_csv(tmp_path, "a,y\n1,3\n2,3\n5,3\n")
    msg = _one_line(exc)
    assert "'bad'" in msg and "target 'y' is constant (3 in all 3 rows)" in msg
    _assert_no_outputs(tmp_path)


def test_duplicate_column_names_are_refused(tmp_path):
    with pytest.raises(DPRegError) as exc:
        _prepare_csv(tmp_path, "a,b,a,y\n1,2,3,4\n5,6,7,9\n")
    msg = _one_line(exc)
    assert "duplicate column name(s) 'a'" in msg and "'bad'" in msg
    _assert_no_outputs(tmp_path)


def test_metadata_naming_a_variable_twice_is_refused(tmp_path):
    folder = tmp_path / "twice"
    _write_csv(folder / "data.csv", TOY)
    variables = [{"name": "a", "role": "Feature"}, {"name": "a", "role": "ID"}]
    (folder / "metadata.json").write_text(json.dumps({"variables": variables}))
    with pytest.raises(DPRegError, match="describes variable 'a' twice"):
        fetch_raw("twice", {"path": str(folder)}, mirror_dir=None)


@pytest.mark.parametrize("column", ["a", "y"])
def test_values_whose_squares_overflow_are_refused_naming_the_column(tmp_path, column):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, 0.1, 0.2], "y": [1.0, 2.0, 4.0]})
    frame.loc[1, column] = 1e300
    with pytest.raises(DPRegError) as exc:
        _prepare_csv(tmp_path, frame.to_csv(index=False))
    msg = _one_line(exc)
    assert f"column(s) {column} (largest |value| 1e+300)" in msg and "overflow" in msg
    _assert_no_outputs(tmp_path)


def test_large_values_whose_statistics_are_finite_are_kept():
    # 1e150 squared is 1e300: finite, so nothing is refused
    frame = pd.DataFrame({"a": [1e150, -1e150, 0.0], "y": [1.0, 2.0, 4.0]})
    prepared = apply_recipe(_raw(frame), {"target": "y"})
    assert prepared.features["a"].abs().max() == 1e150


def test_constant_feature_is_logged_as_a_warning(caplog):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "k": [7, 7, 7], "y": [0.1, 0.2, 0.3]})
    with caplog.at_level(logging.WARNING, logger="dpreg.data"):
        prepared = apply_recipe(_raw(frame), {"target": "y"})
    assert prepared.report["constant"] == ["k"]
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and "'toy'" in record.getMessage()
    assert "constant feature column(s) k kept" in record.getMessage()


_SCRIPT_RUNNER = """
import sys, types
from pathlib import Path
out = Path(sys.argv[1])
smk = types.SimpleNamespace(
    wildcards=types.SimpleNamespace(dataset="mine"),
    params=types.SimpleNamespace(entry={"path": sys.argv[2], "target": "y"}, mirror=None),
    output=types.SimpleNamespace(table=str(out / "mine.parquet"), meta=str(out / "mine.json")),
    log=[str(out.parent / "mine.log")],
)
import runpy
runpy.run_path(sys.argv[3], init_globals={"snakemake": smk}, run_name="__main__")
"""


def _run_prepare_script(tmp_path, text: str):
    csv = tmp_path / "mine.csv"
    csv.write_text(text)
    script = ROOT / "workflow" / "scripts" / "prepare_dataset.py"
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT_RUNNER, str(tmp_path / "out"), str(csv), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_prepare_script_names_a_constant_feature_on_the_console_and_in_the_log(tmp_path):
    done = _run_prepare_script(tmp_path, "a,k,y\n1,7,0.1\n2,7,0.2\n3,7,0.4\n")
    assert done.returncode == 0, done.stderr
    assert "WARNING dataset 'mine': constant feature column(s) k kept" in done.stderr
    log = (tmp_path / "mine.log").read_text()
    assert "constant feature column(s) k kept" in log and "prepared mine: n=3 d=2" in log
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "mine.json",
        "mine.json.sha256",
        "mine.parquet",
        "mine.parquet.sha256",
    ]


def test_prepare_script_refuses_bad_input_in_one_console_line(tmp_path):
    done = _run_prepare_script(tmp_path, "a,a,y\n1,2,3\n4,5,7\n")
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR dataset 'mine': ")
    assert "duplicate column name(s) 'a'" in lines[0] and "Traceback" not in done.stderr
    _assert_no_outputs(tmp_path)


# --------------------------------------------------------------------------
# recipe capabilities: set_values, recode, times of day


def test_set_values_corrects_cells_by_data_row():
    frame = pd.DataFrame({"a": [1, 2, 3], "b": [0.5, 0.1, 0.2], "y": [1.0, 2.0, 4.0]})
    prepared = apply_recipe(
        _raw(frame), {"target": "y", "set_values": {2: {"a": 20, "y": 3.5}, 3: {"b": 7}}}
    )
    np.testing.assert_array_equal(prepared.features["a"], [1, 20, 3])
    np.testing.assert_array_equal(prepared.features["b"], [0.5, 0.1, 7])
    np.testing.assert_array_equal(prepared.target, [1.0, 3.5, 4.0])
    assert prepared.report["cells_set"] == 3
    assert frame["a"].tolist() == [1, 2, 3]  # the raw table is not modified


@pytest.mark.parametrize(
    ("fixes", "pattern"),
    [
        ({4: {"a": 1}}, "set_values names data row 4, but the data has 3 rows"),
        ({1: {"zz": 1}}, r"set_values names column\(s\) 'zz'.*columns: a, b, y"),
    ],
)
def test_set_values_outside_the_table_is_named(fixes, pattern):
    frame = pd.DataFrame({"a": [1, 2, 3], "b": [0.5, 0.1, 0.2], "y": [1.0, 2.0, 4.0]})
    with pytest.raises(DPRegError, match=pattern):
        apply_recipe(_raw(frame), {"target": "y", "set_values": fixes})


def test_recode_maps_text_and_codes_to_numbers():
    frame = pd.DataFrame(
        {"colour": ["red", "blue", "red", None], "code": [1, 2, 3, 1], "y": [1.0, 2.0, 4.0, 3.0]}
    )
    entry = {
        "target": "y",
        "recode": {"colour": {"red": 1, "blue": 2}, "code": {1: 10, 3: 30}},
        "missing": "zero",
    }
    prepared = apply_recipe(_raw(frame), entry)
    np.testing.assert_array_equal(prepared.features["colour"], [1, 2, 1, 0])
    np.testing.assert_array_equal(prepared.features["code"], [10, 2, 30, 10])
    assert prepared.report["recoded"] == {"colour": 3, "code": 3}


def test_recode_of_a_value_the_column_never_holds_is_an_error():
    frame = pd.DataFrame({"code": [1, 2, 3], "y": [1.0, 2.0, 4.0]})
    with pytest.raises(DPRegError, match=r"recode\['code'\] maps value\(s\) '1' that column"):
        apply_recipe(_raw(frame), {"target": "y", "recode": {"code": {"1": 10}}})


def test_times_of_day_expand_into_hour_minute_second():
    frame = pd.DataFrame(
        {
            "when": ["2012-03-13 07:05:09", "2012-12-31 23:59:00"],
            "clock": ["11:45", "9:05"],
            "y": [1.0, 2.0],
        }
    )
    entry = {"target": "y", "dates": {"clock": ["hour", "minute"], "when": ["minute", "second"]}}
    prepared = apply_recipe(_raw(frame), entry)
    assert list(prepared.features.columns) == [
        "when_minute", "when_second", "clock_hour", "clock_minute",
    ]  # fmt: skip
    np.testing.assert_array_equal(prepared.features.to_numpy(), [[5, 9, 11, 45], [59, 0, 9, 5]])
    with pytest.raises(
        DPRegError,
        match=r"'clock' holds times of day .* no 'year'; its parts are hour, minute, second",
    ):
        apply_recipe(_raw(frame), {"target": "y", "drop": ["when"], "dates": {"clock": ["year"]}})


@pytest.mark.parametrize(
    ("entry", "pattern"),
    [
        (
            {"path": "a.csv", "download_deadline": 0},
            "download_deadline must be a number of seconds > 0",
        ),
        ({"path": "a.csv", "download_deadline": True}, "download_deadline must be a number"),
        ({"path": "a.csv", "set_values": {0: {"a": 1}}}, "row 0 must be a data row number >= 1"),
        ({"path": "a.csv", "set_values": {1: {"a": None}}}, r"set_values\[1\] sets 'a' to None"),
        ({"path": "a.csv", "recode": {"a": {}}}, r"recode\['a'\] must be a non-empty map"),
        ({"path": "a.csv", "recode": {"a": {1: float("nan")}}}, "both sides must be finite"),
        ({"path": "a.csv", "recode": {"a": {1: 2}}, "drop": ["a"]}, "both in recode and in drop"),
    ],
)
def test_invalid_new_keys_are_explained(entry, pattern):
    with pytest.raises(DPRegError, match=pattern):
        validate_entry("ds", entry)
