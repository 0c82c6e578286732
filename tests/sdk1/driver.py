"""A long-lived driver of the official ``a2a-sdk`` 1.x client, run by that SDK's own python.

It imports only the 1.x SDK and the standard library (never ``llamon_agent`` nor pytest: the main
environment pins ``a2a-sdk==0.3.26``, which cannot live beside 1.x). It reads one JSON command per
line on stdin and writes one JSON line per command on stdout, tagged with the command's ``cid``;
commands run concurrently, so a stream that stays open (a loan waiting for its reviewer) does not
hold up the next command.

Commands (``client`` names a connection, default ``"default"``; ``timeout`` bounds one command,
default 30 s)::

    {"op": "connect", "url": ..., "headers": {...}, "streaming": bool,
     "mode": "native" | "compat", "polling": bool}
    {"op": "send", "message": {ProtoJSON v1 Message}, "metadata": {...}, "configuration": {...}}
    {"op": "get_task", "id": ..., "historyLength": N}
    {"op": "cancel", "id": ...}
    {"op": "subscribe", "id": ...}
    {"op": "list_tasks", "contextId": ..., "pageSize": N, ...}
    {"op": "extended_card"}
    {"op": "close"}

Each answer is ``{"cid", "result"}`` or ``{"cid", "error": {"type", "code", "message", "data"}}``,
with ``events`` (every ``StreamResponse`` yielded so far, as ProtoJSON) for ``send`` and
``subscribe`` and ``wire``: every HTTP exchange the command made, the request as sent (method, URL,
``A2A-Version`` header, JSON body) and the response as received (JSON body, or the SSE frames),
because the SDK parses leniently and would hide fields a v1.0 server must not send.

``native`` leaves the card as the server sent it, so the client picks its interface itself (a
v1.0 one when listed: ``JsonRpcTransport``); ``compat`` keeps only the card's 0.3 interfaces,
which makes the client use its v0.3 compatibility layer (``CompatJsonRpcTransport``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.client_factory import major_minor
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.constants import VERSION_HEADER, TransportProtocol
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage

RESERVED = frozenset({"cid", "op", "client", "timeout"})
DEFAULT_TIMEOUT = 30.0
MAX_LINE = 4 * 1024 * 1024  # one command; the tests send a few kilobytes at most
RECORDED_HEADERS = ("a2a-version", "accept", "content-type", "authorization", "accept-language")


# ------------------------------------------------------------------------------ wire recording


@dataclass
class Exchange:
    """One HTTP request of a command and the bytes of its response, read as the SDK read them."""

    method: str
    url: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    content_type: str = ""
    raw: bytearray = field(default_factory=bytearray)

    def to_json(self) -> dict[str, Any]:
        response = self._response()
        return {
            "method": self.method, "url": self.url, "headers": self.headers,
            "request": self.body, "status": self.status, "contentType": self.content_type,
            "response": response, "strictErrors": _strict_errors(self.body, response),
        }

    def _response(self) -> Any:
        text = self.raw.decode("utf-8", errors="replace")
        if self.content_type.startswith("text/event-stream"):
            return _sse_frames(text)
        try:
            return json.loads(text) if text else None
        except json.JSONDecodeError:
            return {"unparsed": text[:4000]}


def _sse_frames(text: str) -> list[dict[str, Any]]:
    """The frames of an SSE body: ``{"id": str | None, "event": str | None, "data": JSON}``."""
    frames = []
    for block in re.split(r"\r?\n\r?\n", text):
        event_id, event, data = None, None, []
        for line in block.splitlines():
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "id":
                event_id = value
            elif key == "event":
                event = value
            elif key == "data":
                data.append(value)
        if data:
            try:
                parsed: Any = json.loads("\n".join(data))
            except json.JSONDecodeError:
                parsed = {"unparsed": "\n".join(data)}
            frames.append({"id": event_id, "event": event, "data": parsed})
    return frames


# what each v1.0 method answers, parsed strictly: a field a2a.proto does not define (``kind``,
# ``final``), a wrong enum name or a wrong JSON type is an error here, where the SDK ignores it
V1_RESULTS: dict[str, type[ProtoMessage]] = {
    "SendMessage": SendMessageResponse,
    "SendStreamingMessage": StreamResponse,
    "SubscribeToTask": StreamResponse,
    "GetTask": Task,
    "CancelTask": Task,
    "ListTasks": ListTasksResponse,
    "GetExtendedAgentCard": AgentCard,
    "CreateTaskPushNotificationConfig": TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": TaskPushNotificationConfig,
    "ListTaskPushNotificationConfigs": ListTaskPushNotificationConfigsResponse,
}


def _strict_errors(request: Any, response: Any) -> list[str]:
    method = request.get("method") if isinstance(request, dict) else None
    expected = V1_RESULTS.get(method) if isinstance(method, str) else None
    if expected is None:
        return []
    bodies = [frame["data"] for frame in response] if isinstance(response, list) else [response]
    errors = []
    for index, body in enumerate(bodies):
        if isinstance(body, dict) and "result" in body:
            try:
                ParseDict(body["result"], expected())
            except ParseError as exc:
                errors.append(f"result {index} is not a strict {expected.__name__}: {exc}")
    return errors


# the exchanges of the command running in this asyncio task (each command is its own task)
_exchanges: contextvars.ContextVar[list[Exchange] | None] = contextvars.ContextVar(
    "exchanges", default=None
)


class _Tee(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, sink: bytearray) -> None:
        self._inner = inner
        self._sink = sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._sink.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class RecordingTransport(httpx.AsyncBaseTransport):
    """The default HTTP transport, keeping a copy of what each command sent and received."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sink = _exchanges.get()
        response = await self._inner.handle_async_request(request)
        if sink is None:
            return response
        content = request.content
        try:
            body: Any = json.loads(content) if content else None
        except json.JSONDecodeError:
            body = {"unparsed": content[:4000].decode("utf-8", errors="replace")}
        exchange = Exchange(
            method=request.method, url=str(request.url),
            headers={k: v for k, v in request.headers.items() if k.lower() in RECORDED_HEADERS},
            body=body, status=response.status_code,
            content_type=response.headers.get("content-type", ""),
        )
        sink.append(exchange)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Tee(response.stream, exchange.raw)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


