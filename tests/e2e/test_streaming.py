"""Black-box tests of message/stream, tasks/resubscribe, blocking, cancel and concurrency.

Wire contract: docs/wire.md (sections 7, 8, 9); schema in tests/spec/. Every SSE ``data:`` is
validated against ``SendStreamingMessageSuccessResponse`` (or ``JSONRPCErrorResponse``).

SSE framing (LF only) has its own test, ``test_sse_framing_is_lf_only_one_compact_json_per_frame``;
the other tests parse frames tolerantly so that a framing defect does not hide every other
result behind the same failure.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypedDict

import httpx
import pytest
from asgi_lifespan import LifespanManager
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent, HITLInterrupt, create_app
from tests.conftest import A2AClient, assert_valid, parse_sse, rpc, send_params, served_on

DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."
READY_QUESTION = "Ready?"
RUNNING = ("submitted", "working")

Event = dict[str, Any]  # {"id": str | None, "data": JSON-RPC response}

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


# ---------------------------------------------------------------------------- a slow agent


class SlowState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    hitl_answer: str | None
    result: dict[str, Any]


def slow_agent(delay: float, *, ask: bool = False, agent_id: str = "slow") -> Agent:
    """``work`` sleeps ``delay`` seconds; with ``ask`` it first asks READY_QUESTION."""

    async def begin(state: SlowState) -> dict[str, Any]:
        return {"hitl_answer": None}

    async def question(state: SlowState) -> dict[str, Any] | HITLInterrupt:
        if ask and state.get("hitl_answer") is None:
            return HITLInterrupt(payload={"question": READY_QUESTION}, thread_id=state["thread_id"])
        return {}

    async def work(state: SlowState) -> dict[str, Any]:
        await asyncio.sleep(delay)
        return {
            "result": {"slept": delay, "answer": state.get("hitl_answer")},
            "messages": [AIMessage(content="slept")],
        }

    graph = StateGraph(SlowState)
    graph.add_node("begin", begin)
    graph.add_node("question", question)
    graph.add_node("work", work)
    graph.add_edge(START, "begin")
    graph.add_edge("begin", "question")
    graph.add_edge("question", "work")
    graph.add_edge("work", END)
    return Agent(agent_id, graph, name="Slow", description="Sleeps, then answers.")


class FailingState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def failing_agent() -> Agent:
    async def boom(state: FailingState) -> dict[str, Any]:
        raise ValueError("kaboom")

    graph = StateGraph(FailingState)
    graph.add_node("boom", boom)
    graph.add_edge(START, "boom")
    graph.add_edge("boom", END)
    return Agent("boom", graph)


# ---------------------------------------------------------------------------- helpers


@asynccontextmanager
async def serve_app(agents: list[Agent]) -> AsyncIterator[tuple[A2AClient, Any]]:
    """Like ``conftest.serve`` (the ``backend``'s storage and events) but also yields the ASGI
    app, for ``LiveStream``."""
    app = create_app(agents, **served_on())
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", timeout=30
        ) as http:
            yield A2AClient(http), manager.app


def check_event(event: Event, request_id: str | int) -> None:
    data = event["data"]
    assert data["jsonrpc"] == "2.0"
    assert data["id"] == request_id
    if "error" in data:
        assert_valid("JSONRPCErrorResponse", data)
    else:
        assert_valid("SendStreamingMessageSuccessResponse", data)
        assert set(data) == {"jsonrpc", "id", "result"}


async def sse(
    client: A2AClient,
    method: str,
    params: Any,
    request_id: str | int = "s1",
    headers: dict[str, str] | None = None,
) -> tuple[httpx.Headers, str, list[Event]]:
    async with client.http.stream(
        "POST", "/", json=rpc(method, params, request_id), headers=headers or {}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = (await response.aread()).decode()
    events = parse_sse(raw.replace("\r\n", "\n"))
    for event in events:
        check_event(event, request_id)
    return response.headers, raw, events


async def stream(
    client: A2AClient,
    method: str,
    params: Any,
    request_id: str | int = "s1",
    headers: dict[str, str] | None = None,
) -> list[Event]:
    return (await sse(client, method, params, request_id, headers))[2]


def results(events: list[Event]) -> list[dict[str, Any]]:
    return [e["data"]["result"] for e in events]


def summary(events: list[Event]) -> list[tuple[str | None, str, str | None, bool | None]]:
    """(sse id, kind, state, final) per event."""
    out = []
    for event in events:
        result = event["data"]["result"]
        state = result["status"]["state"] if "status" in result else None
        out.append((event["id"], result["kind"], state, result.get("final")))
    return out


def assert_single_error(events: list[Event], code: int, request_id: str | int) -> dict[str, Any]:
    assert len(events) == 1, events
    body = events[0]["data"]
    assert_valid("JSONRPCErrorResponse", body)
    assert set(body) == {"jsonrpc", "id", "error"}
    assert body["id"] == request_id
    assert body["error"]["code"] == code
    return body["error"]


def assert_plain_error(body: dict[str, Any], code: int, request_id: str | int | None) -> None:
    assert_valid("JSONRPCErrorResponse", body)
    assert set(body) == {"jsonrpc", "id", "error"}
    assert body["id"] == request_id
    assert body["error"]["code"] == code


async def get_task(client: A2AClient, task_id: str, **extra: Any) -> dict[str, Any]:
    body = await client.call("tasks/get", {"id": task_id, **extra}, "get")
    assert_valid("GetTaskSuccessResponse", body)
    return body["result"]


async def wait_state(
    client: A2AClient,
    task_id: str,
    states: set[str],
    timeout: float = 5.0,
    passing: tuple[str, ...] = RUNNING,
) -> dict[str, Any]:
    """Poll tasks/get (bounded) until the task is in one of ``states``; on the way it may
    only be in one of ``passing``."""
    deadline = time.monotonic() + timeout
    while True:
        task = await get_task(client, task_id)
        if task["status"]["state"] in states:
            return task
        assert task["status"]["state"] in passing, task["status"]
        assert time.monotonic() < deadline, f"still {task['status']['state']} after {timeout}s"
        await asyncio.sleep(0.02)


async def send(
    client: A2AClient, params: dict[str, Any], request_id: str | int = "send"
) -> dict[str, Any]:
    body = await client.call("message/send", params, request_id)
    assert_valid("SendMessageSuccessResponse", body)
    assert "error" not in body
    return body["result"]


def new_context() -> str:
    return f"ctx-{uuid.uuid4()}"


class LiveStream:
    """A streaming POST driven at the ASGI level: frames arrive as the server sends them, and
    leaving the ``async with`` block drops the connection (``http.disconnect``)."""

    def __init__(
        self,
        app: Any,
        method: str,
        params: Any,
        request_id: str | int = "live",
        headers: dict[str, str] | None = None,
    ) -> None:
        self._app = app
        self._request_id = request_id
        self._body = json.dumps(rpc(method, params, request_id)).encode()
        self._headers = [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self._body)).encode()),
            *[(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        ]
        self._events: asyncio.Queue[Event | None] = asyncio.Queue()
        self._gone = asyncio.Event()
        self._sent = False
        self._buffer = ""
        self._task: asyncio.Task[None] | None = None
        self.start: dict[str, Any] | None = None
        self.closed = False

    async def _receive(self) -> dict[str, Any]:
        if not self._sent:
            self._sent = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        self._buffer += message.get("body", b"").decode().replace("\r\n", "\n")
        while "\n\n" in self._buffer:
            frame, self._buffer = self._buffer.split("\n\n", 1)
            for event in parse_sse(frame):
                check_event(event, self._request_id)
                self._events.put_nowait(event)
        if not message.get("more_body", False):
            self._events.put_nowait(None)

    async def __aenter__(self) -> LiveStream:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/",
            "raw_path": b"/",
            "query_string": b"",
            "root_path": "",
            "headers": self._headers,
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        self._task = asyncio.create_task(self._app(scope, self._receive, self._send))
        return self

    async def next(self, timeout: float = 3.0) -> Event | None:
        """The next event, or ``None`` once the server ended the response."""
        event = await asyncio.wait_for(self._events.get(), timeout)
        if event is None:
            self.closed = True
        return event

    async def rest(self, timeout: float = 3.0) -> list[Event]:
        events = []
        while (event := await self.next(timeout)) is not None:
            events.append(event)
        return events

    async def __aexit__(self, *exc: object) -> None:
        self._gone.set()
        assert self._task is not None
        # the server must finish the response promptly once the client is gone
        await asyncio.wait_for(self._task, 3.0)


# ---------------------------------------------------------------------------- framing


@pytest.mark.parametrize("case", ["new-task", "resubscribe", "error-event"])
async def test_sse_framing_is_lf_only_one_compact_json_per_frame(
    client: A2AClient, case: str
) -> None:
    context_id = new_context()
    if case == "new-task":
        call: tuple[str, Any] = ("message/stream", send_params("hi", context_id=context_id))
        expected_ids: list[str | None] = ["1", "2", "3"]
    elif case == "resubscribe":
        task = await send(client, send_params("hi", context_id=context_id))
        call = ("tasks/resubscribe", {"id": task["id"]})
        expected_ids = [None, "3"]
    else:
        call = ("message/stream", send_params("hi", task_id="no-such-task"))
        expected_ids = [None]
    headers, raw, events = await sse(client, *call)
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["cache-control"] == "no-store"
    assert headers["x-accel-buffering"] == "no"
    assert [e["id"] for e in events] == expected_ids
    frames = [f for f in raw.replace("\r\n", "\n").split("\n\n") if f]
    assert len(frames) == len(events)
    for frame, event in zip(frames, events, strict=True):
        lines = frame.split("\n")
        data_lines = [line for line in lines if line.startswith("data:")]
        assert len(data_lines) == 1, frame  # one JSON document per frame, on one line
        id_lines = [line for line in lines if line.startswith("id:")]
        assert id_lines == ([] if event["id"] is None else [f"id: {event['id']}"])
        assert len(lines) == len(data_lines) + len(id_lines), frame
        payload = data_lines[0][len("data: ") :]
        assert payload == json.dumps(event["data"], separators=(",", ":"), ensure_ascii=False)
    assert raw.replace("\r\n", "\n").endswith("\n\n")
    assert "\r" not in raw, "SSE lines must be separated by LF, never CRLF (docs/wire.md §8.3)"


# ---------------------------------------------------------------------------- message/stream


async def test_stream_new_task_event_order_and_ids(client: A2AClient) -> None:
    context_id = new_context()
    params = send_params("이 서류를 검증해줘", context_id=context_id)
    sent = params["message"]
    events = await stream(client, "message/stream", params, "stream-1")
    assert summary(events) == [
        ("1", "task", "submitted", None),
        ("2", "status-update", "working", False),
        ("3", "status-update", "input-required", True),
    ]
    snapshot, working, final = results(events)
    task_id = snapshot["id"]
    assert snapshot["contextId"] == context_id
    assert snapshot["history"] == [{**sent, "taskId": task_id, "contextId": context_id}]
    assert "artifacts" not in snapshot
    for update in (working, final):
        assert {"kind", "taskId", "contextId", "status", "final"} <= set(update)
        assert update["taskId"] == task_id
        assert update["contextId"] == context_id
    question = final["status"]["message"]
    assert question["role"] == "agent"
    assert question["parts"][0] == {"kind": "text", "text": DOC_QUESTION}
    assert question["parts"][1]["data"]["hitl"]["options"] == ["passport", "id_card"]
    stored = await get_task(client, task_id)
    assert stored["status"] == final["status"]
    assert stored["history"] == snapshot["history"]


async def test_stream_resume_continues_ids_across_turns(client: A2AClient) -> None:
    context_id = new_context()
    first = await stream(
        client, "message/stream", send_params("이 서류를 검증해줘", context_id=context_id)
    )
    task_id = first[0]["data"]["result"]["id"]

    # resume with contextId only
    second = await stream(
        client, "message/stream", send_params("여권", context_id=context_id), "stream-2"
    )
    assert summary(second) == [
        ("4", "task", "working", None),
        ("5", "status-update", "working", False),
        ("6", "status-update", "input-required", True),
    ]
    snapshot = second[0]["data"]["result"]
    assert snapshot["id"] == task_id
    assert [(m["role"], m["parts"][0]["text"]) for m in snapshot["history"]] == [
        ("user", "이 서류를 검증해줘"),
        ("agent", DOC_QUESTION),
        ("user", "여권"),
    ]
    final = second[-1]["data"]["result"]
    assert final["taskId"] == task_id
    assert final["status"]["message"]["parts"][0] == {"kind": "text", "text": BIRTHDAY_QUESTION}

    # resume with taskId: the turn ends with the result artifact
    third = await stream(client, "message/stream", send_params("1990-01-01", task_id=task_id), 77)
    assert summary(third) == [
        ("7", "task", "working", None),
        ("8", "status-update", "working", False),
        ("9", "artifact-update", None, None),
        ("10", "status-update", "completed", True),
    ]
    artifact_event = third[2]["data"]["result"]
    assert artifact_event["taskId"] == task_id
    assert artifact_event["contextId"] == context_id
    assert artifact_event["artifact"]["parts"][0] == {
        "kind": "data",
        "data": {"doc_type": "passport", "birthday": "1990-01-01"},
    }
    assert artifact_event.get("append", False) is False
    stored = await get_task(client, task_id)
    assert stored["status"]["state"] == "completed"
    assert stored["artifacts"] == [artifact_event["artifact"]]
    assert stored["status"] == third[-1]["data"]["result"]["status"]

    # a new task on the same context has its own numbering
    fresh = await stream(client, "message/stream", send_params("again", context_id=context_id))
    assert fresh[0]["data"]["result"]["id"] != task_id
    assert [e["id"] for e in fresh] == ["1", "2", "3"]


async def test_stream_until_done_ids_over_many_turns(client: A2AClient) -> None:
    context_id = new_context()
    seen: list[int] = []
    for answer in ["take notes", "a", "b", "done"]:
        kw: dict[str, Any] = {"context_id": context_id}
        if not seen:
            kw["agent_id"] = "until-done"
        events = await stream(client, "message/stream", send_params(answer, **kw))
        finals = [e for e in events if e["data"]["result"].get("final") is True]
        assert finals == [events[-1]]  # exactly one final event, and it is the last
        ids = [int(e["id"]) for e in events]
        assert ids == list(range(ids[0], ids[0] + len(ids)))
        seen.extend(ids)
    assert seen == list(range(1, len(seen) + 1))
    assert events[-1]["data"]["result"]["status"]["state"] == "completed"


async def test_stream_errors_after_validation_are_single_sse_events(client: A2AClient) -> None:
    # unknown taskId
    events = await stream(client, "message/stream", send_params("x", task_id="nope"), "e1")
    error = assert_single_error(events, -32001, "e1")
    assert error["data"]["taskId"] == "nope"
    # terminal task
    context_id = new_context()
    await stream(client, "message/stream", send_params("hi", context_id=context_id))
    await stream(client, "message/stream", send_params("여권", context_id=context_id))
    done = await stream(client, "message/stream", send_params("1990-01-01", context_id=context_id))
    task_id = done[0]["data"]["result"]["id"]
    events = await stream(client, "message/stream", send_params("x", task_id=task_id), 2)
    error = assert_single_error(events, -32004, 2)
    assert error["data"]["reason"] == "task is in a terminal state"
    # taskId from another context (validated against stored data)
    events = await stream(
        client, "message/stream", send_params("x", task_id=task_id, context_id=new_context()), 3
    )
    assert_single_error(events, -32602, 3)


async def test_stream_param_errors_are_plain_json(client: A2AClient) -> None:
    bad = send_params("x")
    bad["message"]["parts"] = []
    body = await client.call("message/stream", bad, "pj")
    assert_plain_error(body, -32602, "pj")
    assert body["error"]["data"]["errors"]
    body = await client.call("message/stream", [1, 2], "pj2")
    assert_plain_error(body, -32602, "pj2")
    body = await client.call("tasks/resubscribe", {}, "pj3")
    assert_plain_error(body, -32602, "pj3")
    response = await client.http.post(
        "/",
        content=b"{",
        headers={"content-type": "application/json", "accept": "text/event-stream"},
    )
    assert response.headers["content-type"].startswith("application/json")
    assert_plain_error(response.json(), -32700, None)


# ---------------------------------------------------------------------------- resubscribe


async def test_resubscribe_unknown_task(client: A2AClient) -> None:
    events = await stream(client, "tasks/resubscribe", {"id": "nope"}, "r0")
    error = assert_single_error(events, -32001, "r0")
    assert error["data"]["taskId"] == "nope"


async def test_resubscribe_parked_task(client: A2AClient) -> None:
    context_id = new_context()
    first = await stream(
        client, "message/stream", send_params("이 서류를 검증해줘", context_id=context_id)
    )
    task_id = first[0]["data"]["result"]["id"]
    stored = await get_task(client, task_id)
    for _ in range(2):  # resubscribing is repeatable and changes nothing
        events = await stream(client, "tasks/resubscribe", {"id": task_id}, "r1")
        assert summary(events) == [
            (None, "task", "input-required", None),
            ("3", "status-update", "input-required", True),
        ]
        snapshot, final = results(events)
        assert snapshot == stored
        assert final["taskId"] == task_id
        assert final["contextId"] == context_id
        assert final["status"] == stored["status"]
    assert await get_task(client, task_id) == stored


async def test_resubscribe_terminal_task(client: A2AClient) -> None:
    context_id = new_context()
    for text in ["hi", "여권", "1990-01-01"]:
        events = await stream(client, "message/stream", send_params(text, context_id=context_id))
    task_id = events[0]["data"]["result"]["id"]
    stored = await get_task(client, task_id)
    events = await stream(client, "tasks/resubscribe", {"id": task_id}, 5)
    assert summary(events) == [
        (None, "task", "completed", None),
        ("10", "status-update", "completed", True),
    ]
    assert events[0]["data"]["result"] == stored
    assert events[1]["data"]["result"]["status"] == stored["status"]


async def test_resubscribe_with_last_event_id_replays_exactly(client: A2AClient) -> None:
    context_id = new_context()
    first = await stream(client, "message/stream", send_params("hi", context_id=context_id))
    second = await stream(client, "message/stream", send_params("여권", context_id=context_id))
    task_id = first[0]["data"]["result"]["id"]
    assert [e["id"] for e in first + second] == ["1", "2", "3", "4", "5", "6"]
    assert second[0]["data"]["result"]["kind"] == "task"  # the latest turn's snapshot

    # from the latest turn's snapshot on: exactly the events after the cursor
    for cursor in ("4", "5"):
        replay = await stream(
            client, "tasks/resubscribe", {"id": task_id}, "r2", headers={"Last-Event-ID": cursor}
        )
        assert [(e["id"], e["data"]["result"]) for e in replay] == [
            (e["id"], e["data"]["result"]) for e in second if int(e["id"]) > int(cursor)
        ]

    # a cursor before it: replicas' Redis stream still holds every event after it; one
    # process's ended log let go of the snapshot (the whole task), so it falls back as for
    # events no longer retained: the task as stored, then its status
    stored = await get_task(client, task_id)
    replay = await stream(
        client, "tasks/resubscribe", {"id": task_id}, "r3", headers={"Last-Event-ID": "1"}
    )
    if "events" in served_on():
        assert [(e["id"], e["data"]["result"]) for e in replay] == [
            (e["id"], e["data"]["result"]) for e in first[1:] + second
        ]
        return
    assert summary(replay) == [
        (None, "task", "input-required", None),
        ("6", "status-update", "input-required", True),
    ]
    assert replay[0]["data"]["result"] == stored


async def test_resubscribe_running_task_snapshot_then_live() -> None:
    async with serve_app([slow_agent(0.3)]) as (client, _):
        task = await send(client, send_params("go", configuration={"blocking": False}))
        working = await wait_state(client, task["id"], {"working"})
        events = await stream(client, "tasks/resubscribe", {"id": task["id"]}, "live")
        assert summary(events) == [
            (None, "task", "working", None),
            ("3", "artifact-update", None, None),
            ("4", "status-update", "completed", True),
        ]
        assert events[0]["data"]["result"]["history"] == working["history"]
        assert events[1]["data"]["result"]["artifact"]["parts"][0] == {
            "kind": "data",
            "data": {"slept": 0.3, "answer": None},
        }
        assert (await get_task(client, task["id"]))["status"] == events[-1]["data"]["result"][
            "status"
        ]


async def test_resubscribe_running_task_with_last_event_id() -> None:
    async with serve_app([slow_agent(0.3)]) as (client, _):
        task = await send(client, send_params("go", configuration={"blocking": False}))
        await wait_state(client, task["id"], {"working"})
        events = await stream(
            client, "tasks/resubscribe", {"id": task["id"]}, "live", headers={"Last-Event-ID": "1"}
        )
        assert summary(events) == [
            ("2", "status-update", "working", False),
            ("3", "artifact-update", None, None),
            ("4", "status-update", "completed", True),
        ]


# ---------------------------------------------------------------------------- blocking


async def test_non_blocking_send_then_poll_until_input_required(client: A2AClient) -> None:
    context_id = new_context()
    params = send_params(
        "이 서류를 검증해줘", context_id=context_id, configuration={"blocking": False}
    )
    task = await send(client, params, "nb")
    assert task["kind"] == "task"
    assert task["status"]["state"] == "submitted"
    assert task["contextId"] == context_id
    assert task["history"] == [{**params["message"], "taskId": task["id"], "contextId": context_id}]
    parked = await wait_state(client, task["id"], {"input-required"})
    assert parked["status"]["message"]["parts"][0] == {"kind": "text", "text": DOC_QUESTION}
    assert parked["history"] == task["history"]


async def test_blocking_default_and_true_wait_for_completion() -> None:
    async with serve_app([slow_agent(0.1)]) as (client, _):
        for configuration in (None, {"blocking": True}):
            task = await send(client, send_params("go", configuration=configuration))
            assert task["status"]["state"] == "completed"
            assert task["artifacts"][0]["parts"][0] == {
                "kind": "data",
                "data": {"slept": 0.1, "answer": None},
            }


async def test_non_blocking_returns_at_once_with_history_length() -> None:
    async with serve_app([slow_agent(3.0)]) as (client, _):
        started = time.monotonic()
        task = await send(
            client, send_params("go", configuration={"blocking": False, "historyLength": 0})
        )
        assert time.monotonic() - started < 1.0
        assert task["status"]["state"] == "submitted"
        assert "history" not in task
        running = await wait_state(client, task["id"], {"working"})
        assert len(running["history"]) == 1
        canceled = await client.result("tasks/cancel", {"id": task["id"]})
        assert canceled["status"]["state"] == "canceled"


async def test_history_length_on_get_and_send_configuration(client: A2AClient) -> None:
    context_id = new_context()
    first = await send(
        client, send_params("hi", context_id=context_id, configuration={"historyLength": 0})
    )
    assert "history" not in first
    second = await send(
        client, send_params("여권", context_id=context_id, configuration={"historyLength": 2})
    )
    assert [(m["role"], m["parts"][0]["text"]) for m in second["history"]] == [
        ("agent", DOC_QUESTION),
        ("user", "여권"),
    ]
    full = await get_task(client, first["id"])
    assert len(full["history"]) == 3
    assert (await get_task(client, first["id"], historyLength=1))["history"] == full["history"][-1:]
    assert "history" not in await get_task(client, first["id"], historyLength=0)
    # the stream's task snapshot is unaffected by earlier truncated reads
    events = await stream(client, "tasks/resubscribe", {"id": first["id"]})
    assert events[0]["data"]["result"]["history"] == full["history"]


# ---------------------------------------------------------------------------- cancel


async def test_cancel_parked_task_over_streams(client: A2AClient) -> None:
    context_id = new_context()
    first = await stream(client, "message/stream", send_params("hi", context_id=context_id))
    task_id = first[0]["data"]["result"]["id"]
    body = await client.call("tasks/cancel", {"id": task_id}, "c1")
    assert_valid("CancelTaskSuccessResponse", body)
    assert body["result"]["status"]["state"] == "canceled"

    events = await stream(client, "tasks/resubscribe", {"id": task_id})
    assert summary(events) == [
        (None, "task", "canceled", None),
        ("4", "status-update", "canceled", True),
    ]
    # a message on the same context starts a new task that asks the first question again
    fresh = await stream(client, "message/stream", send_params("여권", context_id=context_id))
    assert summary(fresh)[-1] == ("3", "status-update", "input-required", True)
    assert fresh[0]["data"]["result"]["id"] != task_id
    assert fresh[-1]["data"]["result"]["status"]["message"]["parts"][0]["text"] == DOC_QUESTION


async def test_cancel_running_task_on_stream() -> None:
    async with serve_app([slow_agent(2.0)]) as (client, app):
        context_id = new_context()
        async with LiveStream(
            app, "message/stream", send_params("go", context_id=context_id)
        ) as live:
            snapshot = await live.next()
            assert snapshot is not None
            assert summary([snapshot]) == [("1", "task", "submitted", None)]
            working = await live.next()
            assert working is not None
            assert summary([working]) == [("2", "status-update", "working", False)]
            task_id = snapshot["data"]["result"]["id"]
            watcher = LiveStream(app, "tasks/resubscribe", {"id": task_id}, "watch")
            await watcher.__aenter__()
            try:
                watched = await watcher.next()
                assert watched is not None
                assert summary([watched]) == [(None, "task", "working", None)]

                started = time.monotonic()
                body = await client.call("tasks/cancel", {"id": task_id}, "cancel")
                elapsed = time.monotonic() - started
                # every subscriber sees the same final event
                assert summary(await watcher.rest()) == [("3", "status-update", "canceled", True)]
            finally:
                await watcher.__aexit__(None, None, None)
            assert elapsed < 1.0, "cancel must not wait for the node to finish"
            assert_valid("CancelTaskSuccessResponse", body)
            canceled = body["result"]
            assert canceled["id"] == task_id
            assert canceled["status"]["state"] == "canceled"

            rest = await live.rest()
            assert summary(rest) == [("3", "status-update", "canceled", True)]
            assert live.closed
        stored = await get_task(client, task_id)
        assert stored["status"]["state"] == "canceled"
        assert "artifacts" not in stored
        assert stored == canceled
        # terminal now: cancel again -> -32002, message -> -32004
        assert_plain_error(await client.call("tasks/cancel", {"id": task_id}, 1), -32002, 1)
        body = await client.call("message/send", send_params("x", task_id=task_id), 2)
        assert_plain_error(body, -32004, 2)
        assert body["error"]["data"]["reason"] == "task is in a terminal state"


async def test_cancel_running_resumed_task_answers_the_blocking_sender() -> None:
    async with serve_app([slow_agent(2.0, ask=True)]) as (client, _):
        context_id = new_context()
        parked = await send(client, send_params("start", context_id=context_id))
        assert parked["status"]["state"] == "input-required"
        assert parked["status"]["message"]["parts"][0]["text"] == READY_QUESTION

        blocked = asyncio.create_task(send(client, send_params("yes", task_id=parked["id"]), "b"))
        try:
            # the resumed run may not have started yet when the first poll lands
            await wait_state(
                client, parked["id"], {"working"}, passing=("input-required", *RUNNING)
            )
            started = time.monotonic()
            canceled = await client.result("tasks/cancel", {"id": parked["id"]})
            assert time.monotonic() - started < 1.0
            assert canceled["status"]["state"] == "canceled"
            answer = await asyncio.wait_for(asyncio.shield(blocked), 2.0)
        finally:
            if not blocked.done():
                blocked.cancel()
            await asyncio.gather(blocked, return_exceptions=True)
        assert answer["id"] == parked["id"]
        assert answer["status"]["state"] == "canceled"
        assert "artifacts" not in answer
        assert [m["role"] for m in answer["history"]] == ["user", "agent", "user"]


# ---------------------------------------------------------------------------- concurrency


async def test_second_message_while_running_is_busy() -> None:
    async with serve_app([slow_agent(0.3)]) as (client, _):
        context_id = new_context()
        task = await send(
            client, send_params("go", context_id=context_id, configuration={"blocking": False})
        )
        await wait_state(client, task["id"], {"working"})

        for request_id, params in [
            ("ctx", send_params("more", context_id=context_id)),
            ("task", send_params("more", task_id=task["id"])),
            ("both", send_params("more", task_id=task["id"], context_id=context_id)),
        ]:
            body = await client.call("message/send", params, request_id)
            assert_plain_error(body, -32004, request_id)
            assert body["error"]["data"]["reason"] == "task is busy"

        events = await stream(
            client, "message/stream", send_params("more", context_id=context_id), "busy-stream"
        )
        error = assert_single_error(events, -32004, "busy-stream")
        assert error["data"]["reason"] == "task is busy"

        done = await wait_state(client, task["id"], {"completed"})
        # the refused messages never reached the task
        assert [m["parts"][0]["text"] for m in done["history"]] == ["go"]
        # once the run ended the context is free again: a new task runs
        nxt = await send(client, send_params("again", context_id=context_id))
        assert nxt["id"] != task["id"]
        assert nxt["status"]["state"] == "completed"


async def test_closing_stream_mid_run_does_not_cancel() -> None:
    async with serve_app([slow_agent(0.3)]) as (client, app):
        async with LiveStream(app, "message/stream", send_params("go")) as live:
            snapshot = await live.next()
            working = await live.next()
            assert snapshot is not None
            assert working is not None
            assert summary([snapshot, working]) == [
                ("1", "task", "submitted", None),
                ("2", "status-update", "working", False),
            ]
            task_id = snapshot["data"]["result"]["id"]
        # the client is gone; the run goes on
        done = await wait_state(client, task_id, {"completed", "canceled", "failed"})
        assert done["status"]["state"] == "completed"
        assert done["artifacts"][0]["parts"][0] == {
            "kind": "data",
            "data": {"slept": 0.3, "answer": None},
        }
        # what the dropped client missed can be replayed exactly
        missed = await stream(
            client, "tasks/resubscribe", {"id": task_id}, headers={"Last-Event-ID": "2"}
        )
        assert summary(missed) == [
            ("3", "artifact-update", None, None),
            ("4", "status-update", "completed", True),
        ]
        assert missed[0]["data"]["result"]["artifact"] == done["artifacts"][0]


async def test_agent_exception_ends_stream_with_failed_final() -> None:
    async with serve_app([failing_agent()]) as (client, _):
        events = await stream(client, "message/stream", send_params("x"))
        assert summary(events) == [
            ("1", "task", "submitted", None),
            ("2", "status-update", "working", False),
            ("3", "status-update", "failed", True),
        ]
        failed = events[-1]["data"]["result"]["status"]
        assert failed["message"]["role"] == "agent"
        # message/send: a Task in state failed, not a JSON-RPC error
        task = await send(client, send_params("x"))
        assert task["status"]["state"] == "failed"
