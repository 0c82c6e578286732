"""A small raw-asyncio HTTP/1.1 keep-alive client for the HITL round trip and the stream probe.

Hand-written request bytes on asyncio streams, responses read by ``Content-Length`` (or chunked,
for server-sent events), ``orjson`` for bodies: cheap enough on one core that the server, not
the client, is the bottleneck. Every loop is bounded by a deadline and a count, and the client
only ever connects to 127.0.0.1.

    python bench/hitl_client.py --port 8000 [--users 16] [--duration 10] [--task-id] [--stream 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson

HOST = "127.0.0.1"
INPUT_REQUIRED, COMPLETED = "input-required", "completed"
_FINAL = re.compile(rb'"final"\s*:\s*true')


class ProtocolError(Exception):
    """An HTTP or JSON-RPC answer the benchmark did not expect."""


class Connection:
    """One keep-alive HTTP/1.1 connection to ``127.0.0.1:port``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._head = f"POST / HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(HOST, self.port)
        return self._reader, self._writer

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
        self._reader = self._writer = None

    async def _request(self, body: bytes, accept: str) -> tuple[asyncio.StreamReader, dict[bytes, bytes]]:
        reader, writer = await self._streams()
        head = f"{self._head}Accept: {accept}\r\nContent-Length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)
        status_and_headers = await reader.readuntil(b"\r\n\r\n")
        lines = status_and_headers.split(b"\r\n")
        if not lines[0].startswith(b"HTTP/1.1 200"):
            raise ProtocolError(lines[0].decode(errors="replace"))
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name:
                headers[name.strip().lower()] = value.strip()
        return reader, headers

    async def _after(self, headers: dict[bytes, bytes]) -> None:
        if headers.get(b"connection", b"").lower() == b"close":
            await self.close()

    async def post(self, body: bytes) -> Any:
        """POST ``body``; the decoded JSON answer."""
        try:
            reader, headers = await self._request(body, "application/json")
            if b"content-length" in headers:
                data = await reader.readexactly(int(headers[b"content-length"]))
            else:
                data = b"".join([chunk async for chunk in _chunks(reader)])
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await self.close()
            raise
        await self._after(headers)
        return orjson.loads(data)

    async def stream(self, body: bytes) -> AsyncIterator[bytes]:
        """POST ``body`` for server-sent events; yields the raw chunks as they arrive."""
        try:
            reader, headers = await self._request(body, "text/event-stream")
            if b"content-length" in headers:
                yield await reader.readexactly(int(headers[b"content-length"]))
            else:
                async for chunk in _chunks(reader):
                    yield chunk
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await self.close()
            raise
        await self._after(headers)


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        if size == 0:
            await reader.readline()  # the empty trailer line
            return
        yield (await reader.readexactly(size + 2))[:-2]


def fresh_id() -> str:
    """A random id as ``uuid.uuid4().hex`` writes it (32 hex digits), without building a
    ``UUID``: ``instructions.py`` and ``bytecodes.py`` run this client in the server's process,
    and LangGraph alone's round trip draws its ids with it too. ``uuid4``'s Python was 0.6% of
    what they counted for ours (five a round trip) and 0.7% of LangGraph alone's (two); the
    ratio did not move (bench/README.md, "Speed, round thirty-three")."""
    return os.urandom(16).hex()


