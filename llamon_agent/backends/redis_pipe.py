"""``RedisPipe``: one Redis connection that carries many writes at once, pipelined.

The event relay (``redis_events.py``) writes a small batch of commands at every turn's end and
waits for Redis to have it. With redis-py each batch was a ``pipeline()`` on a connection of the
client's pool (taking the connection, building the pipeline, parsing each reply through its
callbacks): 88-121 µs of CPU per batch in a loop, and one pooled connection per batch in
flight. Here every batch is packed by hiredis and written at once on one connection, in the
order of the calls, without waiting for the earlier ones' replies; Redis answers a connection's
commands in turn, and a reader task parses the replies (hiredis) and hands each batch its own:
12-38 µs per batch, and 0.90x the CPU per PostgreSQL HITL round trip with Redis events
(bench/README.md, "Speed, round seventeen"). One connection in order also keeps every stream's
events in the order they were sent.

``send`` is synchronous: once it returns, the batch is on the connection (or queued, in order,
for the connection being opened), so a caller cancelled while it waits for the replies drops
nothing. Its future gives the replies, a failed command's as a ``hiredis.ReplyError``, or raises
``ConnectionError`` when the batch may not have reached Redis: the connection could not be
opened, was lost, or Redis answered nothing for ``reply_timeout`` seconds while replies were
due (the connection is then closed, so that no late reply lands on a later batch). The next
``send`` opens a new connection.

The connection is opened as the client's own are (``connection_pool.make_connection()``: host,
TLS, user, password, database, protocol from its URL), then its streams are used directly:
``_reader`` and ``_writer`` are redis-py's private attributes of ``redis.asyncio.Connection``
(from 5.0 through 8.x; ``pyproject.toml`` caps redis below 9), used here and nowhere else. Were
they renamed, opening the connection would fail with an ``AttributeError`` and every relayed
write with it (``tests/replicas/test_redis_pipe.py`` would fail). The connection object is kept
while its streams are in use: it closes them when it is collected.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import hiredis

from ..core.background import stop_task

__all__ = ["Command", "RedisPipe"]

#: one command: its name and arguments, as hiredis packs them
Command = Sequence[bytes | str | int]
_READ_SIZE = 65536


@dataclass(eq=False)
class _Batch:
    packed: bytes
    expected: int
    done: asyncio.Future[list[Any]]
    sent_at: float = 0.0
    replies: list[Any] = field(default_factory=list)


class RedisPipe:
    """An async context manager (leaving waits for the replies due, then closes)."""

    def __init__(self, client: Any, *, reply_timeout: float = 10.0) -> None:
        if not reply_timeout > 0:
            raise ValueError(f"reply_timeout must be seconds > 0, got {reply_timeout!r}")
        self._client = client
        self._reply_timeout = reply_timeout
        #: redis-py's connection object: it closes its streams when it is collected
        self._connection: Any = None
        self._writer: asyncio.StreamWriter | None = None
        self._opening: asyncio.Task[None] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._parser = hiredis.Reader()
        #: sent, replies due, in the order sent
        self._sent: deque[_Batch] = deque()
        #: waiting for the connection being opened, in the order of the calls
        self._queued: list[_Batch] = []
        self._timer: asyncio.Handle | None = None
        self._closed = False
        self.connections_opened = 0

    async def __aenter__(self) -> RedisPipe:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.flush()
        self._closed = True
        closed = ConnectionError("the Redis pipe is closed")
        if self._opening is not None:
            await stop_task(self._opening)
            self._opening = None
        self._fail(self._queued, closed)
        self._queued = []
        reading = self._reading
        self._drop(closed)
        if reading is not None:
            await stop_task(reading)

    def send(self, commands: Sequence[Command]) -> asyncio.Future[list[Any]]:
        """Write ``commands`` now, after every batch sent before; the future gives their
        replies in order (see the module's docstring for its errors)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[list[Any]] = loop.create_future()
        if not commands:
            done.set_result([])
            return done
        # hiredis's stub types the command as a tuple of one element; it takes any length
        packed = b"".join(hiredis.pack_command(tuple(c)) for c in commands)  # type: ignore[arg-type]
        batch = _Batch(packed, len(commands), done)
        if self._closed:
            self._fail([batch], ConnectionError("the Redis pipe is closed"))
        elif self._writer is not None:
            self._write(batch)
        else:
            self._queued.append(batch)
            if self._opening is None:
                self._opening = asyncio.create_task(self._open(), name="llamon-redis-pipe-open")
        return done

    async def flush(self) -> None:
        """Return once every batch sent so far has its replies or has failed."""
        pending = [b.done for b in (*self._sent, *self._queued)]
        if self._opening is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._opening)
        for done in pending:
            with contextlib.suppress(Exception):
                await asyncio.shield(done)

    # ------------------------------------------------------------------ the connection

    async def _open(self) -> None:
        connection = self._client.connection_pool.make_connection()
        try:
            async with asyncio.timeout(self._reply_timeout):
                await connection.connect()
            reader, writer = connection._reader, connection._writer  # see the docstring
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await connection.disconnect(nowait=True)
            self._opening = None
            if isinstance(exc, Exception):  # the queued batches fail; the next send tries again
                self._fail(self._queued, ConnectionError(f"could not connect to Redis: {exc!r}"))
                self._queued = []
                return
            raise  # cancelled by closing, which fails what is queued
        self._connection, self._writer = connection, writer
        self._parser = hiredis.Reader()
        self.connections_opened += 1
        self._reading = asyncio.create_task(self._read(reader), name="llamon-redis-pipe-read")
        self._opening = None
        queued, self._queued = self._queued, []
        for batch in queued:
            self._write(batch)

    def _write(self, batch: _Batch) -> None:
        assert self._writer is not None
        loop = asyncio.get_running_loop()
        batch.sent_at = loop.time()
        self._sent.append(batch)
        self._writer.write(batch.packed)
        batch.packed = b""
        if self._timer is None:
            self._timer = loop.call_at(batch.sent_at + self._reply_timeout, self._check_replies)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while data := await reader.read(_READ_SIZE):
                self._parser.feed(data)
                while (reply := self._parser.gets()) is not False:
                    self._deliver(reply)
            lost = ConnectionError("Redis closed the connection")
        except Exception as exc:  # OSError, hiredis.ProtocolError, _UnexpectedReply, ...
            lost = ConnectionError(f"the Redis connection failed: {exc!r}")
        self._drop(lost)

    def _deliver(self, reply: Any) -> None:
        if not self._sent:
            raise _UnexpectedReply(reply)
        batch = self._sent[0]
        batch.replies.append(reply)
        if len(batch.replies) == batch.expected:
            self._sent.popleft()
            if not batch.done.done():
                batch.done.set_result(batch.replies)

    def _check_replies(self) -> None:
        """Once the oldest batch has waited ``reply_timeout``, check again after the loop's
        pending callbacks: a loop that stalled (a long collection, a blocking call) runs this
        timer before the reader task that has its replies waiting in the socket, whose wake-up
        is queued behind it, and the connection must not be dropped for that."""
        self._timer = None
        if not self._sent:
            return
        loop = asyncio.get_running_loop()
        oldest = self._sent[0]
        due = oldest.sent_at + self._reply_timeout
        if loop.time() < due:
            self._timer = loop.call_at(due, self._check_replies)
        else:
            self._timer = loop.call_soon(self._confirm_silence, oldest)

    def _confirm_silence(self, oldest: _Batch) -> None:
        self._timer = None
        if self._sent and self._sent[0] is oldest:
            self._drop(ConnectionError(f"Redis answered nothing for {self._reply_timeout} s"))
        else:
            self._check_replies()  # answered meanwhile: time the next one

    def _drop(self, exc: Exception) -> None:
        """Close the connection and fail every batch sent on it: a reply still on its way
        must never be taken for a later batch's."""
        sent, self._sent = list(self._sent), deque()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        writer, self._writer, self._connection = self._writer, None, None
        reading, self._reading = self._reading, None
        if reading is not None and reading is not asyncio.current_task():
            reading.cancel()  # it stops at its read: there is nothing left for it to do
        if writer is not None:
            writer.close()
        self._fail(sent, exc)

    @staticmethod
    def _fail(batches: list[_Batch], exc: Exception) -> None:
        for batch in batches:
            if not batch.done.done():
                batch.done.set_exception(exc)
                batch.done.exception()  # retrieved: its caller may have been cancelled


class _UnexpectedReply(Exception):
    """A reply when none was due: the connection is out of step and is dropped."""
