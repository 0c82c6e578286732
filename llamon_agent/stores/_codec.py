"""One encoding of a :class:`StoredTask`, shared by every persistent store.

A row that cannot be decoded (written by a bug, edited by hand, cut short on disk) raises
``UnreadableTaskError`` naming the task, so the error stays with that one task: a read of it
answers a clear error, and recovery fails or skips it and goes on with the others.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError

from ..a2a.types import Task
from ..errors import UnreadableTaskError
from .base import StoredTask


def encode_task(record: StoredTask) -> bytes:
    return record.task.to_json()


def encode_extra(record: StoredTask) -> bytes:
    return orjson.dumps(record.extra)


def decode(
    task_json: bytes | str,
    agent_id: str,
    event_seq: int,
    pending_interrupt: str | None,
    reask_count: int,
    extra_json: bytes | str | None,
    *,
    task_id: str | None = None,
) -> StoredTask:
    try:
        extra: Any = orjson.loads(extra_json) if extra_json else {}
        if not isinstance(extra, dict):
            raise ValueError("extra is not an object")
        task = Task.model_validate_json(task_json)
    except (ValueError, ValidationError, RecursionError) as exc:  # orjson's error is a ValueError
        raise UnreadableTaskError(task_id, str(exc)) from None
    return StoredTask(
        task=task,
        agent_id=agent_id,
        event_seq=event_seq,
        pending_interrupt=pending_interrupt,
        reask_count=reask_count,
        extra=extra,
    )
