"""A2A v1.0 wire types: the JSON-RPC params of the v1.0 methods, as ProtoJSON of
``a2a.proto`` (v1.0.1; a byte-identical copy is in ``tests/spec/v1.0/``).

Validated once at the JSON-RPC edge, like the v0.3 types (``a2a/types.py``), then converted to
those (``a2a/v1_convert.py``): the runtime knows one task model, whichever version a client
speaks. ProtoJSON parsers accept a field's JSON name and its proto name, an enum's name or its
number, and an integer as a JSON number or a decimal string; so do these models.
``tests/test_spec_copy.py`` checks every field here against the proto.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from .types import WireModel, is_base64

__all__ = [
    "ROLES",
    "TASK_STATES",
    "AuthenticationInfo",
    "CancelTaskRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "ListTaskPushNotificationConfigsRequest",
    "ListTasksRequest",
    "Message",
    "Part",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SubscribeToTaskRequest",
    "TaskPushNotificationConfig",
]

#: ``TaskState`` of a2a.proto by number; the v0.3 name of each is in ``v1_convert``
TASK_STATES: tuple[str, ...] = (
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
)
ROLES: tuple[str, ...] = ("ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT")
_INT32_MAX = 2**31 - 1


def _enum(names: tuple[str, ...]) -> BeforeValidator:
    """An enum by name or number (ProtoJSON accepts both), always held as its name."""

    def by_name(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("expected an enum name or number")
        if isinstance(value, int):
            if 0 <= value < len(names):
                return names[value]
            raise ValueError(f"{value} is not a value of this enum")
        if isinstance(value, str) and value not in names:
            raise ValueError(f"{value[:64]!r} is not one of " + ", ".join(names))
        return value

    return BeforeValidator(by_name)


def _int32(value: Any) -> Any:
    """An int32 as a JSON number or a decimal string (ProtoJSON writes both)."""
    if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) <= 11:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _INT32_MAX:
        raise ValueError("out of the int32 range")
    return value


TaskStateName = Annotated[str, _enum(TASK_STATES)]
RoleName = Annotated[str, _enum(ROLES)]
Int32 = Annotated[int, BeforeValidator(_int32)]


class _Request(WireModel):
    #: this server serves no tenants (its card names none); a tenant is refused at the edge
    tenant: str = ""


class Part(WireModel):
    """Exactly one of ``text``, ``raw`` (base64), ``url`` or ``data`` (any JSON value)."""

    text: str | None = None
    raw: str | None = None
    url: str | None = None
    data: Any = None
    metadata: dict[str, Any] | None = None
    filename: str | None = None
    media_type: str | None = None

    @model_validator(mode="after")
    def _exactly_one_content(self) -> Part:
        given = [n for n in ("text", "raw", "url", "data") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("a part holds exactly one of 'text', 'raw', 'url' or 'data'"
                             + (f" (it has {', '.join(given)})" if given else ""))
        if self.raw is not None and not is_base64(self.raw):
            raise ValueError("'raw' must be base64 (standard or URL-safe)")
        return self


class Message(WireModel):
    message_id: Annotated[str, Field(min_length=1)]
    role: RoleName
    parts: Annotated[list[Part], Field(min_length=1)]
    context_id: str = ""
    task_id: str = ""
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None

    @model_validator(mode="after")
    def _known_role(self) -> Message:
        if self.role == "ROLE_UNSPECIFIED":
            raise ValueError("role must be ROLE_USER or ROLE_AGENT")
        return self


class AuthenticationInfo(WireModel):
    scheme: Annotated[str, Field(min_length=1)]
    credentials: str = ""


class TaskPushNotificationConfig(_Request):
    """``CreateTaskPushNotificationConfig``'s params, and the config of a message."""

    id: str = ""
    task_id: str = ""
    url: Annotated[str, Field(min_length=1)]
    token: str = ""
    authentication: AuthenticationInfo | None = None


class SendMessageConfiguration(WireModel):
    accepted_output_modes: list[str] | None = None
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: Annotated[Int32, Field(ge=0)] | None = None
    return_immediately: bool = False


class SendMessageRequest(_Request):
    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None


class GetTaskRequest(_Request):
    id: Annotated[str, Field(min_length=1)]
    history_length: Annotated[Int32, Field(ge=0)] | None = None


class ListTasksRequest(_Request):
    context_id: str = ""
    status: TaskStateName = "TASK_STATE_UNSPECIFIED"
    page_size: Annotated[Int32, Field(ge=1, le=100)] | None = None
    page_token: str = ""
    history_length: Annotated[Int32, Field(ge=0)] | None = None
    #: a ``google.protobuf.Timestamp``: RFC 3339 text
    status_timestamp_after: str | None = None
    include_artifacts: bool = False


class CancelTaskRequest(_Request):
    id: Annotated[str, Field(min_length=1)]
    metadata: dict[str, Any] | None = None


class SubscribeToTaskRequest(_Request):
    id: Annotated[str, Field(min_length=1)]


class GetTaskPushNotificationConfigRequest(_Request):
    task_id: Annotated[str, Field(min_length=1)]
    id: Annotated[str, Field(min_length=1)]


class DeleteTaskPushNotificationConfigRequest(GetTaskPushNotificationConfigRequest):
    pass


class ListTaskPushNotificationConfigsRequest(_Request):
    task_id: Annotated[str, Field(min_length=1)]
    page_size: Annotated[Int32, Field(ge=0)] = 0
    page_token: str = ""


class GetExtendedAgentCardRequest(_Request):
    pass
