"""Request heads against a real ``llamon-agent serve`` (``server/connection.py``), raw bytes on
new connections, as no HTTP client library would send them.

* A well-formed head is answered by its size alone: 431 and the connection closed when its
  target and header names and values are over ``MAX_HEAD_BYTES``, the card otherwise, whether
  it arrives in one write or in pieces.
* Any bytes at all get an HTTP/1.1 response with a status the server gives to a request it
  cannot read or does not serve, or, for bytes that are not a whole request head, a 408 or a
  quiet close at the request timeout (half a second here); the server answers the card
  afterwards and logs no traceback.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llamon_agent.server.connection import MAX_HEAD_BYTES
from tests.process.conftest import CARD_PATH, EXAMPLE_TARGET, Server, start_server

from .conftest import examples

#: seconds a response may take to arrive: a liveness bound, never a speed check
BOUND = 20.0
_TOKEN = "abcdefghijklmnopqrstuvwxyz0123456789-"
#: visible ASCII without the characters some parsers treat specially at a value's edges
_VALUE = "".join(chr(c) for c in range(0x21, 0x7F))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("fuzz-heads")
    running = start_server(EXAMPLE_TARGET, folder / "llamon.sqlite3", folder,
                           ["--request-timeout", "0.5"])
    try:
        yield running
        with httpx.Client(trust_env=False, timeout=BOUND) as http:
            assert http.get(running.url + CARD_PATH).status_code == 200
        assert running.proc.poll() is None, running.log()
        assert "Traceback" not in running.log(), running.log()
    finally:
        running.stop()


def _exchange(server: Server, pieces: list[bytes]) -> bytes:
    """Send ``pieces`` on a new connection; what the server sends until it closes, or until one
    whole response with a ``content-length`` is in (a keep-alive answer stays open)."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=BOUND) as sock:
        for piece in pieces:
            sock.sendall(piece)  # the server reads everything, even after refusing: no reset
        received = b""
        while not _whole(received):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    return received


def _whole(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


@st.composite
def heads(draw: st.DrawFn) -> tuple[bytes, int]:
    """A well-formed GET of the card with extra headers, one of them perhaps near the bound on
    its own: (the head, its counted bytes)."""
    headers = []
    for index in range(draw(st.integers(0, 30))):
        name = f"x-{index}-" + draw(st.text(_TOKEN, max_size=20))
        headers.append((name, draw(st.text(_VALUE, max_size=64))))
    large = draw(st.one_of(st.none(), st.integers(MAX_HEAD_BYTES - 600, MAX_HEAD_BYTES + 64),
                           st.integers(0, 4 * MAX_HEAD_BYTES)))
    if large is not None:
        headers.insert(draw(st.integers(0, len(headers))), ("x-large", "v" * large))
    target = CARD_PATH
    counted = len(target) + len("host") + len("a") + sum(len(n) + len(v) for n, v in headers)
    lines = [f"GET {target} HTTP/1.1", "Host: a", *(f"{n}: {v}" for n, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), counted


@settings(max_examples=examples(40))
@given(head=heads(), cut=st.integers(1, 7))
def test_a_head_is_answered_by_its_size(server: Server, head: tuple[bytes, int],
                                        cut: int) -> None:
    data, counted = head
    step = max(1, len(data) // cut)
    reply = _exchange(server, [data[i:i + step] for i in range(0, len(data), step)])
    if counted > MAX_HEAD_BYTES:
        assert reply.startswith(b"HTTP/1.1 431 "), (counted, reply[:200])
        assert b"connection: close" in reply.lower()
    else:
        assert reply.startswith(b"HTTP/1.1 200 "), (counted, reply[:200])
        assert b'"skills"' in reply


_STATUS = (b"HTTP/1.1 200 ", b"HTTP/1.1 400 ", b"HTTP/1.1 404 ", b"HTTP/1.1 405 ",
           b"HTTP/1.1 408 ", b"HTTP/1.1 413 ", b"HTTP/1.1 431 ")


@settings(max_examples=examples(60))
@given(data=st.one_of(
    st.binary(max_size=2048),
    st.builds(lambda tail: b"GET " + CARD_PATH.encode() + b" HTTP/1.1\r\n" + tail,
              st.binary(max_size=2048)),
    st.builds(lambda line, tail: line + b"\r\n" + tail + b"\r\n\r\n",
              st.sampled_from([b"GET / HTTP/1.1", b"POST / HTTP/1.0", b"GET /x HTTP/9.9",
                               b"BREW / HTTP/1.1", b"GET " + b"/a" * 9000 + b" HTTP/1.1"]),
              st.binary(max_size=512)),
))
def test_any_bytes_get_a_response_or_a_quiet_close(server: Server, data: bytes) -> None:
    reply = _exchange(server, [data])
    assert reply == b"" or reply.startswith(_STATUS), reply[:200]
