"""Issue 10, isolation: every task and context belongs to the principal that created it.

Two principals (``alice``, ``bob``: ``create_app(api_keys=...)``) on one server, over HTTP.
Each test reproduces a finding of the issue, tried as a hostile client would:

* both use the ``contextId`` ``case-123``: two separate conversations, each answer resumes
  its own, every response shows the client's own id (and the graph sees it as ``thread_id``);
* bob using alice's ``taskId`` gets exactly what an unknown task id gets, for every method
  (the whole response is compared with the one for a random id, after replacing the id);
* ``/hitl/chat`` and ``/hitl/review`` on alice's ``thread_id``: bob's own, empty thread;
* the ``-32004`` busy error and "belongs to agent" never tell bob about alice's context;
* an orchestrator's child contexts (``<ctx>::risk``) cannot be addressed by any client;
* a control character in a client id is refused (it could forge a storage key).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.assistant import email_assistant
from app.main import AGENTS
from app.outbox import Outbox
from llamon_agent.core.principal import context_key, space_of
from llamon_agent.runtime.tasks import TaskManager
from tests.conftest import A2AClient, assert_valid, rpc, send_params, user_message
from tests.orchestrator.helpers import COLLATERAL_QUESTION, HIGH_RISK, QUESTION_PARTS
from tests.security.helpers import (
    Gate,
    Pair,
    answer,
    context_ids,
    echo_agent,
    error_of,
    mentions,
    random_id,
    replaced,
    result_data,
    texts,
    two_principals,
)
from tests.tool_review.helpers import SEED_REQUEST, edit

CASE = "case-123"
DOC_REQUEST = "이 서류를 검증해줘"
DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."
SECRET = "my passport no. M1234567"
BOB_REQUEST = "Send an email to bob@example.com about Lunch: See you at noon."
ATTACKER_ARGS = {"to": "attacker@evil.example", "subject": "x", "body": "y"}

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
async def pair() -> Any:
    async with two_principals(AGENTS) as p:
        yield p


async def waiting_document(client: A2AClient, context_id: str = CASE,
                           text: str = DOC_REQUEST) -> dict[str, Any]:
    task = await client.send(text, context_id=context_id, agent_id="document-review")
    assert task["status"]["state"] == "input-required", task["status"]
    assert texts(task["status"]["message"]) == [DOC_QUESTION]
    return task


async def snapshot(client: A2AClient, task_id: str) -> dict[str, Any]:
    """The task as its owner sees it; what must not change when someone else tries."""
    task = await client.result("tasks/get", {"id": task_id})
    assert_valid("Task", task)
    return task


# ---------------------------------------------------------------- same contextId, two conversations


async def test_the_same_context_id_holds_two_separate_conversations(pair: Pair) -> None:
    alice_task = await waiting_document(pair.alice, text=f"{DOC_REQUEST} ({SECRET})")
    bob_task = await waiting_document(pair.bob)
    assert bob_task["id"] != alice_task["id"]
    assert not mentions(bob_task, SECRET)

    # each answer resumes only its own task, and shows only its own history
    alice_next = await pair.alice.send("여권", context_id=CASE)
    assert alice_next["id"] == alice_task["id"]
    assert texts(alice_next["status"]["message"]) == [BIRTHDAY_QUESTION]
    bob_waiting = await snapshot(pair.bob, bob_task["id"])
    assert texts(bob_waiting["status"]["message"]) == [DOC_QUESTION]  # untouched by alice

    bob_next = await pair.bob.send("id_card", context_id=CASE)
    assert bob_next["id"] == bob_task["id"]
    assert texts(bob_next["status"]["message"]) == [BIRTHDAY_QUESTION]
    assert not mentions(bob_next, SECRET)

    alice_done = await pair.alice.send("1990-01-01", context_id=CASE)
    bob_done = await pair.bob.send("2000-02-02", context_id=CASE)
    assert (alice_done["id"], bob_done["id"]) == (alice_task["id"], bob_task["id"])
    assert result_data(alice_done) == [{"doc_type": "passport", "birthday": "1990-01-01"}]
    assert result_data(bob_done) == [{"doc_type": "id_card", "birthday": "2000-02-02"}]
    for task in (alice_task, alice_next, alice_done, bob_task, bob_next, bob_done):
        assert context_ids(task) == {CASE}  # the client's own id, never a storage key
    assert not mentions(bob_done, SECRET)
    assert not mentions(bob_done, "1990-01-01") and not mentions(alice_done, "2000-02-02")


async def test_an_answer_on_someone_elses_context_id_starts_a_fresh_task(pair: Pair) -> None:
    """The issue's first finding: answering alice's waiting question returned her history."""
    alice_task = await waiting_document(pair.alice, text=f"{DOC_REQUEST} ({SECRET})")
    before = await snapshot(pair.alice, alice_task["id"])

    bobs = await pair.bob.send("여권", context_id=CASE)
    assert bobs["id"] != alice_task["id"]
    assert bobs["contextId"] == CASE
    assert not mentions(bobs, SECRET)
    assert [texts(m) for m in bobs["history"] if m["role"] == "user"] == [["여권"]]
    assert await snapshot(pair.alice, alice_task["id"]) == before


async def test_a_streamed_message_on_the_same_context_id_is_bobs_own(pair: Pair) -> None:
    alice_task = await waiting_document(pair.alice, text=f"{DOC_REQUEST} ({SECRET})")
    before = await snapshot(pair.alice, alice_task["id"])

    events = await pair.bob.stream("message/stream", send_params("여권", context_id=CASE))
    results = [e["data"]["result"] for e in events]
    assert results[0]["kind"] == "task" and results[0]["id"] != alice_task["id"]
    assert {r.get("taskId", r.get("id")) for r in results} == {results[0]["id"]}
    assert {r["contextId"] for r in results} == {CASE}
    assert results[-1]["final"] is True
    assert texts(results[-1]["status"]["message"]) == [DOC_QUESTION]  # a new task asks first
    assert not mentions(events, SECRET)
    assert await snapshot(pair.alice, alice_task["id"]) == before


async def test_graphs_see_the_clients_own_context_id_as_thread_id() -> None:
    async with two_principals([echo_agent()]) as pair:
        alice = await pair.alice.send("hi", context_id=CASE)
        bob = await pair.bob.send("hi", context_id=CASE)
    assert result_data(alice) == result_data(bob) == [{"thread_id": CASE}]
    assert alice["id"] != bob["id"]
    assert context_ids(alice) == context_ids(bob) == {CASE}


# ---------------------------------------------------------------- another principal's taskId


def _message(text: str, task_id: str, context_id: str | None = None) -> dict[str, Any]:
    return {"message": user_message(text, task_id=task_id, context_id=context_id,
                                    message_id="bob-1")}


#: method -> params naming a task id; every one must treat alice's task as unknown to bob
TASK_CALLS: dict[str, Any] = {
    "message/send": lambda t: ("message/send", _message("여권", t)),
    "message/send+contextId": lambda t: ("message/send", _message("여권", t, CASE)),
    "message/stream": lambda t: ("message/stream", _message("여권", t)),
    "message/stream+contextId": lambda t: ("message/stream", _message("여권", t, CASE)),
    "tasks/get": lambda t: ("tasks/get", {"id": t}),
    "tasks/get+historyLength": lambda t: ("tasks/get", {"id": t, "historyLength": 5}),
    "tasks/cancel": lambda t: ("tasks/cancel", {"id": t}),
    "tasks/resubscribe": lambda t: ("tasks/resubscribe", {"id": t}),
    "pushNotificationConfig/set": lambda t: (
        "tasks/pushNotificationConfig/set",
        {"taskId": t, "pushNotificationConfig": {"url": "https://hook.example/"}}),
    "pushNotificationConfig/get": lambda t: ("tasks/pushNotificationConfig/get", {"id": t}),
    "pushNotificationConfig/list": lambda t: ("tasks/pushNotificationConfig/list", {"id": t}),
    "pushNotificationConfig/delete": lambda t: (
        "tasks/pushNotificationConfig/delete", {"id": t, "pushNotificationConfigId": "c1"}),
}


async def assert_unknown_to(client: A2AClient, call: Any, task_id: str) -> dict[str, Any]:
    """``client`` naming ``task_id`` gets exactly what it gets for a random task id."""
    method, params = call(task_id)
    named = await answer(client, method, params, "same-id")
    unknown_id = random_id()
    method, params = call(unknown_id)
    unknown = await answer(client, method, params, "same-id")
    error = error_of(unknown)  # an unknown id is an error for every method
    assert replaced(named, task_id, unknown_id) == unknown
    return error


@pytest.mark.parametrize("name", list(TASK_CALLS))
async def test_another_principals_task_id_is_an_unknown_task(pair: Pair, name: str) -> None:
    alice_task = await waiting_document(pair.alice, text=f"{DOC_REQUEST} ({SECRET})")
    before = await snapshot(pair.alice, alice_task["id"])

    error = await assert_unknown_to(pair.bob, TASK_CALLS[name], alice_task["id"])
    assert error["error"]["code"] == -32001

    # nothing of alice's changed: not answered, not canceled, no new event
    assert await snapshot(pair.alice, alice_task["id"]) == before
    resumed = await pair.alice.send("여권", context_id=CASE)
    assert resumed["id"] == alice_task["id"]
    assert texts(resumed["status"]["message"]) == [BIRTHDAY_QUESTION]


async def test_another_principals_finished_task_is_an_unknown_task_too(pair: Pair) -> None:
    """A terminal task answers -32004 / -32002 to its owner; to bob it does not exist."""
    alice_task = await waiting_document(pair.alice)
    await pair.alice.result("tasks/cancel", {"id": alice_task["id"]})
    for call in (TASK_CALLS["message/send"], TASK_CALLS["tasks/cancel"],
                 TASK_CALLS["tasks/get"], TASK_CALLS["tasks/resubscribe"]):
        error = await assert_unknown_to(pair.bob, call, alice_task["id"])
        assert error["error"]["code"] == -32001


async def test_the_owner_still_reaches_its_own_task_by_id(pair: Pair) -> None:
    """The refusals above are about whose task it is, not a method that stopped working."""
    alice_task = await waiting_document(pair.alice)
    events = await pair.alice.stream("tasks/resubscribe", {"id": alice_task["id"]})
    assert events[0]["data"]["result"]["id"] == alice_task["id"]
    assert events[-1]["data"]["result"]["final"] is True
    resumed = await pair.alice.send("여권", task_id=alice_task["id"])
    assert resumed["id"] == alice_task["id"]
    canceled = await pair.alice.result("tasks/cancel", {"id": alice_task["id"]})
    assert canceled["status"]["state"] == "canceled"


# ---------------------------------------------------------------- /hitl/chat and /hitl/review


@pytest.fixture
async def mail() -> Any:
    outbox = Outbox(":memory:")
    async with two_principals([email_assistant(outbox)]) as p:
        yield p, outbox
    outbox.close()


async def post(client: A2AClient, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    response = await client.http.post(path, json=body, headers={"Accept-Language": "en"})
    return response.status_code, response.json()


async def test_a_review_on_someone_elses_thread_is_a_review_on_an_unknown_thread(
    mail: tuple[Pair, Outbox],
) -> None:
    """The issue: bob's /hitl/review edited alice's pending email to the attacker and sent it."""
    pair, outbox = mail
    status, pending = await post(pair.alice, "/hitl/chat",
                                 {"message": SEED_REQUEST, "thread_id": "mail-1"})
    assert status == 200 and pending["pending_review"] is not None

    for decisions in ([edit(ATTACKER_ARGS)], [{"type": "approve"}],
                      [{"type": "reject", "message": "no"}]):
        named = await post(pair.bob, "/hitl/review", {"thread_id": "mail-1", "decisions": decisions})
        unknown_thread = random_id()
        unknown = await post(pair.bob, "/hitl/review",
                             {"thread_id": unknown_thread, "decisions": decisions})
        assert unknown[0] == 400
        assert tuple(replaced(named, "mail-1", unknown_thread)) == unknown
    assert outbox.rows() == []

    # alice's review is still hers, unchanged: her approval sends her email
    status, done = await post(pair.alice, "/hitl/review",
                              {"thread_id": "mail-1", "decisions": [{"type": "approve"}]})
    assert status == 200, done
    assert [(r["to"], r["subject"]) for r in outbox.rows()] == [("alice@example.com", "Meeting")]


async def test_a_chat_on_someone_elses_thread_is_a_new_conversation(
    mail: tuple[Pair, Outbox],
) -> None:
    pair, outbox = mail
    status, alice = await post(pair.alice, "/hitl/chat",
                               {"message": SEED_REQUEST, "thread_id": "mail-1"})
    assert status == 200 and alice["pending_review"] is not None

    # not "actions await approval" (400): that would say alice's thread exists
    status, bob = await post(pair.bob, "/hitl/chat",
                             {"message": BOB_REQUEST,
                              "thread_id": "mail-1"})
    assert status == 200, bob
    assert bob["thread_id"] == "mail-1"
    assert [m["content"] for m in bob["messages"] if m["type"] == "human"] == [
        BOB_REQUEST
    ]
    assert not mentions(bob, "alice@example.com")

    # each approves its own: two emails, one per thread owner, nothing crossed
    for client in (pair.bob, pair.alice):
        status, body = await post(client, "/hitl/review",
                                  {"thread_id": "mail-1", "decisions": [{"type": "approve"}]})
        assert status == 200, body
    assert sorted(r["to"] for r in outbox.rows()) == ["alice@example.com", "bob@example.com"]


# ---------------------------------------------------------------- busy, and naming another agent


async def test_the_busy_error_never_names_another_principals_task() -> None:
    """The issue: bob's -32004 busy error returned alice's running task id."""
    gate = Gate()
    async with two_principals([gate.agent()]) as pair:
        running = await pair.alice.send("wait", context_id=CASE,
                                        configuration={"blocking": False})
        await asyncio.wait_for(gate.entered.wait(), 10)
        try:
            # alice's own second message is busy, and names her own task
            own = await pair.alice.call("message/send", send_params("again", context_id=CASE))
            assert own["error"]["code"] == -32004
            assert own["error"]["data"]["taskId"] == running["id"]

            # bob, same contextId: not busy; his turns run and complete
            bob = await pair.bob.send("quick", context_id=CASE)
            assert bob["status"]["state"] == "completed"
            assert result_data(bob) == [{"text": "quick", "thread_id": CASE}]
            events = await pair.bob.stream("message/stream", send_params("more", context_id=CASE))
            assert all("error" not in e["data"] for e in events), events
            assert events[-1]["data"]["result"]["status"]["state"] == "completed"
            assert not mentions([bob, events], running["id"])
        finally:
            gate.release.set()


async def test_naming_another_agent_for_someone_elses_context_reveals_nothing(pair: Pair) -> None:
    """The issue: "Context case-123 belongs to agent 'document-review'" told bob it existed."""
    await waiting_document(pair.alice)
    own = await pair.alice.call(
        "message/send", send_params("take notes", context_id=CASE, agent_id="until-done"))
    assert own["error"]["code"] == -32602  # alice's own context keeps its agent

    on_alices = await pair.bob.send("take notes", context_id=CASE, agent_id="until-done")
    fresh = random_id()
    on_fresh = await pair.bob.send("take notes", context_id=fresh, agent_id="until-done")
    assert on_alices["contextId"] == CASE
    assert on_alices["status"]["state"] == on_fresh["status"]["state"] == "input-required"
    assert texts(on_alices["status"]["message"]) == texts(on_fresh["status"]["message"])
    assert not mentions(on_alices, "document-review")


# ---------------------------------------------------------------- an orchestrator's child contexts


async def child_task_id(manager: TaskManager, principal: str, context_id: str,
                        child: str) -> str:
    """The task of ``principal``'s orchestrator child ``child``, read from the store. It should
    live in the principal's internal space (core/principal.py); the other keys are looked at
    too, so a child stored where a client reaches it fails the tests below, not this lookup."""
    child_context = f"{context_id}::{child}"
    for space in (space_of(principal, internal=True), space_of(principal)):
        found = await manager._store.latest_in_context(context_key(space, child_context))
        if found is not None and found.agent_id == child:
            return found.id
    raise AssertionError(f"no {child} child task for {principal}'s {context_id}")


async def child_snapshot(manager: TaskManager, task_id: str) -> dict[str, Any]:
    record = await manager._store.get(task_id)
    assert record is not None
    return record.task.model_dump(mode="json", by_alias=True, exclude_none=True)


@pytest.fixture
async def loan() -> Any:
    async with two_principals(AGENTS, reviewer_token="t", review_wait=0.3) as p:
        task = await p.alice.send(data=HIGH_RISK, agent_id="loan", context_id="loan-1")
        assert task["status"]["state"] == "input-required"
        assert task["status"]["message"]["parts"] == QUESTION_PARTS
        yield p, task, await child_task_id(p.manager, "alice", "loan-1", "risk")


@pytest.mark.parametrize("name", ["message/send", "message/stream", "tasks/get",
                                  "tasks/cancel", "tasks/resubscribe"])
@pytest.mark.parametrize("who", ["alice", "bob"])
async def test_a_child_task_cannot_be_addressed_by_id(
    loan: tuple[Pair, dict[str, Any], str], name: str, who: str,
) -> None:
    """Not even by the principal whose orchestrator made it: only the orchestrator talks to
    its children ("Contexts the server made for itself ... cannot be addressed by any client")."""
    pair, _, child_id = loan
    before = await child_snapshot(pair.manager, child_id)
    client = pair.alice if who == "alice" else pair.bob
    error = await assert_unknown_to(client, TASK_CALLS[name], child_id)
    assert error["error"]["code"] == -32001
    assert await child_snapshot(pair.manager, child_id) == before


@pytest.mark.parametrize("who", ["alice", "bob"])
async def test_a_message_to_a_child_context_id_starts_an_unrelated_task(
    loan: tuple[Pair, dict[str, Any], str], who: str,
) -> None:
    pair, parent, child_id = loan
    before = await child_snapshot(pair.manager, child_id)
    client = pair.alice if who == "alice" else pair.bob

    # the child waits for "예"; sent to "loan-1::risk" it is a plain message of the client's
    fresh = await client.send("예", context_id="loan-1::risk")
    assert fresh["id"] not in (child_id, parent["id"])
    assert fresh["contextId"] == "loan-1::risk"
    assert texts(fresh["status"]["message"]) == [DOC_QUESTION]  # the default agent, from scratch
    # naming the child's agent starts a risk task of the client's own, asking from the start
    risk = await client.send(data=HIGH_RISK, agent_id="risk", context_id="other::risk")
    assert risk["id"] != child_id
    assert texts(risk["status"]["message"]) == [COLLATERAL_QUESTION]
    assert await child_snapshot(pair.manager, child_id) == before

    # the orchestrator itself still continues its child
    resumed = await pair.alice.send("예", context_id="loan-1")
    assert resumed["id"] == parent["id"]
    assert resumed["status"]["state"] == "working"  # the draft waits for a reviewer
    after = await child_snapshot(pair.manager, child_id)
    assert after["status"]["state"] == "completed"


# ---------------------------------------------------------------- ids that could forge a key


FORGED = ["alice\x1fcase-123", "case\x1f123", "case\n123", "case\x00", "case\u202e123"]


@pytest.mark.parametrize("context_id", FORGED)
@pytest.mark.parametrize("method", ["message/send", "message/stream"])
async def test_a_control_character_in_a_context_id_is_refused(
    pair: Pair, method: str, context_id: str,
) -> None:
    alice_task = await waiting_document(pair.alice)
    before = await snapshot(pair.alice, alice_task["id"])
    response = await pair.bob.http.post(
        "/", json=rpc(method, send_params("여권", context_id=context_id)))
    # a params error comes before any stream starts: plain JSON (docs/wire.md §8.2)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert_valid("JSONRPCErrorResponse", body)
    assert body["error"]["code"] == -32602
    # nothing stored or answered: not under bob's key, and "alice\x1fcase-123" (alice's own
    # storage key) did not reach alice's task
    assert await pair.manager._store.latest_in_context(
        context_key(space_of("bob"), context_id)) is None
    assert await snapshot(pair.alice, alice_task["id"]) == before


@pytest.mark.parametrize("task_id", ["x\x1fy", "id\n"])
async def test_a_control_character_in_a_task_id_is_refused(pair: Pair, task_id: str) -> None:
    body = await pair.bob.call("tasks/get", {"id": task_id})
    assert_valid("JSONRPCErrorResponse", body)
    assert body["error"]["code"] == -32602


async def test_a_control_character_in_a_thread_id_is_refused(
    mail: tuple[Pair, Outbox],
) -> None:
    pair, outbox = mail
    status, body = await post(pair.bob, "/hitl/chat",
                              {"message": SEED_REQUEST, "thread_id": "alice\x1fmail-1"})
    assert status == 400, body
    assert "control character" in body["detail"]
    assert outbox.rows() == []
