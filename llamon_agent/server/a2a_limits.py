"""The edge limits applied to validated A2A params: every client value in them, by its path.

The JSON-RPC edge calls :func:`check_params` once per request, after the envelope and the
params' shape are validated, so a violation is ``-32602`` naming the limit and the field, and
nothing is routed, stored or run.
"""

from __future__ import annotations

from typing import Any

from ..a2a.types import (
    DataPart,
    DeleteTaskPushNotificationConfigParams,
    FilePart,
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigParams,
    Message,
    MessageSendParams,
    PushNotificationConfig,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    is_base64,
)
from ..core.bounds import Limits, check_id, check_text, check_value
from ..errors import InvalidParamsError, LimitExceededError

__all__ = ["check_message", "check_params", "check_push_config"]


def check_params(params: Any, limits: Limits) -> None:
    if isinstance(params, MessageSendParams):
        check_message(params.message, limits, "params.message")
        _metadata(params.metadata, limits, "params.metadata")
        config = params.configuration
        if config is not None and config.accepted_output_modes is not None:
            if len(config.accepted_output_modes) > limits.max_parts:
                raise LimitExceededError(
                    f"params.configuration.acceptedOutputModes has more than {limits.max_parts}"
                    " entries", limit="max_parts", field="params.configuration.acceptedOutputModes",
                    maximum=limits.max_parts,
                )
            for i, mode in enumerate(config.accepted_output_modes):
                check_id(mode, limits, f"params.configuration.acceptedOutputModes[{i}]")
        if config is not None and config.push_notification_config is not None:
            check_push_config(config.push_notification_config, limits,
                              "params.configuration.pushNotificationConfig")
    elif isinstance(params, TaskPushNotificationConfig):
        check_id(params.task_id, limits, "params.taskId")
        check_push_config(params.push_notification_config, limits,
                          "params.pushNotificationConfig")
    elif isinstance(params, (TaskQueryParams, TaskIdParams, GetTaskPushNotificationConfigParams,
                             ListTaskPushNotificationConfigParams,
                             DeleteTaskPushNotificationConfigParams)):
        check_id(params.id, limits, "params.id")
        _metadata(params.metadata, limits, "params.metadata")
        config_id = getattr(params, "push_notification_config_id", None)
        check_id(config_id, limits, "params.pushNotificationConfigId")


def check_push_config(config: PushNotificationConfig, limits: Limits, field: str) -> None:
    """A webhook config: its url, id, token and authentication, each by its own bound (what
    the webhook may be is the push service's check, ``push/guard.py``)."""
    _chars(config.url, limits.max_url_chars, "max_url_chars", f"{field}.url")
    check_id(config.id, limits, f"{field}.id")
    if config.token is not None:
        _chars(config.token, limits.max_token_chars, "max_token_chars", f"{field}.token")
    authentication = config.authentication
    if authentication is None:
        return
    where = f"{field}.authentication"
    if len(authentication.schemes) > limits.max_parts:
        raise LimitExceededError(
            f"{where}.schemes has more than {limits.max_parts} entries",
            limit="max_parts", field=f"{where}.schemes", maximum=limits.max_parts,
        )
    for i, scheme in enumerate(authentication.schemes):
        check_id(scheme, limits, f"{where}.schemes[{i}]")
    if authentication.credentials is not None:
        _chars(authentication.credentials, limits.max_token_chars, "max_token_chars",
               f"{where}.credentials")


def _chars(text: str, maximum: int, limit: str, field: str) -> None:
    if len(text) > maximum:
        raise LimitExceededError(
            f"{field} has {len(text)} characters, over the limit of {maximum}",
            limit=limit, field=field, maximum=maximum,
        )


def check_message(message: Message, limits: Limits, field: str) -> None:
    """A message a client sends: its ids, part count, each part's size, every client value."""
    check_id(message.message_id, limits, f"{field}.messageId")
    check_id(message.context_id, limits, f"{field}.contextId")
    check_id(message.task_id, limits, f"{field}.taskId")
    for name, values in (("referenceTaskIds", message.reference_task_ids),
                         ("extensions", message.extensions)):
        if values is None:
            continue
        if len(values) > limits.max_parts:
            raise LimitExceededError(
                f"{field}.{name} has more than {limits.max_parts} entries",
                limit="max_parts", field=f"{field}.{name}", maximum=limits.max_parts,
            )
        for i, value in enumerate(values):
            check_id(value, limits, f"{field}.{name}[{i}]")
    if len(message.parts) > limits.max_parts:
        raise LimitExceededError(
            f"{field}.parts has {len(message.parts)} parts, over the limit of {limits.max_parts}",
            limit="max_parts", field=f"{field}.parts", maximum=limits.max_parts,
        )
    _metadata(message.metadata, limits, f"{field}.metadata")
    for i, part in enumerate(message.parts):
        where = f"{field}.parts[{i}]"
        _metadata(part.metadata, limits, f"{where}.metadata")
        if isinstance(part, DataPart):
            check_value(part.data, limits, f"{where}.data")
        elif isinstance(part, FilePart):
            file = part.file
            if file.bytes is not None and len(file.bytes) > limits.max_file_bytes:
                raise LimitExceededError(
                    f"{where}.file.bytes has {len(file.bytes)} characters, over the limit of "
                    f"{limits.max_file_bytes}",
                    limit="max_file_bytes", field=f"{where}.file.bytes",
                    maximum=limits.max_file_bytes,
                )
            if file.bytes is not None and not is_base64(file.bytes):
                # stored as given, the file would be unreadable to every client (v1.0
                # clients parse it as bytes)
                raise InvalidParamsError(
                    f"{where}.file.bytes must be base64",
                    data={"errors": [{"field": f"{where}.file.bytes",
                                      "message": "must be base64 (standard or URL-safe)"}]},
                )
            for name, text in (("name", file.name), ("mimeType", file.mime_type),
                               ("uri", file.uri)):
                if text is not None:
                    check_text(text, limits, f"{where}.file.{name}")
        else:
            check_text(part.text, limits, f"{where}.text")


def _metadata(value: dict[str, Any] | None, limits: Limits, field: str) -> None:
    if value is not None:
        check_value(value, limits, field)
