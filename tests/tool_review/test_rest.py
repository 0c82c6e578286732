"""``POST /hitl/chat`` and ``POST /hitl/review`` with the example assistant (seed 000)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent import Agent, create_app, review_graph
from tests.conftest import serve
from tests.runtime.helpers import doc_agent
from tests.tool_review.helpers import (
    EDITED_ARGS,
    MESSAGES,
    SEED_ARGS,
    SEED_PAYLOAD,
    SEED_REQUEST,
    TWO_REQUEST,
    Rest,
    ScriptedModel,
    call,
    edit,
    payload,
    rest_server,
    tool_messages,
)

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
async def rest() -> Any:
    async with rest_server() as server:
        yield server


def _validator(document: dict[str, Any], name: str) -> Draft202012Validator:
    return Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    )


async def _openapi(rest: Rest) -> dict[str, Any]:
    response = await rest.http.get("/hitl/openapi.json")
    assert response.status_code == 200
    return response.json()


async def _turn(rest: Rest, response: Any) -> dict[str, Any]:
    """A 200 ChatTurn, checked against the OpenAPI document's ChatTurnOut."""
    assert response.status_code == 200, response.text
    body = response.json()
    errors = list(_validator(await _openapi(rest), "ChatTurnOut").iter_errors(body))
    assert errors == [], errors
    assert list(body) == ["thread_id", "reply", "pending_review", "interrupt_id", "expires_at", "messages"]
    return body


def _detail(response: Any, status: int = 400) -> Any:
    assert response.status_code == status, response.text
    return response.json()["detail"]


# ----------------------------------------------------------------------------- the seed's flow


async def test_chat_returns_the_seeds_pending_review(rest: Rest) -> None:
    body = await _turn(rest, await rest.chat(SEED_REQUEST, language="id"))
    assert body["pending_review"] == SEED_PAYLOAD
    assert body["reply"] is None
    assert [(m["type"], m["content"]) for m in body["messages"]] == [
        ("human", SEED_REQUEST), ("ai", "")
    ]
    assert body["messages"][1]["tool_calls"] == [
        {"id": "call_1", "name": "send_email", "args": SEED_ARGS}
    ]
    assert rest.outbox.count() == 0
    english = await _turn(rest, await rest.chat(SEED_REQUEST, language="en"))
    assert english["pending_review"] == payload(language="en")
    assert english["thread_id"] != body["thread_id"]


