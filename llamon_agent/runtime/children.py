"""How an orchestrator's ``ctx.call`` reaches a child: the same server, or a remote A2A agent."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from ..a2a.types import Message, MessageSendParams, Task
from ..agent import Agent
from ..client import A2AClient, A2AClientError, user_message
from ..core.ports import ChildCaller
from ..errors import A2AError
from ..orchestrator.children import ChildFailedError, RemoteAgent

__all__ = ["Children"]

SendLocal = Callable[[MessageSendParams, str], Awaitable[Task]]  # params, the caller's space
CancelLocal = Callable[[str, str], Awaitable[Task]]  # task id, the caller's space
log = logging.getLogger(__name__)


class Children:
    """How one orchestrator reaches its children: its declared remote children over A2A
    (sharing the server's HTTP client), any other agent of this server in process (no HTTP
    hop). ``bound(space)`` is the ``ChildCaller`` of one run: local children's tasks live in
    ``space``, the internal space of the run's principal, which no client can address."""

    def __init__(
        self, caller: Agent, local: set[str], send_local: SendLocal,
        cancel_local: CancelLocal, http: httpx.AsyncClient,
    ) -> None:
        self._remote: dict[str, RemoteAgent] = dict(getattr(caller, "remote_children", {}))
        self._caller = caller.id
        self._local = local
        self._send_local = send_local
        self._cancel_local = cancel_local
        self._http = http

    def bound(self, space: str) -> ChildCaller:
        return _BoundChildren(self, space)

    async def call(
        self, child: str, context_id: str, *, text: str | None, data: dict[str, Any] | None,
        space: str,
    ) -> Task:
        message = user_message(text or "", context_id=context_id, data=data)
        if child in self._remote:
            return await self._call_remote(self._remote[child], message)
        if child in self._local and child != self._caller:
            try:
                return await self._send_local(
                    MessageSendParams(message=message, metadata={"agentId": child}), space
                )
            except A2AError as exc:
                raise ChildFailedError(f"child {child!r} refused the message: {exc.message}") from exc
        raise ChildFailedError(
            f"unknown child {child!r}: not an agent of this server nor a declared RemoteAgent"
        )

    async def cancel(self, child: str, task_id: str, *, space: str) -> None:
        """Cancel a child's task an ended parent task left waiting; a task that already ended
        (or a child that is gone) is left alone."""
        try:
            if child in self._remote:
                remote = self._remote[child]
                await A2AClient(remote.url, http=self._http, agent_id=remote.agent_id).cancel(task_id)
            elif child in self._local:
                await self._cancel_local(task_id, space)
        except (A2AError, A2AClientError) as exc:
            log.debug("child %s task %s not canceled: %s", child, task_id, exc)

    async def _call_remote(self, child: RemoteAgent, message: Message) -> Task:
        client = A2AClient(child.url, http=self._http, agent_id=child.agent_id)
        try:
            result = await client.send(message)
        except A2AClientError as exc:
            raise ChildFailedError(f"remote child {child.id!r} at {child.url} failed: {exc}") from exc
        if not isinstance(result, Task):
            raise ChildFailedError(f"remote child {child.id!r} answered a message, not a task")
        return result


class _BoundChildren:
    """``Children`` for one run: every local child task goes into the run's internal space."""

    def __init__(self, children: Children, space: str) -> None:
        self._children = children
        self._space = space

    async def call(
        self, child: str, context_id: str, *, text: str | None, data: dict[str, Any] | None
    ) -> Task:
        return await self._children.call(child, context_id, text=text, data=data,
                                         space=self._space)

    async def cancel(self, child: str, task_id: str) -> None:
        await self._children.cancel(child, task_id, space=self._space)
