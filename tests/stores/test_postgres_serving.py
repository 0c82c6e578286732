"""Serving on PostgreSQL (``create_app(db="postgresql://...")``), over HTTP: the seed's
conversations and a restart in the middle of each (a new app on the same database resumes the
waiting task), as tests/runtime/test_hitl_flow.py and tests/orchestrator/test_persistence.py do
on a SQLite file."""

from __future__ import annotations

from typing import Any

import pytest

from app.assistant import email_assistant
from app.outbox import Outbox
from tests.conftest import A2AClient, serve
from tests.orchestrator.helpers import DRAFT_WITH_COLLATERAL, artifact_data, serve_loan
from tests.runtime.helpers import doc_agent, question_text, result_data, state_of, status_parts

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

ENDED = {"completed", "failed", "rejected", "canceled"}


async def _ask_document(client: A2AClient, context_id: str) -> dict[str, Any]:
    first = await client.send("이 서류를 검증해줘", context_id=context_id,
                              agent_id="document-review")
    assert state_of(first) == "input-required"
    return first


async def test_the_document_review_conversation_survives_restarts(postgres_url: str) -> None:
    async with serve([doc_agent()], db=postgres_url) as client:
        first = await _ask_document(client, "case-pg")
        question = question_text(first)
    async with serve([doc_agent()], db=postgres_url) as client:  # a new app, same database
        got = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(got) == "input-required"
        assert question_text(got) == question
        second = await client.send("여권", context_id="case-pg")
        assert second["id"] == first["id"]
        assert state_of(second) == "input-required"
        assert status_parts(second) != status_parts(first)  # the next question: the birthday
    async with serve([doc_agent()], db=postgres_url) as client:
        done = await client.send("1990-01-01", context_id="case-pg")
        assert done["id"] == first["id"]
        assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}
        again = await _ask_document(client, "case-pg")  # a new task in the same context
        assert again["id"] != first["id"]
        assert (await client.result("tasks/get", {"id": first["id"]}))["status"]["state"] == (
            "completed"
        )


async def test_a_tool_review_is_approved_after_a_restart(postgres_url: str) -> None:
    outbox = Outbox(":memory:")
    try:
        request = "Send an email to alice@example.com about Meeting: The meeting is at 10."
        async with serve([email_assistant(outbox)], db=postgres_url) as client:
            task = await client.send(request, context_id="mail-pg")
            assert state_of(task) == "input-required"
            [_, data] = status_parts(task)
            assert data["data"]["hitl"]["action_requests"][0]["args"] == {
                "to": "alice@example.com", "subject": "Meeting", "body": "The meeting is at 10."
            }
        assert outbox.count() == 0
        async with serve([email_assistant(outbox)], db=postgres_url) as client:
            done = await client.send(data={"decisions": [{"type": "approve"}]},
                                     context_id="mail-pg")
        assert done["id"] == task["id"]
        assert state_of(done) == "completed", done["status"]
        assert status_parts(done) == [{"kind": "text", "text":
                                       "Sent an email to alice@example.com with subject 'Meeting'."}]
        assert outbox.count() == 1
    finally:
        outbox.close()


async def test_a_parked_draft_is_decided_after_a_restart(postgres_url: str) -> None:
    async with serve_loan(db=postgres_url) as h:
        task, review_id = await h.to_review()
        assert (await h.get(task["id"]))["status"]["state"] == "working"
    async with serve_loan(db=postgres_url) as h:
        reviews = await h.reviews()
        assert [(r["id"], r["taskId"], r["draft"]) for r in reviews] == [
            (review_id, task["id"], DRAFT_WITH_COLLATERAL)
        ]
        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code == 200, response.text
        assert response.json()["decidedBy"] == "reviewer"
        done = await h.wait_state(task["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]
        assert await h.resume_point(task["contextId"]) is None
        assert await h.reviews() == []


async def test_the_example_apps_email_assistant_sends_on_postgres(postgres_url: str) -> None:
    """``llamon-agent serve --db postgresql://`` serves ``app.main:AGENTS``, whose email
    assistant writes to the server's outbox: a SQLite table, kept in the process on PostgreSQL
    (it failed with "unable to open database file": the URL taken for a file name)."""
    from app.main import AGENTS
    from app.outbox import server_outbox
    from llamon_agent.core.run_context import RunContext, with_run_context

    async with serve(AGENTS, db=postgres_url) as client:
        task = await client.send("Send an email to alice@example.com about Meeting: Hi.",
                                 context_id="m1", agent_id="email-assistant")
        assert state_of(task) == "input-required", task["status"]
        done = await client.send(data={"decisions": [{"type": "approve"}]}, context_id="m1")
        assert state_of(done) == "completed", done["status"]
    config = {"configurable": with_run_context({}, RunContext(db=postgres_url))}  # a run's
    sent = [(r["to"], r["subject"]) for r in server_outbox(config).rows("m1")]
    assert sent == [("alice@example.com", "Meeting")]
