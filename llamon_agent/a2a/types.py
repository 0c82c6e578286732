"""A2A v0.3 wire types (camelCase on the wire, snake_case in Python).

Inbound objects are validated once, strictly, at the JSON-RPC edge (``server/jsonrpc.py``);
everything inside the SDK works on these typed objects. ``to_wire()`` gives the JSON shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "INTERRUPTED_STATES",
    "RUNNING_STATES",
    "TERMINAL_STATES",
    "Artifact",
    "DataPart",
    "DeleteTaskPushNotificationConfigParams",
    "FileContent",
    "FilePart",
    "GetTaskPushNotificationConfigParams",
    "ListTaskPushNotificationConfigParams",
    "Message",
    "MessageSendConfiguration",
    "MessageSendParams",
    "Part",
    "PushNotificationAuthenticationInfo",
    "PushNotificationConfig",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskIdParams",
    "TaskPushNotificationConfig",
    "TaskQueryParams",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "TextPart",
    "WireModel",
    "is_base64",
]

TaskState = Literal[
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "canceled",
    "failed",
    "rejected",
    "unknown",
]
# the states are defined here once; stores build their queries from these sets
TERMINAL_STATES: frozenset[str] = frozenset({"completed", "canceled", "failed", "rejected"})
#: a run is under way (or was, when a stopped process left it): recovery picks these up
RUNNING_STATES: frozenset[str] = frozenset({"submitted", "working"})
INTERRUPTED_STATES: frozenset[str] = frozenset({"input-required", "auth-required"})


# the standard alphabet or the URL-safe one (ProtoJSON reads both), padded or not
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)(={0,2})")


def is_base64(text: str) -> bool:
    """Whether ``text`` is base64 a decoder reads: one alphabet, and a length (with its
    padding, if any) that whole bytes make."""
    match = _BASE64.fullmatch(text)
    if match is None:
        return False
    padding = len(match.group(1))
    body = len(text) - padding
    if padding:
        return len(text) % 4 == 0 and body % 4 == 4 - padding
    return body % 4 != 1


_set_attribute = object.__setattr__  # what pydantic's own copy sets its attributes with


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="ignore",
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """pydantic's ``model_copy``, the shallow one in 60% of its time: every change the
        runtime makes to a task or message is one, about eight a HITL round trip
        (bench/README.md, "Speed, round thirty"). pydantic's copies three attributes with
        ``copy.copy``; two of them are always ``None`` here, since wire models ignore extra
        keys and hold no private attributes (``tests/test_wire_copy.py`` checks every wire
        model for both). The four instance attributes set below are those pydantic's own
        ``__copy__`` sets (pydantic is capped below 3 in pyproject.toml for them)."""
        if deep:
            return super().model_copy(update=update, deep=True)
        cls = type(self)
        copied = cls.__new__(cls)
        values = self.__dict__.copy()
        fields_set = self.__pydantic_fields_set__.copy()
        if update:
            values.update(update)  # as pydantic's: no validation, unknown keys kept
            fields_set.update(update.keys())
        _set_attribute(copied, "__dict__", values)
        _set_attribute(copied, "__pydantic_extra__", None)
        _set_attribute(copied, "__pydantic_fields_set__", fields_set)
        _set_attribute(copied, "__pydantic_private__", None)
        return copied

    def to_json(self) -> bytes:
        """The wire JSON, serialised by pydantic-core in one pass (no intermediate dict)."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True)


class TextPart(WireModel):
    kind: Literal["text"]
    text: str
    metadata: dict[str, Any] | None = None


class FileContent(WireModel):
    name: str | None = None
    mime_type: str | None = None
    bytes: str | None = None
    uri: str | None = None

    @model_validator(mode="after")
    def _exactly_one_source(self) -> FileContent:
        if (self.bytes is None) == (self.uri is None):
            raise ValueError("a file needs exactly one of 'bytes' or 'uri'")
        return self


class FilePart(WireModel):
    kind: Literal["file"]
    file: FileContent
    metadata: dict[str, Any] | None = None


class DataPart(WireModel):
    kind: Literal["data"]
    data: dict[str, Any]
    metadata: dict[str, Any] | None = None


Part = Annotated[TextPart | FilePart | DataPart, Field(discriminator="kind")]


class Message(WireModel):
    kind: Literal["message"] = "message"
    message_id: Annotated[str, Field(min_length=1)]
    role: Literal["user", "agent"]
    parts: Annotated[list[Part], Field(min_length=1)]
    task_id: str | None = None
    context_id: str | None = None
    reference_task_ids: list[str] | None = None
    extensions: list[str] | None = None
    metadata: dict[str, Any] | None = None

    def text(self) -> str:
        """The text parts joined by newlines (what a graph sees as the human's words)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    def data(self) -> list[dict[str, Any]]:
        return [p.data for p in self.parts if isinstance(p, DataPart)]


class TaskStatus(WireModel):
    state: TaskState
    message: Message | None = None
    timestamp: str | None = None


class Artifact(WireModel):
    artifact_id: str
    parts: Annotated[list[Part], Field(min_length=1)]
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None


class Task(WireModel):
    kind: Literal["task"] = "task"
    id: str
    context_id: str
    status: TaskStatus
    history: list[Message] | None = None
    artifacts: list[Artifact] | None = None
    metadata: dict[str, Any] | None = None


class TaskStatusUpdateEvent(WireModel):
    kind: Literal["status-update"] = "status-update"
    task_id: str
    context_id: str
    status: TaskStatus
    final: bool
    metadata: dict[str, Any] | None = None


class TaskArtifactUpdateEvent(WireModel):
    kind: Literal["artifact-update"] = "artifact-update"
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: dict[str, Any] | None = None


class PushNotificationAuthenticationInfo(WireModel):
    schemes: list[str]
    credentials: str | None = None


class PushNotificationConfig(WireModel):
    url: str
    id: str | None = None
    token: str | None = None
    authentication: PushNotificationAuthenticationInfo | None = None


class MessageSendConfiguration(WireModel):
    accepted_output_modes: list[str] | None = None
    history_length: Annotated[int, Field(ge=0)] | None = None
    push_notification_config: PushNotificationConfig | None = None
    blocking: bool | None = None


class MessageSendParams(WireModel):
    message: Message
    configuration: MessageSendConfiguration | None = None
    metadata: dict[str, Any] | None = None


class TaskQueryParams(WireModel):
    id: str
    history_length: Annotated[int, Field(ge=0)] | None = None
    metadata: dict[str, Any] | None = None


class TaskIdParams(WireModel):
    id: str
    metadata: dict[str, Any] | None = None


class TaskPushNotificationConfig(WireModel):
    """``tasks/pushNotificationConfig/set`` params, and the result of set, get and list."""

    task_id: str
    push_notification_config: PushNotificationConfig


class GetTaskPushNotificationConfigParams(WireModel):
    """Also the older ``TaskIdParams`` form (no ``pushNotificationConfigId``)."""

    id: str
    push_notification_config_id: str | None = None
    metadata: dict[str, Any] | None = None


class ListTaskPushNotificationConfigParams(WireModel):
    id: str
    metadata: dict[str, Any] | None = None


class DeleteTaskPushNotificationConfigParams(WireModel):
    id: str
    push_notification_config_id: str
    metadata: dict[str, Any] | None = None
