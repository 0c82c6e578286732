"""The deadline sweep: questions, tool reviews and reviewers' drafts that waited too long.

Every replica sweeps at once, so each expired wait must be handled once. A question or a
tool review is answered (``AnswerWith``, ``Reject``) by a message the runtime sends in a
person's place, bound to the interrupt it answers: the context's claim lets one replica take
it, and the binding makes every other copy stale. A cancel takes the claim and checks that the
task still waits for that very interrupt. A draft is rejected through the review port, whose
``decide`` takes a pending review once; a canceled draft's task ends as any cancel does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from ..a2a.types import DataPart, Message, Part, TextPart
from ..core.clock import iso, parse_iso
from ..core.deadlines import AnswerWith, Cancel, Deadline, Reject
from ..core.hitl import INTERRUPT_ID
from ..core.hitl_graph import public_payload
from ..core.ports import Decision, HumanReviewPort, Review, ReviewClosedError, ReviewCursor
from ..errors import A2AError
from ..stores.base import Expiry, StoredTask, TaskStore, UnreadableRow
from ..tool_review.payload import is_review_request
from . import messages

__all__ = [
    "DEADLINE_REVIEWER",
    "DeadlineJob",
    "DraftDeadlineJob",
    "cancel_note",
    "draft_expires_at",
    "expiry_message",
    "mark_expired",
]

log = logging.getLogger(__name__)

#: who a deadline's decision on a draft is recorded as (``decidedBy`` in ``/reviews``)
DEADLINE_REVIEWER = "deadline"
#: how many expired waits one sweep handles; the next sweep takes the rest
BATCH = 100
#: ``metadata`` of a message a deadline sends: the task's history says who answered
ANSWERED_BY = "answeredBy"

#: applies a task's deadline; false when nothing was done here (another replica did it)
Expire = Callable[[StoredTask], Awaitable[bool]]
CancelTask = Callable[[str, str], Awaitable[Any]]


def expiry_message(record: StoredTask, deadline: Expiry) -> Message | None:
    """The message that answers ``record``'s question or tool review in a person's place, or
    ``None`` when the deadline cancels. Its id is derived from the interrupt, so copies a
    second replica makes are one message."""
    then = deadline.then
    if isinstance(then, Cancel):
        return None
    value = next((p.value for p in record.pending if p.id == deadline.interrupt_id), None)
    part: Part
    if is_review_request(public_payload(value)):
        assert isinstance(value, dict)
        message = then.message if isinstance(then, Reject) else Reject().message
        decisions = [{"type": "reject", "message": message} for _ in value["action_requests"]]
        part = DataPart(kind="data", data={"decisions": decisions})
    elif isinstance(then, AnswerWith) and isinstance(then.value, str):
        part = TextPart(kind="text", text=then.value)
    else:
        answer = then.value if isinstance(then, AnswerWith) else None
        part = DataPart(kind="data", data={"value": answer})
    return Message(
        message_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"llamon:expired:{record.id}:"
                                                      f"{deadline.interrupt_id}")),
        role="user", parts=[part], task_id=record.id, context_id=record.context_id,
        metadata={INTERRUPT_ID: deadline.interrupt_id, ANSWERED_BY: DEADLINE_REVIEWER},
    )


def mark_expired(record: StoredTask, interrupt_id: str) -> None:
    """Remember that ``interrupt_id`` expired (a late answer to it is refused), and record the
    deadline, not the task's owner, as who decided (``decidedBy`` of a tool review's answer)."""
    record.note_expired(interrupt_id)
    history = list(record.task.history or [])
    for index in range(len(history) - 1, -1, -1):
        metadata = history[index].metadata or {}
        if metadata.get(INTERRUPT_ID) == interrupt_id and metadata.get(ANSWERED_BY):
            if "decidedBy" in metadata:
                metadata = {**metadata, "decidedBy": DEADLINE_REVIEWER}
                history[index] = history[index].model_copy(update={"metadata": metadata})
                record.task = record.task.model_copy(update={"history": history})
            break


def cancel_note(record: StoredTask, deadline: Expiry) -> Message:
    """The status message of a task a deadline canceled."""
    then = deadline.then
    text = then.message if isinstance(then, Cancel) else Cancel().message
    return messages.agent_message([TextPart(kind="text", text=text)], record.id,
                                  record.context_id, {"expiredAt": deadline.at})


class DeadlineJob:
    """Questions and tool reviews whose deadline passed (``TaskStore.expiring``)."""

    name = "deadlines"

    def __init__(self, store: TaskStore, expire: Expire, *, batch: int = BATCH) -> None:
        self._store = store
        self._expire = expire
        self._batch = batch

    async def sweep(self, now: datetime) -> int:
        handled = 0
        for record in await self._store.expiring(iso(now), self._batch):
            if isinstance(record, UnreadableRow):  # recovery reports it; nothing to expire
                continue
            try:
                handled += await self._expire(record)
            except A2AError as exc:  # busy, answered or ended meanwhile: the next sweep sees
                log.info("deadline of task %s not applied now: %s", record.id, exc.message)
        return handled


def draft_expires_at(review: Review, deadline: Deadline | None) -> str | None:
    """When a pending draft expires under the port's ``deadline`` (counted from its
    submission), in wire form; ``None`` without a deadline or once it is not pending."""
    if deadline is None or review.status != "pending":
        return None
    return iso(parse_iso(review.created) + timedelta(seconds=deadline.seconds))


class DraftDeadlineJob:
    """Drafts that waited for a reviewer longer than the port's deadline."""

    name = "draft deadlines"

    def __init__(self, reviews: HumanReviewPort, deadline: Deadline, cancel: CancelTask) -> None:
        self._reviews = reviews
        self._deadline = deadline
        self._cancel = cancel
        #: where the last sweep stopped in a run of due drafts longer than a batch
        self._after: ReviewCursor | None = None

    async def sweep(self, now: datetime) -> int:
        """The due drafts, oldest first, at most a batch a sweep. Every draft has the same
        deadline, so the due ones are the oldest: the walk stops at the first draft not yet
        due. Most sweeps find none, which the oldest draft alone tells. The next sweep goes on
        after the last draft this one read, so drafts that stay pending (their task busy)
        hold up none after them; a walk that reaches a draft not due, or the end, starts
        over from the oldest at the next sweep."""
        due = iso(now)
        handled = 0
        limit = 1 if self._after is None else BATCH
        while True:
            page = await self._reviews.pending(limit, self._after)
            for review in page:
                expires_at = draft_expires_at(review, self._deadline)
                if expires_at is None or expires_at > due:
                    self._after = None
                    return handled
                if await self._apply(review):
                    handled += 1
            if len(page) < limit:
                self._after = None
                return handled
            self._after = ReviewCursor.after(page[-1])
            if limit == BATCH:
                return handled
            limit = BATCH

    async def _apply(self, review: Review) -> bool:
        then = self._deadline.then
        if isinstance(then, Cancel):
            try:
                await self._cancel(review.task_id, review.context_id)
            except A2AError as exc:
                log.info("expired draft %s: task not canceled now: %s", review.id, exc.message)
                return False
            return True
        message = then.message if isinstance(then, Reject) else Reject().message
        try:  # ``decide`` takes a pending review once, whichever replica asks first
            await self._reviews.decide(
                review.id, Decision("reject", message=message, by=DEADLINE_REVIEWER))
        except ReviewClosedError:
            return False
        return True
