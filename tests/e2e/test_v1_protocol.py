"""Black-box tests of A2A v1.0 on the JSON-RPC endpoint (issue 15): every v1.0 method over HTTP
with ``A2A-Version: 1.0``, each result checked against ``a2a.proto`` (``tests/proto.py``, a
strict ProtoJSON reader) and against exact values; every error's ``data`` against the
``google.rpc`` details v1.0 asks for; the ``A2A-Version`` rules; and one task spoken to in both
versions. The v0.3 side of the same endpoint is tests/e2e/test_protocol.py.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from llamon_agent.stores import base as stores_base
from tests.auth.helpers import ALICE_KEY, BOB_KEY, KEYS, served
from tests.conftest import A2AClient, assert_valid, parse_sse, rpc, serve
from tests.e2e.test_streaming import slow_agent
from tests.proto import assert_error_details, assert_proto, proto_errors

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

V1 = {"A2A-Version": "1.0"}
DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."
HOOK = "http://127.0.0.1:9/hook"
EXTENDED = {
    "name": "llamon-agent (partners)",
    "description": "The same agents, with the partner-only skill listed.",
    "version": "1.0.0",
    "skills": [{"id": "bulk-review", "name": "Bulk review", "description": "partners only",
                "tags": ["partners"]}],
}


# ---------------------------------------------------------------------------- helpers


def new_context() -> str:
    return f"ctx-{uuid.uuid4()}"


def message(text: str | None = None, *, data: Any = None, context_id: str | None = None,
            task_id: str | None = None, role: Any = "ROLE_USER") -> dict[str, Any]:
    """A ProtoJSON v1.0 ``Message`` from the user."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    if data is not None:
        parts.append({"data": data})
    out: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": role, "parts": parts}
    if context_id is not None:
        out["contextId"] = context_id
    if task_id is not None:
        out["taskId"] = task_id
    return out


