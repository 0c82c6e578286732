"""Between A2A v1.0 and v0.3: v1.0 params in, v0.3 typed params out; v0.3 results in, v1.0
wire objects out.

The runtime holds one task model (v0.3's, ``a2a/types.py``), so a question asked over one
version is answered over the other on the same task. What v0.3 cannot hold is refused at the
edge rather than lost quietly: a ``data`` part that is not a JSON object. What v1.0 adds and
v0.3 has no place for is dropped, and docs/versions.md lists it: the ``mediaType`` and
``filename`` of a text or data part.
"""

from __future__ import annotations

import base64
from typing import Any

from ..errors import InvalidParamsError
from . import types as v03
from . import v1
from .types import is_base64

__all__ = [
    "V03_STATE",
    "V1_STATE",
    "message_in",
    "push_config_in",
    "push_config_out",
    "send_params_in",
    "stream_event_out",
    "task_out",
]

V1_STATE: dict[str, str] = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "canceled": "TASK_STATE_CANCELED",
    "failed": "TASK_STATE_FAILED",
    "rejected": "TASK_STATE_REJECTED",
    "unknown": "TASK_STATE_UNSPECIFIED",
}
V03_STATE: dict[str, str] = {name: state for state, name in V1_STATE.items()}
_V1_ROLE = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
_V03_ROLE = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}


# ---------------------------------------------------------------------------- in (v1.0 -> v0.3)


def _part_in(part: v1.Part, field: str) -> v03.TextPart | v03.FilePart | v03.DataPart:
    if part.text is not None:
        return v03.TextPart(kind="text", text=part.text, metadata=part.metadata)
    if part.data is not None:
        if not isinstance(part.data, dict):
            raise InvalidParamsError(
                f"{field}.data must be a JSON object on this server (v0.3 data parts hold "
                "objects, and a task is read in both versions)",
                data={"errors": [{"field": f"{field}.data",
                                  "message": "must be a JSON object"}]},
            )
        return v03.DataPart(kind="data", data=part.data, metadata=part.metadata)
    source = {"bytes": part.raw} if part.raw is not None else {"uri": part.url}
    content = v03.FileContent(name=part.filename or None, mime_type=part.media_type or None,
                              **source)
    return v03.FilePart(kind="file", file=content, metadata=part.metadata)


def message_in(message: v1.Message, field: str = "params.message") -> v03.Message:
    return v03.Message(
        message_id=message.message_id,
        role=_V03_ROLE[message.role],  # type: ignore[arg-type]  # ROLE_UNSPECIFIED is refused
        parts=[_part_in(p, f"{field}.parts[{i}]") for i, p in enumerate(message.parts)],
        context_id=message.context_id or None,
        task_id=message.task_id or None,
        metadata=message.metadata,
        extensions=message.extensions or None,
        reference_task_ids=message.reference_task_ids or None,
    )


def push_config_in(config: v1.TaskPushNotificationConfig) -> v03.PushNotificationConfig:
    auth = config.authentication
    return v03.PushNotificationConfig(
        url=config.url,
        id=config.id or None,
        token=config.token or None,
        authentication=None if auth is None else v03.PushNotificationAuthenticationInfo(
            schemes=[auth.scheme], credentials=auth.credentials or None),
    )


def send_params_in(request: v1.SendMessageRequest) -> v03.MessageSendParams:
    config = request.configuration
    return v03.MessageSendParams(
        message=message_in(request.message),
        metadata=request.metadata,
        configuration=None if config is None else v03.MessageSendConfiguration(
            accepted_output_modes=config.accepted_output_modes or None,
            history_length=config.history_length,
            blocking=not config.return_immediately,
            push_notification_config=None if config.task_push_notification_config is None
            else push_config_in(config.task_push_notification_config),
        ),
    )


# ---------------------------------------------------------------------------- out (v0.3 -> v1.0)


