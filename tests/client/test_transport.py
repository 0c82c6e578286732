"""The client's HTTP behaviour on a mocked wire: retries (reads only), timeouts, HTTP and
JSON-RPC errors, invalid responses, SSE streams (CRLF, error events, early end), ownership."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from llamon_agent.a2a.types import Message, Task
from llamon_agent.client import (
    A2AAuthenticationError,
    A2ACardNotFoundError,
    A2AClient,
    A2AConnectionError,
    A2AHTTPStatusError,
    A2AInvalidResponseError,
    A2ARPCError,
    A2AStreamInterruptedError,
    A2ATimeoutError,
    RetryPolicy,
)
from llamon_agent.client.errors import RemoteInternalError, RemoteTaskNotFoundError
from tests.client.conftest import (
    mock_client,
    rpc_error,
    rpc_result,
    sse_response,
    status_json,
    task_json,
)

CARD = {
    "protocolVersion": "0.3.0", "name": "Mock", "description": "d", "url": "http://agent.test/rpc",
    "version": "1", "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}],
    "somethingNew": {"kept": True},
}


class Script:
    """A handler that plays ``steps`` in order (an exception to raise, or a response factory)
    and records every request."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, Exception):
            raise step
        result: httpx.Response = step(request)
        return result

    @property
    def methods(self) -> list[str]:
        return [orjson.loads(r.content)["method"] for r in self.requests if r.content]


def ok_task(request: httpx.Request) -> httpx.Response:
    return rpc_result(request, task_json())


def status(code: int) -> Any:
    return lambda request: httpx.Response(code, text=f"status {code}")


CONNECT_ERROR = httpx.ConnectError("refused")

# ---------------------------------------------------------------------------- retries


@pytest.mark.parametrize("failure", [CONNECT_ERROR, httpx.ReadTimeout("slow"), status(503),
                                     status(500), httpx.RemoteProtocolError("dropped")],
                         ids=["connect", "timeout", "503", "500", "dropped"])
async def test_get_task_is_retried_then_succeeds(failure: Any) -> None:
    script = Script(failure, failure, ok_task)
    client, _ = mock_client(script)
    task = await client.get_task("t1")
    assert task.id == "t1"
    assert script.methods == ["tasks/get"] * 3
    ids = {orjson.loads(r.content)["id"] for r in script.requests}
    assert len(ids) == 1  # the same request, sent again


async def test_get_task_gives_up_after_the_attempts() -> None:
    script = Script(status(503))
    client, _ = mock_client(script, retry=RetryPolicy(attempts=4, backoff=0))
    with pytest.raises(A2AHTTPStatusError) as info:
        await client.get_task("t1")
    assert info.value.status_code == 503 and "status 503" in info.value.body
    assert len(script.requests) == 4
    assert "gave up after 4 attempts" in "".join(getattr(info.value, "__notes__", []))


