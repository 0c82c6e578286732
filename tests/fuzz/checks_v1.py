"""The properties of every reply to a v1.0 case (``cases_v1.py``), and the stored-state check
over both versions.

On top of the v0.3 ones (``checks.py``: HTTP 200 with a JSON-RPC response, never ``-32603``,
the id echoed): an error is in the shape of the version the request names (v1.0's, and every
``-32009``: ``data`` a list of ``google.rpc`` details, an ``ErrorInfo`` of domain
``a2a-protocol.org`` first; v0.3's otherwise: ``data`` an object or absent); a result is the
ProtoJSON of its method's response message (``tests/proto.py``: no ``kind``, states
``TASK_STATE_*``, roles ``ROLE_*``, no ``final``), every frame of a stream a ``StreamResponse``;
a valid or soft case refused on purpose gets exactly the error it was drawn with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llamon_agent.core.principal import ANONYMOUS
from tests.proto import assert_error_details, proto_errors

from .cases_v1 import STREAMING, V1_METHODS, RpcV1Case
from .checks import (
    INTERNAL,
    SUCCESS_SHAPES,
    Stats,
    every_task_reads_back,
    past_the_envelope,
    rpc_envelope,
    shown,
    stored_tasks,
    usable_id,
)
from .schema import schema_errors
from .wire import Reply, Wire

#: the ProtoJSON message of each v1.0 method's result
RESULTS = {
    "SendMessage": "SendMessageResponse",
    "GetTask": "Task",
    "CancelTask": "Task",
    "ListTasks": "ListTasksResponse",
    "CreateTaskPushNotificationConfig": "TaskPushNotificationConfig",
    "GetTaskPushNotificationConfig": "TaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs": "ListTaskPushNotificationConfigsResponse",
    "DeleteTaskPushNotificationConfig": "google.protobuf.Empty",
    "GetExtendedAgentCard": "AgentCard",
}
#: what a request that names a version this server does not speak may get: the errors of a
#: body read before its version is (``jsonrpc.parse``), and -32009
_UNSUPPORTED_CODES = frozenset({-32700, -32600, -32602, -32009})
#: the states a task stops in (ended, or waiting for someone): where a v1.0 stream closes
_CLOSING = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
                      "TASK_STATE_REJECTED", "TASK_STATE_INPUT_REQUIRED",
                      "TASK_STATE_AUTH_REQUIRED"})
#: fields whose values are a client's (or an agent's) own JSON: not v1.0 wire objects
_OPAQUE = frozenset({"data", "metadata"})


def v1_violations(value: Any, path: str = "$") -> list[str]:
    """v0.3's shapes in a v1.0 result: a ``kind``, a state or a role not named as v1.0 names
    them, a ``final``; the JSON a client or an agent wrote (``data``, ``metadata``) excluded."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if key in ("kind", "final"):
                found.append(f"{where}: v0.3's {key!r}")
            elif key == "state" and not (isinstance(item, str)
                                         and item.startswith("TASK_STATE_")):
                found.append(f"{where}: {item!r} is not a TASK_STATE_*")
            elif key == "role" and not (isinstance(item, str) and item.startswith("ROLE_")):
                found.append(f"{where}: {item!r} is not a ROLE_*")
            if key not in _OPAQUE:
                found += v1_violations(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += v1_violations(item, f"{path}[{index}]")
    return found


def _state_of(result: dict[str, Any]) -> str | None:
    """The task state a ``StreamResponse`` tells (``None`` for a message or an artifact)."""
    for key in ("task", "statusUpdate"):
        if key in result:
            state: str = result[key]["status"]["state"]
            return state
    return None


def result_errors(message: str, result: Any) -> list[str]:
    return proto_errors(message, result) + v1_violations(result)


def error_metadata(error: dict[str, Any]) -> dict[str, Any]:
    """The details of an error of either version as one mapping (v1.0's ``ErrorInfo``
    metadata holds v0.3's ``data`` as text)."""
    data = error.get("data")
    if isinstance(data, dict):
        return data
    if isinstance(data, list) and data and isinstance(data[0], dict):
        metadata = data[0].get("metadata")
        return metadata if isinstance(metadata, dict) else {}
    return {}


def _error(error: dict[str, Any], case: RpcV1Case, context: str) -> None:
    """The error's shape follows the version the request names (every -32009 is v1.0's)."""
    code = error["code"]
    assert code != INTERNAL, f"-32603 for a client's request{context}"
    if case.names_v1() or case.names_unsupported() or code == -32009:
        try:
            assert_error_details(error.get("data"))
        except AssertionError as exc:
            raise AssertionError(f"not a v1.0 error: {exc}{context}") from None
    else:
        data = error.get("data")
        assert data is None or isinstance(data, dict), f"not a v0.3 error's data{context}"


def _sse_frames(reply: Reply, context: str) -> list[dict[str, Any]]:
    assert reply.status == 200, f"a stream answered HTTP {reply.status}{context}"
    frames: list[dict[str, Any]] = []
    for block in reply.content.decode("utf-8").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if not data:
            continue
        try:
            frames.append(json.loads("\n".join(data)))
        except ValueError:
            raise AssertionError(f"an SSE frame is not JSON{context}") from None
    assert frames, f"an SSE stream without a frame{context}"
    return frames


def check_rpc_v1(reply: Reply, case: RpcV1Case, tree: Any, body: bytes, stats: Stats) -> Any:
    """Every property of one reply to a v1.0 case; counts its outcome; returns the result
    (the stream's frames' results, for a stream), ``None`` for an error."""
    method = tree.get("method") if isinstance(tree, dict) else None
    expected_id = usable_id(tree)
    context = f"\nA2A-Version: {case.version!r}{' (query)' if case.in_query else ''}" \
              f"\nrequest: {shown(body)}\nreply: {reply.status} {shown(reply.content, 600)}"
    if reply.media_type == "text/event-stream":
        assert method in STREAMING and case.names_v1(), f"a stream for {method!r}{context}"
        frames = _sse_frames(reply, context)
        results = []
        for index, frame in enumerate(frames):
            if expected_id is not ...:
                assert frame.get("id") == expected_id, f"stream ids{context}"
            if "error" in frame:
                assert index == len(frames) - 1, f"a frame after an error{context}"
                _error(frame["error"], case, context)
            else:
                errors = result_errors("StreamResponse", frame.get("result"))
                assert errors == [], f"StreamResponse: {errors}{context}"
                results.append(frame["result"])
        if results:  # v1.0 has no ``final``: a stream closes where the task stops
            state = _state_of(results[-1])
            assert state is None or state in _CLOSING, f"a stream closed at {state}{context}"
        first = frames[0]
        assert case.expect is None, f"a stream where {case.expect} was due{context}"
        stats.add(f"error {first['error']['code']} (stream)" if "error" in first
                  else "result (stream)", reached=True)
        return results or None
    body_json = rpc_envelope(reply, body)
    if "result" in body_json:
        assert expected_id is ... or body_json["id"] == expected_id, f"id not echoed{context}"
        assert case.expect is None, f"a result where {case.expect} was due{context}"
        assert not case.names_unsupported(), f"a result for an unsupported version{context}"
        assert method not in V1_METHODS or case.names_v1(), (
            f"a v1.0 method answered without A2A-Version 1.0{context}")
        message = RESULTS.get(method) if isinstance(method, str) else None
        if message is not None:
            errors = result_errors(message, body_json["result"])
            assert errors == [], f"{message}: {errors}{context}"
        elif isinstance(method, str) and method in SUCCESS_SHAPES:  # a v0.3 method, as v0.3
            errors = schema_errors(SUCCESS_SHAPES[method], body_json)
            assert errors == [], f"{SUCCESS_SHAPES[method]}: {errors}{context}"
        stats.add("result", reached=True)
        return body_json["result"]
    error = body_json["error"]
    code = error["code"]
    _error(error, case, context)
    metadata = error_metadata(error)
    unread = code in (-32700, -32600) or (code == -32602 and metadata.get("limit") == "max_depth")
    if expected_id is not ...:
        if unread:
            assert body_json["id"] in (None, expected_id), f"id{context}"
        else:
            assert body_json["id"] == expected_id, f"id not echoed{context}"
    if case.expect is not None:
        assert code == case.expect, f"error {code} where {case.expect} was due{context}"
    if case.names_unsupported():
        assert code in _UNSUPPORTED_CODES, f"error {code} for an unsupported version{context}"
    stats.add(f"error {code}", reached=past_the_envelope(code, metadata))
    return None


# ----------------------------------------------------------------------------- stored state


def v1_rpc(wire: Wire, method: str, params: Any) -> dict[str, Any]:
    """One v1.0 call (``A2A-Version: 1.0``) that must get a JSON-RPC reply."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    reply = wire.request("POST", "/", body.encode(), {"A2A-Version": "1.0"})
    assert reply.status == 200, reply
    answer: dict[str, Any] = json.loads(reply.content)
    return answer


def get_task_v1(wire: Wire) -> Callable[[str, Any], dict[str, Any]]:
    """``tasks/get`` as ``every_task_reads_back`` calls it, sent as v1.0's ``GetTask``; a task
    that reads back must be a v1.0 ``Task``, an error a v1.0 error."""

    def rpc(method: str, params: Any) -> dict[str, Any]:
        assert method == "tasks/get", method
        answer = v1_rpc(wire, "GetTask", params)
        if "result" in answer:
            errors = result_errors("Task", answer["result"])
            assert errors == [], f"GetTask {params}: {errors}"
        else:
            assert_error_details(answer["error"].get("data"))
        return answer

    return rpc


def every_task_reads_back_twice(scene_rpc: Callable[[str, Any], dict[str, Any]], wire: Wire,
                                db: Path | str) -> int:
    """``checks.every_task_reads_back`` over v0.3 (``tasks/get``) and over v1.0 (``GetTask``),
    and every task of the client's space in the pages of ``ListTasks``."""
    count = every_task_reads_back(scene_rpc, db)
    assert every_task_reads_back(get_task_v1(wire), db) >= count
    own = {task_id for task_id, space in stored_tasks(db) if space == ANONYMOUS}
    # a task updated while the pages are read moves to the first page: one more pass finds it
    missing = own - listed_tasks(wire)
    if missing:
        missing -= listed_tasks(wire)
    assert not missing, f"stored tasks ListTasks never lists: {sorted(missing)[:5]}"
    return count


def listed_tasks(wire: Wire, page_size: int = 100) -> set[str]:
    """The ids of every task ``ListTasks`` lists, page after page (each a ProtoJSON
    ``ListTasksResponse``)."""
    ids: set[str] = set()
    token = ""
    for _ in range(10_000):
        params: dict[str, Any] = {"pageSize": page_size}
        if token:
            params["pageToken"] = token
        answer = v1_rpc(wire, "ListTasks", params)
        assert "result" in answer, answer
        page = answer["result"]
        errors = result_errors("ListTasksResponse", page)
        assert errors == [], f"ListTasks {params}: {errors}"
        assert page["pageSize"] == page_size and len(page["tasks"]) <= page_size, params
        ids.update(task["id"] for task in page["tasks"])
        token = page["nextPageToken"]
        if not token:
            return ids
    raise AssertionError("ListTasks pages never end")