def send_request(text: str | None = None, *, agent_id: str | None = None,
                 configuration: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": message(text, **kw)}
    if agent_id is not None:
        params["metadata"] = {"agentId": agent_id}
    if configuration is not None:
        params["configuration"] = configuration
    return params


async def post(http: httpx.AsyncClient, method: str, params: Any, request_id: str | int = 1,
               headers: dict[str, str] | None = None, path: str = "/") -> dict[str, Any]:
    response = await http.post(path, json=rpc(method, params, request_id),
                               headers=V1 if headers is None else headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


def result_of(body: dict[str, Any], message_name: str, request_id: str | int = 1) -> Any:
    """A success envelope whose result is a ProtoJSON ``message_name``."""
    assert set(body) == {"jsonrpc", "id", "result"}, body
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id
    assert_proto(message_name, body["result"])
    return body["result"]


def v1_error(body: dict[str, Any], code: int, request_id: str | int | None = 1,
             reason: str | None = None) -> dict[str, Any]:
    """An error envelope in v1.0's shape: ``data`` a list, an ``ErrorInfo`` first."""
    assert set(body) == {"jsonrpc", "id", "error"}, body
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id, body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "data"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert_error_details(error["data"])
    if reason is not None:
        assert error["data"][0]["reason"] == reason, error
    return error


def violations(error: dict[str, Any]) -> list[dict[str, str]]:
    """The ``fieldViolations`` of the error's ``google.rpc.BadRequest`` (exactly one)."""
    bad = [d for d in error["data"]
           if d["@type"] == "type.googleapis.com/google.rpc.BadRequest"]
    assert len(bad) == 1, error
    found: list[dict[str, str]] = bad[0]["fieldViolations"]
    assert found and all(v["field"] and v["description"] for v in found), error
    return found


async def send(http: httpx.AsyncClient, params: dict[str, Any], request_id: str | int = 1,
               headers: dict[str, str] | None = None) -> dict[str, Any]:
    """``SendMessage`` -> the ``Task`` of its ``SendMessageResponse``."""
    result = result_of(await post(http, "SendMessage", params, request_id, headers),
                       "SendMessageResponse", request_id)
    assert set(result) == {"task"}, result
    task: dict[str, Any] = result["task"]
    return task


async def get_task(http: httpx.AsyncClient, task_id: str, **extra: Any) -> dict[str, Any]:
    task: dict[str, Any] = result_of(await post(http, "GetTask", {"id": task_id, **extra}),
                                     "Task")
    return task


async def frames(http: httpx.AsyncClient, method: str, params: Any, request_id: str | int = 1,
                 headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A streaming call's SSE ``data`` (JSON-RPC responses); each success is a
    ``StreamResponse``."""
    async with http.stream("POST", "/", json=rpc(method, params, request_id),
                           headers=V1 if headers is None else headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = (await response.aread()).decode()
    bodies = [event["data"] for event in parse_sse(raw)]
    for body in bodies:
        assert body["jsonrpc"] == "2.0" and body["id"] == request_id, body
        if "error" not in body:
            result_of(body, "StreamResponse", request_id)
    return bodies


def kind(stream_response: dict[str, Any]) -> tuple[str, str | None]:
    """(payload, state) of a ``StreamResponse``."""
    (payload, inner), = stream_response.items()
    status = inner.get("status")
    return payload, None if status is None else status["state"]


def texts(task: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["parts"][0]["text"]) for m in task["history"]]


def assert_document_question(task: dict[str, Any]) -> dict[str, Any]:
    """The document-review agent's first question in v1.0's shape; its ``hitl`` data."""
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    question = task["status"]["message"]
    assert question["role"] == "ROLE_AGENT"
    assert (question["taskId"], question["contextId"]) == (task["id"], task["contextId"])
    assert question["parts"][0] == {"text": DOC_QUESTION}
    assert set(question["parts"][1]) == {"data"}
    hitl: dict[str, Any] = question["parts"][1]["data"]["hitl"]
    assert hitl["question"] == DOC_QUESTION
    assert hitl["options"] == ["passport", "id_card"]
    assert [(c["label"], c["value"]) for c in hitl["choices"]] == [
        ("여권", "passport"), ("주민등록증", "id_card")]
    assert len(question["parts"]) == 2
    return hitl


@asynccontextmanager
async def example(**kwargs: Any) -> AsyncIterator[httpx.AsyncClient]:
    from app.main import AGENTS

    async with serve(AGENTS, **kwargs) as client:
        yield client.http


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with example() as served_http:
        yield served_http


async def parked(http: httpx.AsyncClient, context_id: str | None = None,
                 headers: dict[str, str] | None = None) -> dict[str, Any]:
    task = await send(http, send_request("이 서류를 검증해줘",
                                         context_id=context_id or new_context()),
                      headers=headers)
    assert_document_question(task)
    return task


async def completed(http: httpx.AsyncClient, context_id: str) -> dict[str, Any]:
    first = await parked(http, context_id)
    await send(http, send_request("여권", context_id=context_id))
    done = await send(http, send_request("1990-01-01", task_id=first["id"]))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    return done


async def parked_then_canceled(http: httpx.AsyncClient, context_id: str) -> dict[str, Any]:
    task = await parked(http, context_id)
    result_of(await post(http, "CancelTask", {"id": task["id"]}), "Task")
    return task


# ---------------------------------------------------------------------------- the checker


def test_the_checker_refuses_what_a_strict_protojson_reader_refuses() -> None:
    """``assert_proto`` is what every test here leans on: it must fail on each kind of defect."""
    good = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING",
                                                     "timestamp": "2026-01-01T00:00:00.000Z"},
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}]}
    assert proto_errors("Task", good) == []
    bad = {
        "kind": {**good, "kind": "task"},
        "snake": {**good, "context_id": "c"},
        "enum": {**good, "status": {"state": "completed"}},
        "enum number": {**good, "status": {"state": 3}},
        "type": {**good, "id": 7},
        "null": {**good, "contextId": None},
        "required": {"id": "t"},
        "oneof": {**good, "history": [{"messageId": "m", "role": "ROLE_USER",
                                       "parts": [{"text": "a", "data": {}}]}]},
        "timestamp": {**good, "status": {"state": "TASK_STATE_WORKING", "timestamp": "now"}},
        "repeated": {**good, "history": {}},
        "struct": {**good, "metadata": []},
    }
    for name, value in bad.items():
        assert proto_errors("Task", value), name
    assert proto_errors("ListTasksResponse", {"tasks": [], "pageSize": 1, "totalSize": 0})
    assert proto_errors("ListTasksResponse", {"tasks": [], "nextPageToken": "", "pageSize": "1",
                                              "totalSize": 0})
    assert proto_errors("Part", {"raw": "not base64!"})


# ---------------------------------------------------------------------------- the seed, send


async def test_the_seed_conversation_over_send_message(http: httpx.AsyncClient) -> None:
    context_id = new_context()
    first = await send(http, send_request("이 서류를 검증해줘", context_id=context_id,
                                          agent_id="document-review"), "s1")
    assert first["contextId"] == context_id
    assert_document_question(first)
    assert "interruptId" in first["status"]["message"]["metadata"]
    assert texts(first) == [("ROLE_USER", "이 서류를 검증해줘")]

    second = await send(http, send_request("여권", context_id=context_id), "s2")
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert second["status"]["message"]["parts"][0] == {"text": BIRTHDAY_QUESTION}

    done = await send(http, send_request("1990-01-01", task_id=first["id"]), "s3")
    assert (done["id"], done["contextId"]) == (first["id"], context_id)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = done["artifacts"]
    assert artifact["parts"][0] == {"data": {"doc_type": "passport", "birthday": "1990-01-01"}}
    assert "passport" in artifact["parts"][1]["text"]
    assert texts(done) == [
        ("ROLE_USER", "이 서류를 검증해줘"), ("ROLE_AGENT", DOC_QUESTION), ("ROLE_USER", "여권"),
        ("ROLE_AGENT", BIRTHDAY_QUESTION), ("ROLE_USER", "1990-01-01"),
    ]
    assert done["history"][1] == first["status"]["message"]
    assert await get_task(http, first["id"]) == done


async def test_the_seed_conversation_over_send_streaming_message(http: httpx.AsyncClient) -> None:
    context_id = new_context()
    first = await frames(http, "SendStreamingMessage",
                         send_request("이 서류를 검증해줘", context_id=context_id), "f1")
    results = [f["result"] for f in first]
    assert kind(results[0])[0] == "task"
    assert kind(results[-1]) == ("statusUpdate", "TASK_STATE_INPUT_REQUIRED")
    task_id = results[0]["task"]["id"]
    question = results[-1]["statusUpdate"]
    assert (question["taskId"], question["contextId"]) == (task_id, context_id)
    assert question["status"]["message"]["parts"][0] == {"text": DOC_QUESTION}
    assert "final" not in question  # v1.0: the stream closes instead

    await frames(http, "SendStreamingMessage", send_request("여권", context_id=context_id), "f2")
    last = [f["result"] for f in await frames(
        http, "SendStreamingMessage", send_request("1990-01-01", task_id=task_id), "f3")]
    kinds = [kind(r) for r in last]
    assert kinds[0] == ("task", kinds[0][1]) and kinds[-1] == (
        "statusUpdate", "TASK_STATE_COMPLETED")
    (artifact,) = [r["artifactUpdate"] for r in last if "artifactUpdate" in r]
    assert artifact["taskId"] == task_id
    assert artifact["artifact"]["parts"][0] == {
        "data": {"doc_type": "passport", "birthday": "1990-01-01"}}
    stored = await get_task(http, task_id)
    assert stored["status"] == last[-1]["statusUpdate"]["status"]
    assert stored["artifacts"] == [artifact["artifact"]]


# ---------------------------------------------------------------------------- both versions


async def test_input_required_carries_the_same_question_in_both_versions() -> None:
    async with serve_example() as client:
        new = await send(client.http, send_request("이 서류를 검증해줘", context_id=new_context()))
        old = await client.send("이 서류를 검증해줘", context_id=new_context())
    assert old["status"]["state"] == "input-required"
    new_question, old_question = new["status"]["message"], old["status"]["message"]
    assert [p["text"] for p in new_question["parts"][:1]] == [DOC_QUESTION]
    assert old_question["parts"][0] == {"kind": "text", "text": DOC_QUESTION}
    assert old_question["parts"][1]["kind"] == "data"
    assert new_question["parts"][1] == {"data": old_question["parts"][1]["data"]}
    assert set(new_question["metadata"]) == set(old_question["metadata"])


async def test_a_question_asked_in_one_version_is_answered_in_the_other() -> None:
    async with serve_example() as client:
        http = client.http
        # asked in v0.3, answered in v1.0, finished in v0.3
        old = await client.send("이 서류를 검증해줘", context_id=new_context())
        middle = await send(http, send_request("여권", task_id=old["id"]))
        assert middle["id"] == old["id"]
        assert middle["status"]["message"]["parts"][0] == {"text": BIRTHDAY_QUESTION}
        done_old = await client.send("1990-01-01", task_id=old["id"])
        assert done_old["status"]["state"] == "completed"
        assert done_old["artifacts"][0]["parts"][0]["data"] == {
            "doc_type": "passport", "birthday": "1990-01-01"}
        # asked in v1.0, answered in v0.3, finished in v1.0
        new = await parked(http)
        answered = await client.send("id_card", task_id=new["id"])
        assert answered["status"]["state"] == "input-required"
        assert answered["status"]["message"]["parts"][0] == {
            "kind": "text", "text": BIRTHDAY_QUESTION}
        done_new = await send(http, send_request("2000-12-31", task_id=new["id"]))
        assert done_new["status"]["state"] == "TASK_STATE_COMPLETED"
        assert done_new["artifacts"][0]["parts"][0] == {
            "data": {"doc_type": "id_card", "birthday": "2000-12-31"}}
        # one task, two views: the same messages in the same order
        v03 = await client.result("tasks/get", {"id": new["id"]})
        v10 = await get_task(http, new["id"])
    assert [m["messageId"] for m in v03["history"]] == [m["messageId"] for m in v10["history"]]
    assert [m["role"] for m in v10["history"]] == [
        "ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT", "ROLE_USER"]
    assert v10["status"]["timestamp"] == v03["status"]["timestamp"]


@asynccontextmanager
async def serve_example(**kwargs: Any) -> AsyncIterator[A2AClient]:
    from app.main import AGENTS

    async with serve(AGENTS, **kwargs) as client:
        yield client


# ---------------------------------------------------------------------------- send options


async def test_return_immediately_answers_a_running_task_at_once() -> None:
    delay = 0.5
    async with serve([slow_agent(delay)]) as client:
        began = time.monotonic()
        task = await send(client.http, send_request(
            "go", configuration={"returnImmediately": True}))
        assert time.monotonic() - began < delay
        assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        for _ in range(400):
            now = await get_task(client.http, task["id"])
            if now["status"]["state"] == "TASK_STATE_COMPLETED":
                break
            await asyncio.sleep(0.01)
        assert now["status"]["state"] == "TASK_STATE_COMPLETED"
        # without it, the call waits for the end
        waited = await send(client.http, send_request("go"))
        assert waited["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_history_length_zero_and_n(http: httpx.AsyncClient) -> None:
    context_id = new_context()
    first = await send(http, send_request("이 서류를 검증해줘", context_id=context_id,
                                          configuration={"historyLength": 0}))
    assert "history" not in first
    second = await send(http, send_request("여권", context_id=context_id,
                                           configuration={"historyLength": 1}))
    assert [m["parts"] for m in second["history"]] == [[{"text": "여권"}]]
    full = await get_task(http, first["id"])
    assert len(full["history"]) == 3
    assert (await get_task(http, first["id"], historyLength=2))["history"] == full["history"][-2:]
    assert (await get_task(http, first["id"], historyLength=50)) == full
    none = await get_task(http, first["id"], historyLength=0)
    assert none == {k: v for k, v in full.items() if k != "history"}
    # an int32 given as a decimal string, as ProtoJSON allows
    assert (await get_task(http, first["id"], historyLength="1"))["history"] == \
        full["history"][-1:]


# ---------------------------------------------------------------------------- ListTasks


async def list_tasks(http: httpx.AsyncClient, headers: dict[str, str] | None = None,
                     **params: Any) -> dict[str, Any]:
    page: dict[str, Any] = result_of(await post(http, "ListTasks", params, headers=headers),
                                     "ListTasksResponse")
    return page


async def test_list_tasks_pages_filters_and_totals(http: httpx.AsyncClient) -> None:
    here, there = new_context(), new_context()
    # a message on a context resumes the task waiting there: each is canceled but the last
    done = await completed(http, here)
    ours = [await parked_then_canceled(http, here) for _ in range(2)] + [await parked(http, here)]
    elsewhere = [await parked_then_canceled(http, there), await parked(http, there)]

    everything = await list_tasks(http)
    assert (everything["totalSize"], everything["pageSize"], everything["nextPageToken"]) == (
        6, 50, "")
    stamps = [t["status"]["timestamp"] for t in everything["tasks"]]
    assert stamps == sorted(stamps, reverse=True)  # last update first

    seen: list[str] = []
    token = ""
    for expected in (2, 2):
        page = await list_tasks(http, contextId=here, pageSize=2, pageToken=token)
        assert (page["pageSize"], page["totalSize"], len(page["tasks"])) == (2, 4, expected)
        assert all(t["contextId"] == here for t in page["tasks"])
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if len(seen) < 4:
            assert token
    assert token == ""
    assert sorted(seen) == sorted([done["id"], *(t["id"] for t in ours)])

    finished = await list_tasks(http, status="TASK_STATE_COMPLETED")
    assert [t["id"] for t in finished["tasks"]] == [done["id"]]
    assert finished["totalSize"] == 1
    parked_there = await list_tasks(http, contextId=there, status="TASK_STATE_INPUT_REQUIRED")
    assert [t["id"] for t in parked_there["tasks"]] == [elsewhere[1]["id"]]
    canceled = await list_tasks(http, status="TASK_STATE_CANCELED")
    assert sorted(t["id"] for t in canceled["tasks"]) == sorted(
        t["id"] for t in [*ours[:2], elsewhere[0]])
    assert canceled["totalSize"] == 3
    # ProtoJSON: an enum by number, an int32 as a string
    assert (await list_tasks(http, status=3, pageSize="5"))["tasks"] == finished["tasks"]

    assert all("artifacts" not in t for t in everything["tasks"])
    assert all("artifacts" not in t
               for t in (await list_tasks(http, includeArtifacts=False))["tasks"])
    with_artifacts = await list_tasks(http, status="TASK_STATE_COMPLETED", includeArtifacts=True)
    assert with_artifacts["tasks"][0]["artifacts"] == done["artifacts"]


async def test_a_list_tasks_page_of_large_tasks_holds_fewer_than_its_size(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every task listed is read whole, history included: a page stops once its tasks' stored
    rows would pass ``LIST_PAGE_BYTES`` ("The service may return fewer than this value"), and
    its ``nextPageToken`` goes on from there."""
    here = new_context()
    made = [await parked_then_canceled(http, here) for _ in range(4)]
    row = len(json.dumps(await get_task(http, made[0]["id"])))  # about a stored row's size
    monkeypatch.setattr(stores_base, "LIST_PAGE_BYTES", 2 * row + row // 2)
    pages = [await list_tasks(http, contextId=here, pageSize=10)]
    while pages[-1]["nextPageToken"]:
        assert len(pages) < 5, "the token does not move"
        pages.append(await list_tasks(http, contextId=here, pageSize=10,
                                      pageToken=pages[-1]["nextPageToken"]))
    assert [(p["pageSize"], p["totalSize"]) for p in pages] == [(10, 4)] * len(pages)
    assert len(pages) >= 2 and all(1 <= len(p["tasks"]) <= 3 for p in pages)
    seen = [t["id"] for p in pages for t in p["tasks"]]
    assert sorted(seen) == sorted(t["id"] for t in made)  # each once


@pytest.mark.parametrize("params", [
    {"pageToken": "not-a-token"}, {"pageToken": "W10"}, {"pageSize": 0}, {"pageSize": 101},
    {"pageSize": -1}, {"status": "TASK_STATE_DONE"}, {"historyLength": -1},
], ids=["token", "token-empty-list", "size-0", "size-101", "size-negative", "status",
        "history"])
async def test_list_tasks_refuses_bad_params(http: httpx.AsyncClient,
                                              params: dict[str, Any]) -> None:
    error = v1_error(await post(http, "ListTasks", params, "bad"), -32602, "bad",
                     "INVALID_PARAMS")
    (name,) = params
    assert any(name in v["field"] for v in violations(error)), error


async def test_list_tasks_never_shows_another_principals_tasks() -> None:
    alice, bob = {**V1, "X-API-Key": ALICE_KEY}, {**V1, "X-API-Key": BOB_KEY}
    async with served(api_keys=KEYS) as (http, _):
        hers = [await parked(http, headers=alice) for _ in range(2)]
        his = await parked(http, headers=bob)
        listed = await list_tasks(http, headers=alice)
        assert sorted(t["id"] for t in listed["tasks"]) == sorted(t["id"] for t in hers)
        assert listed["totalSize"] == 2
        his_list = await list_tasks(http, headers=bob)
        assert [t["id"] for t in his_list["tasks"]] == [his["id"]]
        # even naming her context
        assert (await list_tasks(http, headers=bob, contextId=hers[0]["contextId"]))[
            "tasks"] == []
        v1_error(await post(http, "GetTask", {"id": hers[0]["id"]}, headers=bob), -32001,
                 reason="TASK_NOT_FOUND")


# ---------------------------------------------------------------------------- cancel, subscribe


async def test_cancel_task(http: httpx.AsyncClient) -> None:
    task = await parked(http)
    canceled = result_of(await post(http, "CancelTask", {"id": task["id"]}, "c1"), "Task", "c1")
    assert canceled["id"] == task["id"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert await get_task(http, task["id"]) == canceled
    v1_error(await post(http, "CancelTask", {"id": task["id"]}, "c2"), -32002, "c2",
             "TASK_NOT_CANCELABLE")
    v1_error(await post(http, "CancelTask", {"id": "nope"}, "c3"), -32001, "c3",
             "TASK_NOT_FOUND")


async def test_subscribe_to_task_starts_with_a_task_snapshot(http: httpx.AsyncClient) -> None:
    task = await parked(http)
    stored = await get_task(http, task["id"])
    bodies = await frames(http, "SubscribeToTask", {"id": task["id"]}, "sub")
    results = [b["result"] for b in bodies]
    assert results[0] == {"task": stored}
    assert all(kind(r)[0] in ("statusUpdate", "artifactUpdate") for r in results[1:])
    assert results[-1]["statusUpdate"]["status"] == stored["status"]


async def test_subscribe_to_an_ended_task_is_unsupported_operation(
    http: httpx.AsyncClient,
) -> None:
    done = await completed(http, new_context())
    (body,) = await frames(http, "SubscribeToTask", {"id": done["id"]}, "sub")
    error = v1_error(body, -32004, "sub", "UNSUPPORTED_OPERATION")
    assert error["data"][0]["metadata"]["taskId"] == done["id"]
    (unknown,) = await frames(http, "SubscribeToTask", {"id": "nope"}, "sub")
    v1_error(unknown, -32001, "sub", "TASK_NOT_FOUND")


# ---------------------------------------------------------------------------- push configs


async def test_push_configs_in_v1_0_shapes() -> None:
    async with example(push_allow_private=True) as http:
        task = await parked(http)
        mine = {"taskId": task["id"], "id": "mine", "url": HOOK, "token": "tok-1",
                "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}
        created = result_of(await post(http, "CreateTaskPushNotificationConfig", mine),
                            "TaskPushNotificationConfig")
        assert created == mine
        assigned = result_of(await post(http, "CreateTaskPushNotificationConfig",
                                        {"taskId": task["id"], "url": HOOK + "2"}),
                             "TaskPushNotificationConfig")
        assert set(assigned) == {"taskId", "id", "url"}
        assert str(uuid.UUID(assigned["id"])) == assigned["id"]
        got = result_of(await post(http, "GetTaskPushNotificationConfig",
                                   {"taskId": task["id"], "id": "mine"}),
                        "TaskPushNotificationConfig")
        assert got == mine
        listed = result_of(await post(http, "ListTaskPushNotificationConfigs",
                                      {"taskId": task["id"]}),
                           "ListTaskPushNotificationConfigsResponse")
        assert listed == {"configs": [mine, assigned], "nextPageToken": ""}
        deleted = result_of(await post(http, "DeleteTaskPushNotificationConfig",
                                       {"taskId": task["id"], "id": "mine"}),
                            "google.protobuf.Empty")
        assert deleted == {}
        listed = result_of(await post(http, "ListTaskPushNotificationConfigs",
                                      {"taskId": task["id"]}),
                           "ListTaskPushNotificationConfigsResponse")
        assert listed["configs"] == [assigned]
        v1_error(await post(http, "GetTaskPushNotificationConfig",
                            {"taskId": task["id"], "id": "mine"}), -32602)
        # a config given with the message is stored with the task the message starts
        started = await send(http, send_request("이 서류를 검증해줘", configuration={
            "taskPushNotificationConfig": {"id": "with-send", "url": HOOK}}))
        listed = result_of(await post(http, "ListTaskPushNotificationConfigs",
                                      {"taskId": started["id"]}),
                           "ListTaskPushNotificationConfigsResponse")
        assert listed == {"configs": [{"taskId": started["id"], "id": "with-send", "url": HOOK}],
                          "nextPageToken": ""}


async def test_a_webhook_on_a_private_address_is_refused_in_v1_0() -> None:
    async with example(push_allow_private=False) as http:
        task = await parked(http)
        body = await post(http, "CreateTaskPushNotificationConfig",
                          {"taskId": task["id"], "url": "http://127.0.0.1/hook"})
        error = v1_error(body, -32602, reason="INVALID_PARAMS")
        assert error["data"][0]["metadata"]["reason"].endswith("loopback address"), error
        assert error["data"][0]["metadata"]["field"] == "params.url", error  # v1.0's name
        sent = send_request("hi", context_id=new_context(), configuration={
            "taskPushNotificationConfig": {"url": "http://127.0.0.1/hook"}})
        error = v1_error(await post(http, "SendMessage", sent), -32602, reason="INVALID_PARAMS")
        assert error["data"][0]["metadata"]["field"] == \
            "params.configuration.taskPushNotificationConfig.url", error
        listed = result_of(await post(http, "ListTaskPushNotificationConfigs",
                                      {"taskId": task["id"]}),
                           "ListTaskPushNotificationConfigsResponse")
        assert listed == {"configs": [], "nextPageToken": ""}


# ---------------------------------------------------------------------------- agent cards


async def test_the_card_a_v1_0_client_asks_for(http: httpx.AsyncClient) -> None:
    for request in ({"headers": V1}, {"params": {"A2A-Version": "1.0"}}):
        response = await http.get("/.well-known/agent-card.json", **request)  # type: ignore[arg-type]
        card = response.json()
        assert_proto("AgentCard", card)
        assert card["supportedInterfaces"] == [
            {"url": "http://testserver/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://testserver/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ]
        assert card["capabilities"]["extendedAgentCard"] is False
    plain = (await http.get("/.well-known/agent-card.json")).json()
    assert_valid("AgentCard", plain)
    assert plain["protocolVersion"] == "0.3.0"


async def test_get_extended_agent_card_not_configured(http: httpx.AsyncClient) -> None:
    v1_error(await post(http, "GetExtendedAgentCard", {}, "x"), -32007, "x",
             "EXTENDED_AGENT_CARD_NOT_CONFIGURED")


async def test_get_extended_agent_card_with_authentication() -> None:
    alice = {**V1, "X-API-Key": ALICE_KEY}
    async with served(api_keys=KEYS, extended_card=EXTENDED) as (http, _):
        public = (await http.get("/.well-known/agent-card.json", headers=alice)).json()
        assert_proto("AgentCard", public)
        assert public["capabilities"]["extendedAgentCard"] is True
        assert public["securitySchemes"]["apiKey"] == {"apiKeySecurityScheme": {
            "location": "header", "name": "X-API-Key",
            "description": "an API key in X-API-Key (or as a bearer token)"}}
        card = result_of(await post(http, "GetExtendedAgentCard", {}, "e", headers=alice),
                         "AgentCard", "e")
        # params may be left out (an empty request message)
        request = {"jsonrpc": "2.0", "id": "e2", "method": "GetExtendedAgentCard"}
        bare = (await http.post("/", json=request, headers=alice)).json()
        assert result_of(bare, "AgentCard", "e2") == card
    assert (card["name"], card["description"]) == (EXTENDED["name"], EXTENDED["description"])
    assert [s["id"] for s in card["skills"]] == ["bulk-review"]
    assert card["supportedInterfaces"] == public["supportedInterfaces"]
    assert card["securitySchemes"] == public["securitySchemes"]


# ---------------------------------------------------------------------------- errors, versions


async def test_invalid_params_carry_a_bad_request(http: httpx.AsyncClient) -> None:
    no_parts = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}
    error = v1_error(await post(http, "SendMessage", no_parts, "p"), -32602, "p",
                     "INVALID_PARAMS")
    assert any("parts" in v["field"] for v in violations(error))
    error = v1_error(await post(http, "GetTask", {}, "p"), -32602, "p", "INVALID_PARAMS")
    assert any(v["field"].endswith("id") for v in violations(error))
    error = v1_error(await post(http, "SendMessage", "not an object", "p"), -32602, "p")


async def test_every_error_metadata_value_is_a_string(http: httpx.AsyncClient) -> None:
    """``ErrorInfo.metadata`` is ``map<string, string>``: structured v0.3 data is written out."""
    bodies = [
        await post(http, "GetTask", {"id": "nope"}),
        await post(http, "GetTask", {"id": "nope"}, headers={}),
        await post(http, "GetTask", {"id": "nope"}, headers={"A2A-Version": "2.0"}),
        await post(http, "SendMessage", {"message": message("x", task_id="nope")}),
    ]
    for body in bodies:
        error = v1_error(body, body["error"]["code"])
        assert all(isinstance(v, str) for v in error["data"][0]["metadata"].values()), error


@pytest.mark.parametrize("header", [None, "", "0.3", "0.3.0"], ids=["absent", "empty", "0.3",
                                                                   "0.3.0"])
async def test_a_v1_0_method_without_version_1_0_is_version_not_supported(
    http: httpx.AsyncClient, header: str | None,
) -> None:
    headers = {} if header is None else {"A2A-Version": header}
    for method in ("SendMessage", "GetTask", "ListTasks"):
        body = await post(http, method, {"id": "x"}, "v", headers=headers)
        error = v1_error(body, -32009, "v", "VERSION_NOT_SUPPORTED")
        assert error["data"][0]["metadata"]["method"] == method


@pytest.mark.parametrize("method", ["GetTask", "tasks/get", "SendMessage", "message/send"])
async def test_an_unknown_version_is_version_not_supported_for_any_method(
    http: httpx.AsyncClient, method: str,
) -> None:
    for version in ("2.0", "1.1", "one"):
        body = await post(http, method, {"id": "x"}, "v", headers={"A2A-Version": version})
        v1_error(body, -32009, "v", "VERSION_NOT_SUPPORTED")


async def test_version_1_0_with_a_patch_number_or_as_a_query_parameter(
    http: httpx.AsyncClient,
) -> None:
    task = await parked(http)
    patched = await post(http, "GetTask", {"id": task["id"]}, headers={"A2A-Version": "1.0.1"})
    assert result_of(patched, "Task") == task
    queried = await post(http, "GetTask", {"id": task["id"]}, headers={},
                         path="/?A2A-Version=1.0")
    assert result_of(queried, "Task") == task
    # the header wins over the query parameter
    both = await post(http, "GetTask", {"id": task["id"]}, path="/?A2A-Version=0.3")
    assert result_of(both, "Task") == task


@pytest.mark.parametrize("data", [[1, 2], "text", 5, True], ids=["list", "string", "number",
                                                                 "bool"])
async def test_a_data_part_that_is_not_an_object_is_invalid_params(
    http: httpx.AsyncClient, data: Any,
) -> None:
    context_id = new_context()
    body = await post(http, "SendMessage", send_request(data=data, context_id=context_id), "d")
    error = v1_error(body, -32602, "d", "INVALID_PARAMS")
    assert any(v["field"].endswith("data") for v in violations(error))
    assert (await list_tasks(http, contextId=context_id))["tasks"] == []  # nothing started


async def test_a_tenant_is_invalid_params(http: httpx.AsyncClient) -> None:
    for method, params in (("SendMessage", {**send_request("hi"), "tenant": "acme"}),
                           ("GetTask", {"id": "x", "tenant": "acme"}),
                           ("ListTasks", {"tenant": "acme"})):
        error = v1_error(await post(http, method, params, "t"), -32602, "t", "INVALID_PARAMS")
        assert any("tenant" in v["field"] for v in violations(error)), error


async def test_an_enum_as_its_number_is_accepted(http: httpx.AsyncClient) -> None:
    task = await send(http, send_request("이 서류를 검증해줘", role=1, context_id=new_context()))
    assert_document_question(task)
    assert task["history"][0]["role"] == "ROLE_USER"
    for bad in (0, 3, "ROLE_SYSTEM", "user"):
        body = await post(http, "SendMessage", send_request("hi", role=bad), "r")
        v1_error(body, -32602, "r", "INVALID_PARAMS")


async def test_every_v1_0_method_is_served(http: httpx.AsyncClient) -> None:
    """The method table: each v1.0 name answers in v1.0 (a wrong id is -32001, never
    -32601 nor a v0.3-shaped error)."""
    calls = {
        "GetTask": {"id": "nope"}, "CancelTask": {"id": "nope"},
        "CreateTaskPushNotificationConfig": {"taskId": "nope", "url": HOOK},
        "GetTaskPushNotificationConfig": {"taskId": "nope", "id": "c"},
        "ListTaskPushNotificationConfigs": {"taskId": "nope"},
        "DeleteTaskPushNotificationConfig": {"taskId": "nope", "id": "c"},
    }
    for method, params in calls.items():
        body = await post(http, method, params, method)
        assert "error" in body, (method, body)
        code = body["error"]["code"]
        assert code in (-32001, -32602), (method, body)
        v1_error(body, code, method)
    assert json.dumps(await list_tasks(http))  # ListTasks, SendMessage and the streams: above


@pytest.mark.parametrize("raw", ["not base64!", "abcde", "ab=", "QUJD+_ZA"],
                         ids=["punctuation", "one-char-tail", "bad-padding", "mixed-alphabets"])
async def test_raw_that_is_not_base64_is_invalid_params_and_stores_nothing(
    http: httpx.AsyncClient, raw: str,
) -> None:
    context_id = new_context()
    params = send_request("hi", context_id=context_id)
    params["message"]["parts"].append({"raw": raw, "mediaType": "application/pdf"})
    error = v1_error(await post(http, "SendMessage", params, "b"), -32602, "b", "INVALID_PARAMS")
    assert any("raw" in v["description"] for v in violations(error)), error
    assert (await list_tasks(http, contextId=context_id))["tasks"] == []


@pytest.mark.parametrize("raw", ["QUJD", "QUI=", "QUI", "-_-_"],
                         ids=["standard", "padded", "unpadded", "url-safe"])
async def test_base64_raw_is_kept_and_read_in_both_versions(
    http: httpx.AsyncClient, raw: str,
) -> None:
    params = send_request("hi", context_id=new_context())
    params["message"]["parts"].append({"raw": raw, "mediaType": "application/pdf",
                                       "filename": "a.pdf"})
    task = await send(http, params)
    assert task["history"][0]["parts"][1] == {"raw": raw, "mediaType": "application/pdf",
                                              "filename": "a.pdf"}
    old = (await http.post("/", json=rpc("tasks/get", {"id": task["id"]}))).json()["result"]
    assert old["history"][0]["parts"][1] == {
        "kind": "file", "file": {"bytes": raw, "mimeType": "application/pdf", "name": "a.pdf"}}


async def test_v0_3_file_bytes_that_are_not_base64_are_invalid_params(
    http: httpx.AsyncClient,
) -> None:
    """The same edge check over v0.3: a task stored with them would not read over v1.0."""
    message = {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user",
               "parts": [{"kind": "file", "file": {"bytes": "not base64!"}}]}
    body = (await http.post("/", json=rpc("message/send", {"message": message}, "o"))).json()
    assert body["error"]["code"] == -32602, body
    assert body["error"]["data"]["errors"][0]["field"].endswith("file.bytes"), body


def test_a_file_stored_before_the_check_reads_over_v1_0_as_the_bytes_of_its_text() -> None:
    """Tasks stored before the edge checked base64 may hold any text as a file's bytes; over
    v1.0 that text's UTF-8 is the bytes (a strict reader takes nothing else)."""
    from llamon_agent.a2a.types import Task
    from llamon_agent.a2a.v1_convert import task_out

    stored = Task.model_validate({
        "id": "t", "contextId": "c", "status": {"state": "completed"},
        "history": [{"kind": "message", "messageId": "m", "role": "user",
                     "parts": [{"kind": "file", "file": {"bytes": "not base64!"}}]}]})
    out = task_out(stored)
    assert out["history"][0]["parts"] == [{"raw": "bm90IGJhc2U2NCE="}]
    assert_proto("Task", out)