async def test_backoff_delays(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("llamon_agent.client.retry.asyncio.sleep", fake_sleep)
    script = Script(CONNECT_ERROR)
    client, _ = mock_client(script, retry=RetryPolicy(attempts=5, backoff=0.1, max_backoff=0.3))
    with pytest.raises(A2AConnectionError):
        await client.get_task("t1")
    assert slept == pytest.approx([0.1, 0.2, 0.3, 0.3])


@pytest.mark.parametrize("failure", [status(404), status(400), status(429),
                                     lambda r: rpc_error(r, -32603, "Internal error")],
                         ids=["404", "400", "429", "rpc-internal"])
async def test_reads_are_not_retried_on_other_failures(failure: Any) -> None:
    script = Script(failure, ok_task)
    client, _ = mock_client(script)
    with pytest.raises((A2AHTTPStatusError, RemoteInternalError)):
        await client.get_task("t1")
    assert len(script.requests) == 1


@pytest.mark.parametrize("failure", [CONNECT_ERROR, status(503), httpx.ReadTimeout("slow")],
                         ids=["connect", "503", "timeout"])
async def test_send_stream_and_cancel_are_never_retried(failure: Any) -> None:
    script = Script(failure)  # fails every time: one request per call means no retry
    client, _ = mock_client(script)
    with pytest.raises((A2AConnectionError, A2AHTTPStatusError, A2ATimeoutError)):
        await client.send("hi")
    with pytest.raises((A2AConnectionError, A2AHTTPStatusError, A2ATimeoutError)):
        await client.stream("hi").collect()
    with pytest.raises((A2AConnectionError, A2AHTTPStatusError, A2ATimeoutError)):
        await client.cancel("t1")
    assert script.methods == ["message/send", "message/stream", "tasks/cancel"]


async def test_card_is_retried_and_falls_back_to_the_old_path() -> None:
    def card(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/.well-known/agent-card.json":
            return httpx.Response(404)
        return httpx.Response(200, json=CARD)

    script = Script(CONNECT_ERROR, status(502), card)
    http = httpx.AsyncClient(transport=httpx.MockTransport(script))
    client = await A2AClient.connect("http://agent.test/some/where", http=http,
                                     retry=RetryPolicy(backoff=0))
    assert [str(r.url) for r in script.requests] == [
        "http://agent.test/.well-known/agent-card.json",
        "http://agent.test/.well-known/agent-card.json",
        "http://agent.test/.well-known/agent-card.json",
        "http://agent.test/.well-known/agent.json",
    ]
    assert client.url == "http://agent.test/rpc"
    assert client.card is not None and client.card.model_extra == {"somethingNew": {"kept": True}}
    assert client.card_url == "http://agent.test/.well-known/agent.json"
    await client.aclose()
    assert not http.is_closed


async def test_card_not_found_and_invalid_card() -> None:
    http = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(404)))
    with pytest.raises(A2ACardNotFoundError) as info:
        await A2AClient.connect("http://agent.test/prefix/", http=http)
    assert info.value.urls == [
        "http://agent.test/.well-known/agent-card.json",
        "http://agent.test/.well-known/agent.json",
        "http://agent.test/prefix/.well-known/agent-card.json",
        "http://agent.test/prefix/.well-known/agent.json",
    ]
    broken = {k: v for k, v in CARD.items() if k != "url"}
    http = httpx.AsyncClient(transport=httpx.MockTransport(
        lambda r: httpx.Response(200, json=broken)))
    with pytest.raises(A2AInvalidResponseError, match="url"):
        await A2AClient.connect("http://agent.test", http=http)


async def test_resubscribe_setup_is_retried_and_sends_last_event_id() -> None:
    def stream(request: httpx.Request) -> httpx.Response:
        return sse_response(request, [status_json("completed", True)], ids=["9"])

    script = Script(CONNECT_ERROR, status(503), stream)
    client, _ = mock_client(script)
    events = await client.resubscribe("t1", last_event_id=8).collect()
    assert [(e.id, e.state, e.final) for e in events] == [("9", "completed", True)]
    assert len(script.requests) == 3
    for request in script.requests:
        assert request.headers["last-event-id"] == "8"
        assert request.headers["accept"] == "text/event-stream"
        assert orjson.loads(request.content)["params"] == {"id": "t1"}
    # without a cursor, no header
    script = Script(stream)
    client, _ = mock_client(script)
    await client.resubscribe("t1").collect()
    assert "last-event-id" not in script.requests[0].headers


# ---------------------------------------------------------------------------- timeouts


async def test_timeouts_are_applied_per_request() -> None:
    script = Script(lambda r: (ok_task(r) if orjson.loads(r.content)["method"] != "message/stream"
                               else sse_response(r, [status_json("completed", True)])))
    client, _ = mock_client(script, timeout=httpx.Timeout(3.0, connect=1.0),
                            stream_timeout=httpx.Timeout(None, connect=2.0))
    await client.get_task("t1")
    await client.stream("hi").collect()
    assert script.requests[0].extensions["timeout"] == {
        "connect": 1.0, "read": 3.0, "write": 3.0, "pool": 3.0
    }
    assert script.requests[1].extensions["timeout"] == {
        "connect": 2.0, "read": None, "write": None, "pool": None
    }


