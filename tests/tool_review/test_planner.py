"""The offline planner's grammar, and the outbox's file (the example app)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from app.outbox import Outbox, server_outbox
from app.planner import HELP, EmailRequest, parse_request, plan
from llamon_agent.core.run_context import RunContext, with_run_context


@pytest.mark.parametrize(
    ("text", "recipients", "subject", "body"),
    [
        ("Send an email to alice@example.com about Meeting: The meeting is at 10.",
         ("alice@example.com",), "Meeting", "The meeting is at 10."),
        ("Email Alice about Lunch saying See you at noon.", ("Alice",), "Lunch", "See you at noon."),
        ("please write to bob@example.com and Citra regarding Budget, body: Numbers attached.",
         ("bob@example.com", "Citra"), "Budget", "Numbers attached."),
        ("Send Bob an email re Offsite", ("Bob",), "Offsite", "Offsite"),
        ("can you mail alice@example.com, bob@example.com & Citra re: Q3 plan - draft attached",
         ("alice@example.com", "bob@example.com", "Citra"), "Q3 plan", "draft attached"),
        ("Drop a note to Alice Wong concerning the offsite that says bring shoes",
         ("Alice Wong",), "the offsite", "bring shoes"),
        ("send a message to bob@example.com with the subject 'Hello' and say hi there",
         ("bob@example.com",), "Hello", "hi there"),
        ("E-mail citra@example.co.id about Invoice 42.", ("citra@example.co.id",), "Invoice 42",
         "Invoice 42"),
        ("kirim email ke alice@example.com tentang Rapat: Rapat jam 10.",
         ("alice@example.com",), "Rapat", "Rapat jam 10."),
        ("Tolong kirimkan pesan kepada Budi dan citra@example.co.id soal Cuti isinya Saya cuti besok.",
         ("Budi", "citra@example.co.id"), "Cuti", "Saya cuti besok."),
    ],
)
def test_phrasings(text: str, recipients: tuple[str, ...], subject: str, body: str) -> None:
    assert parse_request(text) == EmailRequest(recipients, subject, body)


@pytest.mark.parametrize(
    "text",
    ["hello", "send an email", "send an email to alice@example.com",
     "email about Lunch", "send to 42 about x", "what about Lunch?"],
)
def test_requests_it_cannot_read(text: str) -> None:
    assert parse_request(text) is None
    assert plan([HumanMessage(text)]).text == HELP


def test_the_steps_of_a_plan() -> None:
    human = HumanMessage("Email Alice and bob@example.com about Lunch: noon")
    first = plan([human])
    assert [(c["id"], c["name"], c["args"]) for c in first.tool_calls] == [
        ("call_1", "search_contacts", {"query": "Alice"}),
        ("call_2", "send_email", {"to": "bob@example.com", "subject": "Lunch", "body": "noon"}),
    ]
    found = ToolMessage("Alice Wong <alice@example.com>", tool_call_id="call_1")
    sent = ToolMessage("Email #1 sent to bob@example.com with subject 'Lunch'.",
                       tool_call_id="call_2")
    second = plan([human, first, found, sent])
    assert [(c["id"], c["args"]["to"]) for c in second.tool_calls] == [("call_3", "alice@example.com")]
    refused = ToolMessage("No", tool_call_id="call_3", status="error")
    assert plan([human, first, found, sent, second, refused]).text == (
        "Sent an email to bob@example.com with subject 'Lunch'.\n"
        "Did not send an email to alice@example.com: No"
    )


def test_a_name_that_is_not_found() -> None:
    human = HumanMessage("Email Zed about Lunch")
    first = plan([human])
    missing = ToolMessage("No contact matches 'Zed'.", tool_call_id="call_1")
    assert plan([human, first, missing]).text == "Could not find 'Zed': No contact matches 'Zed'."
    assert plan([human, AIMessage("hi")]).text == "Nothing was sent."


def test_the_outbox_lives_in_the_servers_database(tmp_path: Path) -> None:
    db = tmp_path / "server.sqlite3"
    # the server's run context names its file (`llamon-agent serve --db`); no environment
    config = {"configurable": with_run_context({"thread_id": "t"}, RunContext(db=str(db)))}
    outbox = server_outbox(config)
    assert outbox.path == str(db)
    assert server_outbox(config) is outbox
    assert outbox.count() == 0
    assert db.is_file()
    explicit = Outbox(str(tmp_path / "other.sqlite3"))
    assert explicit.path == str(tmp_path / "other.sqlite3")
    outbox.close()
    explicit.close()
