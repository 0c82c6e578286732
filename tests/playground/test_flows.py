"""The Playground in a real headless Chromium: each flow by clicking, a screenshot of every
screen in ``.artifacts/playground/<test>/``.

What the page sent is checked on the server too (``tasks/get``): the answers carry the
question's ``interruptId``, and the task ended as the page showed.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import httpx
from playwright.sync_api import expect

from llamon_agent.tool_review.decisions import args_schema_error
from tests.playground.agents import SEND_EMAIL_SCHEMA
from tests.playground.conftest import API_KEY, REVIEWER_TOKEN, Session
from tests.process.conftest import REPO_ROOT

DOCS_SCREENSHOT = REPO_ROOT / "docs" / "playground.png"
HOSTILE = "<img src=x onerror=\"window.__pwned=1;fetch('/pwned-marker')\">"


def _task(session: Session, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The task the page shows, read over the wire (``tasks/get``)."""
    shown = session.page.locator("#task-ids").inner_text()
    found = re.match(r"Task (\S+) in context (\S+)", shown)
    assert found, shown
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": found[1]}}
    response = httpx.post(session.base_url + "/", json=body, headers=headers or {},
                          trust_env=False, timeout=10)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["result"]
    assert task["contextId"] == found[2]
    return task


def _answers(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The user's messages after the first: each answered a question."""
    return [m for m in task["history"] if m["role"] == "user"][1:]


def _states(session: Session) -> list[str]:
    return session.page.locator("#timeline li.state").evaluate_all(
        "items => items.map(item => item.dataset.state)")


def _state_after_decision(session: Session, task_id: str) -> str:
    """The task's state once it left ``working`` (a decided draft resumes it in the background;
    bounded wait)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}}
    deadline = time.monotonic() + 10
    while True:
        task = httpx.post(session.base_url + "/", json=body, trust_env=False, timeout=10).json()
        state: str = task["result"]["status"]["state"]
        if state != "working" or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def _start(session: Session, agent: str, text: str = "", data: str = "") -> None:
    page = session.page
    page.select_option("#agent", agent)
    page.fill("#message-text", text)
    page.fill("#message-data", data)


def _assert_clean(session: Session) -> None:
    """The page broke no rule of its own policy, threw nothing, logged no error."""
    assert session.csp_violations() == []
    assert session.watch.page_errors == []
    assert session.watch.console_errors == []
    assert session.page.locator("#errors").is_hidden()


def test_document_review_by_clicking_a_choice(session: Session) -> None:
    page, shot = session.page, session.shot
    session.open()
    _start(session, "document-review", "이 서류를 검증해줘")
    shot("compose")
    page.click("#send")
    question = page.locator("#pending .question")
    expect(question.locator(".question-text")).to_have_text("어떤 서류를 검증할까요?")
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "input-required")
    assert _states(session) == ["submitted", "working", "input-required"]
    assert question.locator("button.choice").all_inner_texts() == ["여권", "주민등록증"]
    expect(question.locator(".reask")).to_have_count(0)
    shot("first-question")
    if os.environ.get("LLAMON_WRITE_DOCS_SCREENSHOT") == "1":
        page.screenshot(path=str(DOCS_SCREENSHOT))

    # words that match no choice: the server asks the same question again, marked as such
    question.locator("input.free-text").fill("banana")
    shot("free-text-typed")
    question.locator("button", has_text="Send answer").click()
    expect(page.locator("#pending .question .reask")).to_have_text(
        "Asked again: the last answer did not match a choice.")
    shot("asked-again")

    page.locator("#pending button.choice", has_text="여권").click()
    expect(page.locator("#pending .question-text")).to_have_text("생년월일을 알려주세요.")
    expect(page.locator("#pending button.choice")).to_have_count(0)
    shot("second-question")
    page.locator("#pending input.free-text").fill("1990-01-01")
    page.locator("#pending button", has_text="Send answer").click()
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "completed")
    expect(page.locator("#log li.result pre").last).to_contain_text('"doc_type": "passport"')
    expect(page.locator("#pending")).to_be_empty()
    shot("completed")

    task = _task(session)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0] == {
        "kind": "data", "data": {"doc_type": "passport", "birthday": "1990-01-01"}}
    answers = _answers(task)
    assert [m["parts"] for m in answers] == [
        [{"kind": "text", "text": "banana"}],
        [{"kind": "text", "text": "passport"}, {"kind": "data", "data": {"value": "passport"}}],
        [{"kind": "text", "text": "1990-01-01"}],
    ]
    questions = [m for m in task["history"] if m["role"] == "agent"]
    assert [a["metadata"]["interruptId"] for a in answers] == [
        q["metadata"]["interruptId"] for q in questions]
    assert all(a["taskId"] == task["id"] for a in answers)
    _assert_clean(session)


def test_email_approval_by_editing_the_tool_call(session: Session) -> None:
    """The example's email assistant, as ``llamon-agent serve`` runs it."""
    page, shot = session.page, session.shot
    session.open()
    _start(session, "email-assistant",
           "Send an email to alice@example.com about Meeting: The meeting is at 10.")
    page.click("#send")
    review = page.locator("#pending .review")
    expect(review.locator(".action-name")).to_have_text("send_email")
    expect(review.locator(".action-description")).to_have_text(
        "Tool `send_email` is awaiting approval")
    assert json.loads(review.locator(".action-args").inner_text()) == {
        "to": "alice@example.com", "subject": "Meeting", "body": "The meeting is at 10."}
    assert review.locator(".decisions label").all_inner_texts() == [
        " Approve", " Edit", " Reject"]  # the example's allowed decisions
    shot("review")

    # JSON the page can read, arguments the server cannot take: its words, next to the editor
    review.get_by_label("Edit", exact=True).check()
    review.locator("textarea.args-editor").fill('["bob@example.com"]')
    shot("edit-typed")
    review.locator("button", has_text="Send decisions").click()
    said = "'edited_action' must contain 'name' (text) and 'args' (object)"
    expect(review.locator(".editor-error")).to_contain_text(f"The server refused this: {said}")
    shot("edit-refused")

    edited = {"to": "bob@example.com", "subject": "Meeting moved", "body": "At 11."}
    review.locator("textarea.args-editor").fill(json.dumps(edited, indent=2))
    review.locator("button", has_text="Send decisions").click()
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "completed")
    expect(page.locator("#log li.result").last).to_contain_text(
        "Sent an email to bob@example.com with subject 'Meeting moved'.")
    shot("completed")

    task = _task(session)
    assert task["status"]["state"] == "completed"
    (decision,) = _answers(task)  # the refused edit was not stored
    assert decision["parts"] == [{"kind": "data", "data": {"decisions": [
        {"type": "edit", "edited_action": {"name": "send_email", "args": edited}}]}}]
    assert decision["metadata"]["interruptId"] == task["history"][1]["metadata"]["interruptId"]
    page.click("#errors-clear")
    _assert_clean(session)


