"""Downloads of ``uci_id`` and ``url`` sources, with a deadline and a cache.

A download must finish within the entry's ``download_deadline`` (seconds for
the whole transfer, not per read), must not stall (less than
:data:`STALL_BYTES` in any :data:`STALL_SECONDS`), must not exceed
``download_max_bytes`` (the body streams to a temporary file, so memory stays
bounded whatever the server sends), must deliver the length the server
announces in its ``Content-Length`` header, and is kept in an optional cache
so that a rerun works offline.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import io
import json
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpreg.data.entries import DEFAULT_DOWNLOAD_MAX_BYTES, OFFLINE_HINT, fail
from dpreg.io.atomic import write_bytes_atomic

__all__ = [
    "READ_TIMEOUT",
    "STALL_BYTES",
    "STALL_SECONDS",
    "download",
    "download_source",
    "sha256_hex",
]

#: Seconds one network read may wait (the overall limit is ``download_deadline``).
READ_TIMEOUT = 60.0

_CHUNK = 1 << 16


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` as 64 lower-case hex digits."""
    return hashlib.sha256(data).hexdigest()


#: A body that delivers fewer than STALL_BYTES in any STALL_SECONDS window is
#: cut off before the deadline (a server trickling a byte a second would
#: otherwise hold the job for the whole ``download_deadline``).
STALL_SECONDS = 30.0
STALL_BYTES = 1024
#: Bodies up to this size stay in memory; larger ones spool to a temporary file.
_SPOOL_IN_MEMORY = 8 << 20


