"""One remote child over A2A, held to its ``ChildTimeouts`` (docs/orchestrators.md, "Children
that never answer").

A call opens ``message/stream``: its first event names the child's task, so a cancel of the
parent can cancel it from then on, and the stream is followed to its final event, each wait for
the next event (or keep-alive ping) bounded by ``quiet``. A child that does not stream
(``-32004`` or ``-32601`` before any event) is sent a blocking ``message/send`` instead, bounded
as a whole by ``send``: a read timeout alone starts again at every byte. ``connect`` bounds
connecting. Every failure is a ``ChildFailedError`` whose text names the child, id and URL.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import httpx

from ..a2a.types import Message, Task
from ..client import A2AClient, A2AClientError
from ..client.errors import (
    A2AConnectionError,
    A2AStreamInterruptedError,
    A2ATimeoutError,
    RemoteMethodNotFoundError,
    RemoteTaskNotCancelableError,
    RemoteTaskNotFoundError,
    RemoteUnsupportedOperationError,
)
from ..client.retry import NO_RETRY
from ..orchestrator.children import ChildFailedError, RemoteAgent

__all__ = ["RemoteChild"]

log = logging.getLogger(__name__)

_NOT_STREAMING = (RemoteUnsupportedOperationError, RemoteMethodNotFoundError)


class RemoteChild:
    """``call`` and ``cancel`` of one ``RemoteAgent`` on the server's shared HTTP client."""

    def __init__(self, agent: RemoteAgent, http: httpx.AsyncClient) -> None:
        self.agent = agent
        self.name = f"child agent {agent.id!r} ({agent.url})"
        limits = agent.timeouts
        self._limits = limits
        # per request: the shared client's own timeout is not the child's
        blocking = httpx.Timeout(connect=limits.connect, read=limits.send, write=limits.send,
                                 pool=limits.connect)
        streaming = httpx.Timeout(connect=limits.connect, read=limits.quiet, write=limits.quiet,
                                  pool=limits.connect)
        self._client = A2AClient(agent.url, http=http, agent_id=agent.agent_id, timeout=blocking,
                                 stream_timeout=streaming, retry=NO_RETRY)

    async def call(self, message: Message, on_task: Callable[[str], None]) -> Task:
        """The child's task once it is settled (ended, or waiting for input); ``on_task``
        hears its id as soon as the child names it."""
        try:
            streamed = await self._stream(message, on_task)
        except _NotStreaming:
            return await self._send(message)
        return streamed

    async def cancel(self, task_id: str, within: float | None = None) -> None:
        """``tasks/cancel`` of the child's task, bounded by ``within`` (default: like a
        blocking send); a failure is logged (a task that already ended is not one)."""
        bound = self._limits.send if within is None else within
        try:
            async with asyncio.timeout(bound):
                await self._client.cancel(task_id)
        except (RemoteTaskNotCancelableError, RemoteTaskNotFoundError) as exc:
            log.debug("%s: task %s not canceled: %s", self.name, task_id, exc)
        except (A2AClientError, TimeoutError) as exc:
            reason = self._reason(exc, bound)
            log.warning("%s: task %s not canceled: %s", self.name, task_id, reason)

    async def _stream(self, message: Message, on_task: Callable[[str], None]) -> Task:
        events = self._client.stream(message)
        task_id: str | None = None
        try:
            async for event in events:
                if task_id is None and event.task_id is not None:
                    task_id = event.task_id
                    on_task(task_id)
        except _NOT_STREAMING as exc:
            if task_id is None:
                raise _NotStreaming from exc
            raise self._failed(exc, self._limits.quiet, started=True) from exc
        except (A2AClientError, TimeoutError) as exc:
            if task_id is not None:  # the parent gives up: the child's task must not go on,
                await events.aclose()  # asked within ``connect``: the parent's failure waits
                await self.cancel(task_id, within=self._limits.connect)
            raise self._failed(exc, self._limits.quiet, started=task_id is not None) from exc
        finally:
            await events.aclose()
        if events.message is not None or events.task is None:
            raise ChildFailedError(f"{self.name} answered without a task")
        return events.task

    async def _send(self, message: Message) -> Task:
        try:
            async with asyncio.timeout(self._limits.send):
                result = await self._client.send(message)
        except (A2AClientError, TimeoutError) as exc:
            raise self._failed(exc, self._limits.send, started=False) from exc
        if not isinstance(result, Task):
            raise ChildFailedError(f"{self.name} answered without a task")
        return result

    def _failed(self, exc: BaseException, waited: float, *, started: bool) -> ChildFailedError:
        if started and _timed_out(exc):
            return ChildFailedError(f"{self.name} went quiet: no event for {_seconds(waited)} s")
        return ChildFailedError(f"{self.name} {self._reason(exc, waited)}")

    def _reason(self, exc: BaseException, waited: float) -> str:
        """What went wrong, in words that follow the child's name."""
        cause = exc.__cause__
        if isinstance(cause, httpx.ConnectTimeout | httpx.PoolTimeout):
            return f"could not be reached within {_seconds(self._limits.connect)} s"
        if isinstance(exc, A2AConnectionError) and isinstance(cause, httpx.ConnectError):
            return "could not be reached"
        if _timed_out(exc):
            return f"did not answer within {_seconds(waited)} s"
        return f"failed: {exc}"


class _NotStreaming(Exception):
    """The child refused ``message/stream`` before any event: it gets a blocking send."""


def _timed_out(exc: BaseException) -> bool:
    """An httpx timeout, or a deadline of ours (``asyncio.timeout``)."""
    if isinstance(exc, TimeoutError | A2ATimeoutError):
        return True
    return isinstance(exc, A2AStreamInterruptedError) and isinstance(
        exc.__cause__, httpx.TimeoutException
    )


def _seconds(value: float) -> str:
    return f"{value:.15g}"