async def test_owned_client_uses_the_timeout_and_is_closed() -> None:
    async with A2AClient("http://agent.test/", timeout=5.0) as client:
        http = client._http
        assert http.timeout == httpx.Timeout(5.0)
    assert http.is_closed
    await client.aclose()  # idempotent


async def test_a_timeout_is_a_timeout_error() -> None:
    client, _ = mock_client(Script(httpx.ReadTimeout("slow")), retry=RetryPolicy(attempts=1))
    with pytest.raises(A2ATimeoutError):
        await client.get_task("t1")


# ---------------------------------------------------------------------------- errors


async def test_http_and_rpc_errors() -> None:
    def unauthorized(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, headers={"WWW-Authenticate": "Bearer"}, text="no")

    client, _ = mock_client(Script(unauthorized))
    with pytest.raises(A2AAuthenticationError) as auth:
        await client.send("hi")
    assert (auth.value.status_code, auth.value.www_authenticate) == (401, "Bearer")

    client, _ = mock_client(Script(lambda r: rpc_error(r, -32001, "Task not found", {"id": 1})))
    with pytest.raises(RemoteTaskNotFoundError) as known:
        await client.get_task("x")
    assert (known.value.code, known.value.message, known.value.data) == (
        -32001, "Task not found", {"id": 1}
    )
    client, _ = mock_client(Script(lambda r: rpc_error(r, -32099, "custom")))
    with pytest.raises(A2ARPCError) as custom:
        await client.get_task("x")
    assert type(custom.value) is A2ARPCError and custom.value.code == -32099


def _raw(body: Any) -> Any:
    return lambda request: httpx.Response(
        200, content=body if isinstance(body, bytes) else orjson.dumps(body)
    )


def _with_id(**fields: Any) -> Any:
    return lambda r: httpx.Response(200, json={"jsonrpc": "2.0", "id": orjson.loads(r.content)["id"],
                                               **fields})


@pytest.mark.parametrize("answer", [
    _raw(b"<html>oops</html>"),
    _raw({"jsonrpc": "2.0", "id": "other", "result": task_json()}),
    _raw([{"jsonrpc": "2.0"}]),
    _with_id(result=task_json(), error={"code": 1, "message": "x"}),
    _with_id(),
    _with_id(error={"code": "x", "message": "m"}),
    _with_id(result={"kind": "message", "messageId": "m", "role": "agent",
                     "parts": [{"kind": "text", "text": "hi"}]}),
    _with_id(result={"id": "t1", "contextId": "c1", "status": {"state": "working"}}),
    _with_id(result=task_json(state="sleeping")),
], ids=["not-json", "wrong-id", "batch", "both", "neither", "bad-error", "message-for-task",
        "no-kind", "bad-state"])
async def test_invalid_responses(answer: Any) -> None:
    client, _ = mock_client(Script(answer))
    with pytest.raises(A2AInvalidResponseError):
        await client.get_task("t1")


async def test_send_returns_a_message_or_a_task() -> None:
    message = {"kind": "message", "messageId": "m", "role": "agent",
               "parts": [{"kind": "text", "text": "hi"}]}
    script = Script(lambda r: rpc_result(r, message))
    client, _ = mock_client(script, agent_id="a1")
    result = await client.send("hi", data={"x": 1}, context_id="c9", metadata={"k": "v"},
                               blocking=False, history_length=2)
    assert isinstance(result, Message) and result.text() == "hi"
    body = orjson.loads(script.requests[0].content)
    assert body["jsonrpc"] == "2.0" and body["method"] == "message/send"
    params = body["params"]
    assert params["metadata"] == {"agentId": "a1", "k": "v"}
    assert params["configuration"] == {"blocking": False, "historyLength": 2}
    sent = params["message"]
    assert sent["role"] == "user" and sent["kind"] == "message" and sent["contextId"] == "c9"
    assert sent["parts"] == [{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"x": 1}}]
    assert "taskId" not in sent
    with pytest.raises(ValueError, match="context_id"):
        await client.send(Message.model_validate({**sent, "messageId": "m2"}), context_id="other")