def test_an_edit_outside_the_tools_args_schema_shows_the_servers_words(
    session: Session,
) -> None:
    page, shot = session.page, session.shot
    session.open()
    _start(session, "email-strict",
           "Send an email to alice@example.com about Meeting: The meeting is at 10.")
    page.click("#send")
    review = page.locator("#pending .review")
    expect(review.locator(".action-name")).to_have_text("send_email")
    assert review.locator(".decisions label").all_inner_texts() == [
        " Approve", " Edit", " Respond"]  # SEND_EMAIL_DECISIONS: no reject
    shot("review")

    review.get_by_label("Edit", exact=True).check()
    refused = {"subject": "Meeting", "body": "The meeting is at 11."}  # no "to"
    review.locator("textarea.args-editor").fill(json.dumps(refused))
    review.locator("button", has_text="Send decisions").click()
    said = args_schema_error("send_email", refused, SEND_EMAIL_SCHEMA)
    assert said == ("'edited_action.args' for 'send_email' does not match its schema at 'to': "
                    "'to' is a required property")
    expect(review.locator(".editor-error")).to_have_text(f"The server refused this: {said}")
    expect(page.locator("#error-list li").last).to_have_text(
        f'JSON-RPC error -32602: {said} ({{"error":"InvalidReviewDecisionError"}})')
    shot("edit-refused")

    # then the call as the model made it, approved
    review.get_by_label("Approve", exact=True).check()
    review.locator("button", has_text="Send decisions").click()
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "completed")
    expect(page.locator("#log li.result").last).to_contain_text(
        "Sent an email to alice@example.com with subject 'Meeting'.")
    shot("approved")

    task = _task(session)
    (decision,) = _answers(task)
    assert decision["parts"] == [{"kind": "data", "data": {"decisions": [{"type": "approve"}]}}]
    page.click("#errors-clear")
    _assert_clean(session)


