"""Issue 8, finding 4: a huge body never sits in the server's memory. A 200 MB chunked body is
cut at the body limit as it arrives: the server's peak memory (``VmHWM``) rises by at most
2 x the limit + 20 MB, and the server keeps serving on new connections."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.process.conftest import Launch

MiB = 1024 * 1024
BODY_LIMIT = 1 * MiB  # the default


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def _chunked(total: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    piece = b"x" * chunk
    for _ in range(total // chunk):
        yield piece


def _send_chunked(url: str, path: str, total: int) -> bytes:
    """POST ``total`` bytes chunked over a raw socket; the reply read once the server answers
    (it may close while we are still sending: that is the point)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            for piece in _chunked(total):
                sock.sendall(b"%x\r\n%b\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except ConnectionResetError:
            pass
        return reply


@pytest.mark.parametrize("path", ["/", "/hitl/chat"])
def test_a_200_mb_chunked_body_does_not_raise_peak_memory(launch: Launch, path: str) -> None:
    server = launch()
    with httpx.Client(base_url=server.url, timeout=10) as http:  # warm up every code path,
        assert http.post(path, content=b"{}").status_code in {200, 422}  # with buffers of
        http.post(path, content=b"x" * BODY_LIMIT)  # the limit's size already allocated once
    before = _kib(server.proc.pid, "VmHWM")
    reply = _send_chunked(server.url, path, 200 * MiB)
    after = _kib(server.proc.pid, "VmHWM")
    assert b"Payload too large" in reply, reply[:300]
    growth_mib = (after - before) / 1024
    assert growth_mib <= 2 * BODY_LIMIT / MiB + 20, f"peak memory grew by {growth_mib:.1f} MiB"
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.get("/.well-known/agent-card.json").status_code == 200
