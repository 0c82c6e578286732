"""Builders for the agent's side of the wire: status messages, questions, results.

Constructors validate (pydantic-core does it faster than ``model_construct`` assembles an
object in Python); model instances passed in are taken as they are, not validated again.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..a2a.types import Artifact, DataPart, Message, Part, Task, TaskStatus, TextPart
from ..core.clock import now
from ..core.hitl_graph import public_payload
from ..core.ids import random_id
from ..stores.base import StoredTask
from ..tool_review import catalog
from ..tool_review.payload import REVIEW_SCHEMA, is_review_request

__all__ = ["agent_message", "question_message", "response_copy", "result_artifact", "status"]


def status(state: str, message: Message | None = None) -> TaskStatus:
    return TaskStatus(state=state, message=message, timestamp=now())  # type: ignore[arg-type]


def agent_message(
    parts: list[Part], task_id: str, context_id: str, metadata: dict[str, Any] | None = None
) -> Message:
    return Message(
        message_id=random_id(),
        role="agent",
        parts=parts,
        task_id=task_id,
        context_id=context_id,
        metadata=metadata,
    )


def question_parts(value: Any, language: str | None = None) -> list[Part]:
    """Seed 004's rule D2 (docs/hitl.md §5): ``[text part with the question, data part {"hitl": payload}]``.

    A tool review (``action_requests`` + ``review_configs``) is ``[summary text, data part
    {"hitl": {"schema": "llamon.hitl.review.v1", "action_requests", "review_configs"}}]``, the
    summary in ``language``. A payload that is not an ``{"question": ...}`` mapping (a native
    ``interrupt()`` value) still gets both parts: its text is the string itself or the JSON of
    the value.
    """
    if is_review_request(value):
        actions = value["action_requests"]
        names = ", ".join(str(a.get("name")) if isinstance(a, dict) else "?" for a in actions)
        text = catalog.text("summary", language, names=names)
        hitl = {
            "schema": REVIEW_SCHEMA,
            "action_requests": actions,
            "review_configs": value["review_configs"],
        }
    elif isinstance(value, dict) and isinstance(value.get("question"), str):
        text, hitl = value["question"], value
    elif isinstance(value, str):
        text, hitl = value, {"question": value}
    else:
        text = orjson.dumps(value, default=str).decode()
        hitl = value if isinstance(value, dict) else {"value": value}
    return [
        TextPart(kind="text", text=text),
        DataPart(kind="data", data={"hitl": hitl}),
    ]


def question_message(
    value: Any, interrupt_id: str, task_id: str, context_id: str, *, reask: bool = False,
    language: str | None = None,
) -> Message:
    metadata: dict[str, Any] = {"interruptId": interrupt_id}
    if reask:
        metadata["reask"] = True
    parts = question_parts(public_payload(value), language)
    return agent_message(parts, task_id, context_id, metadata)


def result_artifact(result: Any, texts: list[str]) -> Artifact | None:
    """The turn's output: the ``result`` state value as a data part, then the model's texts."""
    parts: list[Part] = []
    if result is not None:
        data = result if isinstance(result, dict) else {"value": result}
        plain = orjson.loads(orjson.dumps(data, default=str))  # JSON values only, always
        parts.append(DataPart(kind="data", data=plain))
    parts.extend(TextPart(kind="text", text=t) for t in texts)
    if not parts:
        return None
    return Artifact(artifact_id=random_id(), name="result", parts=parts)


def response_copy(record: StoredTask, history_length: int | None = None) -> Task:
    """The response copy of a task; ``historyLength`` never touches what is stored."""
    task = record.task
    if history_length is None or task.history is None:
        return task
    history = task.history[-history_length:] if history_length else None
    return task.model_copy(update={"history": history})
