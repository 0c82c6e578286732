"""``tasks/cancel`` of a run that another replica executes (``cancel_relay.py``).

The replica that received the cancel cannot stop a turn it does not run; it asks the others
through the relay and watches the stored task: ``canceled`` is the answer, another terminal
state is "not cancelable" (the run ended first), and a run still going after ``wait`` seconds
is refused as busy, exactly what one server answers while a context is held.
"""

from __future__ import annotations

import asyncio

from ..a2a.types import TERMINAL_STATES, Task
from ..errors import TaskNotCancelableError
from ..stores.base import StoredTask, TaskStore
from .cancel_relay import CancelRelay
from .claims import busy_error
from .messages import response_copy

__all__ = ["cancel_elsewhere"]

_POLL = 0.05  # seconds between reads of the stored task


async def cancel_elsewhere(
    relay: CancelRelay, store: TaskStore, record: StoredTask, wait: float
) -> Task:
    await relay.request(record.id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while loop.time() < deadline:
        await asyncio.sleep(_POLL)
        now = await store.get(record.id)
        if now is None:
            continue
        if now.state == "canceled":
            return response_copy(now)
        if now.state in TERMINAL_STATES:
            raise TaskNotCancelableError(data={"taskId": record.id, "state": now.state})
    raise busy_error(record.context_id, record.id)
