"""The bound on what one task stores (``Limits.max_task_bytes``), checked before a message is
accepted.

Every message a task accepts stays in its history, and an agent that keeps its answers (the
``until-done`` example) holds them in its graph state too; every turn then reads, encodes and
writes all of it. Without a bound, sixty 1 MiB answers to one task made every turn of it cost
seconds and stalled every other request of the server (docs/storage.md). Two sizes are bounded:

* the task's row, as the store encodes it, with the message in it;
* for a message that starts a new task, the graph state of its context (the thread's latest
  checkpoint), when the checkpointer can tell its size cheaply (``InlineSqliteSaver``) and the
  context may have one (the caller passes no meter for a context with no stored task whose
  turn holds its checkpoint writes: ``stores/turn_writes.py``). The state outlives a
  task: each new task of a context adds its first message to the thread's ``messages``, so
  without this bound one context could grow without end, one small task at a time. An answer
  to a waiting task is not refused for the state's size, so that a question asked can always
  be answered (the row bound still holds).

The check runs on the router's copy of the task, so a refused message leaves nothing behind:
nothing is stored or run, and a question that was waiting still waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..a2a.types import Message, TextPart
from ..core.bounds import Limits
from ..errors import LimitExceededError
from ..stores.base import StoredTask
from ..stores.size import encoded_size, extra_size

__all__ = ["SizedCheckpointer", "check_task_bytes", "state_meter"]

#: a new task whose one message is plain text of at most this many characters and parts
#: (64 each) encodes in microseconds: other requests need not go first
SHORT_FIRST_MESSAGE = 16_384

#: a thread's graph state in bytes, by thread id (``SizedCheckpointer.thread_bytes``)
StateMeter = Callable[[str], int]


@runtime_checkable
class SizedCheckpointer(Protocol):
    def thread_bytes(self, thread_id: str) -> int:
        """Bytes of the thread's latest checkpoint as stored (0 without one)."""
        ...


def state_meter(checkpointer: Any) -> StateMeter | None:
    """How to measure a thread's graph state with ``checkpointer``, if it can tell cheaply:
    decided once, since a runtime-checkable protocol's check costs 5 us."""
    return checkpointer.thread_bytes if isinstance(checkpointer, SizedCheckpointer) else None


async def check_task_bytes(record: StoredTask, limits: Limits,
                           thread_bytes: StateMeter | None = None) -> None:
    """Refuse (``LimitExceededError``, -32602) a message that would make its task's row larger
    than ``limits.max_task_bytes``, or that would start a new task in a context whose graph
    state already holds more than that."""
    maximum = limits.max_task_bytes
    short = _short_first_message(record)
    if record.stored_bytes and record.stored_bytes + _growth_bound(record) <= maximum:
        size = 0  # far enough below the bound: no need to encode the whole task again
    elif short and _new_task_bound(record) <= maximum:
        size = 0  # a new task of one short text: its lengths alone keep it below the bound
    else:
        if not short:
            # encoding a large task takes milliseconds of the loop: the requests that are
            # ready go first (routing has just decoded it, so the loop yields between the two)
            await asyncio.sleep(0)
        size = encoded_size(record)
    if size > maximum:
        _refuse(record, f"The task would hold {size} bytes, over the limit of {maximum}: nothing "
                "was stored; send a shorter message, or start a new task", limits)
    starts_task = record.event_seq == 0  # a new task has published nothing yet
    if starts_task and thread_bytes is not None:
        state = thread_bytes(record.context_key)
        if state > maximum:
            _refuse(record, f"The graph state of context {record.context_id} holds {state} bytes, "
                    f"over the limit of {maximum}: nothing was stored; start a new context",
                    limits)


def _short_first_message(record: StoredTask) -> bool:
    """A new task holding one short plain-text message (``SHORT_FIRST_MESSAGE``), told from
    lengths without encoding anything. Not yielding for it keeps a stream's open running up to
    its first save before the response starts (``server/sse_stream.py``): their overlap is
    the idle stream's first event (bench/README.md, "Speed, round twenty-three")."""
    task = record.task
    if record.event_seq or task.artifacts or task.metadata or not task.history:
        return False
    if len(task.history) != 1:
        return False
    message = task.history[0]
    if message.metadata or message.extensions or message.reference_task_ids:
        return False
    length = 0
    for part in message.parts:
        if not isinstance(part, TextPart) or part.metadata:
            return False
        length += len(part.text) + 64
    return length <= SHORT_FIRST_MESSAGE


def _growth_bound(record: StoredTask) -> int:
    """At most how many bytes routing added to the row it read: the answer and the question it
    moved into the history (twice each: an answer is also kept among the collected answers),
    the new status message, and the small bookkeeping of which message answered what."""
    history = record.task.history or []
    moved = sum(_message_bound(m) for m in history[-2:])
    status = record.task.status.message
    return 2 * moved + (_message_bound(status) if status is not None else 0) + 4096


#: JSON bytes one character of a string can take: six for a control character (``\u001f``),
#: at most four (UTF-8) for any other
_BYTES_PER_CHAR = 6
#: JSON bytes of a part around its text (``{"kind":"text","text":""}``, with room to spare)
_PART_BYTES = 64
#: JSON bytes of a message or a task around its strings and parts: keys, kinds, the role, the
#: state, punctuation (about 120 for either), with room to spare
_FRAME_BYTES = 512


def _message_bound(message: Message) -> int:
    """At most the bytes of the message's JSON. A plain-text message (text parts only, no
    metadata, extensions or references: an answer typed by a person) is bounded from its
    lengths, without encoding it (with ``_new_task_bound``, two encodings a HITL round trip
    less and 0.33% of its instructions: bench/README.md, "Speed, round thirty-two"); any other
    is encoded."""
    if message.metadata or message.extensions or message.reference_task_ids:
        return len(message.to_json())
    chars = len(message.message_id) + len(message.task_id or "") + len(message.context_id or "")
    for part in message.parts:
        if type(part) is not TextPart or part.metadata:
            return len(message.to_json())
        chars += len(part.text)
    return _BYTES_PER_CHAR * chars + _PART_BYTES * len(message.parts) + _FRAME_BYTES


def _new_task_bound(record: StoredTask) -> int:
    """At most the bytes of a new task's row whose one message is short plain text
    (``_short_first_message``), from its lengths: its ids, its status, its messages; and its
    server-side facts, encoded (a small object)."""
    task, status = record.task, record.task.status
    chars = len(task.id) + len(task.context_id) + len(status.timestamp or "")
    messages = [*(task.history or []), *([status.message] if status.message else [])]
    return (_BYTES_PER_CHAR * chars + _FRAME_BYTES + sum(map(_message_bound, messages))
            + extra_size(record))


def _refuse(record: StoredTask, message: str, limits: Limits) -> None:
    error = LimitExceededError(
        message, limit="max_task_bytes", field="message", maximum=limits.max_task_bytes
    )
    error.data["contextId"] = record.context_id
    if record.event_seq > 0:  # a stored task (a new one has published nothing yet)
        error.data["taskId"] = record.id
    raise error
