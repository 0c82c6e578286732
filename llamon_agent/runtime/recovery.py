"""Recovery: the runs a stopped process left unfinished, taken over by a live one.

What a run left behind decides what happens to it:

* A person's decision resumed it (``StoredTask.resuming``: an approved tool call, a reviewer's
  draft decision) and the graph still waits at that point: run the turn again with the same
  decision. The turn repeats from its last checkpoint, so a tool that already ran is called
  again with the same ``tool_call_id``; tools deduplicate on it (docs/tool-review.md).
* The graph waits for an answer: ask it again (the task goes back to ``input-required``).
* The graph waits for a reviewer: the task stays ``working``; a decision taken while the
  server was down is applied by the caller (``Recovered.parked``).
* The graph stopped between steps (a graceful shutdown cancelled the run after LangGraph saved
  its progress): continue from the checkpoint, as LangGraph's durable execution does (the
  interrupted step runs again).
* A new task's first turn whose checkpoint was never written (the thread's state does not hold
  the task's message): run the turn again from the task's message.
* Otherwise the run's outcome is unknown: the task fails with a message saying so. An agent
  that opts out of continued runs (``Agent(on_takeover="fail")``) fails wherever a run would
  continue.

The caller starts the runs to continue (``Recovered.resume``). One task that cannot be read or
recovered is failed alone; the server always starts.

``LocalRecovery`` (one server: SQLite, memory) takes every unfinished task of the store at
start, when nothing else can run. ``LeaseRecovery`` (replicas on PostgreSQL) takes only the
tasks whose context claim it can take: a run in progress holds its claim, renewed by its
replica's heartbeat, so a live owner's runs are never touched and a dead one's are free once
its lease expires. It runs at start and then every few seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from langgraph.types import Command

from ..a2a.types import RUNNING_STATES, Task, TextPart
from ..errors import UnreadableTaskError
from ..human_review.node import is_review_wait
from ..stores.base import Pending, StoredTask, TaskStore, UnreadableRow
from . import messages
from .answers import graph_input
from .claims import ClaimTaken, ContextClaims
from .ending import Ending, waiting_message
from .publisher import EventPublisher
from .served import ServedAgent
from .turn import Plan, Turn, config_for

__all__ = ["LeaseRecovery", "LocalRecovery", "Recovered", "Recovery"]

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
        if served is not None:
            snapshot = await served.graph.aget_state(config_for(record.context_key))  # type: ignore[arg-type]
            interrupts = tuple(snapshot.interrupts)
            rerun = _continuation(record, served, snapshot, interrupts)
            if rerun is not None and served.agent.on_takeover == "fail":
                await self.fail(record, "its run was interrupted and this agent does not "
                                "continue interrupted runs")
                return
            if rerun is not None:
                recovered.resume.append(rerun)
                return
        pending = tuple(Pending(i.id, i.value) for i in interrupts)
        if _stored_as_parked(record, pending):
            # nothing to write: storing the same wait again gave it a new status message and
            # event id, which every other replica's sweep took for a new version to end again
            recovered.parked.append(record)
            return
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
                # an unreadable row may have opened reviews: its end closes any
                reviews_opened=(found.reviews_opened if isinstance(found, StoredTask)
                                else True),
            ))
            self._publisher.discard(found.id)
        except Exception:
            log.exception("recovery: task %s could not be marked failed; skipped", found.id)


def _continuation(
    record: StoredTask, served: ServedAgent, snapshot: Any, interrupts: tuple[Any, ...]
) -> Plan | None:
    """The turn that continues the interrupted run, when one can without repeating what the
    run may have finished (module docstring); ``None`` otherwise."""
    waiting = {i.id for i in interrupts}
    if record.resuming and set(record.resuming) <= waiting:
        return Plan(record, served, Command(resume=record.resuming))
    if interrupts:
        return None
    if snapshot.next:
        return Plan(record, served)
    history = record.task.history or []
    if len(history) != 1 or history[0].role != "user":
        return None
    first = history[0]
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    if values and "messages" not in values:
        return None  # nothing tells whether the turn's checkpoint was written
    if first.message_id in {getattr(m, "id", None) for m in values.get("messages", ())}:
        return None  # it was: the run got to its end, whose report was lost
    return Plan(record, served, graph_input(record, first, served.input_keys))


def _stored_as_parked(record: StoredTask, pending: tuple[Pending, ...]) -> bool:
    """Is the task stored as its graph stands: waiting for the reviewer of ``pending``, with
    the status its turn's end gave it?"""
    return (
        bool(pending) and is_review_wait(pending[0].value) and record.state == "working"
        and record.resuming is None and record.pending == pending
        and record.pending_interrupt == pending[0].id
        and record.task.status.message is not None
    )


class LeaseRecovery(LocalRecovery):
    """Takes over only the runs whose context claim is free (module docstring). A task parked
    for a reviewer is free too (no run holds it); it is reported once per stored version, not
    at every sweep."""

    def __init__(
        self, store: TaskStore, served: Mapping[str, ServedAgent], publisher: EventPublisher,
        claims: ContextClaims,
    ) -> None:
        super().__init__(store, served, publisher)
        self._claims = claims
        self._parked: dict[str, int] = {}  # task id -> event_seq when last seen parked

    async def recover(self) -> Recovered:
        recovered = Recovered()
        unfinished = await self._store.unfinished()
        found_ids = {found.id for found in unfinished}
        held = await self._claims.held_among({found.context_key for found in unfinished})
        for found in unfinished:
            if found.context_key in held or self._parked.get(found.id) == found.event_seq:
                continue
            try:
                claim = await self._claims.acquire(found.context_key)
            except ClaimTaken:  # its run is alive on some replica
                continue
            try:
                await self._take_over(found, recovered)
            finally:
                handed = [p for p in recovered.resume if p.claim is None]
                for plan in handed:
                    plan.claim = claim
                if not handed:
                    await self._claims.release(claim)
        self._parked = {k: v for k, v in self._parked.items() if k in found_ids}
        return recovered

    async def _take_over(self, found: StoredTask | UnreadableRow, recovered: Recovered) -> None:
        if isinstance(found, UnreadableRow):
            log.error("recovery: task %s cannot be read (%s)", found.id, found.reason)
            await self.fail(found, "its stored record cannot be read")
            return
        try:  # as it is now that the claim is ours: its run may have ended meanwhile
            record = await self._store.get(found.id)
        except UnreadableTaskError as exc:
            log.error("recovery: task %s cannot be read (%s)", found.id, exc.detail)
            return
        if record is None or record.state not in RUNNING_STATES:
            return
        log.warning("recovery: taking over task %s (no live replica runs it)", record.id)
        try:
            await self._recover_one(record, recovered)
        except Exception as exc:  # one bad task never stops the others
            log.exception("recovery: task %s could not be recovered", record.id)
            await self.fail(record, f"it could not be recovered ({exc})")
            return
        if any(parked is record for parked in recovered.parked):
            self._parked[record.id] = record.event_seq
