"""How an orchestrator's ``ctx.call`` reaches a child: the same server, or a remote A2A agent."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from ..a2a.types import Message, MessageSendParams, Task
from ..agent import Agent
from ..client import user_message
from ..core.ports import ChildCaller
from ..errors import A2AError
from ..orchestrator.children import ChildFailedError
from .remote_child import RemoteChild

__all__ = ["ChildCall", "Children"]

SendLocal = Callable[[MessageSendParams, str], Awaitable[Task]]  # params, the caller's space
CancelLocal = Callable[[str, str], Awaitable[Task]]  # task id, the caller's space
log = logging.getLogger(__name__)


@dataclass(eq=False)
class ChildCall:
    """A call a parent's running turn has in flight. ``task_id``: the child's task, once the
    child named it (a remote child's first event); a local child's is found by its context."""

    child: str
    context_id: str
    space: str
    remote: bool
    task_id: str | None = None

    def named(self, task_id: str) -> None:
        self.task_id = task_id


class Children:
    """How one orchestrator reaches its children: its declared remote children over A2A
    (sharing the server's HTTP client), any other agent of this server in process (no HTTP
    hop). ``bound(space, parent_task_id)`` is the ``ChildCaller`` of one run: local children's
    tasks live in ``space``, the internal space of the run's principal, which no client can
    address; its calls in flight are noted under the parent's task (``calls_of``: the cancel of
    the parent finds them there)."""

    def __init__(
        self, caller: Agent, local: set[str], send_local: SendLocal,
        cancel_local: CancelLocal, http: httpx.AsyncClient,
    ) -> None:
        self._remote = {
            child_id: RemoteChild(remote, http)
            for child_id, remote in getattr(caller, "remote_children", {}).items()
        }
        self._caller = caller.id
        self._local = local
        self._send_local = send_local
        self._cancel_local = cancel_local
        self._http = http  # the server's shared client: its remote children talk through it
        self._calls: dict[str, list[ChildCall]] = {}  # parent task id -> its calls in flight

    def bound(self, space: str, parent_task_id: str | None = None) -> ChildCaller:
        return _BoundChildren(self, space, parent_task_id)

    def calls_of(self, parent_task_id: str) -> list[ChildCall]:
        """The calls the parent's running turn has in flight (taken before cancelling it)."""
        return list(self._calls.get(parent_task_id, ()))

    async def call(
        self, child: str, context_id: str, *, text: str | None, data: dict[str, Any] | None,
        space: str, parent_task_id: str | None = None,
    ) -> Task:
        message = user_message(text or "", context_id=context_id, data=data)
        call = ChildCall(child, context_id, space, remote=child in self._remote)
        with self._in_flight(parent_task_id, call):
            if call.remote:
                return await self._remote[child].call(message, on_task=call.named)
            return await self._call_local(child, message, space)

    @contextmanager
    def _in_flight(self, parent_task_id: str | None, call: ChildCall) -> Iterator[None]:
        if parent_task_id is None:
            yield
            return
        self._calls.setdefault(parent_task_id, []).append(call)
        try:
            yield
        finally:
            calls = self._calls.get(parent_task_id, [])
            if call in calls:
                calls.remove(call)
            if not calls:
                self._calls.pop(parent_task_id, None)

    async def _call_local(self, child: str, message: Message, space: str) -> Task:
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
        """Cancel a child's task (its parent was canceled, or ended leaving it waiting); a task
        that already ended, or a child that is gone, is left alone. A remote child's cancel is
        bounded by its timeouts, and logged when it fails; this never raises for a child."""
        if child in self._remote:
            await self._remote[child].cancel(task_id)
            return
        if child in self._local:
            try:
                await self._cancel_local(task_id, space)
            except A2AError as exc:
                log.debug("child %s task %s not canceled: %s", child, task_id, exc)


class _BoundChildren:
    """``Children`` for one run: every local child task goes into the run's internal space."""

    def __init__(self, children: Children, space: str, parent_task_id: str | None) -> None:
        self._children = children
        self._space = space
        self._parent = parent_task_id

    async def call(
        self, child: str, context_id: str, *, text: str | None, data: dict[str, Any] | None
    ) -> Task:
        return await self._children.call(child, context_id, text=text, data=data,
                                         space=self._space, parent_task_id=self._parent)

    async def cancel(self, child: str, task_id: str) -> None:
        await self._children.cancel(child, task_id, space=self._space)
