"""The task lifecycle: routing a message, one run per context, events, cancel, recovery.

::

    message/send|stream ─► _begin()  claims the context (a second message gets -32004 busy)
                             │ route: taskId? the context's waiting task? a new task?
                             │ answer: normalise (a tool review: validate its decisions,
                             │         -32602 and nothing changes when they do not fit)
                             │         ─► all pending questions answered?
                             │           yes ─► Command(resume={interrupt_id: value, ...})
                             │           no  ─► ask the next one / re-ask (nothing runs)
                             ▼
                           Turn ──► _run() in the manager's task group (outlives any request)
                                      working ─► run_turn(graph) ─► input-required | completed | failed
                                      finally: release the claim, wake blocking senders

A context is claimed from routing until its turn ends, so two messages can never run one
context's graph at once; a message that finds the claim taken is refused, never queued (a
queued answer could answer the next question).

Durability: a task is stored before any client can see its id (a stream or a non-blocking
send) and whenever a turn ends, always before the event that shows the state is published.
While a turn runs, its live record is the truth for ``tasks/get``; a blocking send that the
process loses mid-run leaves nothing behind but an error at the client (with LangGraph's
``"exit"`` durability the checkpoint is also untouched), so one write per turn is enough.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import replace
from typing import Any

import httpx
from langgraph.types import Command

from ..a2a.types import (
    RUNNING_STATES,
    TERMINAL_STATES,
    DataPart,
    Message,
    MessageSendParams,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    TextPart,
    WireModel,
)
from ..agent import Agent
from ..core.bounds import Limits
from ..core.normalize import Reask, normalize_answer
from ..core.run_context import RunContext
from ..errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    NoPendingReviewError,
    PushNotificationNotSupportedError,
    StaleAnswerError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..review import catalog
from ..reviewer.node import TaskRejected, is_review_wait
from ..reviewer.port import HumanReviewPort, Review, ReviewNotFoundError
from ..stores.base import StoredTask, UnreadableRow
from ..stores.storage import Storage
from . import messages
from .answers import (
    answered_by,
    answers_in,
    bound_interrupt,
    carries_decisions,
    graph_input,
    is_review,
    remember_answer,
    review_resume,
)
from .children import Children
from .events import Event, EventHub, EventLog, iterate, prepend
from .hitl_graph import public_payload, resume_value
from .run_settings import added_reviews, remember_reviews, run_settings
from .runner import run_turn
from .task_bound import check_task_bytes
from .turn import (
    Ending,
    Pending,
    ServedAgent,
    Turn,
    answered_history,
    config_for,
    ending_of,
    failure_message,
    rejection_message,
    response_copy,
    waiting_message,
)

__all__ = ["OUTPUT_MODES", "TaskManager"]

log = logging.getLogger(__name__)

OUTPUT_MODES = ("text/plain", "application/json")


def _busy(context_id: str, task_id: str | None) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        "This operation is not supported: task is busy",
        data={"contextId": context_id, "taskId": task_id, "reason": "task is busy"},
    )


class TaskManager:
    """Owns every turn: an async context manager whose task group holds the runs."""

    def __init__(
        self, agents: Sequence[Agent], storage: Storage, *, shutdown_grace: float = 10.0,
        reviews: HumanReviewPort | None = None, review_wait: float = 5.0,
        limits: Limits | None = None,
    ) -> None:
        if not agents:
            raise ValueError("serve at least one agent")
        ids = [a.id for a in agents]
        if len(set(ids)) != len(ids):
            raise ValueError(f"agent ids must be unique, got {ids}")
        self._agents = list(agents)
        self._storage = storage
        self._store = storage.tasks
        self._served: dict[str, ServedAgent] = {}
        self._claims: dict[str, Turn | None] = {}  # context id -> its turn (None while routing)
        self._live: dict[str, Turn] = {}  # task id -> its turn in progress
        self._hub = EventHub()
        self._stack = AsyncExitStack()
        self._group: asyncio.TaskGroup | None = None
        self._shutdown_grace = shutdown_grace
        self._reviews = reviews
        self._review_wait = review_wait
        self._limits = limits or Limits()
        self._http: httpx.AsyncClient | None = None  # for remote children of orchestrators
        self._children: dict[str, Children] = {}

    @property
    def agents(self) -> list[Agent]:
        return list(self._agents)

    async def __aenter__(self) -> TaskManager:
        """Everything opened here is on ``_stack``: a step that fails (recovery raising) closes
        what the earlier steps opened instead of leaking the client, the group's turns and the
        review listener."""
        try:
            for agent in self._agents:
                self._served[agent.id] = ServedAgent(
                    agent, agent.compile(self._storage.checkpointer), agent.input_keys()
                )
            self._http = await self._stack.enter_async_context(httpx.AsyncClient(timeout=60))
            # one child caller per agent, built once (runs only reference it)
            self._children = {
                agent.id: Children(
                    agent, set(self._served), self._send_child, self.cancel, self._http
                )
                for agent in self._agents
            }
            self._group = await self._stack.enter_async_context(asyncio.TaskGroup())
            if self._reviews is not None:
                self._stack.callback(self._reviews.on_decision(self._on_review_decision))
            await self._recover()
        except BaseException as exc:
            # handing ``exc`` to the stack makes the group cancel the turns recovery started
            # (instead of awaiting them); the group re-raises it wrapped, the caller gets ``exc``
            with suppress(BaseException):
                await self._stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Let running turns finish for ``shutdown_grace`` seconds, then cancel the rest; a
        cancelled turn is stored ``working`` and recovered at the next start."""
        running = [t.runner for t in self._live.values() if t.runner is not None]
        if running:
            _, unfinished = await asyncio.wait(running, timeout=self._shutdown_grace)
            for runner in unfinished:
                runner.cancel()
        await self._stack.aclose()

    # ------------------------------------------------------------------ reads

    async def _load(self, task_id: str) -> StoredTask | None:
        turn = self._live.get(task_id)
        return turn.record if turn is not None else await self._store.get(task_id)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        record = await self._load(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        return response_copy(record, history_length)

    # ------------------------------------------------------------------ send / stream

    async def context_agent(self, context_id: str) -> str | None:
        """The agent a context belongs to (``None`` for a context without tasks)."""
        latest = await self._store.latest_in_context(context_id)
        return latest.agent_id if latest is not None else None

    async def thread_values(self, context_id: str) -> dict[str, Any]:
        """The graph state of a context's thread as its last checkpoint holds it."""
        owner = await self.context_agent(context_id)
        served = self._served.get(owner) if owner is not None else None
        if served is None:
            return {}
        snapshot = await served.graph.aget_state(config_for(context_id))  # type: ignore[arg-type]
        return dict(snapshot.values) if isinstance(snapshot.values, dict) else {}

    async def send(self, params: MessageSendParams, *, language: str | None = None) -> Task:
        """``language`` is the request's (``Accept-Language``); review texts use it."""
        turn = await self._begin(params, language=language)
        history_length = params.configuration.history_length if params.configuration else None
        if isinstance(turn, StoredTask):  # a retry of an answer already taken
            return response_copy(turn, history_length)
        if turn.blocking:
            await turn.done.wait()
            if turn.parked:  # waiting for a reviewer: wait a bounded time for the end
                await self._settled(turn, self._review_wait)
                return response_copy(await self._load(turn.record.id) or turn.record, history_length)
        return response_copy(turn.record, history_length)

    async def _settled(self, turn: Turn, timeout: float) -> None:
        """Wait until the task's event log publishes a final event, at most ``timeout``."""
        subscription = turn.log.subscribe()

        async def drain() -> None:
            async for _ in subscription:
                pass

        try:
            await asyncio.wait_for(drain(), timeout)
        except TimeoutError:
            pass
        finally:
            subscription.close()

    async def stream(
        self, params: MessageSendParams, *, language: str | None = None
    ) -> AsyncIterator[Event]:
        """Validates and starts the turn before returning; the iterator only delivers events."""
        turn = await self._begin(params, subscribe=True, language=language)
        if isinstance(turn, StoredTask):  # a retry of an answer already taken: the task as is
            return await self.resubscribe(turn.id, None)
        assert turn.subscription is not None
        return turn.subscription.__aiter__()

    async def _begin(
        self, params: MessageSendParams, *, subscribe: bool = False, language: str | None = None
    ) -> Turn | StoredTask:
        """The turn the message starts, or the task it already answered (a retry)."""
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
        added = added_reviews(params)
        accepted = config.accepted_output_modes if config is not None else None
        if accepted and not set(accepted) & set(OUTPUT_MODES):
            raise ContentTypeNotSupportedError(
                data={"acceptedOutputModes": accepted, "outputModes": list(OUTPUT_MODES)}
            )

        if message.task_id is not None:
            found = await self._load(message.task_id)
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

        bound = bound_interrupt(message)
        if bound is not None:
            # before the claim: a retry that arrives while its answer's turn still runs is
            # answered with the task as it stands, not "busy"
            replayed = await self._replayed(message, context_id, bound)
            if replayed is not None:
                return replayed
        self._claim(context_id)
        try:
            turn = await self._route(params, context_id, hint, language)
            # before anything is stored or run
            await check_task_bytes(turn, self._limits, self._storage.checkpointer)
            remember_reviews(turn.record, added)
            turn.settings = run_settings(turn.record, catalog.resolve(language))
        except BaseException:
            self._release(context_id, None)
            raise
        if subscribe:
            turn.subscription = turn.log.subscribe()
        await self._start(turn)
        return turn

    async def _replayed(
        self, message: Message, context_id: str, bound: str
    ) -> StoredTask | None:
        """The task (live or stored) on which this very message already answered ``bound``."""
        task_id = message.task_id
        if task_id is None:
            latest = await self._store.latest_in_context(context_id)
            task_id = latest.id if latest is not None else None
        record = await self._load(task_id) if task_id is not None else None
        if record is not None and answered_by(record, bound) == message.message_id:
            return record
        return None

    def _claim(self, context_id: str) -> None:
        if context_id in self._claims:
            running = self._claims[context_id]
            raise _busy(context_id, running.record.id if running else None)
        self._claims[context_id] = None

    def _release(self, context_id: str, turn: Turn | None) -> None:
        if context_id in self._claims and self._claims[context_id] is turn:
            del self._claims[context_id]

    async def _route(
        self, params: MessageSendParams, context_id: str, hint: str | None,
        language: str | None = None,
    ) -> Turn:
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
            if target is None:  # stored a moment ago, or lost with a turn a restart dropped
                raise TaskNotFoundError(data={"taskId": message.task_id})
        else:
            target = latest if latest is not None and latest.state not in TERMINAL_STATES else None
        bound = bound_interrupt(message)
        if bound is not None and (
            target is None or target.state in TERMINAL_STATES or target.pending_interrupt != bound
        ):
            # the question it answers was answered (by another message) or never asked here:
            # taking it would answer whatever is asked now (a task parked for a reviewer asks
            # nothing the client can answer)
            shown = target or latest
            raise StaleAnswerError(
                shown.id if shown is not None else None, bound,
                shown.pending_interrupt if shown is not None else None,
            )
        if target is not None:
            if target.state in TERMINAL_STATES:
                raise UnsupportedOperationError(
                    f"Task {target.id} is in a terminal state: {target.state}",
                    data={"taskId": target.id, "state": target.state,
                          "reason": "task is in a terminal state"},
                )
            if target.state in RUNNING_STATES:
                raise _busy(context_id, target.id)
            if any(m.message_id == message.message_id for m in target.task.history or []):
                raise UnsupportedOperationError(
                    f"Message {message.message_id} was already delivered to task {target.id}",
                    data={"taskId": target.id, "messageId": message.message_id,
                          "reason": "duplicate message"},
                )
        blocking = params.configuration is None or params.configuration.blocking is not False
        if target is None:
            if carries_decisions(message):
                raise NoPendingReviewError(catalog.text("no_pending_review", language))
            return self._new_task(served, context_id, message, blocking)
        return await self._answer(served, target, message, blocking, language)

    def _new_task(
        self, served: ServedAgent, context_id: str, message: Message, blocking: bool
    ) -> Turn:
        task_id = str(uuid.uuid4())
        inbound = message.model_copy(update={"task_id": task_id, "context_id": context_id})
        record = StoredTask(
            task=Task(
                id=task_id, context_id=context_id, status=messages.status("submitted"),
                history=[inbound],
            ),
            agent_id=served.agent.id,
        )
        return Turn(record, served, graph_input(record, inbound, served.input_keys),
                    self._hub.open(task_id, 0), blocking)

    async def _pending(self, served: ServedAgent, record: StoredTask) -> list[Pending]:
        if record.pending:
            return list(record.pending)
        snapshot = await served.graph.aget_state(config_for(record.context_id))  # type: ignore[arg-type]
        return [Pending(i.id, i.value) for i in snapshot.interrupts]

    async def _answer(
        self, served: ServedAgent, record: StoredTask, message: Message, blocking: bool,
        language: str | None = None,
    ) -> Turn:
        """Answer the waiting question; resume once every pending question is answered.

        Parallel branches can leave several interrupts pending. Resuming with only some of them
        answered would re-run the unanswered nodes, so answers are collected on the task (one
        question at a time on the wire) and the graph resumes with all of them at once.

        A pending tool review takes only decisions (a data part ``{"decisions": [...]}``),
        validated before anything resumes; a bad answer raises and changes nothing.
        """
        pending = await self._pending(served, record)
        if not pending:
            raise InvalidParamsError(
                "Task is not awaiting input: its graph has no pending question",
                data={"taskId": record.id},
            )
        asked = next((p for p in pending if p.id == record.pending_interrupt), pending[0])
        if carries_decisions(message) and not is_review(asked):
            raise NoPendingReviewError(catalog.text("no_pending_review", language))
        pending_ids = {p.id for p in pending}
        collected = {k: v for k, v in record.collected.items() if k in pending_ids}
        # the record is stored only with the turn this answer starts; a refused answer leaves
        # no trace
        remember_answer(record, asked.id, message.message_id)
        for interrupt_id, raw in answers_in(message, pending, asked).items():
            answered = next(p for p in pending if p.id == interrupt_id)
            value = answered.value
            if is_review(answered):
                collected[interrupt_id] = resume_value(
                    value, review_resume(answered, raw, language, self._limits)
                )
                continue
            reasked = record.reask_count > 0 or interrupt_id != asked.id
            outcome = await normalize_answer(
                public_payload(value), raw, llm=served.agent.llm, reasked=reasked
            )
            if isinstance(outcome, Reask):
                return self._ask(
                    served, record, message, asked, blocking, reask=True, language=language
                )
            collected[interrupt_id] = resume_value(value, outcome.value)

        record.reask_count = 0
        unanswered = [p for p in pending if p.id not in collected]
        if unanswered:
            record.collected = collected
            return self._ask(
                served, record, message, unanswered[0], blocking, reask=False, language=language
            )
        record.collected = {}
        record.pending = ()
        record.pending_interrupt = None
        record.task = record.task.model_copy(
            update={"history": answered_history(record, message),
                    "status": messages.status("working")}
        )
        return Turn(record, served, Command(resume=collected),
                    self._hub.open(record.id, record.event_seq), blocking)

    def _ask(
        self, served: ServedAgent, record: StoredTask, message: Message, question: Pending,
        blocking: bool, *, reask: bool, language: str | None = None,
    ) -> Turn:
        """A turn that asks without running the graph: a re-ask (seed 004: an unclear answer
        gets the same question once more) or the next of several parallel questions."""
        status_message = messages.question_message(
            question.value, question.id, record.id, record.context_id, reask=reask,
            language=language,
        )
        record.task = record.task.model_copy(
            update={"history": answered_history(record, message),
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
        self._live[turn.record.id] = turn
        try:
            await self._publish(turn, turn.record.task, save=turn.seen_early or not turn.runs)
        except BaseException:
            self._finish(turn)
            raise
        if not turn.runs:  # the snapshot already says it all
            await self._publish_status(turn, final=True, save=False)
            self._finish(turn)
            return
        assert self._group is not None
        turn.runner = self._group.create_task(self._run(turn))

    def _finish(self, turn: Turn) -> None:
        self._live.pop(turn.record.id, None)
        self._release(turn.record.context_id, turn)
        if not turn.parked:  # a parked task's stream waits for the reviewer's turn
            turn.log.close()
        turn.done.set()

    async def _run(self, turn: Turn) -> None:
        record = turn.record
        try:
            await self._set_status(turn, "working", save=False)
            try:
                outcome = await run_turn(
                    turn.served.graph,
                    turn.graph_input,
                    config_for(record.context_id, self._run_context(turn)),
                    durability=turn.served.agent.durability,
                    on_progress=lambda chunk: self._progress(turn, chunk),
                )
                ending = ending_of(
                    outcome, record, turn.settings.language if turn.settings else None
                )
            except asyncio.CancelledError:
                if not turn.canceled:
                    raise
                ending = Ending("canceled")
            except TaskRejected as exc:
                ending = Ending("rejected", rejection_message(exc.message, record))
            except Exception as exc:
                log.exception("task %s failed", record.id)
                ending = Ending("failed", failure_message(exc, record))
            await self._end(turn, ending)
        except asyncio.CancelledError:
            # shutdown: store the turn as running so that the next start recovers it
            log.warning("task %s stopped by shutdown; it is recovered at the next start", record.id)
            await self._save(record)
            raise
        except Exception:  # the store failed while reporting: nothing more can be said
            log.exception("task %s could not be finalised", record.id)
        finally:
            self._finish(turn)
        if turn.parked:
            await self._apply_decided(record)

    async def _apply_decided(self, record: StoredTask) -> None:
        """Resume a task parked for a reviewer whose decision is already in the port."""
        value = record.pending[0].value if record.pending else None
        review_id = value.get("review_id") if isinstance(value, dict) else None
        if self._reviews is None or not isinstance(review_id, str):
            return
        try:
            review = await self._reviews.get(review_id)
        except ReviewNotFoundError:
            return
        if review.status == "decided":
            await self._on_review_decision(review)

    async def _end(self, turn: Turn, ending: Ending) -> None:
        """One write for the whole ending, then its events: the artifact, the final status."""
        record = turn.record
        record.pending_interrupt = ending.pending[0].id if ending.pending else None
        if ending.pending:
            record.pending = tuple(ending.pending)
        if ending.artifact is not None:
            record.task = record.task.model_copy(
                update={"artifacts": [*(record.task.artifacts or []), ending.artifact]}
            )
        record.task = record.task.model_copy(
            update={"status": messages.status(ending.state, ending.message)}
        )
        events: list[WireModel] = []
        if ending.artifact is not None:
            events.append(TaskArtifactUpdateEvent(
                task_id=record.id, context_id=record.context_id, artifact=ending.artifact,
                append=False, last_chunk=True,
            ))
        events.append(TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status,
            final=ending.final,
        ))
        turn.parked = ending.parked
        first = record.event_seq + 1
        record.event_seq += len(events)  # the stored task knows the ids of its final events
        await self._save(record)
        turn.log.snapshot = record.task
        for offset, payload in enumerate(events):
            last = offset == len(events) - 1
            turn.log.publish(first + offset, payload, final=last and ending.final)

    async def _save(self, record: StoredTask) -> None:
        """Every write of a task goes here. A terminal state closes the task's pending reviews,
        so a reviewer deciding afterwards is told (409) instead of deciding nothing."""
        await self._store.save(record)
        if record.state not in TERMINAL_STATES or self._reviews is None:
            return
        try:
            ended = "failed" if record.state == "failed" else f"was {record.state}"
            await self._reviews.close_for_task(record.id, f"the task {ended}")
        except Exception:  # the task's end is stored: report it even so
            log.exception("reviews of task %s could not be closed", record.id)

    def _run_context(self, turn: Turn) -> RunContext:
        """The context of a run: the request's settings plus what nodes use to reach the server
        (the review port, the children of an orchestrator)."""
        record, served = turn.record, turn.served
        return replace(
            turn.settings or run_settings(record),
            task_id=record.id,
            agent_id=served.agent.id,
            reviews=self._reviews,
            children=self._children[served.agent.id],
            db=self._storage.db,
            limits=self._limits,
        )

    async def _send_child(self, params: MessageSendParams) -> Task:
        return await self.send(params)

    # ------------------------------------------------------------------ reviewer decisions

    async def _on_review_decision(self, review: Review) -> None:
        """A reviewer decided through the port: resume the task that waits for it.

        A decision can come before the turn that asked has parked (the reviewer saw the draft
        at once); that turn looks at the port again when it parks (``_apply_decided``).
        """
        if review.task_id in self._live or review.decision is None:
            return
        record = await self._store.get(review.task_id)
        if record is None or record.state != "working":
            log.warning("review %s decided but task %s is not waiting for it", review.id,
                        review.task_id)
            return
        waiting = next(
            (p for p in await self._pending(self._served[record.agent_id], record)
             if is_review_wait(p.value) and p.value.get("review_id") == review.id),
            None,
        )
        if waiting is None or record.context_id in self._claims:
            log.warning("task %s does not wait for review %s", record.id, review.id)
            return
        assert review.decision is not None
        self._claim(record.context_id)
        try:
            record.pending = ()
            record.pending_interrupt = None
            served = self._served[record.agent_id]
            events = self._hub.get(record.id) or self._hub.open(record.id, record.event_seq)
            turn = Turn(record, served, Command(resume={waiting.id: review.decision.to_json()}),
                        events, blocking=False)
        except BaseException:
            self._release(record.context_id, None)
            raise
        await self._start(turn)

    async def _progress(self, turn: Turn, chunk: Any) -> None:
        """``get_stream_writer()`` output: a ``working`` status update, not persisted."""
        part = (
            TextPart(kind="text", text=chunk)
            if isinstance(chunk, str)
            else DataPart(
                kind="data", data=chunk if isinstance(chunk, dict) else {"value": chunk}
            )
        )
        record = turn.record
        note = messages.agent_message([part], record.id, record.context_id)
        event = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id,
            status=messages.status("working", note), final=False,
        )
        await self._publish(turn, event, save=False)

    async def _set_status(
        self, turn: Turn, state: str, message: Message | None = None, *,
        final: bool = False, save: bool = True,
    ) -> None:
        record = turn.record
        record.task = record.task.model_copy(update={"status": messages.status(state, message)})
        await self._publish_status(turn, final=final, save=save)

    async def _publish_status(self, turn: Turn, *, final: bool, save: bool) -> None:
        record = turn.record
        event = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status, final=final
        )
        await self._publish(turn, event, final=final, save=save)

    async def _publish(
        self, turn: Turn, payload: WireModel, *, save: bool, final: bool = False
    ) -> None:
        """Number the event; store first when asked, so no client sees a state that a crash
        could take back."""
        record = turn.record
        record.event_seq += 1
        if save:
            await self._save(record)
        turn.log.snapshot = record.task
        turn.log.publish(record.event_seq, payload, final=final)

    # ------------------------------------------------------------------ cancel

    async def cancel(self, task_id: str) -> Task:
        record = await self._load(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        running = self._live.get(task_id)
        if running is not None and running.runner is not None:
            running.canceled = True
            running.runner.cancel()
            await running.done.wait()
            if running.record.state != "canceled":
                raise TaskNotCancelableError(
                    data={"taskId": task_id, "state": running.record.state}
                )
            return response_copy(running.record)
        if record.state in TERMINAL_STATES:
            raise TaskNotCancelableError(data={"taskId": task_id, "state": record.state})
        self._claim(record.context_id)  # a turn that asks without running, or routing: busy
        served = self._served.get(record.agent_id) or next(iter(self._served.values()))
        turn = Turn(record, served, None, self._hub.open(record.id, record.event_seq), runs=False)
        self._claims[record.context_id] = turn
        try:
            await self._set_status(turn, "canceled", final=True)
        finally:
            self._finish(turn)
        return response_copy(record)

    # ------------------------------------------------------------------ resubscribe

    async def resubscribe(self, task_id: str, last_event_id: int | None) -> AsyncIterator[Event]:
        """Snapshot first (no event id), then live events; or, given ``Last-Event-ID``, exactly
        the events after it while they are retained. Snapshot and subscription are taken in
        one step of the event loop, so no event falls between them."""
        live = self._hub.get(task_id)
        if live is not None and last_event_id is not None:
            backlog = live.replay_after(last_event_id)
            if backlog:
                return live.subscribe(backlog).__aiter__()
        if live is not None and not live.finished and live.snapshot is not None:
            return prepend([(0, live.snapshot)], live.subscribe().__aiter__())
        record = await self._store.get(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        final = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status,
            final=True,
        )
        return iterate([(0, record.task), (record.event_seq, final)])

    # ------------------------------------------------------------------ recovery

    async def _recover(self) -> None:
        """Tasks a stopped process left running.

        The graph waits for an answer: ask it again. The graph stopped between steps (a graceful
        shutdown cancelled the run after LangGraph saved its progress): continue the run from its
        checkpoint, as LangGraph's durable execution does; the interrupted step runs again.
        Otherwise the run's outcome is unknown: fail the task with a message.
        """
        for found in await self._store.unfinished():
            if isinstance(found, UnreadableRow):
                log.error("recovery: task %s cannot be read (%s)", found.id, found.reason)
                await self._fail_unrecoverable(found, "its stored record cannot be read")
                continue
            try:
                await self._recover_one(found)
            except Exception as exc:  # one bad task never stops the server from starting
                log.exception("recovery: task %s could not be recovered", found.id)
                self._release(found.context_id, None)
                await self._fail_unrecoverable(found, f"it could not be recovered ({exc})")

    async def _recover_one(self, record: StoredTask) -> None:
        fallback = next(iter(self._served.values()))
        served = self._served.get(record.agent_id)
        snapshot = None
        if served is not None:
            snapshot = await served.graph.aget_state(config_for(record.context_id))  # type: ignore[arg-type]
        events = self._hub.open(record.id, record.event_seq)
        if served is not None and snapshot is not None and snapshot.interrupts and is_review_wait(
            snapshot.interrupts[0].value
        ):
            await self._recover_review(record, served, snapshot.interrupts, events)
            return
        if served is not None and snapshot is not None and snapshot.next and not snapshot.interrupts:
            self._claim(record.context_id)
            await self._start(Turn(record, served, None, events, blocking=False))
            return
        turn = Turn(record, served or fallback, None, events, runs=False)
        if snapshot is not None and snapshot.interrupts:
            pending = tuple(Pending(i.id, i.value) for i in snapshot.interrupts)
            question = messages.question_message(
                pending[0].value, pending[0].id, record.id, record.context_id
            )
            await self._end(turn, Ending("input-required", question, pending=pending))
        else:
            note = messages.agent_message(
                [TextPart(
                    kind="text", text="The server stopped while this task was running."
                )],
                record.id, record.context_id,
            )
            await self._end(turn, Ending("failed", note))
        turn.log.close()

    async def _fail_unrecoverable(self, found: StoredTask | UnreadableRow, why: str) -> None:
        """Store the task ``failed`` with a message saying why; when even that cannot be
        stored, log it and leave the row as it is (the next start tries again)."""
        text = f"The server could not resume this task after a restart: {why}."
        try:
            note = messages.agent_message(
                [TextPart(kind="text", text=text)], found.id, found.context_id
            )
            task = Task(id=found.id, context_id=found.context_id,
                        status=messages.status("failed", note))
            if isinstance(found, StoredTask):  # keep what can still be read
                task = found.task.model_copy(update={"status": task.status})
            await self._save(
                StoredTask(task=task, agent_id=found.agent_id, event_seq=found.event_seq + 1)
            )
            self._hub.discard(found.id)
        except Exception:
            log.exception("recovery: task %s could not be marked failed; skipped", found.id)


    async def _recover_review(
        self, record: StoredTask, served: ServedAgent, interrupts: Sequence[Any], events: EventLog
    ) -> None:
        """A task that waits for a reviewer stays ``working``; a decision taken while the
        server was down is applied now."""
        pending = tuple(Pending(i.id, i.value) for i in interrupts)
        turn = Turn(record, served, None, events, runs=False)
        await self._end(turn, Ending("working", waiting_message(pending[0].value, record),
                                     pending=pending, final=False))
        await self._apply_decided(record)
