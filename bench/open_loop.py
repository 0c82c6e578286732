"""Open-loop load: requests at a fixed rate, latency from each one's scheduled send time.

A closed loop (``hitl_client.hitl_load``: each user sends its next request when the last one
answered) slows down with the server it measures, so a stall delays the requests that would have
been sent meanwhile and hides them (coordinated omission), and its p50 is fixed by Little's law
(users / throughput). Here request ``i`` is due at ``start + i / rate`` whatever happened before;
its latency counts from that time, including any wait for a free connection, so a server that
stalls or cannot keep up shows it in every percentile.

``instant``: ``message/send`` to the ``instant`` agent, expecting ``completed``. ``hitl``: a
round trip per arrival, the question (``input-required``, latency from the scheduled time) then
the answer on the same context (``completed``, latency from its own send, which follows the
question at once); the round trip from the scheduled time to the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from bench.hitl_client import (
    COMPLETED,
    INPUT_REQUIRED,
    Connection,
    Errors,
    ProtocolError,
    percentile,
    send_body,
    task_of,
)

#: connections at once (a server that falls behind makes arrivals wait for one: counted)
MAX_CONNECTIONS = 256
#: seconds after the last arrival before what is still running counts as unfinished
DRAIN = 30.0
#: an idle connection older than this is not reused (uvicorn closes them after 5 s)
KEEP_ALIVE = 4.0


@dataclass
class OpenLoopResult:
    kind: str
    rate: float
    scheduled: int = 0
    done: int = 0
    unfinished: int = 0
    seconds: float = 0.0
    latency_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: Errors = field(default_factory=Errors)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind, "rate": self.rate, "scheduled": self.scheduled, "done": self.done,
            "unfinished": self.unfinished, "errors": self.errors.count,
            "error_samples": self.errors.samples,
            "achieved_per_s": self.done / self.seconds if self.seconds else 0.0,
        }
        for name, values in self.latency_ms.items():
            for q, label in ((50, "p50"), (99, "p99"), (99.9, "p99.9")):
                out[f"{name}_{label}_ms"] = percentile(values, q)
        return out


async def open_loop(
    port: int,
    *,
    kind: str,
    rate: float,
    samples: int,
    with_task_id: bool = False,
    max_connections: int = MAX_CONNECTIONS,
    drain: float = DRAIN,
) -> OpenLoopResult:
    """``samples`` arrivals at ``rate`` per second; see the module's docstring."""
    if kind not in ("instant", "hitl"):
        raise ValueError(f"kind must be instant or hitl, got {kind!r}")
    result = OpenLoopResult(kind, rate)
    names = ("send",) if kind == "instant" else ("ask", "answer", "round_trip")
    result.latency_ms = {name: [] for name in names}
    idle: list[tuple[Connection, float]] = []  # with the time each was last used
    slots = asyncio.Semaphore(max_connections)

    async def connection() -> Connection:
        """The most recently used idle connection, unless the server may have closed it for
        being idle (uvicorn's keep-alive: 5 s), else a new one: a reused connection the server
        closed meanwhile fails with no byte read, an error of the client, not the server."""
        while idle:
            conn, used = idle.pop()
            if time.perf_counter() - used < KEEP_ALIVE:
                return conn
            await conn.close()
        return Connection(port)

    async def arrival(scheduled: float) -> None:
        async with slots:
            conn = await connection()
            try:
                if kind == "instant":
                    task_of(await conn.post(send_body("instant", "go")), COMPLETED)
                    result.latency_ms["send"].append((time.perf_counter() - scheduled) * 1e3)
                else:
                    await _round_trip(conn, scheduled, with_task_id, result)
                result.done += 1
            except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                result.errors.add(exc)
                await conn.close()
            idle.append((conn, time.perf_counter()))

    running: set[asyncio.Task[None]] = set()
    start = time.perf_counter() + 0.05
    for number in range(samples):
        scheduled = start + number / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(arrival(scheduled))
        running.add(task)
        task.add_done_callback(running.discard)
        result.scheduled += 1
    if running:
        _, late = await asyncio.wait(set(running), timeout=drain)
        result.unfinished = len(late)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
    result.seconds = time.perf_counter() - start
    for conn, _ in idle:
        with contextlib.suppress(OSError):
            await conn.close()
    return result


async def _round_trip(
    conn: Connection, scheduled: float, with_task_id: bool, result: OpenLoopResult
) -> None:
    context_id = uuid.uuid4().hex
    asked = send_body("hitl", "start", context_id=context_id)
    task = task_of(await conn.post(asked), INPUT_REQUIRED)
    sent = time.perf_counter()
    answer = send_body("hitl", "an answer", context_id=context_id,
                       task_id=task["id"] if with_task_id else None)
    task_of(await conn.post(answer), COMPLETED)
    done = time.perf_counter()
    result.latency_ms["ask"].append((sent - scheduled) * 1e3)
    result.latency_ms["answer"].append((done - sent) * 1e3)
    result.latency_ms["round_trip"].append((done - scheduled) * 1e3)