class _DeadlineExceeded(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


class _Stalled(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


class _TooLarge(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


class _ShortBody(Exception):
    def __init__(self, received: int, announced: int) -> None:
        super().__init__(received, announced)
        self.received, self.announced = received, announced


def _read_body(
    response: http.client.HTTPResponse,
    stop_at: float,
    max_bytes: int,
    clock: Any = time.monotonic,
) -> bytes:
    """The body, streamed piecewise (``read1``) into a spooled temporary file, with
    the deadline, the size limit and the stall rule checked between pieces."""
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY) as buf:
        received = 0
        window_start, window_bytes = clock(), 0
        while True:
            now = clock()
            if now > stop_at:
                raise _DeadlineExceeded(received)
            if now - window_start >= STALL_SECONDS:
                if window_bytes < STALL_BYTES:
                    raise _Stalled(received)
                window_start, window_bytes = now, 0
            piece = response.read1(_CHUNK)
            if not piece:
                buf.seek(0)
                return buf.read()
            received += len(piece)
            window_bytes += len(piece)
            if received > max_bytes:
                raise _TooLarge(received)
            buf.write(piece)


def _announced_length(response: http.client.HTTPResponse) -> int | None:
    value = response.headers.get("Content-Length")
    if value is None or response.headers.get("Transfer-Encoding"):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _fetch_within(url: str, deadline: float, max_bytes: int) -> bytes:
    stop_at = time.monotonic() + deadline
    request = urllib.request.Request(url, headers={"User-Agent": "dpreg"})
    with urllib.request.urlopen(request, timeout=min(READ_TIMEOUT, deadline)) as response:
        announced = _announced_length(response)
        if announced is not None and announced > max_bytes:
            raise _TooLarge(announced)
        data = _read_body(response, stop_at, max_bytes)
    if announced is not None and len(data) != announced:
        raise _ShortBody(len(data), announced)
    return data


def download(
    name: str, url: str, *, deadline: float, max_bytes: int = DEFAULT_DOWNLOAD_MAX_BYTES
) -> bytes:
    """Fetch ``url`` within ``deadline`` seconds and ``max_bytes`` bytes; refuse a body
    shorter than announced or one that stalls.

    Parameters
    ----------
    name : str
        Dataset name, for the messages.
    url : str
        http(s) address.
    deadline : float
        Seconds the whole download (connection, headers and body) may take.
        One read waits at most ``min(READ_TIMEOUT, deadline)``, so the run
        stops at most that long after the deadline.
    max_bytes : int
        Largest body accepted (the entry's ``download_max_bytes``); the body
        streams to a temporary file, so memory stays bounded whatever the
        server sends, and an announced ``Content-Length`` above it is
        refused before the body is read.

    Raises
    ------
    DPRegError
        On a network or HTTP error, a missed deadline (naming the
        ``download_deadline`` key) or a body shorter than its
        ``Content-Length``; each message ends with the offline hint.
    """
    try:
        return _fetch_within(url, deadline, max_bytes)
    except _TooLarge as exc:
        reason = (
            f"the file is larger than download_max_bytes = {max_bytes} ({exc.received} bytes "
            "announced or received); raise download_max_bytes in the entry if it is expected"
        )
    except _Stalled as exc:
        reason = (
            f"the server sent less than {STALL_BYTES} bytes in {STALL_SECONDS:g} s "
            f"({exc.received} bytes received in all); the transfer stalled"
        )
    except _ShortBody as exc:
        reason = (
            f"the body was cut short: {exc.received} of the {exc.announced} bytes the server "
            "announced (Content-Length)"
        )
    except _DeadlineExceeded as exc:
        reason = (
            f"the download did not finish within download_deadline = {deadline:g} s "
            f"({exc.received} bytes received); raise download_deadline in the entry"
        )
    except urllib.error.HTTPError as exc:
        reason = f"HTTP {exc.code} {exc.reason}"
        exc.close()
    except urllib.error.URLError as exc:
        reason = str(exc.reason)
        if isinstance(exc.reason, TimeoutError):
            reason = f"no answer within {min(READ_TIMEOUT, deadline):g} s ({reason})"
    except TimeoutError as exc:
        reason = f"no data within {min(READ_TIMEOUT, deadline):g} s ({exc or 'timed out'})"
    except (OSError, http.client.HTTPException) as exc:
        reason = str(exc) or type(exc).__name__
    raise fail(name, f"could not be fetched from {url}: {reason}; {OFFLINE_HINT}")


@contextlib.contextmanager
def _socket_timeout(seconds: float) -> Iterator[None]:
    """Give libraries that call urlopen without a timeout (ucimlrepo) one."""
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(old)


def _fetch_uci(
    name: str, uci_id: int, deadline: float, max_bytes: int
) -> tuple[bytes, list[dict[str, str]], str]:
    """Fetch a UCI dataset via ucimlrepo: (CSV bytes, variables with roles, data_url)."""
    import ucimlrepo  # on first use: only a UCI download needs it (slow to import)
    from ucimlrepo.fetch import DatasetNotFoundError

    try:
        with _socket_timeout(min(READ_TIMEOUT, deadline)):
            result = ucimlrepo.fetch_ucirepo(id=uci_id)
    except (ConnectionError, OSError, http.client.HTTPException, DatasetNotFoundError) as exc:
        raise fail(
            name,
            f"could not be fetched from the UCI repository (id {uci_id}, "
            f"{ucimlrepo.fetch.API_BASE_URL}): {exc}; {OFFLINE_HINT}",
        ) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise fail(name, f"unexpected answer from the UCI API for id {uci_id}: {exc!r}") from None
    data_url = str(result.metadata.data_url)
    # ucimlrepo parses the CSV without exposing its bytes: read the same
    # address once more so the bytes used are the bytes hashed.
    data = download(name, data_url, deadline=deadline, max_bytes=max_bytes)
    variables = [
        {"name": str(n), "role": str(r)}
        for n, r in zip(result.variables["name"], result.variables["role"], strict=True)
    ]
    headers = [str(c) for c in result.data.headers]
    try:
        parsed_headers = [str(c) for c in pd.read_csv(io.BytesIO(data), nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        parsed_headers = []
    if parsed_headers != headers:
        raise fail(
            name, f"{data_url} changed between two reads (columns {parsed_headers} vs {headers})"
        )
    return data, variables, data_url


def _cache_paths(cache_dir: Path, name: str, e: Mapping[str, Any]) -> tuple[Path, Path]:
    key = json.dumps({k: e[k] for k in ("uci_id", "url", "format", "member")}, sort_keys=True)
    stem = f"{name}-{sha256_hex(key.encode())[:16]}"
    return cache_dir / f"{stem}.bin", cache_dir / f"{stem}.json"


def _from_cache(bin_path: Path, info_path: Path) -> tuple[bytes, list[dict[str, str]], str] | None:
    if not (bin_path.is_file() and info_path.is_file()):
        return None
    data = bin_path.read_bytes()
    with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
        info = json.loads(info_path.read_text())
        if isinstance(info, dict) and info.get("sha256") == sha256_hex(data):
            return data, info["variables"], f"{info['detail']} (cached {bin_path})"
    return None  # a damaged cache entry is disposable: download again


def download_source(
    name: str, e: Mapping[str, Any], cache_dir: Path | None
) -> tuple[bytes, list[dict[str, str]], str]:
    """Bytes, variables (name, role) and detail of a uci_id/url source, through the cache."""
    paths = _cache_paths(cache_dir, name, e) if cache_dir is not None else None
    if paths is not None and not e["refresh"]:
        cached = _from_cache(*paths)
        if cached is not None:
            return cached
    deadline = e["download_deadline"]
    if e["uci_id"] is not None:
        data, variables, data_url = _fetch_uci(name, e["uci_id"], deadline, e["download_max_bytes"])
        detail = f"UCI id {e['uci_id']} via {data_url}"
    else:
        data = download(name, e["url"], deadline=deadline, max_bytes=e["download_max_bytes"])
        variables, detail = [], e["url"]
    if paths is not None:
        info = {"sha256": sha256_hex(data), "variables": variables, "detail": detail}
        write_bytes_atomic(paths[0], data)
        write_bytes_atomic(paths[1], json.dumps(info, indent=1).encode())
    return data, variables, detail
