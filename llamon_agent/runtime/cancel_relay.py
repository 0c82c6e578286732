"""Cancel across replicas: ``tasks/cancel`` on a replica that does not run the task.

A turn can only be stopped by the process that runs it (its asyncio task). When the context's
claim is held elsewhere, the replica that received the cancel asks the others through the relay;
the one running the task cancels it as a local cancel would, and the asking replica waits for
the stored task to reach a terminal state.

``LocalCancelRelay`` is one process: there is nobody to ask (``reaches_others`` is false, so a
busy context is refused at once, as it always was). A relay for replicas publishes where every
replica listens (``backends/redis_cancel.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["CancelHandler", "CancelRelay", "LocalCancelRelay"]

CancelHandler = Callable[[str], Awaitable[None]]


class CancelRelay(Protocol):
    @property
    def reaches_others(self) -> bool:
        """Can a request reach another process (else a cancel never waits for one)?"""
        ...

    async def request(self, task_id: str) -> None:
        """Ask the other replicas to cancel ``task_id`` if one of them runs it (not waited for:
        the caller watches the stored task)."""
        ...

    def listen(self, handler: CancelHandler) -> Callable[[], None]:
        """Call ``handler(task_id)`` for every request another replica makes; returns the
        function that stops listening."""
        ...


class LocalCancelRelay:
    @property
    def reaches_others(self) -> bool:
        return False

    async def request(self, task_id: str) -> None:
        return None

    def listen(self, handler: CancelHandler) -> Callable[[], None]:
        return lambda: None
