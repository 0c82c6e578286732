"""Fixtures for the A2A client tests: our server and an official a2a-sdk 0.3.26 server, both
in-process (``httpx.ASGITransport``), and helpers for mocked transports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import orjson
import pytest

from llamon_agent.client import A2AClient, RetryPolicy
from tests.conftest import serve

DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."
FAST_RETRY = RetryPolicy(attempts=3, backoff=0.0)


@pytest.fixture
async def ours(example_agents: list[Any]) -> AsyncIterator[A2AClient]:
    """Our client, connected through the agent card to the example server."""
    async with serve(example_agents) as raw:
        client = await A2AClient.connect("http://testserver", http=raw.http, retry=FAST_RETRY)
        async with client:
            yield client


# ---------------------------------------------------------------------------- mocked wire


Handler = Callable[[httpx.Request], httpx.Response]


def rpc_result(request: httpx.Request, result: Any) -> httpx.Response:
    body = orjson.loads(request.content)
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})


def rpc_error(request: httpx.Request, code: int, message: str, data: Any = None) -> httpx.Response:
    body = orjson.loads(request.content)
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "error": error})


def sse_response(request: httpx.Request, results: list[Any], *, sep: str = "\n",
                 ids: list[str | None] | None = None, tail: str = "") -> httpx.Response:
    """An event stream answering ``request`` with one JSON-RPC response per result."""
    request_id = orjson.loads(request.content)["id"]
    frames = []
    for i, result in enumerate(results):
        envelope = result if isinstance(result, dict) and "jsonrpc" in result else {
            "jsonrpc": "2.0", "id": request_id, "result": result
        }
        lines = []
        event_id = ids[i] if ids is not None else None
        if event_id is not None:
            lines.append(f"id: {event_id}")
        lines.append("data: " + orjson.dumps(envelope).decode())
        frames.append(sep.join(lines) + sep + sep)
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"},
        content=("".join(frames) + tail).encode(),
    )


def task_json(task_id: str = "t1", state: str = "working", **extra: Any) -> dict[str, Any]:
    return {"kind": "task", "id": task_id, "contextId": "c1", "status": {"state": state}, **extra}


def status_json(state: str, final: bool, task_id: str = "t1") -> dict[str, Any]:
    return {"kind": "status-update", "taskId": task_id, "contextId": "c1",
            "status": {"state": state}, "final": final}


def mock_client(handler: Handler, **options: Any) -> tuple[A2AClient, httpx.AsyncClient]:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://agent.test")
    options.setdefault("retry", FAST_RETRY)
    return A2AClient("http://agent.test/", http=http, **options), http
