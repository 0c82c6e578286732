"""Answers bound to their question (``metadata.interruptId``) against a real server process.

Issue 8, finding 3: of 30 copies of one answer (distinct ``messageId``s, one ``interruptId``),
exactly one is accepted; the others are refused busy (``-32004``, while the first runs) or
stale (``-32602``, after it was taken). Half the copies race each other; the other half are
sent once the first was accepted, as a client that timed out would retry.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.conftest import rpc, send_params
from tests.process.conftest import Server, connect

COPIES = 30
DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."


def _bound(text: str, interrupt_id: str, message_id: str, context_id: str) -> dict[str, Any]:
    params = send_params(text, context_id=context_id, message_id=message_id,
                         agent_id="document-review")
    params["message"]["metadata"] = {"interruptId": interrupt_id}
    return params


async def test_thirty_concurrent_copies_of_a_bound_answer_one_is_accepted(
    example_server: Server,
) -> None:
    async with connect(example_server) as client:
        first = await client.send("이 서류를 검증해줘", context_id="p-race",
                                  agent_id="document-review")
    assert first["status"]["message"]["parts"][0]["text"] == DOC_QUESTION
    asked = first["status"]["message"]["metadata"]["interruptId"]
    taken = asyncio.Event()

    limits = httpx.Limits(max_connections=COPIES + 2, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=example_server.url, trust_env=False, timeout=30,
                                 limits=limits) as http:

        async def copy(i: int) -> dict[str, Any]:
            if i >= COPIES // 2:
                await taken.wait()
            body = rpc("message/send", _bound("passport", asked, f"copy-{i}", "p-race"), i)
            response = await http.post("/", json=body)
            assert response.status_code == 200
            reply: dict[str, Any] = response.json()
            if "result" in reply:
                taken.set()
            return reply

        async def release(early: list[asyncio.Task[dict[str, Any]]]) -> None:
            await asyncio.gather(*early)
            taken.set()  # never leave the late copies waiting, whatever the early ones got

        copies = [asyncio.create_task(copy(i)) for i in range(COPIES)]
        releaser = asyncio.create_task(release(copies[: COPIES // 2]))
        replies = await asyncio.gather(*copies)
        await releaser

    accepted = [r["result"] for r in replies if "result" in r]
    assert len(accepted) == 1, replies
    assert accepted[0]["status"]["message"]["parts"][0]["text"] == BIRTHDAY_QUESTION
    birthday = accepted[0]["status"]["message"]["metadata"]["interruptId"]
    refused = [(r["error"]["code"], r["error"]["data"]["reason"]) for r in replies if "error" in r]
    assert set(refused) <= {(-32004, "task is busy"), (-32602, "stale answer")}, replies
    late = [r for r in replies[COPIES // 2:] if "error" in r]
    assert all(r["error"]["data"] == {
        "reason": "stale answer", "taskId": first["id"], "interruptId": asked,
        "pendingInterruptId": birthday,
    } for r in late), late

    async with connect(example_server) as client:
        now = await client.result("tasks/get", {"id": first["id"]})
        assert now["status"]["state"] == "input-required"
        assert now["status"]["message"]["parts"][0]["text"] == BIRTHDAY_QUESTION
        assert [m["role"] for m in now["history"]] == ["user", "agent", "user"]

        # the accepted copy, sent again, is the task as it stands
        winner = next(i for i, r in enumerate(replies) if "result" in r)
        again = await client.result(
            "message/send", _bound("passport", asked, f"copy-{winner}", "p-race")
        )
        assert again["status"] == now["status"]
        assert len(again["history"]) == 3
