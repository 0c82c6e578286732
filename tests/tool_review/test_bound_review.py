"""``/hitl/review`` bound to its review (``interrupt_id``), and ``interrupt_id`` in every turn.

Issue 8, finding 3: a retried approve could approve the *next* review of the thread. With the
``interrupt_id`` of the turn that showed the review, a retry after the review was decided is
409 and decides nothing.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.tool_review.helpers import Rest, rest_server, tool_messages

# the look-up runs unreviewed; bob's email is reviewed first, then alice's (same task)
TWO_REVIEWS = "Send an email to Alice and bob@example.com re Lunch"
INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
async def rest() -> Any:
    async with rest_server() as rest:
        yield rest


async def review(rest: Rest, thread: str, decisions: list[dict[str, Any]],
                 **extra: Any) -> httpx.Response:
    body = {"thread_id": thread, "decisions": decisions, **extra}
    return await rest.http.post("/hitl/review", json=body, headers={"Accept-Language": "en"})


def turn(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert list(body) == ["thread_id", "reply", "pending_review", "interrupt_id", "expires_at", "messages"]
    return body


async def test_a_retried_approve_cannot_approve_the_next_review(rest: Rest) -> None:
    first = await rest.pending(TWO_REVIEWS, language="en")
    bob = first["interrupt_id"]
    assert INTERRUPT_ID.match(bob)
    assert first["pending_review"]["action_requests"][0]["args"]["to"] == "bob@example.com"

    second = turn(await review(rest, first["thread_id"], [{"type": "approve"}], interrupt_id=bob))
    alice = second["interrupt_id"]
    assert INTERRUPT_ID.match(alice) and alice != bob
    assert second["pending_review"]["action_requests"][0]["args"]["to"] == "alice@example.com"
    assert [r["to"] for r in rest.outbox.rows()] == ["bob@example.com"]

    retry = await review(rest, first["thread_id"], [{"type": "approve"}], interrupt_id=bob)
    assert retry.status_code == 409
    assert retry.json() == {"detail": (
        f"Stale answer: interrupt {bob} is no longer pending on this task (it was answered "
        "already, or never asked here); nothing was changed"
    )}
    assert [r["to"] for r in rest.outbox.rows()] == ["bob@example.com"]  # alice's still waits

    done = turn(await review(rest, first["thread_id"], [{"type": "approve"}], interrupt_id=alice))
    assert done["interrupt_id"] is None and done["pending_review"] is None
    assert [r["to"] for r in rest.outbox.rows()] == ["bob@example.com", "alice@example.com"]
    assert [m["status"] for m in tool_messages(done)] == ["success", "success", "success"]

    late = await review(rest, first["thread_id"], [{"type": "approve"}], interrupt_id=alice)
    assert late.status_code == 409
    assert "Stale answer" in late.json()["detail"]


async def test_a_retry_after_the_thread_moved_on_to_a_new_task_is_409(rest: Rest) -> None:
    first = await rest.pending(language="en")
    thread, asked = first["thread_id"], first["interrupt_id"]
    turn(await review(rest, thread, [{"type": "approve"}], interrupt_id=asked))
    follow = turn(await rest.chat("Email bob@example.com about Notes", thread, language="en"))
    assert follow["interrupt_id"] not in (None, asked)

    retry = await review(rest, thread, [{"type": "approve"}], interrupt_id=asked)
    assert retry.status_code == 409
    assert [r["to"] for r in rest.outbox.rows()] == ["alice@example.com"]


async def test_decisions_without_interrupt_id_keep_deciding_what_waits(rest: Rest) -> None:
    first = await rest.pending(TWO_REVIEWS, language="en")
    second = turn(await review(rest, first["thread_id"], [{"type": "approve"}]))
    assert second["interrupt_id"] is not None
    done = turn(await review(rest, first["thread_id"], [{"type": "approve"}]))
    assert done["interrupt_id"] is None
    assert rest.outbox.count() == 2


@pytest.mark.parametrize("interrupt_id", [7, "", "a" * 129, ["a"]],
                         ids=["number", "empty", "too-long", "list"])
async def test_a_malformed_interrupt_id_is_422_and_decides_nothing(
    rest: Rest, interrupt_id: Any
) -> None:
    first = await rest.pending(language="en")
    response = await review(rest, first["thread_id"], [{"type": "approve"}],
                            interrupt_id=interrupt_id)
    assert response.status_code == 422, response.text
    assert [issue["loc"][:2] for issue in response.json()["detail"]] == [
        ["body", "interrupt_id"]
    ] * len(response.json()["detail"])
    assert rest.outbox.count() == 0


async def test_the_openapi_document_describes_interrupt_id(rest: Rest) -> None:
    schemas = (await rest.http.get("/hitl/openapi.json")).json()["components"]["schemas"]
    chat_turn = schemas["ChatTurnOut"]
    assert list(chat_turn["properties"]).index("interrupt_id") == (
        list(chat_turn["properties"]).index("pending_review") + 1
    )
    assert "interrupt_id" in chat_turn["required"]
    request = schemas["ReviewRequest"]
    assert "interrupt_id" not in request["required"]
    assert {"type": "string", "minLength": 1, "maxLength": 128} in (
        request["properties"]["interrupt_id"]["anyOf"]
    )
