"""Recovery: the tasks a stopped process left running, at the next start.

* The graph waits for an answer: ask it again (the task goes back to ``input-required``).
* The graph waits for a reviewer: the task stays ``working``; a decision taken while the
  server was down is applied by the caller (``Recovered.parked``).
* The graph stopped between steps (a graceful shutdown cancelled the run after LangGraph saved
  its progress): continue from the checkpoint, as LangGraph's durable execution does (the
  interrupted step runs again). The caller starts these plans (``Recovered.resume``).
* Otherwise the run's outcome is unknown: the task fails with a message saying so.

One task that cannot be read or recovered is failed alone; the server always starts.

``Recovery`` is the seam for many processes: ``LocalRecovery`` takes every unfinished task of
the store (one process owns them all); a version for replicas takes only the tasks whose owner
stopped (leases), behind the same call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..a2a.types import Task, TextPart
from ..human_review.node import is_review_wait
from ..stores.base import Pending, StoredTask, TaskStore, UnreadableRow
from . import messages
from .ending import Ending, waiting_message
from .publisher import EventPublisher
from .served import ServedAgent
from .turn import Plan, Turn, config_for

__all__ = ["LocalRecovery", "Recovered", "Recovery"]

log = logging.getLogger(__name__)


@dataclass
class Recovered:
    """What recovery leaves to its caller: runs to continue (claim and start them) and tasks
    parked for a reviewer (apply a decision already taken)."""

    resume: list[Plan] = field(default_factory=list)
    parked: list[StoredTask] = field(default_factory=list)


class Recovery(Protocol):
    async def recover(self) -> Recovered: ...

    async def fail(self, found: StoredTask | UnreadableRow, why: str) -> None:
        """Store the task ``failed`` with a message saying ``why``."""
        ...


class LocalRecovery:
    def __init__(
        self, store: TaskStore, served: Mapping[str, ServedAgent], publisher: EventPublisher
    ) -> None:
        self._store = store
        self._served = served
        self._publisher = publisher

    async def recover(self) -> Recovered:
        recovered = Recovered()
        for found in await self._store.unfinished():
            if isinstance(found, UnreadableRow):
                log.error("recovery: task %s cannot be read (%s)", found.id, found.reason)
                await self.fail(found, "its stored record cannot be read")
                continue
            try:
                await self._recover_one(found, recovered)
            except Exception as exc:  # one bad task never stops the server from starting
                log.exception("recovery: task %s could not be recovered", found.id)
                await self.fail(found, f"it could not be recovered ({exc})")
        return recovered

    async def _recover_one(self, record: StoredTask, recovered: Recovered) -> None:
        served = self._served.get(record.agent_id)
        interrupts: tuple[Any, ...] = ()
        stopped_between_steps = False
        if served is not None:
            snapshot = await served.graph.aget_state(config_for(record.context_key))  # type: ignore[arg-type]
            interrupts = tuple(snapshot.interrupts)
            stopped_between_steps = bool(snapshot.next) and not interrupts
        if served is not None and stopped_between_steps:
            recovered.resume.append(Plan(record, served))
            return
        pending = tuple(Pending(i.id, i.value) for i in interrupts)
        turn = Turn(record, served or next(iter(self._served.values())), None,
                    self._publisher.open(record.id, record.event_seq), None, runs=False)
        if pending and is_review_wait(pending[0].value):
            ending = Ending("working", waiting_message(pending[0].value, record),
                            pending=pending, final=False)
            recovered.parked.append(record)
        elif pending:
            question = messages.question_message(
                pending[0].value, pending[0].id, record.id, record.context_id
            )
            ending = Ending("input-required", question, pending=pending)
        else:
            note = messages.agent_message(
                [TextPart(kind="text", text="The server stopped while this task was running.")],
                record.id, record.context_id,
            )
            ending = Ending("failed", note)
        await self._publisher.end(turn, ending)
        if ending.final:
            turn.log.close()

    async def fail(self, found: StoredTask | UnreadableRow, why: str) -> None:
        """When even the failure cannot be stored, log it and leave the row as it is (the next
        start tries again)."""
        text = f"The server could not resume this task after a restart: {why}."
        try:
            note = messages.agent_message(
                [TextPart(kind="text", text=text)], found.id, found.context_id
            )
            task = Task(id=found.id, context_id=found.context_id,
                        status=messages.status("failed", note))
            if isinstance(found, StoredTask):  # keep what can still be read
                task = found.task.model_copy(update={"status": task.status})
            await self._publisher.save(StoredTask(
                task=task, agent_id=found.agent_id, event_seq=found.event_seq + 1,
                space=found.space,
            ))
            self._publisher.discard(found.id)
        except Exception:
            log.exception("recovery: task %s could not be marked failed; skipped", found.id)
