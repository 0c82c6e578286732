"""Answer collection: what an answer to a waiting task does. Returns a ``Plan``; starts nothing.

Parallel branches can leave several interrupts pending. Resuming with only some of them
answered would re-run the unanswered nodes, so answers are collected on the task (one question
at a time on the wire) and the graph resumes with all of them at once. An unclear answer gets
its question once more (seed 004's re-ask); a pending tool review takes only decisions,
validated before anything resumes. A refused answer raises and changes nothing: the record is
stored only with the turn the plan becomes.
"""

from __future__ import annotations

from langgraph.types import Command

from ..a2a.types import Message
from ..core.bounds import Limits
from ..core.clock import now
from ..core.hitl_graph import public_payload, resume_value
from ..core.normalize import Reask, normalize_answer
from ..core.principal import principal_of_space
from ..errors import InvalidParamsError, NoPendingReviewError
from ..stores.base import Pending, StoredTask
from ..tool_review import catalog
from . import messages
from .answers import answers_in, carries_decisions, is_review, remember_answer, review_resume
from .served import ServedAgent
from .turn import Plan, config_for

__all__ = ["answered_history", "collect_answer", "decided_by", "pending_of"]


async def pending_of(served: ServedAgent, record: StoredTask) -> list[Pending]:
    """The questions the task waits on: as stored, else as its graph's checkpoint holds them
    (a task stored by a release that did not keep them)."""
    if record.pending:
        return list(record.pending)
    snapshot = await served.graph.aget_state(config_for(record.context_key))  # type: ignore[arg-type]
    return [Pending(i.id, i.value) for i in snapshot.interrupts]


async def collect_answer(
    served: ServedAgent, record: StoredTask, message: Message, *, language: str | None,
    limits: Limits,
) -> Plan:
    """The plan for ``message`` answering the task: resume once every pending question is
    answered, else ask the next one (or the same one again)."""
    pending = await pending_of(served, record)
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
    remember_answer(record, asked.id, message.message_id)
    for interrupt_id, raw in answers_in(message, pending, asked).items():
        answered = next(p for p in pending if p.id == interrupt_id)
        value = answered.value
        if is_review(answered):
            collected[interrupt_id] = resume_value(
                value, review_resume(answered, raw, language, limits)
            )
            message = decided_by(message, record)
            continue
        reasked = record.reask_count > 0 or interrupt_id != asked.id
        outcome = await normalize_answer(
            public_payload(value), raw, llm=served.agent.llm, reasked=reasked
        )
        if isinstance(outcome, Reask):
            return _ask(served, record, message, asked, reask=True, language=language)
        collected[interrupt_id] = resume_value(value, outcome.value)

    record.reask_count = 0
    unanswered = [p for p in pending if p.id not in collected]
    if unanswered:
        record.collected = collected
        return _ask(served, record, message, unanswered[0], reask=False, language=language)
    record.collected = {}
    if any(is_review(p) for p in pending):  # a tool call a person approved: stored first
        record.resuming = collected
    record.pending = ()
    record.pending_interrupt = None
    record.task = record.task.model_copy(
        update={"history": answered_history(record, message),
                "status": messages.status("working")}
    )
    return Plan(record, served, Command(resume=collected))


def _ask(
    served: ServedAgent, record: StoredTask, message: Message, question: Pending, *,
    reask: bool, language: str | None,
) -> Plan:
    """A plan that asks without running the graph: a re-ask (seed 004: an unclear answer gets
    the same question once more) or the next of several parallel questions."""
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
    return Plan(record, served, runs=False)


def decided_by(message: Message, record: StoredTask) -> Message:
    """The stored copy of a tool review's decisions says who decided and when (``decidedBy``,
    ``decidedAt`` in its metadata), as a human reviewer's decision does in ``/reviews``."""
    metadata = {**(message.metadata or {}), "decidedBy": principal_of_space(record.space),
                "decidedAt": now()}
    return message.model_copy(update={"metadata": metadata})


def answered_history(record: StoredTask, message: Message) -> list[Message]:
    """History after an answer: the question that was asked, then the answer."""
    inbound = message.model_copy(update={"task_id": record.id, "context_id": record.context_id})
    history = list(record.task.history or [])
    if record.task.status.message is not None:
        history.append(record.task.status.message)
    history.append(inbound)
    return history
