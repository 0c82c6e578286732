"""One encoding of a :class:`StoredTask`, shared by every persistent store.

A row that cannot be decoded (written by a bug, edited by hand, cut short on disk) raises
``UnreadableTaskError`` naming the task, so the error stays with that one task: a read of it
answers a clear error, and recovery fails or skips it and goes on with the others.

The server-side facts of a task (``StoredTask.pending``, ``collected``, ``answered``,
``added_reviews``, ``space``, the owner's, absent for ``anonymous``, ``resuming``, absent
between turns, and ``reviews_opened``, absent when false) are one JSON object in
the ``extra`` column. Version 2 writes
``{"v": 2, ...}`` with the field names; a row without ``"v"`` was written by the release before
typed fields (keys ``pending``, ``collected_answers``, ``answered``, ``interrupt_on``) and is read
as such, so an old database needs no migration step: a row is rewritten in version 2 the next
time its task is saved (docs/storage.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import orjson
from pydantic import ValidationError

from ..a2a.types import Task
from ..core.deadlines import expiry_from_json, expiry_to_json
from ..core.principal import ANONYMOUS
from ..errors import UnreadableTaskError
from ..human_review.node import is_review_wait
from . import kept_tasks
from .base import Expiry, ListedTask, Pending, StoredTask, listed_task
from .offload import LARGE_BYTES


def encode_task(record: StoredTask) -> bytes:
    """The task's JSON as stored (a large task's from its kept version, kept_tasks.py)."""
    return kept_tasks.KEPT.encode(record.task)


def forget(task_ids: Iterable[str]) -> None:
    """Deleted tasks: their decoded objects go too (a deletion leaves none of a task behind)."""
    kept = kept_tasks.KEPT
    for task_id in task_ids:
        kept.forget(task_id)


_VERSION = 2
# the key each field had in the untyped ``extra`` object of version 1
_V1_KEYS = {"pending": "pending", "collected": "collected_answers", "answered": "answered",
            "added_reviews": "interrupt_on"}


def encode_extra(record: StoredTask) -> bytes:
    facts: dict[str, Any] = {"v": _VERSION}
    if record.pending:
        facts["pending"] = [{"id": p.id, "value": p.value} for p in record.pending]
    for name in ("collected", "answered", "added_reviews"):
        if value := getattr(record, name):
            facts[name] = value
    if record.space != ANONYMOUS:
        facts["space"] = record.space
    if record.resuming is not None:
        facts["resuming"] = record.resuming
    if record.deadline is not None:
        deadline = record.deadline
        facts["deadline"] = {"interrupt": deadline.interrupt_id, "at": deadline.at,
                             "then": expiry_to_json(deadline.then)}
    if record.expired:
        facts["expired"] = list(record.expired)
    if record.reviews_opened:
        facts["reviews_opened"] = True
    return orjson.dumps(facts)


def _facts(extra: Any) -> dict[str, Any]:
    """The typed fields of a decoded ``extra`` object of either version; raises ``ValueError``
    for a shape neither version writes."""
    if not isinstance(extra, dict):
        raise ValueError("extra is not an object")
    version = extra.get("v", 1)
    if version not in (1, _VERSION):
        raise ValueError(f"extra has unknown version {version!r}")
    keys = _V1_KEYS if version == 1 else {name: name for name in _V1_KEYS}
    pending = extra.get(keys["pending"], [])
    if not isinstance(pending, list) or not all(
        isinstance(p, dict) and isinstance(p.get("id"), str) and "value" in p for p in pending
    ):
        raise ValueError("extra.pending is not a list of {id, value}")
    facts: dict[str, Any] = {"pending": tuple(Pending(p["id"], p["value"]) for p in pending)}
    for name in ("collected", "answered", "added_reviews"):
        value = extra.get(keys[name], {})
        if not isinstance(value, dict):
            raise ValueError(f"extra.{keys[name]} is not an object")
        facts[name] = value
    if not all(isinstance(v, str) for v in facts["answered"].values()):
        raise ValueError("extra.answered maps an interrupt to a non-string")
    space = extra.get("space", ANONYMOUS)  # rows from before authentication: anonymous
    if not isinstance(space, str) or not space:
        raise ValueError("extra.space is not a non-empty string")
    facts["space"] = space
    resuming = extra.get("resuming")
    if resuming is not None and not isinstance(resuming, dict):
        raise ValueError("extra.resuming is not an object")
    facts["resuming"] = resuming
    facts["deadline"] = _deadline(extra.get("deadline"))
    expired = extra.get("expired", [])
    if not isinstance(expired, list) or not all(isinstance(i, str) for i in expired):
        raise ValueError("extra.expired is not a list of interrupt ids")
    facts["expired"] = tuple(expired)
    opened = extra.get("reviews_opened")
    if opened is None:  # absent, or a row of before the field: a task waiting for a reviewer
        # had opened a review (one stored by a later version waits only after saying so)
        opened = any(is_review_wait(p.value) for p in facts["pending"])
    elif not isinstance(opened, bool):
        raise ValueError("extra.reviews_opened is not a boolean")
    facts["reviews_opened"] = opened
    return facts


def _deadline(value: Any) -> Expiry | None:
    if value is None:
        return None
    if not (isinstance(value, dict) and isinstance(value.get("interrupt"), str)
            and isinstance(value.get("at"), str)):
        raise ValueError("extra.deadline is not {interrupt, at, then}")
    return Expiry(value["interrupt"], value["at"], expiry_from_json(value.get("then")))


def decode(
    task_json: bytes | str,
    agent_id: str,
    event_seq: int,
    pending_interrupt: str | None,
    reask_count: int,
    extra_json: bytes | str | None,
    *,
    task_id: str | None = None,
    history: int | None = None,
) -> StoredTask:
    """The stored task of a row. ``task_id``: its id, named by the error, and by which a large
    task is kept (kept_tasks.py). ``history``: a listing shows at most the task's last
    ``history`` messages, so a large one not kept is decoded with those alone (nothing kept):
    a listing that showed no history had decoded each task whole, a page of 100 tasks of 1.3
    MB taking 4.6 s and holding 1 GB (bench/README.md, "Speed, round thirty-six")."""
    try:
        facts = _facts(orjson.loads(extra_json) if extra_json else {})
        kept = kept_tasks.KEPT
        if task_id is None or len(task_json) < kept.min_bytes:
            task = Task.model_validate_json(task_json)
        elif history is None:
            task = kept.decode(task_id, task_json)
        else:
            recalled = kept.recall(task_id, task_json)
            task = (Task.model_validate_json(_last_messages(task_json, history))
                    if recalled is None else recalled)
    except (ValueError, ValidationError, RecursionError) as exc:  # orjson's error is a ValueError
        raise UnreadableTaskError(task_id, str(exc)) from None
    return StoredTask(
        task=task,
        agent_id=agent_id,
        event_seq=event_seq,
        pending_interrupt=pending_interrupt,
        reask_count=reask_count,
        stored_bytes=len(task_json) + len(extra_json or b""),
        **facts,
    )


async def decode_page(ids: Sequence[str], rows: Iterable[Sequence[Any]],
                      history: int | None) -> list[ListedTask]:
    """A listing's page: ``rows`` (a task row's columns as SQLite's and PostgreSQL's stores
    select them, ``task, agent_id, event_seq, pending_interrupt, reask_count, extra, id,
    context_id, updated``, in any order) decoded in the order of ``ids``, each with ``history``
    (:func:`decode`). A row missing (deleted since the page was chosen) or unreadable is left
    out; before a large one the ready requests run (decoding it takes the loop)."""
    by_id = {row[6]: row for row in rows}
    found = []
    for task_id in ids:
        row = by_id.get(task_id)
        if row is None:
            continue
        if len(row[0]) >= LARGE_BYTES:
            await asyncio.sleep(0)
        listed = listed_task(partial(decode, *row[:6], task_id=task_id, history=history),
                             task_id, float(row[8]))
        if listed is not None:
            found.append(listed)
    return found


def _last_messages(task_json: bytes | str, history: int) -> bytes:
    """The task's JSON with its last ``history`` messages alone (none for 0), to be validated
    from JSON as every stored task is; ``ValueError`` if it is not JSON orjson can write."""
    value = orjson.loads(task_json)
    if isinstance(value, dict) and isinstance(messages := value.get("history"), list):
        if history:
            value["history"] = messages[-history:]
        else:
            del value["history"]
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:  # a TypeError: nested deeper than orjson writes
        raise ValueError(str(exc)) from None