# ---------------------------------------------------------------------------- streams


@pytest.mark.parametrize("sep", ["\n", "\r\n"], ids=["LF", "CRLF"])
async def test_stream_events_and_ids(sep: str) -> None:
    results = [
        task_json(state="submitted"),
        status_json("working", False),
        {"kind": "artifact-update", "taskId": "t1", "contextId": "c1",
         "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "one "}]}},
        {"kind": "artifact-update", "taskId": "t1", "contextId": "c1", "append": True,
         "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "two"}]}},
        status_json("completed", True),
    ]
    client, _ = mock_client(Script(lambda r: sse_response(
        r, results, sep=sep, ids=[None, "1", "2", None, "3"], tail=f": ping{sep}{sep}")))
    stream = client.stream("hi")
    events = await stream.collect()
    assert [(e.kind, e.id) for e in events] == [
        ("task", None), ("status-update", "1"), ("artifact-update", "2"),
        ("artifact-update", "2"), ("status-update", "3"),
    ]
    assert [e.result.to_wire() for e in events] == results
    assert stream.finished and stream.last_event_id == "3" and stream.task_id == "t1"
    assert stream.task is not None and stream.task.status.state == "completed"
    assert stream.task.artifacts is not None
    assert [p.to_wire() for p in stream.task.artifacts[0].parts] == [
        {"kind": "text", "text": "one "}, {"kind": "text", "text": "two"}
    ]


async def test_stream_error_event_after_events() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        request_id = orjson.loads(request.content)["id"]
        error = {"jsonrpc": "2.0", "id": request_id,
                 "error": {"code": -32001, "message": "Task not found"}}
        return sse_response(request, [task_json(), error])

    client, _ = mock_client(Script(answer))
    seen = []
    with pytest.raises(RemoteTaskNotFoundError):
        async for event in client.stream("hi"):
            seen.append(event.kind)
    assert seen == ["task"]


async def test_stream_answered_with_plain_json() -> None:
    client, _ = mock_client(Script(lambda r: rpc_error(r, -32602, "Invalid parameters")))
    with pytest.raises(A2ARPCError) as info:
        await client.stream("hi").collect()
    assert info.value.code == -32602
    message = {"kind": "message", "messageId": "m", "role": "agent",
               "parts": [{"kind": "text", "text": "hi"}]}
    client, _ = mock_client(Script(lambda r: rpc_result(r, message)))
    stream = client.stream("hi")
    assert isinstance(await stream.result(), Message) and stream.finished


async def test_stream_ending_before_the_final_event() -> None:
    client, _ = mock_client(Script(lambda r: sse_response(
        r, [task_json(), status_json("working", False)], ids=[None, "5"])))
    stream = client.stream("hi")
    with pytest.raises(A2AStreamInterruptedError) as info:
        await stream.collect()
    assert (info.value.task_id, info.value.last_event_id) == ("t1", "5")
    assert not stream.finished
    # a lone task in a final state is a complete answer
    client, _ = mock_client(Script(lambda r: sse_response(r, [task_json(state="completed")])))
    task = await client.stream("hi").result()
    assert isinstance(task, Task) and task.status.state == "completed"


async def test_stream_with_a_bad_event() -> None:
    client, _ = mock_client(Script(lambda r: sse_response(r, [{"kind": "nonsense"}])))
    with pytest.raises(A2AInvalidResponseError, match="nonsense"):
        await client.stream("hi").collect()


async def test_closing_a_stream_early_releases_the_response() -> None:
    closed: list[bool] = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            yield b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": self.rid,
                                            "result": task_json()}) + b"\n\n"
            yield b": never ends\n\n"

        async def aclose(self) -> None:
            closed.append(True)

    def answer(request: httpx.Request) -> httpx.Response:
        body = Body()
        body.rid = orjson.loads(request.content)["id"]  # type: ignore[attr-defined]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    client, _ = mock_client(Script(answer))
    async with client.stream("hi") as stream:
        async for event in stream:
            assert event.kind == "task"
            break
    assert closed == [True]
