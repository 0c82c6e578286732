"""Answers bound to their question (``message.metadata.interruptId``), in process over ASGI.

Issue 8, finding 3: a client that retries a plain-text answer after a timeout sends it again
with a new ``messageId``; without a binding, a copy that arrives after the first was taken
answers the *next* question (the document review completed with ``birthday: "passport"``).
Bound to the ``interruptId`` of the question it answers, a copy is either the same message
(answered with the task as it stands) or stale (``-32602``, ``data.reason == "stale answer"``).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from tests.conftest import A2AClient, assert_valid, rpc, send_params, serve
from tests.orchestrator.helpers import serve_app

from .helpers import (
    BIRTHDAY_PARTS,
    BIRTHDAY_QUESTION,
    DOC_PARTS,
    doc_agent,
    result_data,
    state_of,
    status_parts,
)

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

REQUEST = "이 서류를 검증해줘"
INVALID_PARAMS = -32602
UNSUPPORTED_OPERATION = -32004


def interrupt_of(task: dict[str, Any]) -> str:
    """The ``interruptId`` the task's ``input-required`` status message carries."""
    assert state_of(task) == "input-required", task["status"]
    interrupt_id = task["status"]["message"]["metadata"]["interruptId"]
    assert isinstance(interrupt_id, str) and interrupt_id
    return interrupt_id


def bound(text: str, interrupt_id: Any, *, message_id: str | None = None,
          **where: Any) -> dict[str, Any]:
    """``message/send`` params of a text answer bound to ``interrupt_id``."""
    params = send_params(text, message_id=message_id, **where)
    params["message"]["metadata"] = {"interruptId": interrupt_id}
    return params


def stale(body: dict[str, Any], task_id: str | None, interrupt_id: str,
          pending: str | None) -> None:
    assert body["error"] == {
        "code": INVALID_PARAMS,
        "message": f"Stale answer: interrupt {interrupt_id} is no longer pending on this task "
                   "(it was answered already, or never asked here); nothing was changed",
        "data": {"reason": "stale answer", "taskId": task_id, "interruptId": interrupt_id,
                 "pendingInterruptId": pending},
    }


async def history_of(client: A2AClient, task_id: str) -> list[tuple[str, list[Any]]]:
    task = await client.result("tasks/get", {"id": task_id})
    return [(m["role"], m["parts"]) for m in task["history"]]


async def test_fifty_retried_copies_of_a_bound_answer_answer_only_their_question() -> None:
    """The issue's reproduction, one copy after another as a retrying client sends them."""
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="retry-ctx")
        asked = interrupt_of(first)

        replies = [
            await client.call("message/send", bound("passport", asked, context_id="retry-ctx"), i)
            for i in range(50)
        ]

        accepted = [r["result"] for r in replies if "result" in r]
        assert len(accepted) == 1
        task = accepted[0]
        assert task["id"] == first["id"]
        assert status_parts(task) == BIRTHDAY_PARTS
        birthday = interrupt_of(task)
        assert birthday != asked
        for reply in replies[1:]:
            stale(reply, first["id"], asked, birthday)

        # nothing the copies carried was stored: the task still asks for the birthday
        now = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(now) == "input-required"
        assert status_parts(now) == BIRTHDAY_PARTS
        assert await history_of(client, first["id"]) == [
            ("user", [{"kind": "text", "text": REQUEST}]),
            ("agent", DOC_PARTS),
            ("user", [{"kind": "text", "text": "passport"}]),
        ]

        done = await client.result(
            "message/send", bound("1990-01-01", birthday, context_id="retry-ctx")
        )
        assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}


async def test_resending_the_accepted_answer_returns_the_task_as_it_stands() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="resend-ctx")
        asked = interrupt_of(first)
        answer = bound("passport", asked, context_id="resend-ctx", message_id="answer-1")

        taken = await client.result("message/send", answer)
        again = await client.call("message/send", answer)
        assert again == {"jsonrpc": "2.0", "id": 1, "result": taken}
        assert_valid("Task", again["result"])
        assert len(await history_of(client, first["id"])) == 3

        # the same message by taskId only, and over message/stream: the task as it stands
        by_task = bound("passport", asked, task_id=first["id"], message_id="answer-1")
        assert await client.result("message/send", by_task) == taken
        events = await client.stream("message/stream", answer, "s1")
        assert [e["data"]["result"]["kind"] for e in events] == ["task", "status-update"]
        assert events[0]["data"]["result"] == taken
        assert events[-1]["data"]["result"]["final"] is True
        assert events[-1]["data"]["result"]["status"] == taken["status"]

        # once the task completed, a late copy of either answer is still the task as it is
        birthday = interrupt_of(taken)
        last = bound("1990-01-01", birthday, context_id="resend-ctx", message_id="answer-2")
        done = await client.result("message/send", last)
        assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}
        assert await client.result("message/send", last) == done
        assert await client.result("message/send", answer) == done
        assert len(await history_of(client, first["id"])) == 5


async def test_a_repeated_message_id_without_interrupt_id_is_still_a_duplicate() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="dup-ctx")
        plain = send_params("passport", context_id="dup-ctx", message_id="plain-1")
        await client.result("message/send", plain)
        body = await client.call("message/send", plain)
        assert body["error"]["code"] == UNSUPPORTED_OPERATION
        assert body["error"]["data"] == {
            "taskId": first["id"], "messageId": "plain-1", "reason": "duplicate message"
        }


