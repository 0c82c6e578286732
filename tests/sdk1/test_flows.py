"""The official a2a-sdk 1.x client finishes the example flows against a real server process.

``native``: the client picks the card's v1.0 JSON-RPC interface (``JsonRpcTransport``, its v0.3
compatibility layer off) and every call is a v1.0 method with v1.0 shapes both ways. ``compat``
(the document review only): the card is cut to its 0.3 interface, so the same client speaks v0.3
through its compatibility layer and must see the same conversation.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from app.outbox import Outbox
from tests.orchestrator.helpers import COLLATERAL_QUESTION, DRAFT_WITH_COLLATERAL, HIGH_RISK
from tests.orchestrator.helpers import WAITING_TEXT as LOAN_WAITING_TEXT
from tests.process.conftest import Server
from tests.sdk1.client import Sdk1Client, data, sdk1_client, text, user_message
from tests.sdk1.flows import (
    BIRTHDAY_QUESTION,
    COMPLETED,
    DOC_HITL,
    DOC_QUESTION,
    DOC_REQUEST,
    DOC_RESULT,
    INPUT_REQUIRED,
    LOAN_HITL,
    MODES,
    TERMINAL,
    WORKING,
    artifact_data,
    assert_chosen,
    assert_events,
    assert_wire,
    context,
    decide,
    history_roles,
    pending_review,
    question,
)
from tests.sdk1.harness import Driver
from tests.sdk1.wire import assert_v1_exchange
from tests.tool_review.helpers import EDITED_ARGS, SEED_ARGS, SEED_PAYLOAD, SEED_REQUEST, edit

EMAIL = {"agentId": "email-assistant"}
LOAN = {"agentId": "loan"}
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])


def test_the_card_lists_both_versions_and_keeps_the_v03_fields(
    driver: Driver, server: Server
) -> None:
    with sdk1_client(driver, server.url, streaming=False) as (_, connected):
        card = connected.wire[0].response  # the card as served, before the SDK's conversions
    interfaces = {(i["protocolBinding"], i["protocolVersion"]): i["url"]
                  for i in card.get("supportedInterfaces", [])}
    assert set(interfaces) == {("JSONRPC", "1.0"), ("JSONRPC", "0.3")}, card
    assert set(interfaces.values()) == {card["url"]}
    # the v0.3 client (0.3.26) still reads these
    assert (card["protocolVersion"], card["preferredTransport"]) == ("0.3.0", "JSONRPC")


def test_a_client_asking_for_1_0_gets_the_pure_v1_card_and_the_1x_client_uses_it(
    driver: Driver, server: Server
) -> None:
    """The same client reads both forms: the document every client reads (above, fetched
    without A2A-Version) and v1.0's own, fetched with ``A2A-Version: 1.0``."""
    client = Sdk1Client(driver, "pure-v1-card")
    connected = client.connect(server.url, streaming=False, headers={"A2A-Version": "1.0"})
    try:
        card = connected.wire[0].response
        assert not {"url", "protocolVersion", "preferredTransport",
                    "supportsAuthenticatedExtendedCard"} & set(card), card
        assert card["capabilities"]["extendedAgentCard"] is False
        assert (connected.transport, connected.interface["protocolVersion"]) == \
            ("JsonRpcTransport", "1.0")
        asked = client.send(user_message(text("이 서류를 검증해줘")))
        assert question(asked.done)[0] == "어떤 서류를 검증할까요?"
    finally:
        client.close()


@STREAMING
@pytest.mark.parametrize("mode", MODES)
def test_document_review(driver: Driver, server: Server, streaming: bool, mode: str) -> None:
    with sdk1_client(driver, server.url, streaming=streaming, mode=mode) as (client, connected):
        assert_chosen(connected, mode)

        first = client.send(user_message(text(DOC_REQUEST)))
        task = first.done
        assert question(task) == (DOC_QUESTION, DOC_HITL)
        assert_events(first, streaming, INPUT_REQUIRED)
        assert_wire(first, mode, streaming)
        ids = {"context_id": task["contextId"], "task_id": task["id"]}

        second = client.send(user_message(text("여권"), **ids))
        asked = second.done
        assert (asked["id"], asked["contextId"]) == (task["id"], task["contextId"])
        assert question(asked)[0] == BIRTHDAY_QUESTION
        assert_events(second, streaming, INPUT_REQUIRED)
        assert_wire(second, mode, streaming)

        third = client.send(user_message(text("1990-01-01"), **ids))
        done = third.done
        assert done["id"] == task["id"]
        assert done["status"]["state"] == COMPLETED
        assert artifact_data(done)[-1] == DOC_RESULT
        assert_events(third, streaming, COMPLETED)
        assert_wire(third, mode, streaming)

        fetched = client.get_task(task["id"])
        final = fetched.ok()
        assert final["status"]["state"] == COMPLETED
        assert artifact_data(final) == [DOC_RESULT]
        assert history_roles(final) == ["ROLE_USER", "ROLE_AGENT"] * 2 + ["ROLE_USER"]
        assert [m["parts"][0].get("text") for m in final["history"]] == [
            DOC_REQUEST, DOC_QUESTION, "여권", BIRTHDAY_QUESTION, "1990-01-01"]
        if mode == "native":
            (exchange,) = fetched.rpc
            assert_v1_exchange(exchange)
            assert exchange.rpc_method == "GetTask"

        # historyLength: the last n messages
        short = client.get_task(task["id"], history_length=1).ok()
        assert [m["parts"][0].get("text") for m in short["history"]] == ["1990-01-01"]