# ------------------------------------------------------------------------------ commands


class CommandError(Exception):
    """A command the driver cannot run as given (unknown op or client, bad mode)."""


@dataclass
class Connection:
    client: Client
    http: httpx.AsyncClient


@dataclass
class Run:
    """What one command gathered, kept when it fails half way (the events before the error)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)


CONNECTIONS: dict[str, Connection] = {}


def _dict(message: Any) -> dict[str, Any]:
    return MessageToDict(message)


def _fields(command: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in command.items() if k not in RESERVED}


def _connection(command: dict[str, Any]) -> Connection:
    name = command.get("client", "default")
    if name not in CONNECTIONS:
        raise CommandError(f"no connection named {name!r}: connect first")
    return CONNECTIONS[name]


def _only_version(interfaces: list[AgentInterface], version: tuple[int, int]) -> list[Any]:
    kept = []
    for interface in interfaces:
        try:
            if major_minor(interface.protocol_version or "0") == version:
                kept.append(interface)
        except ValueError:
            continue
    return kept


async def connect(command: dict[str, Any], run: Run) -> dict[str, Any]:
    name = command.get("client", "default")
    mode = command.get("mode", "native")
    if mode not in ("native", "compat"):
        raise CommandError(f"mode must be native or compat, not {mode!r}")
    if name in CONNECTIONS:
        await _close(CONNECTIONS.pop(name))
    http = httpx.AsyncClient(
        timeout=command.get("timeout", DEFAULT_TIMEOUT), trust_env=False,
        headers=command.get("headers") or {}, transport=RecordingTransport(),
    )
    try:
        card = await A2ACardResolver(http, command["url"]).get_agent_card()
        if mode == "compat":
            legacy = _only_version(list(card.supported_interfaces), (0, 3))
            if not legacy:
                raise CommandError("the card lists no 0.3 interface")
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(legacy)
        config = ClientConfig(httpx_client=http, streaming=bool(command.get("streaming", True)),
                              polling=bool(command.get("polling", False)))
        client = ClientFactory(config).create(card)
    except BaseException:
        await http.aclose()
        raise
    CONNECTIONS[name] = Connection(client, http)
    # the interface ClientFactory.create picked (same rule: the first JSONRPC binding, best version)
    chosen = ClientFactory._find_best_interface(
        list(card.supported_interfaces), protocol_bindings=[TransportProtocol.JSONRPC]
    )
    transport = getattr(client, "_transport", None)
    return {
        "transport": type(transport).__name__,
        "transportModule": type(transport).__module__,
        "interface": _dict(chosen) if chosen is not None else None,
        "defaultVersionHeader": http.headers.get(VERSION_HEADER),
        "card": _dict(card),
    }


def _aggregate(task: Task | None, event: StreamResponse) -> Task | None:
    """The task as a client sees it after ``event`` (the 1.x client yields events, not tasks)."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        snapshot = Task()
        snapshot.CopyFrom(event.task)
        return snapshot
    if kind == "status_update":
        update = event.status_update
        task = task or Task(id=update.task_id, context_id=update.context_id)
        task.status.CopyFrom(update.status)
        return task
    if kind == "artifact_update":
        artifact_update = event.artifact_update
        task = task or Task(id=artifact_update.task_id, context_id=artifact_update.context_id)
        for artifact in task.artifacts:
            if artifact.artifact_id == artifact_update.artifact.artifact_id:
                if artifact_update.append:
                    artifact.parts.extend(artifact_update.artifact.parts)
                else:
                    artifact.CopyFrom(artifact_update.artifact)
                return task
        task.artifacts.append(artifact_update.artifact)
    return task


