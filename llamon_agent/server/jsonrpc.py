"""JSON-RPC 2.0 edge: parse, validate once, dispatch, envelope errors in one place."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from ..a2a.types import MessageSendParams, TaskIdParams, TaskQueryParams, WireModel
from ..core import bounds
from ..core.bounds import Limits
from ..core.principal import ANONYMOUS
from ..errors import (
    A2AError,
    AuthenticatedExtendedCardNotConfiguredError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
)
from ..push.guard import Origin
from ..runtime.events import Event
from ..runtime.tasks import TaskManager
from . import push_methods
from .a2a_limits import check_params

__all__ = ["STREAMING_METHODS", "Request", "dispatch", "error_body", "parse", "success_body"]

RequestId = str | int | None

STREAMING_METHODS = frozenset({"message/stream", "tasks/resubscribe"})
_PARAMS: dict[str, type[BaseModel]] = {
    "message/send": MessageSendParams,
    "message/stream": MessageSendParams,
    "tasks/get": TaskQueryParams,
    "tasks/cancel": TaskIdParams,
    "tasks/resubscribe": TaskIdParams,
    **push_methods.PUSH_METHODS,
}
_KNOWN = frozenset(_PARAMS) | {"agent/getAuthenticatedExtendedCard"}


@dataclass(frozen=True)
class Request:
    id: str | int
    method: str
    params: Any


class EnvelopeError(Exception):
    """An A2A error together with the request id it must be answered with."""

    def __init__(self, error: A2AError, request_id: RequestId) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id
        self.method: str | None = None  # a known method whose params were refused (metrics)


def error_body(error: A2AError, request_id: RequestId) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error.to_error()})


def success_body(result: Any, request_id: RequestId) -> bytes:
    if isinstance(result, WireModel):  # the hot path: no intermediate dict
        return b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (orjson.dumps(request_id), result.to_json())
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def _validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
        for e in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def _usable_id(obj: dict[str, Any]) -> str | int | None:
    request_id = obj.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return request_id


def parse(body: bytes, limits: Limits) -> Request:
    """Body -> typed request; raises ``EnvelopeError`` with the id to answer.

    The order of checks is the one the official conformance suite expects (docs/wire.md):
    size, JSON, the envelope's version, the method (``-32601``), the params (``-32602``,
    edge limits included), and only then a missing or unusable id (``-32600``)."""
    try:
        obj = bounds.parse_json(body, limits)
    except A2AError as exc:
        raise EnvelopeError(exc, None) from None
    if isinstance(obj, list):
        raise EnvelopeError(InvalidRequestError("Batch requests are not supported"), None)
    if not isinstance(obj, dict):
        raise EnvelopeError(InvalidRequestError("The request must be a JSON object"), None)
    answer_id = _usable_id(obj)
    if obj.get("jsonrpc") != "2.0":
        raise EnvelopeError(InvalidRequestError("jsonrpc must be exactly \"2.0\""), answer_id)
    method = obj.get("method")
    if not isinstance(method, str):
        raise EnvelopeError(InvalidRequestError("method must be a string"), answer_id)
    if method not in _KNOWN:
        shown = method if len(method) <= 100 else method[:100] + "..."
        raise EnvelopeError(MethodNotFoundError(data={"method": shown}), answer_id)
    try:
        return _known_method(obj, body, method, answer_id, limits)
    except EnvelopeError as exc:
        exc.method = method
        raise


def _known_method(
    obj: dict[str, Any], body: bytes, method: str, answer_id: RequestId, limits: Limits
) -> Request:
    try:
        bounds.check_document(obj, body, limits)
    except A2AError as exc:
        raise EnvelopeError(exc, answer_id) from None
    params = obj.get("params")
    typed: Any = None
    if method == "agent/getAuthenticatedExtendedCard":
        if params is not None and not isinstance(params, dict):
            raise EnvelopeError(InvalidParamsError("params must be an object"), answer_id)
    elif not isinstance(params, dict):
        raise EnvelopeError(InvalidParamsError("params must be an object"), answer_id)
    else:
        try:
            typed = _PARAMS[method].model_validate(params)
            check_params(typed, limits)
        except ValidationError as exc:
            raise EnvelopeError(
                InvalidParamsError(data={"errors": _validation_details(exc)}), answer_id
            ) from None
        except A2AError as exc:
            raise EnvelopeError(exc, answer_id) from None
    if "id" not in obj or obj["id"] is None:
        raise EnvelopeError(
            InvalidRequestError("Requests without an id (notifications) are not supported"), None
        )
    if answer_id is None:
        raise EnvelopeError(InvalidRequestError("The id must be a string or an integer"), None)
    return Request(answer_id, method, typed)


# (manager, params, language, the caller's space): core/principal.py
Handler = Callable[[TaskManager, Any, str | None, str], Awaitable[Any]]


async def _send(
    manager: TaskManager, params: MessageSendParams, language: str | None, space: str
) -> Any:
    return await manager.send(params, language=language, space=space)


async def _get(
    manager: TaskManager, params: TaskQueryParams, language: str | None, space: str
) -> Any:
    return await manager.get_task(params.id, params.history_length, space=space)


async def _cancel(
    manager: TaskManager, params: TaskIdParams, language: str | None, space: str
) -> Any:
    return await manager.cancel(params.id, space=space)


_HANDLERS: dict[str, Handler] = {
    "message/send": _send,
    "tasks/get": _get,
    "tasks/cancel": _cancel,
}


async def dispatch(
    manager: TaskManager, request: Request, *, language: str | None = None,
    space: str = ANONYMOUS, own: Sequence[Origin] = (),
) -> Any:
    """Run a non-streaming method; A2A errors propagate to the caller's envelope.
    ``language`` is the request's (``Accept-Language``), for the texts of tool reviews;
    ``own`` the address the request arrived on (a webhook there is refused)."""
    if request.method in push_methods.PUSH_METHODS:
        return await push_methods.call(manager, request.method, request.params, space=space,
                                       own=own)
    if request.method == "agent/getAuthenticatedExtendedCard":
        raise AuthenticatedExtendedCardNotConfiguredError()
    if request.method == "message/send":
        await push_methods.vet_message(manager, request.params, own)
    return await _HANDLERS[request.method](manager, request.params, language, space)


async def open_stream(
    manager: TaskManager, request: Request, last_event_id: int | None,
    *, language: str | None = None, space: str = ANONYMOUS, own: Sequence[Origin] = (),
) -> AsyncIterator[Event]:
    if request.method == "message/stream":
        await push_methods.vet_message(manager, request.params, own)
        return await manager.stream(request.params, language=language, space=space)
    return await manager.resubscribe(request.params.id, last_event_id, space=space)
