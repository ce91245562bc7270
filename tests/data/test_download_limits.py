"""Downloads are bounded whatever the server sends: a size limit (announced or
streamed), a stall rule, and an unverified file kept where the message says.
Every server here is a local one on 127.0.0.1 started by the test itself."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dpreg import DPRegError
from dpreg.data import download as download_module
from dpreg.data import fetch_raw, validate_entry
from dpreg.data.download import STALL_BYTES, STALL_SECONDS, _read_body, download

BODY = b"a,b,y\n1,0,1.5\n2,1,2.5\n3,0,3.5\n4,2,4.0\n"


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, Callable]]]:
    routes: dict[str, Callable] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            routes[self.path](self)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", routes
    finally:
        httpd.shutdown()
        httpd.server_close()


def _send(body: bytes, *, length: int | None = None, chunks: int = 1) -> Callable:
    def handler(h):
        h.send_response(200)
        if length is not None:
            h.send_header("Content-Length", str(length))
        h.end_headers()
        step = max(1, len(body) // chunks)
        for i in range(0, len(body), step):
            h.wfile.write(body[i : i + step])
        h.close_connection = True

    return handler


def test_announced_length_above_the_limit_is_refused_before_the_body(server):
    base, routes = server
    routes["/big.csv"] = _send(BODY, length=10**12)
    with pytest.raises(DPRegError) as err:
        download("big", f"{base}/big.csv", deadline=5, max_bytes=1000)
    msg = str(err.value)
    assert "download_max_bytes = 1000" in msg and "1000000000000 bytes" in msg


def test_unannounced_body_is_cut_at_the_limit(server):
    base, routes = server
    routes["/endless.csv"] = _send(b"x" * 200_000, length=None, chunks=20)
    with pytest.raises(DPRegError, match="download_max_bytes = 50000"):
        download("endless", f"{base}/endless.csv", deadline=5, max_bytes=50_000)


def test_body_within_the_limit_is_returned_whole(server):
    base, routes = server
    routes["/ok.csv"] = _send(BODY, length=len(BODY))
    assert download("ok", f"{base}/ok.csv", deadline=5, max_bytes=len(BODY)) == BODY


class _Trickle:
    """A response whose every read returns one byte while a fake clock advances
    one second: a server sending 1 byte/s, without waiting for it."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def read1(self, n: int) -> bytes:
        self.now += 1.0
        return b"1"


def test_a_trickling_body_is_cut_off_as_stalled_long_before_the_deadline():
    trickle = _Trickle()
    with pytest.raises(download_module._Stalled) as err:
        _read_body(trickle, stop_at=600.0, max_bytes=10**9, clock=trickle.clock)  # type: ignore[arg-type]
    # the first full window of STALL_SECONDS ends the transfer, not the 600 s deadline
    assert trickle.now == pytest.approx(STALL_SECONDS)
    assert err.value.received == STALL_SECONDS < STALL_BYTES


def test_the_stall_message_names_what_happened(monkeypatch, server):
    base, routes = server
    routes["/slow.csv"] = _send(BODY, length=len(BODY))

    def stalled(*args, **kwargs):
        raise download_module._Stalled(12)

    monkeypatch.setattr(download_module, "_read_body", stalled)
    with pytest.raises(DPRegError, match=f"less than {STALL_BYTES} bytes in 30 s"):
        download("slow", f"{base}/slow.csv", deadline=5)


def test_an_unpinned_download_is_kept_where_the_message_says(server, tmp_path):
    base, routes = server
    routes["/toy.csv"] = _send(BODY, length=len(BODY))
    entry = {"url": f"{base}/toy.csv", "target": "y"}
    with pytest.raises(DPRegError) as err:
        fetch_raw("toy", entry, mirror_dir=None, cache_dir=tmp_path)
    msg = str(err.value)
    sha = hashlib.sha256(BODY).hexdigest()
    kept = tmp_path / f"toy-{sha[:16]}.unverified"
    assert str(kept) in msg and f"sha256: {sha}" in msg and f"({len(BODY)} bytes)" in msg
    assert kept.read_bytes() == BODY


def test_a_cut_short_download_is_kept_and_named_on_a_pin_mismatch(server, tmp_path):
    base, routes = server
    half = BODY[: len(BODY) // 2]
    routes["/cut.csv"] = _send(half, length=None)  # no length: the cut cannot be seen
    entry = {"url": f"{base}/cut.csv", "target": "y", "sha256": hashlib.sha256(BODY).hexdigest()}
    with pytest.raises(DPRegError) as err:
        fetch_raw("cut", entry, mirror_dir=None, cache_dir=tmp_path)
    msg = str(err.value)
    assert f"{len(half)} bytes received" in msg and "cut short" in msg
    (kept,) = tmp_path.glob("cut-*.unverified")
    assert str(kept) in msg and kept.read_bytes() == half


@pytest.mark.parametrize("value", [0, -5, 1.5, True, "1GB"])
def test_download_max_bytes_must_be_a_positive_whole_number(value):
    with pytest.raises(DPRegError, match="download_max_bytes must be a whole number"):
        validate_entry("x", {"url": "http://127.0.0.1/x.csv", "download_max_bytes": value})


@pytest.mark.parametrize("spool", [1 << 30, 1000], ids=["in-memory", "spooled-to-disk"])
def test_a_body_in_many_pieces_is_returned_whole(server, monkeypatch, spool):
    monkeypatch.setattr(download_module, "_SPOOL_IN_MEMORY", spool)
    base, routes = server
    body = b"a,y\n" + b"1,2\n" * 100_000  # 400 kB in 50 pieces
    routes["/fine.csv"] = _send(body, length=len(body), chunks=50)
    assert download("fine", f"{base}/fine.csv", deadline=30) == body