def test_loan_review_through_the_reviewer_view(session: Session) -> None:
    page, shot = session.page, session.shot
    session.open()
    _start(session, "loan", data='{"applicant": "Kim", "amount": 90000, "income": 20000}')
    shot("compose")
    page.click("#send")
    expect(page.locator("#pending .question-text")).to_have_text("담보가 있습니까?")
    shot("question")
    page.locator("#pending button.choice", has_text="예").click()
    expect(page.locator("#log li").last).to_contain_text("A reviewer is checking the answer.")
    assert _states(session)[-1] == "working"
    shot("waiting-for-reviewer")

    page.fill("#reviewer-token", REVIEWER_TOKEN)
    page.click("#reviews-load")
    draft = page.locator("#reviews li.draft")
    expect(draft).to_have_count(1)
    assert json.loads(draft.locator(".draft-body").inner_text()) == {
        "decision": "approve", "risk": "medium", "amount": 90000.0, "intent": "대출 심사"}
    assert page.locator("#reviewer-token").input_value() == ""  # kept in memory, not the field
    shot("pending-draft")
    draft.locator("button", has_text="Edit draft").click()
    edited = {"decision": "approve", "risk": "medium", "amount": 80000, "intent": "대출 심사",
              "note": "amount lowered by the reviewer"}
    draft.locator("textarea.draft-editor").fill(json.dumps(edited, ensure_ascii=False))
    shot("draft-edited")
    draft.locator("button", has_text="Send edited draft").click()
    expect(page.locator("#reviews li")).to_have_text("No draft waits for a reviewer.")
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "completed")
    expect(page.locator("#log")).to_contain_text("amount lowered by the reviewer")
    shot("completed")

    task = _task(session)
    assert task["status"]["state"] == "completed"
    assert {"kind": "data", "data": edited} in task["artifacts"][0]["parts"]
    _assert_clean(session)


def test_hostile_text_stays_text(session: Session) -> None:
    page, shot = session.page, session.shot
    session.open()
    _start(session, "echo-question", HOSTILE)
    page.click("#send")
    question = page.locator("#pending .question")
    expect(question.locator(".question-text")).to_have_text(f"You said: {HOSTILE}")
    choice = question.locator("button.choice").first
    expect(choice).to_have_text(HOSTILE + HOSTILE)  # the label, then its description
    expect(question.locator(".countdown")).to_have_text(
        re.compile(r"^Answer within (\d+ h )?\d+:\d\d \(deadline \d{4}-\d\d-\d\dT[\d:.]+Z\)$"))
    shot("hostile-question")
    choice.click()
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "completed")
    expect(page.locator("#log li.result").last).to_contain_text(f"Echo: {HOSTILE} (echo)")
    shot("hostile-answered")

    page.click("#new-context")
    _start(session, "email-strict",
           f"Send an email to alice@example.com about {HOSTILE}: {HOSTILE}")
    page.click("#send")
    review = page.locator("#pending .review")
    expect(review.locator(".action-args")).to_be_visible()
    assert json.loads(review.locator(".action-args").inner_text()) == {
        "to": "alice@example.com", "subject": HOSTILE, "body": HOSTILE}
    review.get_by_label("Edit", exact=True).check()
    assert json.loads(review.locator("textarea.args-editor").input_value())["body"] == HOSTILE
    shot("hostile-tool-arguments")
    review.get_by_label("Respond", exact=True).check()
    review.locator("input.respond-message").fill(f"Not sent: {HOSTILE}")
    review.locator("button", has_text="Send decisions").click()
    expect(page.locator("#timeline li.state").last).to_have_attribute("data-state", "completed")
    expect(page.locator("#log li.result").last).to_contain_text(
        f"Did not send an email to alice@example.com: Not sent: {HOSTILE}")
    shot("hostile-responded")

    assert page.locator("img").count() == 0  # no markup was made from data
    assert page.evaluate("window.__pwned") is None
    fired = [url for url in session.watch.requests if "pwned" in url or url.endswith("/x")]
    assert fired == []
    _assert_clean(session)


def test_with_api_keys_the_page_asks_for_the_key(
    keyed_session: Session,
) -> None:
    session = keyed_session
    page, shot = session.page, session.shot
    session.open()  # the page and the agent list are public
    _start(session, "document-review", "이 서류를 검증해줘")
    page.click("#send")
    expect(page.locator("#api-key-box")).to_be_visible()
    expect(page.locator("#api-key-reason")).to_have_text(
        "HTTP 401 Unauthorized: unauthorized: this server needs an API key "
        "(sent as Authorization: Bearer).")
    shot("asks-for-key")
    page.fill("#api-key", "not-the-key")
    page.click("#api-key-use")
    expect(page.locator("#error-list li")).to_have_text(
        "HTTP 401 Unauthorized: unauthorized. The server refused the API key; "
        "enter the right one.")
    expect(page.locator("#api-key-reason")).to_have_text(
        "HTTP 401 Unauthorized: unauthorized: the server refused that key. "
        "Enter the right one.")
    shot("wrong-key")
    page.fill("#api-key", API_KEY)
    page.click("#api-key-use")
    expect(page.locator("#pending .question-text")).to_have_text("어떤 서류를 검증할까요?")
    expect(page.locator("#api-key-box")).to_be_hidden()
    shot("right-key")
    page.locator("#pending button.choice", has_text="주민등록증").click()  # the key is kept
    expect(page.locator("#pending .question-text")).to_have_text("생년월일을 알려주세요.")
    shot("answered-with-the-key")
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert page.locator("#api-key-box").is_hidden()
    task = _task(session, headers={"X-API-Key": API_KEY})
    assert task["status"]["state"] == "input-required"
    # the browser logs each 401 it got; nothing else
    assert all("status of 401" in line for line in session.watch.console_errors)
    assert len(session.watch.console_errors) == 2
    assert session.csp_violations() == [] and session.watch.page_errors == []


