"""What the 1.x client's requests and the server's answers must look like on the wire, per
protocol version (the SDK parses leniently: a stray ``kind`` would never reach its objects)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tests.sdk1.harness import Exchange

V1_METHODS = frozenset({
    "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
    "SubscribeToTask", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard",
})
V03_METHODS = frozenset({
    "message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe",
    "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
})
STREAM_PAYLOADS = frozenset({"task", "message", "statusUpdate", "artifactUpdate"})
SEND_PAYLOADS = frozenset({"task", "message"})
PART_CONTENT = frozenset({"text", "raw", "url", "data"})
PART_EXTRAS = frozenset({"metadata", "filename", "mediaType"})
V1_ROLES = frozenset({"ROLE_USER", "ROLE_AGENT"})
PART_PATH = re.compile(r"\.parts\[\d+\]$")
#: payloads whose values are the agent's own JSON (a ``data`` part, metadata): not protocol keys
OPAQUE = frozenset({"data", "metadata"})


def _protocol_nodes(value: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON object of a protocol value, skipping the agent's opaque payloads."""
    if isinstance(value, dict):
        yield path, value
        for key, item in value.items():
            if key not in OPAQUE:
                yield from _protocol_nodes(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _protocol_nodes(item, f"{path}[{index}]")


def assert_v1_object(value: Any) -> None:
    """No v0.3 vocabulary anywhere: no ``kind``, no ``final``, enum states and roles, one-of
    parts."""
    for path, node in _protocol_nodes(value):
        assert "kind" not in node, f"{path} has kind: {node}"
        assert "final" not in node, f"{path} has final: {node}"
        if "state" in node:
            assert str(node["state"]).startswith("TASK_STATE_"), f"{path}.state: {node}"
        if "role" in node:
            assert node["role"] in V1_ROLES, f"{path}.role: {node}"
        if PART_PATH.search(path):
            content = PART_CONTENT & node.keys()
            assert len(content) == 1, f"{path} is not a one-of part: {node}"
            assert node.keys() <= PART_CONTENT | PART_EXTRAS, f"{path} has other keys: {node}"


def assert_v1_exchange(exchange: Exchange, *, streaming: bool | None = None) -> None:
    """A v1.0 JSON-RPC call: v1.0 method and header, v1.0 shapes both ways, wrapped results."""
    method = exchange.rpc_method
    assert method in V1_METHODS, f"not a v1.0 method: {method} ({exchange.request})"
    assert exchange.headers.get("a2a-version") == "1.0", exchange.headers
    assert_v1_object(exchange.request.get("params"))
    assert exchange.status == 200, exchange
    assert not exchange.errors, f"{method} answered errors: {exchange.errors}"
    results = exchange.results
    assert results, f"{method} answered no result: {exchange.response}"
    for result in results:
        assert_v1_object(result)
    # each result parses strictly as the a2a.proto message the method answers
    assert not exchange.strict_errors, exchange.strict_errors
    if method in ("SendStreamingMessage", "SubscribeToTask"):
        assert exchange.content_type.startswith("text/event-stream"), exchange.content_type
        for result in results:
            assert len(result) == 1 and set(result) <= STREAM_PAYLOADS, f"not wrapped: {result}"
    elif method == "SendMessage":
        assert len(results) == 1 and set(results[0]) <= SEND_PAYLOADS and len(results[0]) == 1, (
            f"not wrapped: {results}")
    if streaming is not None:
        expected = "SendStreamingMessage" if streaming else "SendMessage"
        if method in ("SendMessage", "SendStreamingMessage"):
            assert method == expected, f"{method}, expected {expected}"


def assert_v03_exchange(exchange: Exchange) -> None:
    """A v0.3 JSON-RPC call (the 1.x client's compatibility layer): v0.3 names, ``kind``s."""
    method = exchange.rpc_method
    assert method in V03_METHODS, f"not a v0.3 method: {method}"
    assert exchange.headers.get("a2a-version") == "0.3", exchange.headers
    for result in exchange.results:
        assert "kind" in result or "id" in result, result
        if "kind" in result:
            assert result["kind"] in ("task", "message", "status-update", "artifact-update")


def last_stream_result(exchange: Exchange) -> dict[str, Any]:
    results = exchange.results
    assert results, exchange.response
    last = results[-1]
    assert isinstance(last, dict)
    return last


ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def assert_v1_error(exchange: Exchange, code: int, reason: str) -> None:
    """A v1.0 error: the code, and one ``google.rpc.ErrorInfo`` in ``data`` naming ``reason``."""
    assert exchange.headers.get("a2a-version") == "1.0", exchange.headers
    assert exchange.rpc_method in V1_METHODS, exchange.rpc_method
    (error,) = exchange.errors
    assert error["code"] == code, error
    details = error.get("data")
    assert isinstance(details, list), f"v1.0 error data is a list of details: {error}"
    infos = [d for d in details if isinstance(d, dict) and d.get("@type") == ERROR_INFO]
    assert len(infos) == 1, error
    assert (infos[0]["reason"], infos[0]["domain"]) == (reason, "a2a-protocol.org"), infos[0]
