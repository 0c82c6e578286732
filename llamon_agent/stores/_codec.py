"""One encoding of a :class:`StoredTask`, shared by every persistent store."""

from __future__ import annotations

from typing import Any

import orjson

from ..a2a.types import Task
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
) -> StoredTask:
    extra: dict[str, Any] = orjson.loads(extra_json) if extra_json else {}
    return StoredTask(
        task=Task.model_validate_json(task_json),
        agent_id=agent_id,
        event_seq=event_seq,
        pending_interrupt=pending_interrupt,
        reask_count=reask_count,
        extra=extra,
    )