def send_body(
    agent: str,
    text: str,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    method: str = "message/send",
) -> bytes:
    message: dict[str, Any] = {
        "kind": "message",
        "messageId": fresh_id(),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    if context_id is not None:
        message["contextId"] = context_id
    if task_id is not None:
        message["taskId"] = task_id
    params = {"message": message, "metadata": {"agentId": agent}}
    return orjson.dumps({"jsonrpc": "2.0", "id": fresh_id(), "method": method, "params": params})


def task_of(answer: Any, expected: str) -> dict[str, Any]:
    """The Task in a JSON-RPC answer, which must be in state ``expected``."""
    if "error" in answer:
        raise ProtocolError(f"JSON-RPC error {orjson.dumps(answer['error']).decode()[:300]}")
    task = answer.get("result") or {}
    state = (task.get("status") or {}).get("state")
    if state != expected:
        raise ProtocolError(f"expected {expected}, got {state}: {orjson.dumps(task).decode()[:300]}")
    return task


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


@dataclass
class Errors:
    count: int = 0
    samples: list[str] = field(default_factory=list)

    def add(self, exc: BaseException) -> None:
        self.count += 1
        if len(self.samples) < 5:
            self.samples.append(f"{type(exc).__name__}: {exc}"[:400])


@dataclass
class HitlResult:
    round_trips: int = 0
    seconds: float = 0.0
    ask_ms: list[float] = field(default_factory=list)
    answer_ms: list[float] = field(default_factory=list)
    round_trip_ms: list[float] = field(default_factory=list)
    errors: Errors = field(default_factory=Errors)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "round_trips": self.round_trips,
            "seconds": round(self.seconds, 3),
            "round_trips_per_s": self.round_trips / self.seconds if self.seconds else 0.0,
            "errors": self.errors.count,
            "error_samples": self.errors.samples,
        }
        for name, values in (("ask", self.ask_ms), ("answer", self.answer_ms),
                             ("round_trip", self.round_trip_ms)):
            out[f"{name}_p50_ms"] = percentile(values, 50)
            out[f"{name}_p99_ms"] = percentile(values, 99)
        return out


async def hitl_round_trip(conn: Connection, with_task_id: bool, result: HitlResult) -> None:
    """send -> input-required -> answer on the same contextId -> completed."""
    context_id = uuid.uuid4().hex
    t0 = time.perf_counter()
    task = task_of(await conn.post(send_body("hitl", "start", context_id=context_id)), INPUT_REQUIRED)
    t1 = time.perf_counter()
    task_id = task["id"] if with_task_id else None
    answer = send_body("hitl", "an answer", context_id=context_id, task_id=task_id)
    task_of(await conn.post(answer), COMPLETED)
    t2 = time.perf_counter()
    result.round_trips += 1
    result.ask_ms.append((t1 - t0) * 1e3)
    result.answer_ms.append((t2 - t1) * 1e3)
    result.round_trip_ms.append((t2 - t0) * 1e3)


async def hitl_load(
    port: int,
    *,
    users: int = 16,
    duration: float = 10.0,
    with_task_id: bool = False,
    max_round_trips: int = 1_000_000,
    stagger: float = 0.0,
) -> HitlResult:
    """``users`` concurrent users doing HITL round trips until ``duration`` seconds have passed;
    with ``stagger``, user ``i`` connects ``i * stagger`` seconds after the first (a burst of
    new connections all lands on one worker of ``--workers N``: bench/README.md, "Speed,
    round seventeen")."""
    result = HitlResult()
    start = time.perf_counter()
    deadline = start + duration

    async def user(number: int) -> None:
        await asyncio.sleep(number * stagger)
        conn = Connection(port)
        try:
            while time.perf_counter() < deadline and result.round_trips < max_round_trips:
                try:
                    await hitl_round_trip(conn, with_task_id, result)
                except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    result.errors.add(exc)
                    await asyncio.sleep(0.01)
        finally:
            await conn.close()

    await asyncio.gather(*(user(number) for number in range(users)))
    result.seconds = time.perf_counter() - start
    return result


@dataclass
class Waiting:
    """Tasks left in input-required: ``(contextId, taskId)`` pairs."""

    tasks: list[tuple[str, str]] = field(default_factory=list)
    errors: Errors = field(default_factory=Errors)


