"""JSON-RPC 2.0 edge: parse, validate once, dispatch, envelope errors in one place.

One endpoint speaks A2A v0.3 and v1.0 (docs/versions.md): ``server/versions.py`` tells which a
request speaks, ``server/jsonrpc_v1.py`` turns v1.0 params into the v0.3 ones the runtime takes
and v0.3 results into v1.0's shapes. A ``Request`` carries both its operation (the v0.3
method, or ``ListTasks``) and the version it is answered in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from ..a2a.task_json import wire_json
from ..a2a.types import (
    TERMINAL_STATES,
    MessageSendParams,
    TaskIdParams,
    TaskQueryParams,
    WireModel,
)
from ..a2a.v1_convert import V1_STATE
from ..core import bounds
from ..core.bounds import Limits
from ..core.principal import ANONYMOUS
from ..errors import (
    A2AError,
    AuthenticatedExtendedCardNotConfiguredError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    UnsupportedOperationError,
)
from ..push.guard import Origin
from ..runtime.events import Event
from ..runtime.tasks import TaskManager
from . import jsonrpc_v1, push_methods, versions
from .a2a_limits import check_params
from .versions import V0_3, V1_0, Version

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
    #: the operation: the v0.3 method (a v1.0 method is one of them under another name), or
    #: ``ListTasks``, which only v1.0 has
    method: str
    params: Any
    #: the version the request speaks and is answered in
    version: Version = V0_3
    #: the method as the client named it (metrics, logs)
    named: str = ""


class EnvelopeError(Exception):
    """An A2A error together with the request id and the version it must be answered in."""

    def __init__(self, error: A2AError, request_id: RequestId, version: Version = V0_3) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id
        self.version = version
        self.method: str | None = None  # a known method whose params were refused (metrics)


def error_body(error: A2AError, request_id: RequestId, version: Version = V0_3) -> bytes:
    shaped = error.to_error_v1() if version == V1_0 else error.to_error()
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": shaped})


def success_body(result: Any, request_id: RequestId) -> bytes:
    if isinstance(result, WireModel):  # the hot path: no intermediate dict
        return b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (orjson.dumps(request_id),
                                                            wire_json(result))
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


def parse(body: bytes, limits: Limits, a2a_version: str | None = None) -> Request:
    """Body -> typed request; raises ``EnvelopeError`` with the id to answer.
    ``a2a_version`` is the request's ``A2A-Version`` (``versions.named_in``).

    The order of checks is the one the official conformance suite expects (docs/wire.md):
    size, JSON, the envelope's version, the A2A version (``-32009``), the method (``-32601``),
    the params (``-32602``, edge limits included), and only then a missing or unusable id
    (``-32600``). Errors before the A2A version is known are answered in the version the
    header names, else in v0.3's shape."""
    try:
        named = versions.requested(a2a_version)
    except A2AError as exc:
        named_error: A2AError | None = exc
        named = V1_0  # -32009 is v1.0's: its error is written in v1.0's shape
    else:
        named_error = None
    speaks: Version = named or V0_3
    try:
        obj = bounds.parse_json(body, limits)
    except A2AError as exc:
        raise EnvelopeError(exc, None, speaks) from None
    if isinstance(obj, list):
        raise EnvelopeError(InvalidRequestError("Batch requests are not supported"), None, speaks)
    if not isinstance(obj, dict):
        raise EnvelopeError(InvalidRequestError("The request must be a JSON object"), None,
                            speaks)
    answer_id = _usable_id(obj)
    if obj.get("jsonrpc") != "2.0":
        raise EnvelopeError(InvalidRequestError("jsonrpc must be exactly \"2.0\""), answer_id,
                            speaks)
    if named_error is not None:
        raise EnvelopeError(named_error, answer_id, V1_0)
    method = obj.get("method")
    if not isinstance(method, str):
        raise EnvelopeError(InvalidRequestError("method must be a string"), answer_id, speaks)
    family: Version = V1_0 if method in jsonrpc_v1.METHODS else V0_3
    if method not in _KNOWN and family == V0_3:
        shown = method if len(method) <= 100 else method[:100] + "..."
        raise EnvelopeError(MethodNotFoundError(data={"method": shown}), answer_id, speaks)
    try:
        if family != speaks:
            raise EnvelopeError(versions.mismatch(method, family, named), answer_id, V1_0)
        return _known_method(obj, body, method, answer_id, limits, family)
    except EnvelopeError as exc:
        exc.method = method
        raise


