"""A streaming call's response (``message/stream``, ``tasks/resubscribe``): one JSON-RPC
response per SSE frame.

The stream is opened (the turn started and its first save stored, or the task's events found)
in a task begun before the response, so the response's start (its headers, sse-starlette's task
group) runs while that open waits for the database: on PostgreSQL the first save is a round
trip of about a millisecond, and the idle stream's first event waited for both one after the
other (bench/README.md, "Speed, round twenty-three"). No event is sent before the open
returns, so a client never hears of a task that is not stored. An error found while opening is
the stream's only frame, as before: a streaming call's errors after validation are SSE frames
of HTTP 200 (docs/wire.md)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..a2a.types import Task
from ..core.principal import space_of
from ..errors import A2AError, InternalError
from ..runtime.events import Event
from ..runtime.tasks import TaskManager
from . import jsonrpc, jsonrpc_v1, versions
from .principal import principal_of
from .push_methods import local_origin
from .request_events import note_error, subscribed

__all__ = ["error_stream", "stream_response"]

log = logging.getLogger(__name__)

_SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
#: seconds between keep-alive comments on an open stream
_PING = 15


async def stream_response(
    manager: TaskManager, call: jsonrpc.Request, request: Request, grace: float, language: str
) -> Response:
    """The call's stream; its open has begun when this returns."""
    last_event_id = _last_event_id(request)
    opening = _Opening(jsonrpc.open_stream(
        manager, call, last_event_id, language=language,
        space=space_of(principal_of(request.scope).name), own=local_origin(request.scope),
    ))
    # the open's first step (up to its first wait, the save's round trip) runs before the
    # response is set up, which then overlaps that wait instead of coming first
    try:
        await asyncio.sleep(0)
    except BaseException:  # cancelled before a response exists to settle it afterwards
        await opening.settle()
        raise
    shutdown = anyio.Event()
    replay = call.method == "tasks/resubscribe" and last_event_id is not None
    return _OpeningResponse(
        _opened_frames(opening, call, request, shutdown, grace, replay), grace, shutdown, opening)


def error_stream(body: bytes, grace: float) -> Response:
    """A stream of one frame: a JSON-RPC error found before anything was opened."""
    return _OpeningResponse(_one(body), grace)


class _Opening:
    """The stream's open, running as its own task: a client that leaves while it runs (the
    response's task group is cancelled) does not cancel a turn half started."""

    def __init__(self, opening: Awaitable[AsyncIterator[Event]]) -> None:
        self._task = asyncio.ensure_future(opening)
        self._taken = False

    async def take(self) -> AsyncIterator[Event]:
        """The stream's events, once opened; from here the caller closes them. An error of
        the open is raised here for the caller to report."""
        try:
            events = await asyncio.shield(self._task)
        except asyncio.CancelledError:
            raise  # the client left: ``settle`` takes the open's outcome
        except BaseException:
            self._taken = True  # the caller reports it
            raise
        self._taken = True
        return events

    async def settle(self) -> None:
        """After the response, however it ended: when no frame took the events (the client
        left while the stream was being opened), wait for the open and close them, so the
        turn's subscription goes now rather than at the turn's end, and the turn stops
        waiting for its first event to be read (``Subscription.first_handled``)."""
        if self._taken:
            return
        with anyio.CancelScope(shield=True):
            await asyncio.wait({self._task})
            if self._task.cancelled():
                return
            failure = self._task.exception()
            if failure is not None:
                if not isinstance(failure, A2AError):
                    log.error("internal error opening a stream whose client had left",
                              exc_info=failure)
                return
            await _close_unread(self._task.result())


async def _close_unread(events: AsyncIterator[Event]) -> None:
    """Close ``events`` that nobody read. An async generator never started runs none of its
    code when closed, so its ``finally`` (a subscription's ``close``) would not run: it is
    started first, then stopped."""
    reading = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0)  # its first step runs before this one resumes
    reading.cancel()
    await asyncio.wait({reading})
    if not reading.cancelled():
        reading.exception()  # retrieved: an end of the events or an error, either way closed
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