async def _collect(events: AsyncIterator[StreamResponse], run: Run) -> dict[str, Any]:
    task: Task | None = None
    async for event in events:
        run.events.append(_dict(event))
        task = _aggregate(task, event)
    return {"task": _dict(task) if task is not None else None}


async def send(command: dict[str, Any], run: Run) -> dict[str, Any]:
    request = SendMessageRequest(message=ParseDict(command["message"], Message()))
    if command.get("metadata"):
        request.metadata.update(command["metadata"])
    if command.get("configuration"):
        ParseDict(command["configuration"], request.configuration)
    return await _collect(_connection(command).client.send_message(request), run)


async def get_task(command: dict[str, Any], run: Run) -> dict[str, Any]:
    request = ParseDict(_fields(command), GetTaskRequest())
    return _dict(await _connection(command).client.get_task(request))


async def cancel(command: dict[str, Any], run: Run) -> dict[str, Any]:
    request = ParseDict(_fields(command), CancelTaskRequest())
    return _dict(await _connection(command).client.cancel_task(request))


async def subscribe(command: dict[str, Any], run: Run) -> dict[str, Any]:
    request = ParseDict(_fields(command), SubscribeToTaskRequest())
    return await _collect(_connection(command).client.subscribe(request), run)


async def list_tasks(command: dict[str, Any], run: Run) -> dict[str, Any]:
    request = ParseDict(_fields(command), ListTasksRequest())
    return _dict(await _connection(command).client.list_tasks(request))


async def extended_card(command: dict[str, Any], run: Run) -> dict[str, Any]:
    client = _connection(command).client
    return _dict(await client.get_extended_agent_card(GetExtendedAgentCardRequest()))


async def _close(connection: Connection) -> None:
    await connection.client.close()
    await connection.http.aclose()


async def close(command: dict[str, Any], run: Run) -> dict[str, Any]:
    name = command.get("client", "default")
    if name in CONNECTIONS:
        await _close(CONNECTIONS.pop(name))
    return {}


OPS: dict[str, Callable[[dict[str, Any], Run], Awaitable[dict[str, Any]]]] = {
    "connect": connect, "send": send, "get_task": get_task, "cancel": cancel,
    "subscribe": subscribe, "list_tasks": list_tasks, "extended_card": extended_card,
    "close": close,
}


# ------------------------------------------------------------------------------ the loop


def _error(exc: BaseException) -> dict[str, Any]:
    code = JSON_RPC_ERROR_CODE_MAP.get(type(exc)) if isinstance(exc, A2AError) else None
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if code is None:  # A2AClientError carries unmapped codes in its text only
        found = re.match(r"JSON-RPC Error (-?\d+): ", str(exc))
        code = int(found.group(1)) if found else None
    data = getattr(exc, "data", None)
    try:
        json.dumps(data)
    except (TypeError, ValueError):
        data = repr(data)
    return {"type": type(exc).__name__, "code": code, "message": message, "data": data}


def _write(out: Any, reply: dict[str, Any]) -> None:
    # one write and flush per line, from the event loop's thread only: lines never interleave
    out.write(json.dumps(reply, ensure_ascii=True) + "\n")
    out.flush()


async def _handle(command: dict[str, Any], out: Any) -> None:
    run = Run()
    reply: dict[str, Any] = {"cid": command.get("cid")}
    token = _exchanges.set(run.exchanges)
    try:
        op = OPS.get(command.get("op", ""))
        if op is None:
            raise CommandError(f"unknown op {command.get('op')!r}; known: {sorted(OPS)}")
        async with asyncio.timeout(float(command.get("timeout", DEFAULT_TIMEOUT))):
            reply["result"] = await op(command, run)
    except Exception as exc:  # every failure is an answer: the test decides what it means
        reply["error"] = _error(exc)
    finally:
        _exchanges.reset(token)
    if command.get("op") in ("send", "subscribe"):
        reply["events"] = run.events
    reply["wire"] = [exchange.to_json() for exchange in run.exchanges]
    _write(out, reply)


async def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol
    running: set[asyncio.Task[None]] = set()
    while True:
        line = await asyncio.to_thread(sys.stdin.readline, MAX_LINE)
        if not line:
            break
        try:
            command = json.loads(line)
            if not isinstance(command, dict):
                raise ValueError("a command is a JSON object")
        except ValueError as exc:
            _write(out, {"cid": None, "error": {"type": "CommandError", "code": None,
                                                "message": f"bad command line: {exc}",
                                                "data": None}})
            continue
        task = asyncio.create_task(_handle(command, out))
        running.add(task)
        task.add_done_callback(running.discard)
    for task in list(running):
        task.cancel()
    for connection in list(CONNECTIONS.values()):
        await _close(connection)


if __name__ == "__main__":
    asyncio.run(main())