def _known_method(
    obj: dict[str, Any], body: bytes, method: str, answer_id: RequestId, limits: Limits,
    version: Version,
) -> Request:
    try:
        bounds.check_document(obj, body, limits)
    except A2AError as exc:
        raise EnvelopeError(exc, answer_id, version) from None
    params = obj.get("params")
    typed: Any = None
    operation = jsonrpc_v1.OPERATIONS[method] if version == V1_0 else method
    if version == V1_0 and params is None:  # v1.0: an empty request message may be left out
        params = {}
    if operation == "agent/getAuthenticatedExtendedCard" and version == V0_3:
        if params is not None and not isinstance(params, dict):
            raise EnvelopeError(InvalidParamsError("params must be an object"), answer_id)
    elif not isinstance(params, dict):
        raise EnvelopeError(InvalidParamsError("params must be an object"), answer_id, version)
    else:
        try:
            if version == V1_0:
                typed = jsonrpc_v1.params_of(method, params, limits)
            else:
                typed = _PARAMS[method].model_validate(params)
            check_params(typed, limits)
        except ValidationError as exc:
            raise EnvelopeError(
                InvalidParamsError(data={"errors": _validation_details(exc)}), answer_id,
                version,
            ) from None
        except A2AError as exc:
            raise EnvelopeError(exc, answer_id, version) from None
    if "id" not in obj or obj["id"] is None:
        raise EnvelopeError(
            InvalidRequestError("Requests without an id (notifications) are not supported"), None,
            version,
        )
    if answer_id is None:
        raise EnvelopeError(InvalidRequestError("The id must be a string or an integer"), None,
                            version)
    return Request(answer_id, operation, typed, version, method)


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
    result = await _run(manager, request, language, space, own)
    if request.version == V1_0:
        return jsonrpc_v1.result_of(request.method, result)
    if isinstance(result, list):  # the configs of pushNotificationConfig/list
        return [item.to_wire() for item in result]
    return result


async def _run(
    manager: TaskManager, request: Request, language: str | None, space: str,
    own: Sequence[Origin],
) -> Any:
    if request.method == jsonrpc_v1.LIST_TASKS:
        return await jsonrpc_v1.list_tasks(manager, request.params, space)
    if request.method in push_methods.PUSH_METHODS:
        return await push_methods.call(manager, request.method, request.params, space=space,
                                       own=own, v1=request.version == V1_0)
    if request.method == "agent/getAuthenticatedExtendedCard":
        raise AuthenticatedExtendedCardNotConfiguredError()
    if request.method == "message/send":
        await push_methods.vet_message(manager, request.params, own,
                                       v1=request.version == V1_0)
    return await _HANDLERS[request.method](manager, request.params, language, space)


async def open_stream(
    manager: TaskManager, request: Request, last_event_id: int | None,
    *, language: str | None = None, space: str = ANONYMOUS, own: Sequence[Origin] = (),
) -> AsyncIterator[Event]:
    if request.method == "message/stream":
        await push_methods.vet_message(manager, request.params, own,
                                       v1=request.version == V1_0)
        return await manager.stream(request.params, language=language, space=space)
    if request.version == V1_0 and last_event_id is None:
        # v1.0: subscribing to an ended task is -32004 (v0.3 answers its last status); a
        # reconnection with Last-Event-ID still gets the events it missed
        record = await manager.owned(request.params.id, space=space)
        if record.state in TERMINAL_STATES:
            raise UnsupportedOperationError(
                f"task {record.id} has ended ({record.state}): there is nothing to subscribe "
                "to; GetTask reads it",
                data={"taskId": record.id, "state": V1_STATE[record.state]},
            )
    return await manager.resubscribe(request.params.id, last_event_id, space=space)
