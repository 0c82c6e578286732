"""Tool review over A2A (in process): the payload in ``input-required``, data-part decisions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from app.assistant import email_assistant, email_tools
from app.outbox import Outbox
from llamon_agent import Agent, review_graph
from llamon_agent.tool_review import NO_DECISION
from tests.conftest import A2AClient, assert_valid, rpc, send_params, serve
from tests.runtime.helpers import doc_agent
from tests.tool_review.helpers import (
    MESSAGES,
    SEED_ARGS,
    SEED_PAYLOAD,
    SEED_REQUEST,
    TWO_REQUEST,
    ScriptedModel,
    call,
    edit,
    payload,
)

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
async def outbox() -> AsyncIterator[Outbox]:
    box = Outbox(":memory:")
    yield box
    box.close()


@pytest.fixture
async def client(outbox: Outbox) -> AsyncIterator[A2AClient]:
    async with serve([email_assistant(outbox), doc_agent()]) as running:
        yield running


async def _post(client: A2AClient, method: str, params: dict[str, Any],
                language: str | None = None) -> dict[str, Any]:
    headers = {"Accept-Language": language} if language else {}
    response = await client.http.post("/", json=rpc(method, params, "r1"), headers=headers)
    assert response.status_code == 200
    return response.json()


async def _send(client: A2AClient, language: str | None = None, **kw: Any) -> dict[str, Any]:
    body = await _post(client, "message/send", send_params(**kw), language)
    assert "error" not in body, body
    assert_valid("SendMessageSuccessResponse", body)
    return body["result"]


async def _refused(client: A2AClient, language: str | None = None, **kw: Any) -> dict[str, Any]:
    body = await _post(client, "message/send", send_params(**kw), language)
    assert "result" not in body, body
    assert_valid("JSONRPCErrorResponse", body)
    return body["error"]


def review_parts(hitl: dict[str, Any], language: str) -> list[dict[str, Any]]:
    names = ", ".join(a["name"] for a in hitl["action_requests"])
    summary = {"id": "Menunggu persetujuan: ", "en": "Awaiting approval: "}[language] + names
    return [
        {"kind": "text", "text": summary},
        {"kind": "data", "data": {"hitl": {"schema": "llamon.hitl.review.v1", **hitl}}},
    ]


def decisions(*items: Any) -> dict[str, Any]:
    return {"decisions": list(items)}


@pytest.mark.parametrize("language", ["id", "en"])
async def test_a_review_is_input_required_with_the_payload(
    client: A2AClient, outbox: Outbox, language: str
) -> None:
    task = await _send(client, language, text=SEED_REQUEST, context_id=f"c-{language}")
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"] == review_parts(payload(language=language), language)
    assert "artifacts" not in task
    done = await _send(client, language, data=decisions({"type": "approve"}),
                       context_id=f"c-{language}")
    assert done["id"] == task["id"]
    assert done["status"]["state"] == "completed"
    assert done["status"]["message"]["parts"] == [
        {"kind": "text", "text": "Sent an email to alice@example.com with subject 'Meeting'."}
    ]
    assert outbox.count() == 1
    # history: request, the review, the decisions, as they were
    assert [p["kind"] for m in done["history"] for p in m["parts"]] == [
        "text", "text", "data", "data"
    ]
    assert done["history"][-1]["parts"] == [{"kind": "data", "data": decisions({"type": "approve"})}]


async def test_the_seed_payload_on_the_wire(client: A2AClient) -> None:
    task = await _send(client, "id", text=SEED_REQUEST)
    assert task["status"]["message"]["parts"][1]["data"]["hitl"] == {
        "schema": "llamon.hitl.review.v1", **SEED_PAYLOAD
    }


@pytest.mark.parametrize("language", ["id", "en"])
async def test_a_text_answer_is_refused_and_the_task_keeps_waiting(
    client: A2AClient, outbox: Outbox, language: str
) -> None:
    task = await _send(client, language, text=SEED_REQUEST, context_id="waiting")
    error = await _refused(client, language, text="yes please", context_id="waiting")
    assert error == {"code": -32602, "message": MESSAGES[language]["review_pending"],
                     "data": {"error": "ReviewPendingError"}}
    assert await client.result("tasks/get", {"id": task["id"]}) == task
    assert outbox.count() == 0


@pytest.mark.parametrize("language", ["id", "en"])
async def test_bad_decisions_are_refused_and_a_good_answer_follows(
    client: A2AClient, outbox: Outbox, language: str
) -> None:
    task = await _send(client, language, text=TWO_REQUEST, context_id="two")
    texts = MESSAGES[language]
    for bad, key in (
        (decisions({"type": "approve"}), "count_2_1"),
        (decisions({"type": "postpone"}, {"type": "approve"}), "postpone"),
        (decisions({"type": "approve"}, 5), "none"),
        (decisions({"type": "edit"}, {"type": "approve"}), "edit_needs"),
        (decisions({"type": "edit", "edited_action": {"name": 1}}, {"type": "approve"}), "shape"),
        (decisions({"type": "respond", "message": "x"}, {"type": "approve"}), "respond"),
        ({"decisions": "approve"}, "count_2_0"),
    ):
        error = await _refused(client, language, data=bad, context_id="two")
        expected = texts.get(key) or {
            "id": "Butuh 2 keputusan (satu per aksi), diterima 0",
            "en": "Need 2 decisions (one per action), received 0",
        }[language]
        assert error == {"code": -32602, "message": expected,
                         "data": {"error": "InvalidReviewDecisionError"}}
        assert await client.result("tasks/get", {"id": task["id"]}) == task
    assert outbox.count() == 0
    done = await _send(client, language, task_id=task["id"], context_id="two",
                       data=decisions({"type": "reject", "message": "Not this one"},
                                      {"type": "approve"}))
    assert done["status"]["state"] == "completed"
    assert [r["to"] for r in outbox.rows()] == ["bob@example.com"]


async def test_langgraph_server_resume_forms_carry_decisions_too(
    client: A2AClient, outbox: Outbox
) -> None:
    first = await _send(client, text=SEED_REQUEST, context_id="forms")
    interrupt_id = first["status"]["message"]["metadata"]["interruptId"]
    error = await _refused(client, data={"resume": {interrupt_id: {"decisions": []}}},
                           context_id="forms")
    assert error["message"] == MESSAGES["en"]["count_1_0"]
    error = await _refused(client, data={"resume": "approve"}, context_id="forms")
    assert error["message"] == MESSAGES["en"]["review_pending"]
    done = await _send(client, data={"resume": {interrupt_id: decisions(edit())}},
                       context_id="forms")
    assert done["status"]["state"] == "completed"
    second = await _send(client, text=SEED_REQUEST, context_id="forms")
    assert second["id"] != first["id"]
    await _send(client, data={"resume": decisions({"type": "approve"})}, context_id="forms")
    assert [r["subject"] for r in outbox.rows()] == ["Meeting moved", "Meeting"]


async def test_decisions_where_no_review_waits(client: A2AClient) -> None:
    for language in ("id", "en"):
        error = await _refused(client, language, data=decisions({"type": "approve"}),
                               context_id=f"empty-{language}")
        assert error == {"code": -32602, "message": MESSAGES[language]["no_pending"],
                         "data": {"error": "NoPendingReviewError"}}
    # a context that waits on a question, not on a review
    await _send(client, text="이 서류를 검증해줘", context_id="question", agent_id="document-review")
    error = await _refused(client, "id", data=decisions({"type": "approve"}), context_id="question")
    assert error["message"] == MESSAGES["id"]["no_pending"]
    # a finished review
    await _send(client, text=SEED_REQUEST, context_id="over")
    await _send(client, data=decisions({"type": "reject"}), context_id="over")
    error = await _refused(client, data=decisions({"type": "approve"}), context_id="over")
    assert error["message"] == MESSAGES["en"]["no_pending"]


async def test_streaming_ends_with_the_review_and_answers_by_stream(
    client: A2AClient, outbox: Outbox
) -> None:
    events = await client.stream("message/stream", send_params(SEED_REQUEST, context_id="s1"),
                                 headers={"Accept-Language": "id"})
    final = events[-1]["data"]["result"]
    assert final["kind"] == "status-update" and final["final"] is True
    assert final["status"]["state"] == "input-required"
    assert final["status"]["message"]["parts"] == review_parts(SEED_PAYLOAD, "id")
    events = await client.stream("message/stream",
                                 send_params(data=decisions(edit()), context_id="s1"))
    final = events[-1]["data"]["result"]
    assert final["status"]["state"] == "completed" and final["final"] is True
    assert outbox.count() == 1


async def test_the_wire_can_add_reviews_for_a_task_but_not_remove_them(
    client: A2AClient, outbox: Outbox
) -> None:
    params = send_params("Email Alice about Lunch", context_id="added")
    params["message"]["metadata"] = {
        "interruptOn": {"search_contacts": True, "send_email": False}
    }
    body = await _post(client, "message/send", params)
    task = body["result"]
    assert task["status"]["message"]["parts"][1]["data"]["hitl"]["action_requests"] == [
        {"name": "search_contacts", "args": {"query": "Alice"},
         "description": "Tool `search_contacts` is awaiting approval"}
    ]
    # the addition lasts for the task; send_email still waits (false did not remove it)
    second = await _send(client, data=decisions({"type": "approve"}), context_id="added")
    assert second["id"] == task["id"]
    assert second["status"]["message"]["parts"][1]["data"]["hitl"]["action_requests"][0][
        "args"] == {"to": "alice@example.com", "subject": "Lunch", "body": "Lunch"}
    await _send(client, data=decisions({"type": "approve"}), context_id="added")
    assert outbox.count() == 1
    # a new task on the same context: the addition is gone
    third = await _send(client, text="Email Bob about Lunch", context_id="added")
    assert [a["name"] for a in third["status"]["message"]["parts"][1]["data"]["hitl"][
        "action_requests"]] == ["send_email"]


async def test_request_metadata_can_add_reviews_and_bad_ones_are_refused(
    client: A2AClient,
) -> None:
    params = send_params("Email Alice about Lunch", context_id="meta",
                         agent_id="email-assistant")
    params["metadata"]["interruptOn"] = {"search_contacts": {"allowedDecisions": ["approve"]}}
    task = (await _post(client, "message/send", params))["result"]
    assert task["status"]["message"]["parts"][1]["data"]["hitl"]["review_configs"] == [
        {"action_name": "search_contacts", "allowed_decisions": ["approve"]}
    ]
    bad = send_params("Email Alice about Lunch", context_id="meta-bad")
    bad["message"]["metadata"] = {"interruptOn": {"search_contacts": "yes"}}
    error = (await _post(client, "message/send", bad))["error"]
    assert error == {"code": -32602, "message": "Invalid metadata.interruptOn: "
                     "interruptOn['search_contacts'] must be true, false or an object"}


async def test_a_canceled_review_leaves_no_dangling_call_for_the_model() -> None:
    outbox = Outbox(":memory:")
    model = ScriptedModel(replies=[
        AIMessage(content="", tool_calls=[call("send_email", dict(SEED_ARGS), "c1")]),
        AIMessage(content="ok"),
    ])
    agent = Agent("mail", review_graph(model, email_tools(outbox),
                                       tools_requiring_approval=["send_email"]))
    async with serve([agent]) as client:
        task = await client.send(SEED_REQUEST, context_id="cancel")
        await client.result("tasks/cancel", {"id": task["id"]})
        done = await client.send("never mind", context_id="cancel")
        assert done["status"]["state"] == "completed"
    prompt = model.prompts[-1]
    assert [type(m).__name__ for m in prompt] == [
        "HumanMessage", "AIMessage", "ToolMessage", "HumanMessage"
    ]
    assert isinstance(prompt[2], ToolMessage)
    assert (prompt[2].tool_call_id, prompt[2].text, prompt[2].status) == ("c1", NO_DECISION, "error")
    assert outbox.count() == 0
