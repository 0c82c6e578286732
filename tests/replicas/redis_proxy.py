"""A TCP proxy in front of the test Redis whose traffic toward Redis can be held, and whose
connections can be cut: a Redis that is slow to answer, that answers nothing, or whose
connection is lost, at a chosen moment and without touching the server other tests share."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.backends_redis import REDIS_URL

__all__ = ["RedisProxy", "redis_client"]


@asynccontextmanager
async def redis_client(url: str = REDIS_URL) -> AsyncIterator[Any]:
    """A redis-py client of ``url`` (the test Redis), closed on the way out."""
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    try:
        yield client
    finally:
        await client.aclose()


class RedisProxy:
    """An async context manager: ``url`` is the test Redis's URL through the proxy."""

    def __init__(self) -> None:
        self._upstream = urlsplit(REDIS_URL)
        self._server: asyncio.Server | None = None
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._pumps: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        #: connections the proxy has accepted
        self.connections = 0
        #: bytes held back since the last ``hold()`` (reached the proxy, not Redis)
        self.held_bytes = 0

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return urlunsplit(self._upstream._replace(netloc=f"127.0.0.1:{port}"))

    def hold(self) -> None:
        """From now on, what clients send waits at the proxy (Redis answers nothing)."""
        self.held_bytes = 0
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        """Close every connection, both ways, as a lost network would."""
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def __aenter__(self) -> RedisProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
        self.cut()
        assert self._server is not None
        self._server.close()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection(
            self._upstream.hostname, self._upstream.port or 6379)
        self._writers += [writer, up_writer]
        toward_redis: asyncio.Queue[bytes] = asyncio.Queue()
        for pump in (self._read_held(reader, toward_redis), self._write_held(toward_redis, up_writer),
                     self._pump(up_reader, writer)):
            task = asyncio.create_task(pump)
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _read_held(self, source: asyncio.StreamReader, into: asyncio.Queue[bytes]) -> None:
        """Keeps reading while held (the client's sends never block), counting what it holds."""
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if not self._flowing.is_set():
                    self.held_bytes += len(data)
                into.put_nowait(data)
        into.put_nowait(b"")

    async def _write_held(self, source: asyncio.Queue[bytes], sink: asyncio.StreamWriter) -> None:
        while data := await source.get():
            await self._flowing.wait()
            if sink.is_closing():
                break
            sink.write(data)
        sink.transport.abort()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if sink.is_closing():
                    break
                sink.write(data)
        sink.transport.abort()