class _OpeningResponse(EventSourceResponse):
    """Every stream's response: the frames, then ``_Opening.settle`` (when the stream has an
    open) however sending them ended."""

    def __init__(
        self, frames: AsyncIterator[ServerSentEvent], grace: float,
        shutdown: anyio.Event | None = None, opening: _Opening | None = None,
    ) -> None:
        super().__init__(frames, sep="\n", ping=_PING, headers=_SSE_HEADERS,
                         shutdown_event=shutdown, shutdown_grace_period=grace)
        self._opening = opening

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self._opening is not None:
                await self._opening.settle()


async def _opened_frames(
    opening: _Opening, call: jsonrpc.Request, request: Request, shutdown: anyio.Event,
    grace: float, replay: bool,
) -> AsyncIterator[ServerSentEvent]:
    try:
        events = await opening.take()
    except A2AError as exc:
        note_error(request.scope, exc.code)
        yield _frame(jsonrpc.error_body(exc, call.id, call.version))
        return
    except Exception:
        log.exception("internal error opening %s", call.named)
        note_error(request.scope, InternalError.code)
        yield _frame(jsonrpc.error_body(InternalError(), call.id, call.version))
        return
    frames = _frames(_drain(events, shutdown, grace * 0.8), call.id,
                     v1=call.version == versions.V1_0, replay=replay)
    async for frame in subscribed(request.scope, frames):
        yield frame


def _last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _frame(body: bytes) -> ServerSentEvent:
    return ServerSentEvent(data=body.decode(), sep="\n")


async def _one(body: bytes) -> AsyncIterator[ServerSentEvent]:
    yield _frame(body)


async def _frames(
    events: AsyncIterator[Event], request_id: str | int, *, v1: bool = False,
    replay: bool = False,
) -> AsyncIterator[ServerSentEvent]:
    """Each event as one JSON-RPC response; id 0 marks a snapshot that is not a numbered event.
    ``v1``: in A2A v1.0's shape (the stream's end is its close: v1.0 has no ``final``).

    A stream is one Task, then updates (both versions; the official 0.3.26 client refuses a
    second Task). Each turn begins the task's log with a Task snapshot, and a turn that a
    reviewer's decision starts runs on while a client's stream of the task is still open:
    that stream has had every event before it, and the snapshot's status is the last one it
    was told, so the snapshot is left out. ``replay`` (after ``Last-Event-ID``) repeats the
    events exactly as first sent."""
    first = True
    async for seq, payload in events:
        if not first and not replay and isinstance(payload, Task):
            continue
        first = False
        shaped = jsonrpc_v1.stream_event_out(payload) if v1 else payload
        data = jsonrpc.success_body(shaped, request_id).decode()  # one compact line
        yield ServerSentEvent(data=data, id=str(seq) if seq else None, sep="\n")


async def _drain(
    events: AsyncIterator[Event], shutdown: anyio.Event, grace: float
) -> AsyncIterator[Event]:
    """Events until the stream ends; once the server shuts down, for ``grace`` seconds more.

    A run usually finishes within the grace period and its stream ends with the final event;
    otherwise the stream ends cleanly (a complete HTTP response) before the server would cut it,
    and the client can resubscribe after the restart.

    Each wait for the next event is an ``asyncio.timeout`` with no deadline, which the grace
    period's end moves to now: the wait is cancelled inside the events' iterator (ending its
    subscription), and a cancellation of the stream's own (its client left) still goes through.
    A task per event raced against the shutdown, as before, cost 14.5 µs an event against 7.9
    in a microbenchmark, and more CPU per stream on an idle server (bench/README.md, "Speed,
    round twenty-four").
    """
    grace_over = _GraceOver()
    watcher = asyncio.ensure_future(grace_over.after(shutdown, grace))
    try:
        while not grace_over.ended:
            try:
                async with asyncio.timeout(None) as grace_over.waiting:
                    event = await anext(events)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if grace_over.ended:
                    return
                raise  # the events' own, not the grace period's
            finally:
                grace_over.waiting = None
            yield event
    finally:
        watcher.cancel()
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


class _GraceOver:
    """When a stream's grace period is over, and the wait for its next event, if it waits."""

    def __init__(self) -> None:
        self.ended = False
        self.waiting: asyncio.Timeout | None = None

    async def after(self, shutdown: anyio.Event, grace: float) -> None:
        await shutdown.wait()
        await asyncio.sleep(grace)
        self.ended = True
        if self.waiting is not None:
            self.waiting.reschedule(asyncio.get_running_loop().time())
