"""Tool-approval decisions record who decided and when, over A2A and over ``/hitl/review``,
as a human reviewer's decision does in ``GET /reviews/{id}`` (tests/auth)."""

from __future__ import annotations

from typing import Any

import pytest

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent.core.principal import context_key, space_of
from tests.conftest import rpc, send_params
from tests.security.helpers import two_principals
from tests.tool_review.helpers import SEED_REQUEST

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


def _decisions_message(task: dict[str, Any]) -> dict[str, Any]:
    sent = [m for m in task["history"] if m["role"] == "user"
            and any(p["kind"] == "data" and "decisions" in p["data"] for p in m["parts"])]
    assert len(sent) == 1, task["history"]
    return sent[0]


async def test_a_rest_approval_records_its_principal_and_time() -> None:
    outbox = Outbox(":memory:")
    try:
        async with two_principals([email_assistant(outbox)]) as pair:
            chat = await pair.alice.http.post(
                "/hitl/chat", json={"message": SEED_REQUEST, "thread_id": "mail-1"})
            assert chat.status_code == 200 and chat.json()["pending_review"] is not None
            review = await pair.alice.http.post(
                "/hitl/review", json={"thread_id": "mail-1", "decisions": [{"type": "approve"}]})
            assert review.status_code == 200, review.text
            stored = await pair.manager._store.latest_in_context(
                context_key(space_of("alice"), "mail-1"))
            assert stored is not None
            task = await pair.alice.result("tasks/get", {"id": stored.id})
    finally:
        outbox.close()
    metadata = _decisions_message(task)["metadata"]
    assert metadata["decidedBy"] == "alice"
    assert metadata["decidedAt"].endswith("Z") and metadata["decidedAt"][:2] == "20"


async def test_an_a2a_approval_records_its_principal() -> None:
    outbox = Outbox(":memory:")
    try:
        async with two_principals([email_assistant(outbox)]) as pair:
            asked = await pair.bob.result("message/send", send_params(SEED_REQUEST))
            assert asked["status"]["state"] == "input-required"
            answer = send_params(data={"decisions": [{"type": "approve"}]},
                                 context_id=asked["contextId"])
            body = (await pair.bob.http.post("/", json=rpc("message/send", answer))).json()
            assert body["result"]["status"]["state"] == "completed", body
            task = await pair.bob.result("tasks/get", {"id": asked["id"]})
    finally:
        outbox.close()
    assert _decisions_message(task)["metadata"]["decidedBy"] == "bob"
