"""JSON-RPC 2.0 over HTTP: request bodies, HTTP status checks, envelopes, typed results."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeAlias, TypeVar

import httpx
import orjson
from pydantic import ValidationError

from ..a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent, WireModel
from .errors import (
    A2AAuthenticationError,
    A2AConnectionError,
    A2AHTTPStatusError,
    A2AInvalidResponseError,
    A2ATimeoutError,
    rpc_error,
)

__all__ = [
    "A2AEvent",
    "check_status",
    "decode_json",
    "new_id",
    "parse_event",
    "parse_send_result",
    "parse_task",
    "request_body",
    "translate_errors",
    "unwrap",
]

A2AEvent: TypeAlias = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""One result of ``message/stream`` or ``tasks/resubscribe``."""

M = TypeVar("M", bound=WireModel)

_EVENT_TYPES: dict[str, type[A2AEvent]] = {
    "task": Task,
    "message": Message,
    "status-update": TaskStatusUpdateEvent,
    "artifact-update": TaskArtifactUpdateEvent,
}


def new_id() -> str:
    return str(uuid.uuid4())


def request_body(method: str, params: Mapping[str, Any], request_id: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


@contextmanager
def translate_errors() -> Iterator[None]:
    """httpx failures as client errors (the original stays chained as ``__cause__``)."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise A2ATimeoutError(f"timed out: {exc!r}") from exc
    except httpx.TransportError as exc:
        raise A2AConnectionError(f"connection failed: {exc!r}") from exc


def check_status(response: httpx.Response) -> None:
    """Raise for a non-2xx answer. The body must have been read."""
    if response.is_success:
        return
    url = str(response.request.url)
    body = response.content.decode("utf-8", errors="replace")
    if response.status_code in (401, 403):
        raise A2AAuthenticationError(
            response.status_code, url, body, response.headers.get("www-authenticate")
        )
    raise A2AHTTPStatusError(response.status_code, url, body)


def decode_json(content: bytes | str, what: str) -> Any:
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        raise A2AInvalidResponseError(f"{what} is not JSON: {exc}") from exc


def unwrap(envelope: Any, request_id: str) -> Any:
    """The ``result`` of a JSON-RPC response; its ``error`` raised as an ``A2ARPCError``."""
    if not isinstance(envelope, dict) or envelope.get("jsonrpc") != "2.0":
        raise A2AInvalidResponseError(f"not a JSON-RPC 2.0 response: {_short(envelope)}")
    has_result, has_error = "result" in envelope, "error" in envelope
    if has_result == has_error:
        raise A2AInvalidResponseError(
            f"a JSON-RPC response needs exactly one of result and error: {_short(envelope)}"
        )
    response_id = envelope.get("id")
    if has_error:
        error = envelope["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or isinstance(error.get("code"), bool)
            or not isinstance(error.get("message"), str)
        ):
            raise A2AInvalidResponseError(f"malformed JSON-RPC error: {_short(envelope)}")
        if response_id is not None and response_id != request_id:
            raise A2AInvalidResponseError(
                f"response id {response_id!r} does not match request id {request_id!r}"
            )
        raise rpc_error(error["code"], error["message"], error.get("data"))
    if response_id != request_id:
        raise A2AInvalidResponseError(
            f"response id {response_id!r} does not match request id {request_id!r}"
        )
    return envelope["result"]


def _validate(model: type[M], raw: Any) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise A2AInvalidResponseError(f"invalid {model.__name__} in the response: {exc}") from exc


def _kind(raw: Any) -> str:
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if not isinstance(kind, str):
        raise A2AInvalidResponseError(f"the result has no 'kind': {_short(raw)}")
    return kind


def parse_task(raw: Any) -> Task:
    if _kind(raw) != "task":
        raise A2AInvalidResponseError(f"expected a Task, got kind {raw['kind']!r}")
    return _validate(Task, raw)


def parse_send_result(raw: Any) -> Task | Message:
    kind = _kind(raw)
    if kind == "task":
        return _validate(Task, raw)
    if kind == "message":
        return _validate(Message, raw)
    raise A2AInvalidResponseError(f"expected a Task or a Message, got kind {kind!r}")


def parse_event(raw: Any) -> A2AEvent:
    kind = _kind(raw)
    model = _EVENT_TYPES.get(kind)
    if model is None:
        raise A2AInvalidResponseError(f"unknown stream event kind {kind!r}")
    return _validate(model, raw)


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