async def test_an_unclear_answer_retried_gets_the_same_reask_not_a_second_one() -> None:
    """A re-ask keeps the question (and its id): a copy of the unclear answer is a retry."""
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="reask-ctx")
        asked = interrupt_of(first)
        unclear = bound("운전면허증", asked, context_id="reask-ctx", message_id="unclear-1")
        reasked = await client.result("message/send", unclear)
        assert interrupt_of(reasked) == asked
        assert reasked["status"]["message"]["metadata"] == {"interruptId": asked, "reask": True}
        assert await client.result("message/send", unclear) == reasked

        clear = await client.result("message/send", bound("여권", asked, context_id="reask-ctx"))
        assert status_parts(clear) == BIRTHDAY_PARTS
        stale(await client.call("message/send", bound("여권", asked, context_id="reask-ctx")),
              first["id"], asked, interrupt_of(clear))


async def test_a_bound_answer_where_nothing_is_pending_is_stale_and_starts_nothing() -> None:
    async with serve_app([doc_agent()]) as h:
        fresh = await h.client.call("message/send", bound("passport", "a" * 32, context_id="new"))
        stale(fresh, None, "a" * 32, None)
        assert await h.manager.context_agent("new") is None  # no task was stored

        first = await h.client.send(REQUEST, context_id="ended")
        asked = interrupt_of(first)
        second = await h.client.result("message/send", bound("여권", asked, context_id="ended"))
        await h.client.result(
            "message/send", bound("1990-01-01", interrupt_of(second), context_id="ended")
        )
        late = await h.client.call("message/send", bound("여권", asked, context_id="ended"))
        stale(late, first["id"], asked, None)
        by_task = await h.client.call("message/send", bound("여권", asked, task_id=first["id"]))
        stale(by_task, first["id"], asked, None)
        latest = await h.manager._store.latest_in_context("ended")
        assert latest is not None and latest.id == first["id"]  # no new task either


@pytest.mark.parametrize(
    "interrupt_id", [123, "", "x" * 129, ["a"], {"id": "a"}, True],
    ids=["number", "empty", "too-long", "list", "object", "bool"],
)
async def test_a_malformed_interrupt_id_is_invalid_params_and_changes_nothing(
    interrupt_id: Any,
) -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="bad-ctx")
        body = await client.call("message/send", bound("passport", interrupt_id,
                                                       context_id="bad-ctx"))
        assert body["error"] == {
            "code": INVALID_PARAMS,
            "message": "metadata.interruptId must be a non-empty string of at most 128 "
                       "characters (the interruptId of the question answered)",
            "data": {"field": "message.metadata.interruptId"},
        }
        now = await client.result("tasks/get", {"id": first["id"]})
        assert status_parts(now) == DOC_PARTS
        assert len(now["history"]) == 1


async def test_of_thirty_concurrent_copies_exactly_one_is_accepted() -> None:
    """Half the copies race the first; the other half arrive once one was taken (a client
    retrying after its timeout): those are stale, never the answer to the birthday."""
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="race-ctx")
        asked = interrupt_of(first)
        answered = asyncio.Event()

        async def copy(i: int) -> dict[str, Any]:
            if i >= 15:
                await answered.wait()
            params = bound("passport", asked, context_id="race-ctx", message_id=f"copy-{i}")
            response = await client.http.post("/", json=rpc("message/send", params, i))
            assert response.status_code == 200
            body: dict[str, Any] = response.json()
            if "result" in body:
                answered.set()
            return body

        async def release_when_the_first_wave_is_done(first_wave: list[asyncio.Task[Any]]) -> None:
            await asyncio.gather(*first_wave)
            answered.set()  # every early copy was refused busy: let the late ones race alone

        tasks = [asyncio.create_task(copy(i)) for i in range(30)]
        releaser = asyncio.create_task(release_when_the_first_wave_is_done(tasks[:15]))
        replies = await asyncio.gather(*tasks)
        await releaser

        accepted = [r for r in replies if "result" in r]
        assert len(accepted) == 1, replies
        task = accepted[0]["result"]
        assert status_parts(task) == BIRTHDAY_PARTS
        for reply in replies:
            if "result" in reply:
                continue
            error = reply["error"]
            assert (error["code"], error["data"]["reason"]) in {
                (UNSUPPORTED_OPERATION, "task is busy"), (INVALID_PARAMS, "stale answer")
            }, error
        # the late copies came after the answer was taken: stale, not the birthday's answer
        assert all(r["error"]["data"]["reason"] == "stale answer" for r in replies[15:]), replies
        now = await client.result("tasks/get", {"id": first["id"]})
        assert status_parts(now) == BIRTHDAY_PARTS
        assert len(now["history"]) == 3


async def test_plain_text_without_interrupt_id_keeps_the_context_resume() -> None:
    """Seed 004: an unbound answer on the context answers whatever is asked now."""
    async with serve([doc_agent()]) as client:
        await client.send(REQUEST, context_id="plain-ctx")
        second = await client.send("여권", context_id="plain-ctx")
        assert second["status"]["message"]["parts"][0]["text"] == BIRTHDAY_QUESTION
        done = await client.send("1990-01-01", context_id="plain-ctx")
        assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}


async def test_a_bound_answer_over_message_stream_runs_like_a_send() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="stream-ctx")
        events = await client.stream(
            "message/stream", bound("여권", interrupt_of(first), context_id="stream-ctx")
        )
        final = events[-1]["data"]["result"]
        assert final["final"] is True and final["status"]["state"] == "input-required"
        assert final["status"]["message"]["parts"] == BIRTHDAY_PARTS
        late = await client.stream("message/stream", bound(
            "여권", interrupt_of(first), context_id="stream-ctx", message_id=str(uuid.uuid4())
        ), "late")
        # a stale answer is refused before anything runs: one event, the JSON-RPC error
        assert len(late) == 1
        stale(late[0]["data"], first["id"], interrupt_of(first), interrupt_of(final))
        assert late[0]["data"]["id"] == "late"
