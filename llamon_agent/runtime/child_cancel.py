"""The cancel of an orchestrator's task reaches its children's tasks (docs/orchestrators.md,
"Children that never answer").

``cancel_children`` is the one path every cancel of a parent takes: a client's ``tasks/cancel``
(``TaskManager.cancel``, here or on the replica that runs the turn) and a deadline whose policy
cancels. It finds the children's tasks in two places:

* the calls the parent's turn had in flight (``Children.calls_of``, read before that turn was
  cancelled): a remote child's task is the one its first event named; a local child's is the
  turn running on the child's context in this process, else the latest task of that context;
* the child tasks the parent's checkpoint remembers (``child_tasks`` of the orchestrator's
  state, written at the end of each of its turns): a child that waits for input while its
  parent waits too, also after a restart.

Every child task is cancelled at once, best effort (``Children.cancel``): a remote one over A2A,
bounded by its timeouts and logged when it fails; a local one as a client's cancel would, so its
own children follow.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ..a2a.types import TERMINAL_STATES
from ..core.principal import context_key, principal_of_space, space_of
from ..orchestrator.agent import Orchestrator
from ..stores.base import StoredTask, TaskStore
from .children import ChildCall
from .live import LiveTurns
from .served import ServedAgent
from .turn import config_for

__all__ = ["cancel_children"]

log = logging.getLogger(__name__)


async def cancel_children(
    record: StoredTask, served: ServedAgent, live: LiveTurns, store: TaskStore,
    in_flight: Sequence[ChildCall] = (),
) -> None:
    """Cancel the child tasks of ``record``, an orchestrator's task that was just canceled;
    ``in_flight``: the calls its turn had in flight when it was cancelled (none for a task that
    waited). Never raises for a child."""
    children = served.children
    if children is None or not isinstance(served.agent, Orchestrator):
        return
    try:
        targets = await _remembered(record, served)
    except Exception:  # the parent is canceled already: its children are a best effort
        log.exception("task %s: its checkpoint could not be read for its children", record.id)
        targets = {}
    for call in in_flight:
        task_id = call.task_id if call.remote else await _local_task(call, live, store)
        if task_id is None:  # a remote child that had not named its task yet
            log.info("task %s: child %s had no task yet; nothing to cancel", record.id, call.child)
            continue
        targets[call.child] = task_id
    space = space_of(principal_of_space(record.space), internal=True)
    await asyncio.gather(
        *(children.cancel(child, task_id, space=space) for child, task_id in targets.items())
    )


async def _remembered(record: StoredTask, served: ServedAgent) -> dict[str, str]:
    """Child id -> task id, as the parent's checkpoint holds them."""
    snapshot = await served.graph.aget_state(config_for(record.context_key))  # type: ignore[arg-type]
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    remembered = values.get("child_tasks")
    if not isinstance(remembered, dict):
        return {}
    return {c: t for c, t in remembered.items() if isinstance(c, str) and isinstance(t, str)}


async def _local_task(call: ChildCall, live: LiveTurns, store: TaskStore) -> str | None:
    """A local child's task on the call's context: the turn running it here, else the latest
    stored one that has not ended (a blocking send stores a new task only at its end)."""
    key = context_key(call.space, call.context_id)
    running = next((t.record.id for t in live.running() if t.record.context_key == key), None)
    if running is not None:
        return running
    latest = await store.latest_in_context(key)
    return latest.id if latest is not None and latest.state not in TERMINAL_STATES else None
