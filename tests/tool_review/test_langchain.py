"""LangChain interop: ``create_agent`` + ``HumanInTheLoopMiddleware`` served as an ``Agent``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from app.assistant import email_tools
from app.outbox import Outbox
from app.planner import EmailPlanner
from llamon_agent import Agent
from tests.conftest import serve
from tests.tool_review.helpers import EDITED_ARGS, SEED_ARGS, SEED_REQUEST, TWO_REQUEST, Rest, edit

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

LC_DESCRIPTION = (
    "Tool execution requires approval\n\nTool: send_email\n"
    "Args: {'to': 'alice@example.com', 'subject': 'Meeting', 'body': 'The meeting is at 10.'}"
)


def langchain_agent(outbox: Outbox, interrupt_on: dict[str, Any] | None = None) -> Any:
    middleware = HumanInTheLoopMiddleware(interrupt_on=interrupt_on or {"send_email": True})
    return create_agent(EmailPlanner(), email_tools(outbox), middleware=[middleware])


@pytest.fixture
async def outbox() -> AsyncIterator[Outbox]:
    box = Outbox(":memory:")
    yield box
    box.close()


@pytest.fixture
async def rest(outbox: Outbox) -> AsyncIterator[Rest]:
    async with serve([Agent("lc-mail", langchain_agent(outbox))]) as client:
        yield Rest(client, outbox)


async def test_the_middlewares_interrupt_shows_the_same_payload(rest: Rest) -> None:
    task = await rest.client.send(SEED_REQUEST, context_id="lc")
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"] == [
        {"kind": "text", "text": "Awaiting approval: send_email"},
        {"kind": "data", "data": {"hitl": {
            "schema": "llamon.hitl.review.v1",
            "action_requests": [
                {"name": "send_email", "args": SEED_ARGS, "description": LC_DESCRIPTION}
            ],
            # LangChain's True allows its four decisions
            "review_configs": [{"action_name": "send_email",
                                "allowed_decisions": ["approve", "edit", "reject", "respond"]}],
        }}},
    ]
    chat = await rest.chat(SEED_REQUEST, agent_id="lc-mail", language="en")
    assert chat.status_code == 200
    assert chat.json()["pending_review"] == {
        "action_requests": [{"name": "send_email", "args": SEED_ARGS,
                             "description": LC_DESCRIPTION}],
        "review_configs": [{"action_name": "send_email",
                            "allowed_decisions": ["approve", "edit", "reject", "respond"]}],
    }


async def test_langchain_alone_persists_a_bad_answer_and_fails_for_ever(outbox: Outbox) -> None:
    """The trap the runtime's validation exists for (docs/hitl.md §4.6)."""
    graph = langchain_agent(outbox).copy(update={"checkpointer": InMemorySaver()})
    config = {"configurable": {"thread_id": "trap"}}
    await graph.ainvoke({"messages": [("user", TWO_REQUEST)]}, config)
    bad: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    good: Command[Any] = Command(resume={"decisions": [{"type": "approve"}, {"type": "approve"}]})
    message = "Number of human decisions (1) does not match number of hanging tool calls (2)."
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await graph.ainvoke(bad, config)
    with pytest.raises(ValueError, match="Number of human decisions \\(1\\)"):
        await graph.ainvoke(good, config)  # the bad answer was persisted and replays
    assert outbox.count() == 0


async def test_served_the_same_validation_runs_before_its_resume(rest: Rest) -> None:
    task = await rest.client.send(TWO_REQUEST, context_id="lc-validate")
    for bad, text in (
        ([{"type": "approve"}], "Need 2 decisions (one per action), received 1"),
        ([{"type": "later"}, {"type": "approve"}],
         "Decision type 'later' is not recognised. Options: "
         "['approve', 'edit', 'reject', 'respond']"),
        ([{"type": "respond"}, {"type": "approve"}],
         "A 'respond' decision must include 'message' (text)"),
        ([{"type": "edit"}, {"type": "approve"}], "An 'edit' decision must include 'edited_action'"),
    ):
        body = await rest.client.call("message/send", {"message": {
            "kind": "message", "messageId": f"bad-{text[:8]}", "role": "user",
            "contextId": "lc-validate", "parts": [{"kind": "data", "data": {"decisions": bad}}],
        }})
        assert body["error"] == {"code": -32602, "message": text,
                                 "data": {"error": "InvalidReviewDecisionError"}}
    assert await rest.client.result("tasks/get", {"id": task["id"]}) == task
    done = await rest.client.send(
        data={"decisions": [{"type": "respond", "message": "Alice already knows."},
                            {"type": "approve"}]},
        context_id="lc-validate",
    )
    assert done["status"]["state"] == "completed"
    assert [r["to"] for r in rest.outbox.rows()] == ["bob@example.com"]
    assert done["status"]["message"]["parts"][0]["text"] == (
        "Did not send an email to alice@example.com: Alice already knows.\n"
        "Sent an email to bob@example.com with subject 'Meeting'."
    )


async def test_edit_and_reject_through_the_rest_api(rest: Rest) -> None:
    first = await rest.chat(SEED_REQUEST, agent_id="lc-mail")
    thread = first.json()["thread_id"]
    response = await rest.review(thread, [edit()])
    assert response.status_code == 200, response.text
    assert [(r["to"], r["subject"], r["body"]) for r in rest.outbox.rows()] == [
        tuple(EDITED_ARGS.values())
    ]
    second = await rest.chat(SEED_REQUEST, thread)
    assert second.json()["pending_review"] is not None
    rejected = await rest.review(thread, [{"type": "reject", "message": "No."}])
    assert rejected.json()["reply"] == (
        "Did not send an email to alice@example.com: "
        "User rejected the tool call for `send_email` with reason: No."
    )
    assert rest.outbox.count() == 1


async def test_per_tool_allowed_decisions_of_the_middleware(outbox: Outbox) -> None:
    policy = {"send_email": {"allowed_decisions": ["approve", "reject"]}}
    async with serve([Agent("lc", langchain_agent(outbox, policy))]) as client:
        rest = Rest(client, outbox)
        thread = (await rest.chat(SEED_REQUEST)).json()["thread_id"]
        response = await rest.review(thread, [edit()], language="id")
        assert response.status_code == 400
        assert response.json() == {
            "detail": "Jenis keputusan 'edit' tidak dikenal. Pilihan: ['approve', 'reject']"
        }
        assert (await rest.review(thread, [{"type": "approve"}])).status_code == 200
        assert outbox.count() == 1