async def test_approve_sends_the_proposed_email(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    body = await _turn(rest, await rest.review(thread, [{"type": "approve"}]))
    assert body["thread_id"] == thread
    assert body["pending_review"] is None
    assert body["reply"] == "Sent an email to alice@example.com with subject 'Meeting'."
    assert [(r["thread_id"], r["to"], r["subject"], r["body"]) for r in rest.outbox.rows()] == [
        (thread, "alice@example.com", "Meeting", "The meeting is at 10.")
    ]
    assert tool_messages(body) == [{
        "id": body["messages"][2]["id"], "type": "tool",
        "content": "Email #1 sent to alice@example.com with subject 'Meeting'.",
        "tool_call_id": "call_1", "name": "send_email", "status": "success",
    }]


async def test_edit_sends_the_edited_email_and_history_shows_it(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    body = await _turn(rest, await rest.review(thread, [edit()]))
    assert [(r["to"], r["subject"], r["body"]) for r in rest.outbox.rows()] == [
        ("alice@example.com", "Meeting moved", "The meeting is at 11.")
    ]
    assert body["messages"][1]["tool_calls"] == [
        {"id": "call_1", "name": "send_email", "args": EDITED_ARGS}
    ]
    assert body["reply"] == "Sent an email to alice@example.com with subject 'Meeting moved'."


@pytest.mark.parametrize(
    ("decision", "result"),
    [
        ({"type": "reject", "message": "Wrong recipient. Ask the user for the correct address."},
         "Wrong recipient. Ask the user for the correct address."),
        ({"type": "reject"}, "User rejected this action. It was not executed."),
        ({"type": "reject", "message": ""}, "User rejected this action. It was not executed."),
    ],
)
async def test_reject_sends_nothing_and_the_model_gets_the_reason(
    rest: Rest, decision: dict[str, Any], result: str
) -> None:
    thread = (await rest.pending())["thread_id"]
    body = await _turn(rest, await rest.review(thread, [decision]))
    assert rest.outbox.count() == 0
    assert [(m["status"], m["content"]) for m in tool_messages(body)] == [("error", result)]
    assert body["reply"] == f"Did not send an email to alice@example.com: {result}"
    assert [m["type"] for m in body["messages"]] == ["human", "ai", "tool", "ai"]


async def test_two_actions_the_seeds_review_body(rest: Rest) -> None:
    first = await rest.pending(TWO_REQUEST)
    assert [a["args"]["to"] for a in first["pending_review"]["action_requests"]] == [
        "alice@example.com", "bob@example.com"
    ]
    decisions = [{"type": "reject", "message": "Not this one"}, {"type": "approve"}]
    body = await _turn(rest, await rest.review(first["thread_id"], decisions))
    assert [r["to"] for r in rest.outbox.rows()] == ["bob@example.com"]
    assert body["reply"] == (
        "Did not send an email to alice@example.com: Not this one\n"
        "Sent an email to bob@example.com with subject 'Meeting'."
    )


async def test_an_edit_to_an_unknown_tool_is_an_error_result(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    body = await _turn(rest, await rest.review(thread, [edit(name="send_mail")]))
    assert rest.outbox.count() == 0
    assert body["pending_review"] is None
    assert [(m["name"], m["status"], m["content"]) for m in tool_messages(body)] == [
        ("send_mail", "error",
         "Error: send_mail is not a valid tool, try one of [search_contacts, send_email].")
    ]


async def test_edited_args_failing_the_tool_schema_are_an_error_result(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    body = await _turn(rest, await rest.review(thread, [edit({"to": "alice@example.com"})]))
    assert rest.outbox.count() == 0
    assert body["pending_review"] is None  # no longer awaiting a decision
    [result] = tool_messages(body)
    assert result["status"] == "error"
    assert result["content"] == (
        "Error invoking tool 'send_email' with kwargs {'to': 'alice@example.com'} with error:\n"
        " subject: Field required\nbody: Field required\n Please fix the error and try again."
    )
    follow = await rest.review(thread, [{"type": "approve"}])
    assert _detail(follow) == MESSAGES["id"]["no_pending"]


async def test_a_name_is_looked_up_first_without_review(rest: Rest) -> None:
    body = await rest.pending("Email Alice about Lunch saying See you at noon.")
    assert body["pending_review"]["action_requests"] == [{
        "name": "send_email",
        "args": {"to": "alice@example.com", "subject": "Lunch", "body": "See you at noon."},
        "description": "Tool `send_email` menunggu persetujuan",
    }]
    assert [(m["name"], m["status"]) for m in tool_messages(body)] == [
        ("search_contacts", "success")
    ]


async def test_unreviewed_calls_run_and_a_new_approval_stops_again(rest: Rest) -> None:
    first = await rest.pending("Send an email to Alice and bob@example.com re Lunch")
    assert [a["args"]["to"] for a in first["pending_review"]["action_requests"]] == [
        "bob@example.com"
    ]
    second = await _turn(
        rest, await rest.review(first["thread_id"], [{"type": "reject", "message": "No"}])
    )
    # the look-up of the same turn ran although bob's email was rejected
    assert [(m["name"], m["status"], m["content"]) for m in tool_messages(second)] == [
        ("send_email", "error", "No"),
        ("search_contacts", "success", "Alice Wong <alice@example.com>"),
    ]
    assert second["pending_review"]["action_requests"][0]["args"] == {
        "to": "alice@example.com", "subject": "Lunch", "body": "Lunch"
    }
    done = await _turn(rest, await rest.review(first["thread_id"], [{"type": "approve"}]))
    assert [r["to"] for r in rest.outbox.rows()] == ["alice@example.com"]
    assert done["reply"] == (
        "Did not send an email to bob@example.com: No\n"
        "Sent an email to alice@example.com with subject 'Lunch'."
    )


async def test_a_thread_goes_on_after_its_review(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    await rest.review(thread, [{"type": "approve"}])
    body = await _turn(rest, await rest.chat("Email bob@example.com about Notes", thread))
    assert body["thread_id"] == thread
    assert body["pending_review"]["action_requests"][0]["args"]["to"] == "bob@example.com"
    assert [m["type"] for m in body["messages"]][:4] == ["human", "ai", "tool", "ai"]


async def test_an_unreadable_request_gets_help_and_no_review(rest: Rest) -> None:
    body = await _turn(rest, await rest.chat("hello there"))
    assert body["pending_review"] is None
    assert body["reply"].startswith("I can send emails for you.")


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("language", ["id", "en"])
async def test_the_400_rows_of_the_validation_table(rest: Rest, language: str) -> None:
    texts = MESSAGES[language]
    # no action pending: an unknown thread, and a thread whose review is over
    assert _detail(await rest.review("no-such-thread", [{"type": "approve"}], language=language)) == (
        texts["no_pending"]
    )
    two = (await rest.pending(TWO_REQUEST, language=language))["thread_id"]
    assert _detail(await rest.review(two, [{"type": "approve"}], language=language)) == (
        texts["count_2_1"]
    )
    thread = (await rest.pending(language=language))["thread_id"]
    assert _detail(await rest.review(thread, [{"type": "edit"}], language=language)) == (
        texts["edit_needs"]
    )
    assert _detail(await rest.review(thread, [{"type": "respond", "message": "hi"}],
                                     language=language)) == texts["respond"]
    # a new chat message while actions wait
    assert _detail(await rest.chat("hello", thread, language=language)) == texts["review_pending"]
    await rest.review(thread, [{"type": "reject"}], language=language)
    assert _detail(await rest.review(thread, [{"type": "approve"}], language=language)) == (
        texts["no_pending"]
    )
    assert rest.outbox.count() == 0


@pytest.mark.parametrize(
    ("decisions", "type_", "loc"),
    [
        ([], "too_short", ["body", "decisions"]),
        ([{"type": "postpone"}], "union_tag_invalid", ["body", "decisions", 0]),
        (["approve"], "dict_type", ["body", "decisions", 0]),
        ([5], "dict_type", ["body", "decisions", 0]),
        ([{"message": "no type"}], "union_tag_not_found", ["body", "decisions", 0]),
        ([{"type": "edit", "edited_action": {"args": {}}}], "missing",
         ["body", "decisions", 0, "edit", "edited_action", "name"]),
        ([{"type": "edit", "edited_action": {"name": 5, "args": {}}}], "string_type",
         ["body", "decisions", 0, "edit", "edited_action", "name"]),
        ([{"type": "edit", "edited_action": {"name": "send_email"}}], "missing",
         ["body", "decisions", 0, "edit", "edited_action", "args"]),
        ([{"type": "edit", "edited_action": {"name": "send_email", "args": []}}], "dict_type",
         ["body", "decisions", 0, "edit", "edited_action", "args"]),
        ([{"type": "edit", "edited_action": "send_email"}], "model_type",
         ["body", "decisions", 0, "edit", "edited_action"]),
        ("approve", "list_type", ["body", "decisions"]),
    ],
)
async def test_the_422_rows_of_the_validation_table(
    rest: Rest, decisions: Any, type_: str, loc: list[Any]
) -> None:
    thread = (await rest.pending())["thread_id"]
    detail = _detail(await rest.review(thread, decisions), 422)
    assert [(d["type"], d["loc"]) for d in detail] == [(type_, loc)]
    errors = list(_validator(await _openapi(rest), "ValidationErrorOut").iter_errors(
        {"detail": detail}))
    assert errors == []
    assert rest.outbox.count() == 0


async def test_422_texts_are_exact(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    assert _detail(await rest.review(thread, []), 422) == [{
        "type": "too_short", "loc": ["body", "decisions"],
        "msg": "List should have at least 1 item after validation, not 0",
    }]
    assert _detail(await rest.review(thread, [{"type": "postpone"}]), 422) == [{
        "type": "union_tag_invalid", "loc": ["body", "decisions", 0],
        "msg": "Input tag 'postpone' found using 'type' does not match any of the expected "
               "tags: 'approve', 'edit', 'reject', 'respond'",
    }]


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("/hitl/review", b"{not json"),
        ("/hitl/review", b"[]"),
        ("/hitl/review", b'{"decisions": [{"type": "approve"}]}'),
        ("/hitl/review", b'{"thread_id": 5, "decisions": [{"type": "approve"}]}'),
        ("/hitl/chat", b"{}"),
        ("/hitl/chat", b'{"message": ""}'),
        ("/hitl/chat", b'{"message": 5}'),
        ("/hitl/chat", b'{"message": "hi", "thread_id": 7}'),
        ("/hitl/chat", b""),
    ],
)
async def test_bad_bodies_are_422(rest: Rest, path: str, content: bytes) -> None:
    response = await rest.http.post(path, content=content,
                                    headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list) and response.json()["detail"]


async def test_shape_checks_come_before_the_400_checks(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    # two decisions for one action (a 400) but the second is not an object (a 422)
    response = await rest.review(thread, [{"type": "approve"}, 5])
    assert response.status_code == 422
    # an unknown thread (a 400) with a malformed decision (a 422)
    assert (await rest.review("nope", [{"type": "later"}])).status_code == 422


async def test_fields_foreign_to_a_decision_are_ignored(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    decisions = [{"type": "approve", "message": 5, "edited_action": "nonsense"}]
    body = await _turn(rest, await rest.review(thread, decisions))
    assert rest.outbox.count() == 1
    assert body["pending_review"] is None


async def test_a_rejected_validation_changes_nothing(rest: Rest) -> None:
    started = await rest.client.send(TWO_REQUEST, agent_id="email-assistant")
    thread = started["contextId"]
    before = await rest.client.result("tasks/get", {"id": started["id"]})
    assert before == started
    for bad in ([{"type": "approve"}], [{"type": "edit"}, {"type": "approve"}],
                [{"type": "respond", "message": "x"}, {"type": "approve"}]):
        assert (await rest.review(thread, bad)).status_code == 400
    assert (await rest.chat("hello", thread)).status_code == 400
    after = await rest.client.result("tasks/get", {"id": before["id"]})
    assert after == before  # same status message, same history
    assert rest.outbox.count() == 0
    body = await _turn(rest, await rest.review(thread, [{"type": "approve"}, {"type": "approve"}]))
    assert [r["to"] for r in rest.outbox.rows()] == ["alice@example.com", "bob@example.com"]
    assert body["reply"] is not None and body["pending_review"] is None


# ----------------------------------------------------------------------------- policies


async def test_per_tool_allowed_decisions_and_respond() -> None:
    policy = {"send_email": {"allowed_decisions": ["approve", "reject", "respond"]}}
    outbox = Outbox(":memory:")
    async with rest_server(email_assistant(outbox, interrupt_on=policy), outbox) as rest:
        body = await rest.pending()
        assert body["pending_review"]["review_configs"] == [
            {"action_name": "send_email", "allowed_decisions": ["approve", "reject", "respond"]}
        ]
        thread = body["thread_id"]
        assert _detail(await rest.review(thread, [edit()])) == (
            "Jenis keputusan 'edit' tidak dikenal. Pilihan: ['approve', 'reject', 'respond']"
        )
        assert _detail(await rest.review(thread, [{"type": "respond"}], language="en")) == (
            MESSAGES["en"]["respond_needs"]
        )
        answer = "Alice already knows; no email needed."
        done = await _turn(rest, await rest.review(thread, [{"type": "respond", "message": answer}]))
        assert rest.outbox.count() == 0
        assert [(m["status"], m["content"]) for m in tool_messages(done)] == [("success", answer)]
        assert done["reply"] == f"Did not send an email to alice@example.com: {answer}"


async def test_args_schema_is_enforced_before_resuming() -> None:
    schema = {
        "type": "object",
        "properties": {"to": {"type": "string", "pattern": "@example\\.com$"},
                       "subject": {"type": "string", "maxLength": 20},
                       "body": {"type": "string"}},
        "required": ["to", "subject", "body"],
    }
    outbox = Outbox(":memory:")
    policy = {"send_email": {"allowed_decisions": ["approve", "edit", "reject"],
                             "args_schema": schema}}
    async with rest_server(email_assistant(outbox, interrupt_on=policy), outbox) as rest:
        body = await rest.pending()
        assert body["pending_review"]["review_configs"][0]["args_schema"] == schema
        thread = body["thread_id"]
        missing = _detail(await rest.review(thread, [edit({"to": "alice@example.com",
                                                            "body": "x"})], language="en"))
        assert missing == ("'edited_action.args' for 'send_email' does not match its schema at "
                           "'subject': 'subject' is a required property")
        outside = _detail(await rest.review(thread, [edit({**EDITED_ARGS, "to": "eve@evil.test"})]))
        assert outside == ("'edited_action.args' untuk 'send_email' tidak sesuai skema di 'to': "
                           "'eve@evil.test' does not match '@example\\\\.com$'")
        assert rest.outbox.count() == 0
        await _turn(rest, await rest.review(thread, [edit()]))
        assert [r["subject"] for r in rest.outbox.rows()] == ["Meeting moved"]


async def test_server_default_language(monkeypatch: pytest.MonkeyPatch, rest: Rest) -> None:
    monkeypatch.setenv("LLAMON_LANGUAGE", "id")
    response = await rest.http.post("/hitl/chat", json={"message": SEED_REQUEST})
    body = await _turn(rest, response)
    assert body["pending_review"] == SEED_PAYLOAD
    response = await rest.http.post("/hitl/review", json={"thread_id": body["thread_id"],
                                                           "decisions": [{"type": "edit"}]})
    assert _detail(response) == MESSAGES["id"]["edit_needs"]
    response = await rest.review(body["thread_id"], [{"type": "edit"}], language="en")
    assert _detail(response) == MESSAGES["en"]["edit_needs"]


# ----------------------------------------------------------------------------- agents and threads


async def test_the_default_chat_agent_and_agent_id() -> None:
    outbox = Outbox(":memory:")
    async with serve([doc_agent(), email_assistant(outbox)]) as client:
        rest = Rest(client, outbox)
        body = await rest.pending()  # no agent_id: the email assistant, not the first agent
        question = await _turn(rest, await rest.chat("이 서류를 검증해줘", agent_id="document-review"))
        assert question["pending_review"] is None
        assert question["reply"] == "어떤 서류를 검증할까요?"
        assert _detail(await rest.chat("hi", agent_id="nope")) == "Unknown agentId 'nope'"
        assert _detail(await rest.chat("hi", body["thread_id"], agent_id="document-review")) == (
            f"Context {body['thread_id']} belongs to agent 'email-assistant', not 'document-review'"
        )
    async with serve([doc_agent(), email_assistant(outbox)], chat_agent="document-review") as client:
        rest = Rest(client, outbox)
        assert (await _turn(rest, await rest.chat("이 서류를 검증해줘")))["reply"] == (
            "어떤 서류를 검증할까요?"
        )
    with pytest.raises(ValueError, match="chat_agent 'x' is not one of the served agents"):
        create_app([doc_agent()], chat_agent="x")


async def test_thread_id_is_the_a2a_context_id(rest: Rest) -> None:
    thread = (await rest.pending())["thread_id"]
    task = await rest.client.send(data={"decisions": [{"type": "approve"}]}, context_id=thread)
    assert task["contextId"] == thread and task["status"]["state"] == "completed"
    assert rest.outbox.count() == 1
    body = await _turn(rest, await rest.chat("Email bob@example.com about X", thread))
    assert body["pending_review"] is not None


async def test_openapi_document_describes_both_endpoints(rest: Rest) -> None:
    document = await _openapi(rest)
    assert document["openapi"] == "3.1.0"
    assert set(document["paths"]) == {"/hitl/chat", "/hitl/review"}
    review = document["paths"]["/hitl/review"]["post"]
    assert review["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ReviewRequest"
    }
    assert set(review["responses"]) == {"200", "400", "409", "413", "422", "500"}
    schemas = document["components"]["schemas"]
    assert schemas["ReviewRequest"]["required"] == ["thread_id", "decisions"]
    assert schemas["ReviewRequest"]["properties"]["decisions"]["minItems"] == 1
    assert schemas["ChatRequest"]["required"] == ["message"]
    assert set(schemas["ChatTurnOut"]["properties"]) == {
        "thread_id", "reply", "pending_review", "interrupt_id", "expires_at", "messages"
    }
    request = _validator(document, "ReviewRequest")
    assert request.is_valid({"thread_id": "T", "decisions": [{"type": "reject", "message": "x"}]})
    assert not request.is_valid({"thread_id": "T", "decisions": []})
    assert not request.is_valid({"thread_id": "T", "decisions": [{"type": "postpone"}]})


async def test_a_busy_thread_is_409() -> None:
    started, gate = asyncio.Event(), asyncio.Event()

    @tool
    async def slow(seconds: int) -> str:
        """Waits until the test lets it finish."""
        started.set()
        await gate.wait()
        return "finished"

    model = ScriptedModel(replies=[
        AIMessage(content="", tool_calls=[call("slow", {"seconds": 1}, "w1")]),
        AIMessage(content="all done"),
    ])
    outbox = Outbox(":memory:")
    async with rest_server(Agent("slow", review_graph(model, [slow])), outbox) as rest:
        first = asyncio.create_task(rest.chat("go", "busy-thread"))
        await asyncio.wait_for(started.wait(), 10)
        assert _detail(await rest.chat("again", "busy-thread"), 409) == (
            "This operation is not supported: task is busy"
        )
        assert _detail(await rest.review("busy-thread", [{"type": "approve"}]), 409) == (
            "This operation is not supported: task is busy"
        )
        gate.set()
        body = await _turn(rest, await first)
        assert body["reply"] == "all done"
        assert [m["content"] for m in tool_messages(body)] == ["finished"]