async def fill_waiting(
    port: int,
    count: int,
    into: Waiting,
    *,
    users: int = 16,
    time_limit: float = 600.0,
    max_errors: int = 500,
    agent: str = "hitl",
    text: str = "start",
) -> None:
    """Start tasks that wait for an answer (``text`` to ``agent``) until ``into`` holds
    ``count``; stops early when ``time_limit`` seconds pass or ``max_errors`` errors have been
    seen."""
    deadline = time.perf_counter() + time_limit
    missing = count - len(into.tasks)

    async def user() -> None:
        nonlocal missing
        conn = Connection(port)
        try:
            while missing > 0 and time.perf_counter() < deadline and into.errors.count < max_errors:
                missing -= 1
                context_id = uuid.uuid4().hex
                try:
                    answer = await conn.post(send_body(agent, text, context_id=context_id))
                    into.tasks.append((context_id, task_of(answer, INPUT_REQUIRED)["id"]))
                except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    missing += 1
                    into.errors.add(exc)
                    await asyncio.sleep(0.01)
        finally:
            await conn.close()

    await asyncio.gather(*(user() for _ in range(users)))


async def resume_latency(
    port: int,
    waiting: Waiting,
    samples: int,
    *,
    with_task_id: bool = False,
    agent: str = "hitl",
    text: str = "an answer",
    expect: str = COMPLETED,
) -> tuple[list[float], Errors]:
    """Answer ``samples`` waiting tasks one at a time (spread over the list) with ``text``, each
    answer expected to leave its task in ``expect``; latency in ms."""
    picked = waiting.tasks[:: max(1, len(waiting.tasks) // samples)][:samples]
    chosen = set(picked)
    waiting.tasks = [t for t in waiting.tasks if t not in chosen]
    latencies: list[float] = []
    errors = Errors()
    conn = Connection(port)
    try:
        for context_id, task_id in picked:
            body = send_body(agent, text, context_id=context_id,
                             task_id=task_id if with_task_id else None)
            t0 = time.perf_counter()
            try:
                task_of(await conn.post(body), expect)
                latencies.append((time.perf_counter() - t0) * 1e3)
            except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                errors.add(exc)
    finally:
        await conn.close()
    return latencies, errors


@dataclass
class StreamResult:
    first_ms: list[float] = field(default_factory=list)
    final_ms: list[float] = field(default_factory=list)
    errors: Errors = field(default_factory=Errors)

    def summary(self) -> dict[str, Any]:
        return {
            "streams": len(self.final_ms),
            "first_p50_ms": percentile(self.first_ms, 50),
            "first_p99_ms": percentile(self.first_ms, 99),
            "final_p50_ms": percentile(self.final_ms, 50),
            "final_p99_ms": percentile(self.final_ms, 99),
            "errors": self.errors.count,
            "error_samples": self.errors.samples,
        }


async def stream_probe(port: int, count: int = 200, *, agent: str = "instant", time_limit: float = 60.0) -> StreamResult:
    """``message/stream`` one at a time: time to the first event and to the ``final`` one."""
    result = StreamResult()
    conn = Connection(port)
    deadline = time.perf_counter() + time_limit
    try:
        for _ in range(count):
            if time.perf_counter() > deadline:
                break
            body = send_body(agent, "start", method="message/stream")
            first = final = None
            t0 = time.perf_counter()
            try:
                async for chunk in conn.stream(body):
                    now = time.perf_counter()
                    if first is None and b"data:" in chunk:
                        first = now
                    if final is None and _FINAL.search(chunk):
                        final = now
                if first is None or final is None:
                    raise ProtocolError("stream ended without a final event")
                result.first_ms.append((first - t0) * 1e3)
                result.final_ms.append((final - t0) * 1e3)
            except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                result.errors.add(exc)
    finally:
        await conn.close()
    return result


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.duration > 0:
        out["hitl"] = (await hitl_load(args.port, users=args.users, duration=args.duration,
                                       with_task_id=args.task_id)).summary()
    if args.stream > 0:
        out["stream"] = (await stream_probe(args.port, args.stream)).summary()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--users", type=int, default=16)
    p.add_argument("--duration", type=float, default=10.0, help="seconds of HITL round trips (0: none)")
    p.add_argument("--task-id", action="store_true", help="answer with the taskId (the official SDK needs it)")
    p.add_argument("--stream", type=int, default=0, help="message/stream probes to run one at a time")
    print(orjson.dumps(asyncio.run(_main(p.parse_args())), option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