@STREAMING
@pytest.mark.parametrize("decision", ["approve", "edit"])
def test_email_tool_review(driver: Driver, server: Server, streaming: bool, decision: str) -> None:
    context_id = context("email")
    headers = {"Accept-Language": "id"}
    with sdk1_client(driver, server.url, streaming=streaming, headers=headers) as (client, conn):
        assert_chosen(conn, "native")
        asked = client.send(user_message(text(SEED_REQUEST), context_id=context_id),
                            metadata=EMAIL)
        task = asked.done
        assert question(task) == ("Menunggu persetujuan: send_email",
                                  {"schema": "llamon.hitl.review.v1", **SEED_PAYLOAD})
        assert_events(asked, streaming, INPUT_REQUIRED)
        assert_wire(asked, "native", streaming)

        body = {"decisions": [edit() if decision == "edit" else {"type": "approve"}]}
        answered = client.send(user_message(data(body), context_id=context_id), metadata=EMAIL)
        done = answered.done
        assert done["id"] == task["id"] and done["status"]["state"] == COMPLETED
        args = EDITED_ARGS if decision == "edit" else SEED_ARGS
        assert done["status"]["message"]["parts"][0] == {
            "text": f"Sent an email to {args['to']} with subject '{args['subject']}'."}
        assert_events(answered, streaming, COMPLETED)
        assert_wire(answered, "native", streaming)

    outbox = Outbox(str(server.db))
    try:
        rows = [r for r in outbox.rows() if r["thread_id"] == context_id]
    finally:
        outbox.close()
    assert [(r["to"], r["subject"], r["body"]) for r in rows] == [tuple(args.values())]


def _until_terminal(client: Sdk1Client, task_id: str, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = client.get_task(task_id).ok()
        if task["status"]["state"] in TERMINAL:
            return dict(task)
        assert time.monotonic() < deadline, f"still {task['status']} after {timeout}s"
        time.sleep(0.05)


def _waiting_review_id(status: dict[str, Any]) -> str:
    """The review a ``working`` status names: [text WAITING_TEXT, data {"review": {"id"}}]."""
    assert status["state"] == WORKING, status
    first, second = status["message"]["parts"]
    assert first == {"text": LOAN_WAITING_TEXT}, status
    return str(second["data"]["review"]["id"])


@STREAMING
def test_loan_with_a_human_reviewer(driver: Driver, server: Server, streaming: bool) -> None:
    with sdk1_client(driver, server.url, streaming=streaming) as (client, connected):
        assert_chosen(connected, "native")
        asked = client.send(user_message(data(HIGH_RISK)), metadata=LOAN)
        task = asked.done
        assert question(task) == (COLLATERAL_QUESTION, LOAN_HITL)
        assert_events(asked, streaming, INPUT_REQUIRED)
        assert_wire(asked, "native", streaming)
        answer = user_message(text("예"), context_id=task["contextId"], task_id=task["id"])

        if streaming:
            # the answer's stream stays open in working until the reviewer decides
            pending = client.start_send(answer, timeout=60)
            review = pending_review(server, task["id"])
            assert review["draft"] == DRAFT_WITH_COLLATERAL
            decide(server, review["id"], {"type": "approve"})
            answered = client.finish(pending, timeout=60)
            statuses = [e["statusUpdate"]["status"] for e in answered.events
                        if "statusUpdate" in e]
            waiting = [s for s in statuses if s.get("message", {}).get("parts", [{}])[0]
                       == {"text": LOAN_WAITING_TEXT}]
            assert [_waiting_review_id(s) for s in waiting] == [review["id"]]
            assert_events(answered, streaming, COMPLETED)
        else:
            # a blocking SendMessage returns after review_wait (5 s) with the task working
            answered = client.send(answer, timeout=30)
            parked = answered.done
            assert parked["id"] == task["id"]
            review_id = _waiting_review_id(parked["status"])
            review = pending_review(server, task["id"])
            assert (review["id"], review["draft"]) == (review_id, DRAFT_WITH_COLLATERAL)
            decide(server, review_id, {"type": "approve"})
            assert_events(answered, streaming, WORKING)
        assert_wire(answered, "native", streaming)

        done = _until_terminal(client, task["id"])
        assert done["status"]["state"] == COMPLETED, done["status"]
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]


VOLATILE = frozenset({"id", "contextId", "taskId", "messageId", "artifactId", "timestamp",
                      "interruptId"})


def _comparable(value: Any) -> Any:
    """A task without what differs between two runs of one conversation (ids, times)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _conversation(driver: Driver, server: Server, mode: str) -> dict[str, Any]:
    with sdk1_client(driver, server.url, streaming=True, mode=mode) as (client, connected):
        assert_chosen(connected, mode)
        task = client.send(user_message(text(DOC_REQUEST))).done
        ids = {"context_id": task["contextId"], "task_id": task["id"]}
        for answer in ("passport", "1990-01-01"):
            assert client.send(user_message(text(answer), **ids)).done["id"] == task["id"]
        return dict(client.get_task(task["id"]).ok())


def test_native_and_compat_clients_see_the_same_task(driver: Driver, server: Server) -> None:
    """The same conversation through v1.0 and through the client's v0.3 layer: one task."""
    native = _conversation(driver, server, "native")
    compat = _conversation(driver, server, "compat")
    assert native["status"]["state"] == COMPLETED
    assert _comparable(native) == _comparable(compat)
