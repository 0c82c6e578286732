"""The task lifecycle: routing a message, one run per context, events, cancel, recovery.

::

    message/send|stream ─► begin()  (claims the context: a second message gets -32004 busy)
                             │ route: taskId? waiting task in the context? new task?
                             │ resume: normalise the answer ─► Command(resume={interrupt_id: v})
                             │         unclear answer ─► re-ask at once (no run, checkpoint untouched)
                             ▼
                           Turn ──► _run() in the manager's task group (outlives any request)
                                      working ─► run_turn(graph) ─► input-required | completed | failed
                                      every step: save the task, then publish the numbered event
                                      finally: release the claim, wake blocking senders

A context is claimed from routing until its run ends, so two messages can never run one
context's graph at once; a message that finds the claim taken is refused, never queued (a
queued answer could answer the next question).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import orjson
from langchain_core.messages import HumanMessage
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt

from ..a2a.types import (
    TERMINAL_STATES,
    Artifact,
    DataPart,
    Message,
    MessageSendParams,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    TextPart,
)
from ..agent import Agent
from ..core.normalize import Reask, normalize_answer
from ..errors import (
    ContentTypeNotSupportedError,
    InvalidAgentResponseError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..stores.base import StoredTask
from ..stores.storage import Storage
from . import messages
from .events import Event, EventHub, EventLog, Subscription
from .hitl_graph import CLEAR, REQUEST_KEY, public_payload, resume_value
from .runner import TurnOutcome, run_turn

__all__ = ["OUTPUT_MODES", "TaskManager"]

log = logging.getLogger(__name__)

OUTPUT_MODES = ("text/plain", "application/json")
_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")
_RUNNING = frozenset({"submitted", "working"})
_COLLECTED = "collected_answers"


@dataclass
class _ServedAgent:
    agent: Agent
    graph: Pregel[Any, Any, Any, Any]
    input_keys: frozenset[str] | None


@dataclass(eq=False)
class Turn:
    record: StoredTask
    served: _ServedAgent
    graph_input: Any
    log: EventLog
    blocking: bool = True
    runs: bool = True  # False: a turn that only reports a status (re-ask, cancel, recovery)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None
    canceled: bool = False
    subscription: Subscription | None = None


def _config(context_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": context_id}}


def _wire_task(record: StoredTask, history_length: int | None = None) -> dict[str, Any]:
    wire = record.task.to_wire()
    if history_length is not None:
        history = wire.get("history")
        if history_length == 0:
            wire.pop("history", None)
        elif history is not None:
            wire["history"] = history[-history_length:]
    return wire


class TaskManager:
    def __init__(
        self, agents: Sequence[Agent], storage: Storage, *, shutdown_grace: float = 10.0
    ) -> None:
        if not agents:
            raise ValueError("serve at least one agent")
        ids = [a.id for a in agents]
        if len(set(ids)) != len(ids):
            raise ValueError(f"agent ids must be unique, got {ids}")
        self._agents = list(agents)
        self._storage = storage
        self._store = storage.tasks
        self._served: dict[str, _ServedAgent] = {}
        self._claims: dict[str, Turn | None] = {}
        self._hub = EventHub()
        self._stack = AsyncExitStack()
        self._group: asyncio.TaskGroup | None = None
        self._turns: set[Turn] = set()
        self._shutdown_grace = shutdown_grace

    @property
    def agents(self) -> list[Agent]:
        return list(self._agents)

    async def __aenter__(self) -> TaskManager:
        for agent in self._agents:
            self._served[agent.id] = _ServedAgent(
                agent, agent.compile(self._storage.checkpointer), agent.input_keys()
            )
        self._group = await self._stack.enter_async_context(asyncio.TaskGroup())
        await self._recover()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Let running turns finish for ``shutdown_grace`` seconds, then cancel the rest; a
        cancelled turn stays ``working`` in the store and is recovered at the next start."""
        running = [t.runner for t in self._turns if t.runner is not None]
        if running:
            _, unfinished = await asyncio.wait(running, timeout=self._shutdown_grace)
            for runner in unfinished:
                runner.cancel()
        await self._stack.aclose()

    # ------------------------------------------------------------------ reads

    async def get_task(self, task_id: str, history_length: int | None = None) -> dict[str, Any]:
        record = await self._store.get(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        return _wire_task(record, history_length)

    # ------------------------------------------------------------------ send / stream

    async def send(self, params: MessageSendParams) -> dict[str, Any]:
        turn = await self._begin(params)
        history_length = params.configuration.history_length if params.configuration else None
        if turn.blocking:
            await turn.done.wait()
            record = await self._store.get(turn.record.id)
            assert record is not None
            return _wire_task(record, history_length)
        return _wire_task(turn.record, history_length)

    async def stream(self, params: MessageSendParams) -> AsyncIterator[Event]:
        """Validates and starts the turn before returning; the iterator only delivers events."""
        turn = await self._begin(params, subscribe=True)
        assert turn.subscription is not None
        return turn.subscription.__aiter__()

    async def _begin(self, params: MessageSendParams, *, subscribe: bool = False) -> Turn:
        message = params.message
        if message.role != "user":
            raise InvalidParamsError("messages sent to an agent must have role 'user'")
        config = params.configuration
        if config is not None and config.push_notification_config is not None:
            raise PushNotificationNotSupportedError()
        hint = (params.metadata or {}).get("agentId")
        if hint is not None and (not isinstance(hint, str) or hint not in self._served):
            raise InvalidParamsError(
                f"Unknown agentId {hint!r}", data={"agentIds": list(self._served)}
            )
        accepted = config.accepted_output_modes if config is not None else None
        if accepted and not set(accepted) & set(OUTPUT_MODES):
            raise ContentTypeNotSupportedError(
                data={"acceptedOutputModes": accepted, "outputModes": list(OUTPUT_MODES)}
            )

        if message.task_id is not None:
            found = await self._store.get(message.task_id)
            if found is None:
                raise TaskNotFoundError(
                    f"Task {message.task_id} was specified but does not exist",
                    data={"taskId": message.task_id},
                )
            if message.context_id is not None and message.context_id != found.context_id:
                raise InvalidParamsError(
                    "bad context id: the task belongs to another context",
                    data={"taskId": found.id, "contextId": message.context_id},
                )
            context_id = found.context_id
        else:
            context_id = message.context_id or str(uuid.uuid4())

        self._claim(context_id)
        try:
            turn = await self._route(params, context_id, hint)
        except BaseException:
            self._release(context_id, None)
            raise
        if subscribe:
            turn.subscription = turn.log.subscribe()
        await self._start(turn)
        return turn

    def _claim(self, context_id: str) -> None:
        if context_id in self._claims:
            running = self._claims[context_id]
            raise UnsupportedOperationError(
                "This operation is not supported: task is busy",
                data={
                    "contextId": context_id,
                    "taskId": running.record.id if running else None,
                    "reason": "task is busy",
                },
            )
        self._claims[context_id] = None

    def _release(self, context_id: str, turn: Turn | None) -> None:
        if self._claims.get(context_id) is turn:
            del self._claims[context_id]

    async def _route(self, params: MessageSendParams, context_id: str, hint: str | None) -> Turn:
        message = params.message
        latest = await self._store.latest_in_context(context_id)
        owner = latest.agent_id if latest is not None else None
        if hint is not None and owner is not None and hint != owner:
            raise InvalidParamsError(
                f"Context {context_id} belongs to agent {owner!r}, not {hint!r}",
                data={"contextId": context_id, "agentId": owner},
            )
        agent_id = owner or hint or self._agents[0].id
        served = self._served.get(agent_id)
        if served is None:
            raise InvalidParamsError(
                f"Context {context_id} belongs to agent {agent_id!r}, which is not served here"
            )

        target: StoredTask | None
        if message.task_id is not None:
            target = await self._store.get(message.task_id)
            assert target is not None
        else:
            target = latest if latest is not None and latest.state not in TERMINAL_STATES else None
        if target is not None:
            if target.state in TERMINAL_STATES:
                raise UnsupportedOperationError(
                    f"Task {target.id} is in a terminal state: {target.state}",
                    data={"taskId": target.id, "state": target.state,
                          "reason": "task is in a terminal state"},
                )
            if target.state in _RUNNING:
                raise UnsupportedOperationError(
                    "This operation is not supported: task is busy",
                    data={"taskId": target.id, "contextId": context_id, "reason": "task is busy"},
                )
            if any(m.message_id == message.message_id for m in target.task.history or []):
                raise UnsupportedOperationError(
                    f"Message {message.message_id} was already delivered to task {target.id}",
                    data={"taskId": target.id, "messageId": message.message_id,
                          "reason": "duplicate message"},
                )
        blocking = params.configuration is None or params.configuration.blocking is not False
        if target is None:
            return await self._new_task(served, context_id, message, blocking)
        return await self._resume(served, target, message, blocking)

    async def _new_task(
        self, served: _ServedAgent, context_id: str, message: Message, blocking: bool
    ) -> Turn:
        task_id = str(uuid.uuid4())
        inbound = message.model_copy(update={"task_id": task_id, "context_id": context_id})
        record = StoredTask(
            task=Task(id=task_id, context_id=context_id, status=messages.status("submitted"),
                      history=[inbound]),
            agent_id=served.agent.id,
        )
        return Turn(record, served, self._graph_input(served, record, inbound),
                    self._hub.open(task_id, 0), blocking)

    def _graph_input(self, served: _ServedAgent, record: StoredTask, message: Message) -> dict[str, Any]:
        """Documented input keys; only those in the graph's input schema are passed."""
        candidate: dict[str, Any] = {
            "messages": [HumanMessage(content=message.text(), id=message.message_id)],
            "thread_id": record.context_id,
            "a2a_task_id": record.id,
            "a2a_message_id": message.message_id,
            "a2a_data": message.data(),
            "a2a_metadata": dict(message.metadata or {}),
            REQUEST_KEY: {CLEAR: None},
        }
        keys = served.input_keys
        return candidate if keys is None else {k: v for k, v in candidate.items() if k in keys}

    async def _resume(
        self, served: _ServedAgent, record: StoredTask, message: Message, blocking: bool
    ) -> Turn:
        """Answer the waiting question; resume once every question of the step is answered.

        Parallel branches can leave several interrupts pending. Resuming with only some of them
        answered would re-run the unanswered nodes, so answers are collected on the task (one
        question at a time on the wire) and the graph resumes with all of them at once.
        """
        config = _config(record.context_id)
        pending = (await served.graph.aget_state(config)).interrupts  # type: ignore[arg-type]
        if not pending:
            raise InvalidParamsError(
                "Task is not awaiting input: its graph has no pending question",
                data={"taskId": record.id},
            )
        asked = next((i for i in pending if i.id == record.pending_interrupt), pending[0])
        collected: dict[str, Any] = {
            k: v for k, v in dict(record.extra.get(_COLLECTED) or {}).items()  # type: ignore[call-overload]
            if any(i.id == k for i in pending)
        }
        for interrupt_id, raw in _answers(message, pending, asked).items():
            value = next(i.value for i in pending if i.id == interrupt_id)
            reasked = record.reask_count > 0 or interrupt_id != asked.id
            outcome = await normalize_answer(
                public_payload(value), raw, llm=served.agent.llm, reasked=reasked
            )
            if isinstance(outcome, Reask):
                return self._ask_again(served, record, message, asked, blocking, reask=True)
            collected[interrupt_id] = resume_value(value, outcome.value)

        record.reask_count = 0
        unanswered = [i for i in pending if i.id not in collected]
        if unanswered:
            record.extra[_COLLECTED] = collected
            return self._ask_again(served, record, message, unanswered[0], blocking, reask=False)
        record.extra.pop(_COLLECTED, None)
        record.pending_interrupt = None
        record.task = record.task.model_copy(
            update={"history": self._answered_history(record, message),
                    "status": messages.status("working")}
        )
        return Turn(record, served, Command(resume=collected),
                    self._hub.open(record.id, record.event_seq), blocking)

    @staticmethod
    def _answered_history(record: StoredTask, message: Message) -> list[Message]:
        """History after an answer: the question that was asked, then the answer."""
        inbound = message.model_copy(update={"task_id": record.id, "context_id": record.context_id})
        history = list(record.task.history or [])
        if record.task.status.message is not None:
            history.append(record.task.status.message)
        history.append(inbound)
        return history

    def _ask_again(
        self, served: _ServedAgent, record: StoredTask, message: Message, question: Interrupt,
        blocking: bool, *, reask: bool,
    ) -> Turn:
        """A turn that asks without running the graph: a re-ask (seed 004: an unclear answer
        gets the same question once more) or the next of several parallel questions."""
        status_message = messages.question_message(
            question.value, question.id, record.id, record.context_id, reask=reask
        )
        record.task = record.task.model_copy(
            update={"history": self._answered_history(record, message),
                    "status": messages.status("input-required", status_message)}
        )
        record.pending_interrupt = question.id
        if reask:
            record.reask_count += 1
        return Turn(record, served, None, self._hub.open(record.id, record.event_seq), blocking,
                    runs=False)

    # ------------------------------------------------------------------ running

    async def _start(self, turn: Turn) -> None:
        self._claims[turn.record.context_id] = turn
        self._turns.add(turn)
        try:
            await self._publish_task(turn)
        except BaseException:
            self._finish(turn)
            raise
        if not turn.runs:  # e.g. a re-ask: the snapshot already says it all
            await self._publish_status(turn, final=True)
            self._finish(turn)
            return
        assert self._group is not None
        turn.runner = self._group.create_task(self._run(turn))

    def _finish(self, turn: Turn) -> None:
        self._turns.discard(turn)
        self._release(turn.record.context_id, turn)
        turn.log.close()
        turn.done.set()

    async def _run(self, turn: Turn) -> None:
        record = turn.record
        try:
            await self._set_status(turn, "working")
            try:
                outcome = await run_turn(
                    turn.served.graph,
                    turn.graph_input,
                    _config(record.context_id),
                    durability=turn.served.agent.durability,
                    on_progress=lambda chunk: self._progress(turn, chunk),
                )
                ending = _ending(outcome, record)
            except asyncio.CancelledError:
                if not turn.canceled:
                    raise
                ending = _Ending("canceled")
            except Exception as exc:
                log.exception("task %s failed", record.id)
                ending = _Ending("failed", _failure(exc, record))
            await self._end(turn, ending)
        except asyncio.CancelledError:
            log.warning("task %s stopped by shutdown; it is recovered at the next start", record.id)
            raise
        except Exception:  # the store failed while reporting: nothing more can be said
            log.exception("task %s could not be finalised", record.id)
        finally:
            self._finish(turn)

    async def _end(self, turn: Turn, ending: _Ending) -> None:
        record = turn.record
        record.pending_interrupt = ending.pending_interrupt
        if ending.artifact is not None:
            record.task = record.task.model_copy(
                update={"artifacts": [*(record.task.artifacts or []), ending.artifact]}
            )
            event = TaskArtifactUpdateEvent(
                task_id=record.id, context_id=record.context_id, artifact=ending.artifact,
                append=False, last_chunk=True,
            )
            await self._save_and_publish(turn, event.to_wire())
        await self._set_status(turn, ending.state, ending.message, final=True)

    async def _progress(self, turn: Turn, chunk: Any) -> None:
        """``get_stream_writer()`` output: a ``working`` status update, not persisted."""
        part = (
            TextPart(kind="text", text=chunk)
            if isinstance(chunk, str)
            else DataPart(kind="data", data=chunk if isinstance(chunk, dict) else {"value": chunk})
        )
        record = turn.record
        note = messages.agent_message([part], record.id, record.context_id)
        event = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id,
            status=messages.status("working", note), final=False,
        )
        record.event_seq += 1
        turn.log.publish(record.event_seq, event.to_wire())

    async def _set_status(
        self, turn: Turn, state: str, message: Message | None = None, *, final: bool = False
    ) -> None:
        record = turn.record
        record.task = record.task.model_copy(update={"status": messages.status(state, message)})
        await self._publish_status(turn, final=final)

    async def _publish_status(self, turn: Turn, *, final: bool) -> None:
        record = turn.record
        event = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status, final=final
        )
        await self._save_and_publish(turn, event.to_wire(), final=final)

    async def _publish_task(self, turn: Turn) -> None:
        await self._save_and_publish(turn, turn.record.task.to_wire())

    async def _save_and_publish(
        self, turn: Turn, payload: dict[str, Any], *, final: bool = False
    ) -> None:
        """Durable first, then visible: a client never sees a state the store could lose."""
        record = turn.record
        record.event_seq += 1
        await self._store.save(record)
        turn.log.snapshot = record.task.to_wire()
        turn.log.publish(record.event_seq, payload, final=final)

    # ------------------------------------------------------------------ cancel

    async def cancel(self, task_id: str) -> dict[str, Any]:
        record = await self._store.get(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        running = self._claims.get(record.context_id)
        if running is not None and running.record.id == task_id and running.runner is not None:
            running.canceled = True
            running.runner.cancel()
            await running.done.wait()
            record = await self._store.get(task_id)
            assert record is not None
            if record.state != "canceled":
                raise TaskNotCancelableError(data={"taskId": task_id, "state": record.state})
            return _wire_task(record)
        if record.state in TERMINAL_STATES:
            raise TaskNotCancelableError(data={"taskId": task_id, "state": record.state})
        if record.context_id in self._claims:
            raise UnsupportedOperationError(
                "This operation is not supported: task is busy",
                data={"taskId": task_id, "reason": "task is busy"},
            )
        self._claim(record.context_id)
        turn = Turn(record, self._served[record.agent_id] if record.agent_id in self._served
                    else next(iter(self._served.values())), None,
                    self._hub.open(record.id, record.event_seq), runs=False)
        self._claims[record.context_id] = turn
        try:
            await self._set_status(turn, "canceled", final=True)
        finally:
            self._finish(turn)
        return _wire_task(record)

    # ------------------------------------------------------------------ resubscribe

    async def resubscribe(self, task_id: str, last_event_id: int | None) -> AsyncIterator[Event]:
        live = self._hub.get(task_id)
        if live is not None and last_event_id is not None:
            backlog = live.replay_after(last_event_id)
            if backlog:
                return live.subscribe(backlog).__aiter__()
        if live is not None and not live.finished and live.snapshot is not None:
            return _prepend([(0, live.snapshot)], live.subscribe().__aiter__())
        record = await self._store.get(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        if record.state in _RUNNING:
            # a turn in flight whose log has not published yet: follow it from now
            current = self._hub.get(task_id)
            if current is not None and not current.finished:
                return _prepend([(0, record.task.to_wire())], current.subscribe().__aiter__())
        final = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status,
            final=True,
        )
        return _iterate([(0, record.task.to_wire()), (record.event_seq, final.to_wire())])

    # ------------------------------------------------------------------ recovery

    async def _recover(self) -> None:
        """Tasks a stopped process left running.

        The graph waits for an answer: ask it again. The graph stopped between steps (a graceful
        shutdown cancelled the run after LangGraph saved its progress): continue the run from its
        checkpoint, as LangGraph's durable execution does; the interrupted step runs again.
        Otherwise the run's outcome is unknown: fail the task with a message.
        """
        fallback = next(iter(self._served.values()))
        for record in await self._store.unfinished():
            served = self._served.get(record.agent_id)
            snapshot = None
            if served is not None:
                snapshot = await served.graph.aget_state(_config(record.context_id))  # type: ignore[arg-type]
            log_ = self._hub.open(record.id, record.event_seq)
            if snapshot is not None and served is not None and snapshot.next and not snapshot.interrupts:
                self._claim(record.context_id)
                await self._start(Turn(record, served, None, log_, blocking=False))
                continue
            turn = Turn(record, served or fallback, None, log_, runs=False)
            if snapshot is not None and snapshot.interrupts:
                asked = snapshot.interrupts[0]
                record.pending_interrupt = asked.id
                question = messages.question_message(asked.value, asked.id, record.id, record.context_id)
                await self._set_status(turn, "input-required", question, final=True)
            else:
                note = messages.agent_message(
                    [TextPart(kind="text", text="The server stopped while this task was running.")],
                    record.id, record.context_id,
                )
                await self._set_status(turn, "failed", note, final=True)
            turn.log.close()


@dataclass(frozen=True)
class _Ending:
    state: str
    message: Message | None = None
    artifact: Artifact | None = None
    pending_interrupt: str | None = None


def _ending(outcome: TurnOutcome, record: StoredTask) -> _Ending:
    """How a finished graph turn ends the task; raises on output that cannot go on the wire."""
    if outcome.interrupts:
        asked = outcome.interrupts[0]
        try:
            orjson.dumps(asked.value)
        except TypeError as exc:
            raise InvalidAgentResponseError(
                f"Invalid agent response: the question is not JSON ({exc})"
            ) from exc
        question = messages.question_message(asked.value, asked.id, record.id, record.context_id)
        return _Ending("input-required", question, pending_interrupt=asked.id)
    artifact = messages.result_artifact(outcome.result, outcome.texts)
    reply = None
    if outcome.texts:
        reply = messages.agent_message(
            [TextPart(kind="text", text="\n\n".join(outcome.texts))], record.id, record.context_id
        )
    return _Ending("completed", reply, artifact)


def _failure(exc: Exception, record: StoredTask) -> Message:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return messages.agent_message(
        [TextPart(kind="text", text=f"The agent failed: {text}")], record.id, record.context_id
    )


def _answers(message: Message, pending: Sequence[Interrupt], asked: Interrupt) -> dict[str, Any]:
    """The answer(s) a message carries, keyed by interrupt id.

    Accepted: a data part ``{"value": v}``; a data part ``{"resume": v}`` or an id-keyed map
    ``{"resume": {interrupt_id: v}}`` (LangGraph server's form); else the text parts.
    Unknown interrupt ids are refused (LangGraph would silently ignore them).
    """
    for data in message.data():
        if "value" in data:
            return {asked.id: data["value"]}
        if "resume" in data:
            resume = data["resume"]
            if isinstance(resume, Mapping) and resume and all(
                isinstance(k, str) and _INTERRUPT_ID.match(k) for k in resume
            ):
                known = {i.id for i in pending}
                unknown = sorted(set(resume) - known)
                if unknown:
                    raise InvalidParamsError(
                        "Unknown interrupt id: not pending on this task",
                        data={"unknown": unknown, "pending": sorted(known)},
                    )
                return dict(resume)
            return {asked.id: resume}
    text = message.text()
    if not text.strip():
        raise InvalidParamsError(
            "The task is waiting for an answer: send a text part or a data part {\"value\": ...}"
        )
    return {asked.id: text}


async def _iterate(events: list[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


async def _prepend(first: list[Event], rest: AsyncIterator[Event]) -> AsyncIterator[Event]:
    for event in first:
        yield event
    async for event in rest:
        yield event