def test_a_new_context_stops_following_a_task_that_waits_for_a_reviewer(
    session: Session,
) -> None:
    page, shot = session.page, session.shot
    session.open()
    _start(session, "loan", data='{"applicant": "Lee", "amount": 10000, "income": 20000}')
    page.click("#send")  # low risk: no question, the draft goes straight to a reviewer
    expect(page.locator("#log li").last).to_contain_text("A reviewer is checking the answer.")
    loan = _task(session)
    assert loan["status"]["state"] == "working"
    shot("waiting-for-reviewer")

    page.click("#new-context")  # stops reading the stream; the task goes on on the server
    expect(page.locator("#timeline li")).to_have_count(0)
    _start(session, "document-review", "이 서류를 검증해줘")
    page.click("#send")
    expect(page.locator("#pending .question-text")).to_have_text("어떤 서류를 검증할까요?")
    shot("another-conversation")

    page.fill("#reviewer-token", "not-the-reviewer-token")
    page.click("#reviews-load")
    expect(page.locator("#error-list li")).to_have_text(
        "Reviews (GET /reviews): HTTP 401 Unauthorized: a valid reviewer bearer token is required")
    shot("wrong-reviewer-token")
    page.fill("#reviewer-token", REVIEWER_TOKEN)
    page.click("#reviews-load")
    draft = page.locator("#reviews li.draft")
    expect(draft).to_have_count(1)
    assert json.loads(draft.locator(".draft-body").inner_text())["amount"] == 10000.0
    draft.locator("button", has_text="Approve draft").click()
    expect(page.locator("#reviews li")).to_have_text("No draft waits for a reviewer.")
    shot("draft-approved")
    assert _state_after_decision(session, loan["id"]) == "completed"
    page.click("#errors-clear")
    assert session.watch.console_errors == [  # the browser's own line for the refused token
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
    session.watch.console_errors.clear()
    _assert_clean(session)


def _park_drafts(base_url: str, count: int) -> None:
    """``count`` low-risk loans, each a draft waiting for a reviewer (non-blocking sends: a
    blocking one would wait ``review_wait`` for the reviewer)."""
    with httpx.Client(base_url=base_url, timeout=30) as http:
        for i in range(count):
            reply = http.post("/", json={"jsonrpc": "2.0", "id": i, "method": "message/send",
                                         "params": {
                "message": {"kind": "message", "role": "user", "messageId": f"park-{i}",
                            "parts": [{"kind": "data", "data": {
                                "applicant": f"Lee {i}", "amount": 50000, "income": 20000}}]},
                "metadata": {"agentId": "loan"}, "configuration": {"blocking": False}}})
            assert "result" in reply.json(), reply.text
        deadline = time.monotonic() + 30
        while True:
            listed = http.get("/reviews?pageSize=100",
                              headers={"Authorization": f"Bearer {REVIEWER_TOKEN}"}).json()
            if len(listed["reviews"]) == count:
                return
            assert time.monotonic() < deadline, f"{len(listed['reviews'])} of {count} parked"
            time.sleep(0.05)


def test_the_reviewer_view_pages_through_the_drafts(reviews_session: Session) -> None:
    session = reviews_session
    page, shot = session.page, session.shot
    _park_drafts(session.base_url, 21)  # a page of the view holds 20
    session.open()
    page.fill("#reviewer-token", REVIEWER_TOKEN)
    page.click("#reviews-load")
    drafts = page.locator("#reviews li.draft")
    expect(drafts).to_have_count(20)
    expect(drafts.first.locator(".draft-body")).to_contain_text("approve")
    shot("first-page")
    page.click("#reviews-more")
    expect(drafts).to_have_count(21)
    expect(page.locator("#reviews-more")).to_have_count(0)
    shot("second-page")
    listed = [r for r in session.watch.requests if "/reviews?" in r]
    assert "pageToken=" not in listed[0] and "pageSize=20" in listed[0]
    assert "pageToken=" in listed[1] and "pageSize=20" in listed[1]
    # deciding one reloads the view from the first page: the 20 left fit it
    drafts.first.locator("button", has_text="Approve draft").click()
    expect(drafts).to_have_count(20)
    expect(page.locator("#reviews-more")).to_have_count(0)
    shot("decided-one")
    _assert_clean(session)
