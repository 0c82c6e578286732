"""How a stream's events end when the server shuts down (``sse_stream._drain``): every event
until the events end; once the server stops, events for the grace period more, then a clean end,
whether the stream was waiting for its next event or sending one; the events' own iterator is
always closed, and nothing of the stream's is left running. Over the wire, a real server's
shutdown with a stream open is ``tests/process/test_lifecycle.py``'s."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio
import pytest

from llamon_agent.server.sse_stream import _drain

GRACE = 0.2


class Events:
    """An event source as a subscription is: events put in, read in order, an end marker,
    and a ``finally`` that says whether it ran (the subscription let go)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.released = False
        self.reads = 0

    async def iterate(self) -> AsyncIterator[tuple[int, object]]:
        try:
            while True:
                item = await self.queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                self.reads += 1
                yield self.reads, item
        finally:
            self.released = True


def _stream_tasks() -> set[asyncio.Task[object]]:
    """Tasks other than the test's own that are still running."""
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}


async def _all_let_go(events: Events) -> None:
    """The source's own finally ran (its subscription let go) and nothing of the stream runs."""
    assert events.released
    await asyncio.sleep(0)
    assert not _stream_tasks()


def _consuming(events: Events, shutdown: anyio.Event) -> asyncio.Future[list[object]]:
    """A stream's task reading every event as a client's frames would."""
    async def consume() -> list[object]:
        return [payload async for _, payload in _drain(events.iterate(), shutdown, GRACE)]

    return asyncio.ensure_future(consume())


async def _one_event_sent(
    first: str,
) -> tuple[Events, anyio.Event, AsyncIterator[tuple[int, object]]]:
    events, shutdown = Events(), anyio.Event()
    drained = _drain(events.iterate(), shutdown, GRACE)
    events.queue.put_nowait(first)
    assert (await anext(drained))[1] == first
    return events, shutdown, drained


async def test_events_pass_in_order_until_they_end() -> None:
    events, shutdown = Events(), anyio.Event()
    for item in ("a", "b", "c", None):
        events.queue.put_nowait(item)
    got = [payload async for _, payload in _drain(events.iterate(), shutdown, GRACE)]
    assert got == ["a", "b", "c"]
    await _all_let_go(events)


async def test_shutdown_while_waiting_ends_the_stream_after_the_grace_period() -> None:
    events, shutdown, drained = await _one_event_sent("before")
    loop = asyncio.get_running_loop()
    waiting = asyncio.ensure_future(anext(drained))
    await asyncio.sleep(0.05)
    shutdown.set()
    started = loop.time()
    await asyncio.sleep(GRACE / 2)
    events.queue.put_nowait("within the grace period")
    assert (await waiting)[1] == "within the grace period"
    with pytest.raises(StopAsyncIteration):  # at the grace period's end: nothing more comes
        await asyncio.wait_for(anext(drained), GRACE * 10)
    assert GRACE * 0.9 <= loop.time() - started < GRACE * 5
    await _all_let_go(events)


async def test_shutdown_while_the_consumer_is_away_ends_at_once_when_it_is_back() -> None:
    events, shutdown, drained = await _one_event_sent("sent slowly")
    shutdown.set()
    await asyncio.sleep(GRACE * 1.5)  # the client is slow to take the frame: the grace passes
    loop = asyncio.get_running_loop()
    back = loop.time()
    with pytest.raises(StopAsyncIteration):
        await anext(drained)  # no event is waiting, and none is waited for
    assert loop.time() - back < GRACE / 2
    await _all_let_go(events)


async def test_the_sources_own_errors_reach_the_stream() -> None:
    """A ``TimeoutError`` of the source (a relay's, say) is its error, not the grace period's."""
    events, shutdown = Events(), anyio.Event()
    events.queue.put_nowait(TimeoutError("the relay timed out"))
    with pytest.raises(TimeoutError, match="the relay timed out"):
        async for _ in _drain(events.iterate(), shutdown, GRACE):
            pass
    await _all_let_go(events)


async def test_a_client_that_leaves_while_waiting_cancels_the_stream() -> None:
    """The stream's task cancelled (its client left) before shutdown: the cancellation goes
    through, it is not taken for the grace period's end."""
    events, shutdown = Events(), anyio.Event()
    consumer = _consuming(events, shutdown)
    await asyncio.sleep(0.05)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    await _all_let_go(events)


async def test_closing_the_stream_between_events_closes_the_source() -> None:
    events, _, drained = await _one_event_sent("one")
    await drained.aclose()
    await _all_let_go(events)
