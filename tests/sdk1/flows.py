"""Expected values and checks the 1.x client flows share (ProtoJSON v1 views of the tasks)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from tests.orchestrator.helpers import QUESTION_PARTS
from tests.process.conftest import Server
from tests.runtime.helpers import BIRTHDAY_QUESTION as BIRTHDAY_QUESTION
from tests.runtime.helpers import DOC_PAYLOAD
from tests.runtime.helpers import DOC_QUESTION as DOC_QUESTION
from tests.sdk1.client import Connected, Sent
from tests.sdk1.wire import assert_v03_exchange, assert_v1_exchange

DOC_REQUEST = "이 서류를 검증해줘"
DOC_RESULT = {"doc_type": "passport", "birthday": "1990-01-01"}
# the same questions as over v0.3: the payloads are the v0.3 tests' own
DOC_HITL = DOC_PAYLOAD
LOAN_HITL: dict[str, Any] = QUESTION_PARTS[1]["data"]["hitl"]  # type: ignore[index]
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
COMPLETED = "TASK_STATE_COMPLETED"
WORKING = "TASK_STATE_WORKING"
TERMINAL = frozenset({COMPLETED, "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
                      "TASK_STATE_REJECTED"})
REVIEWER_TOKEN = "sdk1-reviewer"
AUTH = {"Authorization": f"Bearer {REVIEWER_TOKEN}"}
MODES = ("native", "compat")


def context(prefix: str) -> str:
    return f"sdk1-{prefix}-{uuid.uuid4().hex[:8]}"


def assert_chosen(connected: Connected, mode: str) -> None:
    """Native: the client picked the card's v1.0 interface, so its compatibility layer is off;
    compat: the card was cut to its 0.3 interface, so the layer is on."""
    if mode == "native":
        assert (connected.transport, connected.version) == ("JsonRpcTransport", "1.0"), (
            connected.transport, connected.interface)
    else:
        assert connected.transport == "CompatJsonRpcTransport", connected.transport
        assert connected.version.startswith("0.3"), connected.interface


def assert_wire(sent: Sent, mode: str, streaming: bool) -> None:
    """Every JSON-RPC call of a send spoke the mode's version (one call per send)."""
    assert len(sent.rpc) == 1, [e.rpc_method for e in sent.rpc]
    for exchange in sent.rpc:
        if mode == "native":
            assert_v1_exchange(exchange, streaming=streaming)
        else:
            assert_v03_exchange(exchange)
            expected = "message/stream" if streaming else "message/send"
            assert exchange.rpc_method == expected, exchange.rpc_method


def assert_events(sent: Sent, streaming: bool, state: str) -> None:
    """Send: one ``task`` result. Stream: the task snapshot first, status updates after it,
    the last one in ``state`` (the stream closes instead of saying ``final``)."""
    kinds = [next(iter(event)) for event in sent.events]
    if not streaming:
        assert kinds == ["task"], sent.events
        assert sent.events[0]["task"]["status"]["state"] == state
        return
    assert kinds[0] == "task", kinds
    # v1.0 (specification 3.1.2): the Task first, then only status and artifact updates
    assert set(kinds[1:]) <= {"statusUpdate", "artifactUpdate"}, (
        f"a stream event after the first is not an update: {kinds}")
    assert kinds[-1] == "statusUpdate", kinds
    assert sent.events[-1]["statusUpdate"]["status"]["state"] == state, sent.events[-1]
    assert all(s["status"]["state"] not in TERMINAL for s in
               (e["statusUpdate"] for e in sent.events[1:-1] if "statusUpdate" in e)), kinds


def question(task: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The text and the ``hitl`` payload of an ``input-required`` task's status message."""
    assert task["status"]["state"] == INPUT_REQUIRED, task["status"]
    message = task["status"]["message"]
    assert message["role"] == "ROLE_AGENT", message
    first, second = message["parts"]
    assert set(first) == {"text"} and set(second) == {"data"}, message["parts"]
    return first["text"], second["data"]["hitl"]


def artifact_data(task: dict[str, Any]) -> list[Any]:
    return [part["data"] for artifact in task.get("artifacts") or []
            for part in artifact["parts"] if "data" in part]


def history_roles(task: dict[str, Any]) -> list[str]:
    return [message["role"] for message in task.get("history") or []]


# ------------------------------------------------------------------------------ the reviewer


def pending_review(server: Server, task_id: str, timeout: float = 15.0) -> dict[str, Any]:
    """The pending review of ``task_id`` once it is there (``GET /reviews``, bounded)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10) as http:
        while True:
            response = http.get("/reviews", headers=AUTH)
            assert response.status_code == 200, response.text
            found = [r for r in response.json()["reviews"] if r["taskId"] == task_id]
            if found:
                assert len(found) == 1, found
                return dict(found[0])
            assert time.monotonic() < deadline, f"no review for {task_id} within {timeout}s"
            time.sleep(0.05)


def decide(server: Server, review_id: str, body: dict[str, Any]) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10) as http:
        response = http.post(f"/reviews/{review_id}/decision", headers=AUTH, json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())