def _part_out(part: v03.TextPart | v03.FilePart | v03.DataPart) -> dict[str, Any]:
    out: dict[str, Any]
    if isinstance(part, v03.TextPart):
        out = {"text": part.text}
    elif isinstance(part, v03.DataPart):
        out = {"data": part.data}
    else:
        file = part.file
        if file.bytes is None:
            out = {"url": file.uri}
        elif is_base64(file.bytes):
            out = {"raw": file.bytes}
        else:  # stored before the edge checked base64: its text is what the bytes are
            out = {"raw": base64.b64encode(file.bytes.encode()).decode()}
        if file.mime_type:
            out["mediaType"] = file.mime_type
        if file.name:
            out["filename"] = file.name
    if part.metadata is not None:
        out["metadata"] = part.metadata
    return out


def _message_out(message: v03.Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "messageId": message.message_id,
        "role": _V1_ROLE[message.role],
        "parts": [_part_out(p) for p in message.parts],
    }
    if message.context_id is not None:
        out["contextId"] = message.context_id
    if message.task_id is not None:
        out["taskId"] = message.task_id
    if message.metadata is not None:
        out["metadata"] = message.metadata
    if message.extensions:
        out["extensions"] = message.extensions
    if message.reference_task_ids:
        out["referenceTaskIds"] = message.reference_task_ids
    return out


def _status_out(status: v03.TaskStatus) -> dict[str, Any]:
    out: dict[str, Any] = {"state": V1_STATE[status.state]}
    if status.message is not None:
        out["message"] = _message_out(status.message)
    if status.timestamp is not None:
        out["timestamp"] = status.timestamp
    return out


def _artifact_out(artifact: v03.Artifact) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactId": artifact.artifact_id,
                           "parts": [_part_out(p) for p in artifact.parts]}
    for key, value in (("name", artifact.name), ("description", artifact.description),
                       ("metadata", artifact.metadata), ("extensions", artifact.extensions)):
        if value is not None:
            out[key] = value
    return out


def task_out(task: v03.Task, *, artifacts: bool = True) -> dict[str, Any]:
    """A v1.0 ``Task``; ``artifacts=False`` omits the field entirely (``ListTasks`` without
    ``includeArtifacts``)."""
    out: dict[str, Any] = {"id": task.id, "contextId": task.context_id,
                           "status": _status_out(task.status)}
    if artifacts and task.artifacts is not None:
        out["artifacts"] = [_artifact_out(a) for a in task.artifacts]
    if task.history is not None:
        out["history"] = [_message_out(m) for m in task.history]
    if task.metadata is not None:
        out["metadata"] = task.metadata
    return out


def _status_update_out(event: v03.TaskStatusUpdateEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"taskId": event.task_id, "contextId": event.context_id,
                           "status": _status_out(event.status)}
    if event.metadata is not None:
        out["metadata"] = event.metadata
    return out


def _artifact_update_out(event: v03.TaskArtifactUpdateEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"taskId": event.task_id, "contextId": event.context_id,
                           "artifact": _artifact_out(event.artifact)}
    if event.append is not None:
        out["append"] = event.append
    if event.last_chunk is not None:
        out["lastChunk"] = event.last_chunk
    if event.metadata is not None:
        out["metadata"] = event.metadata
    return out


def stream_event_out(payload: Any) -> dict[str, Any]:
    """A ``StreamResponse`` (also a ``SendMessageResponse`` for a task or a message)."""
    if isinstance(payload, v03.Task):
        return {"task": task_out(payload)}
    if isinstance(payload, v03.TaskStatusUpdateEvent):
        return {"statusUpdate": _status_update_out(payload)}
    if isinstance(payload, v03.TaskArtifactUpdateEvent):
        return {"artifactUpdate": _artifact_update_out(payload)}
    if isinstance(payload, v03.Message):
        return {"message": _message_out(payload)}
    raise TypeError(f"no v1.0 form for {type(payload).__name__}")


def push_config_out(config: v03.TaskPushNotificationConfig) -> dict[str, Any]:
    inner = config.push_notification_config
    out: dict[str, Any] = {"taskId": config.task_id, "url": inner.url}
    if inner.id is not None:
        out["id"] = inner.id
    if inner.token is not None:
        out["token"] = inner.token
    auth = inner.authentication
    if auth is not None and auth.schemes:
        out["authentication"] = {"scheme": auth.schemes[0]}
        if auth.credentials is not None:
            out["authentication"]["credentials"] = auth.credentials
    return out
