"""On PostgreSQL a turn's claim brings its reads along (``stores/pg_claim_reads.py``): the claim's
row, the context's latest task and its thread's checkpoint in one connection checkout. Over
HTTP a HITL round trip checks out four connections where it took seven, sending the same
statements; underneath, the checkpoint read with the claim is taken once, by its own saver, for
the root checkpoint of the turn's own thread only, and what cannot be read with the claim is
read as before."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from llamon_agent.stores.storage import open_storage
from llamon_agent.stores.turn_writes import TurnWrites, holding
from tests.conftest import serve
from tests.replicas.pg import rows
from tests.runtime.helpers import doc_agent, state_of
from tests.stores.ask_graph import ask_graph
from tests.stores.test_turn_writes import in_sweeper, statements_sent

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
import psycopg_pool  # noqa: E402 (the postgres extra)

from llamon_agent.stores.pg_saver import InlinePostgresSaver  # noqa: E402 (needs psycopg)

ASK = "이 서류를 검증해줘"


@contextmanager
def checkouts_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many connections the server's pool hands out (one number, in a list)."""
    counted = [0]
    original = psycopg_pool.AsyncConnectionPool.getconn

    async def getconn(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not in_sweeper():  # the sweeper's first sweep may run beside the first requests
            counted[0] += 1
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(psycopg_pool.AsyncConnectionPool, "getconn", getconn)
    yield counted


async def test_a_turn_on_a_known_context_claims_and_reads_in_one_checkout(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: the claim, the latest task and (for the answer) the checkpoint each took a
    connection of their own, so the ask checked out 3 connections and the answer 4."""
    async with serve([doc_agent()], db=postgres_url, lease=3600, sweep_every=3600) as client:
        warm = await client.send(ASK, context_id="warm", agent_id="document-review")
        assert state_of(warm) == "input-required"
        with checkouts_counted(monkeypatch) as counted, statements_sent(monkeypatch) as sent:
            asked = await client.send(ASK, context_id="c1", agent_id="document-review")
            ask, ask_sent = counted[0], list(sent)
            answered = await client.send("여권", context_id="c1", task_id=asked["id"])
            answer, answer_sent = counted[0] - ask, sent[len(ask_sent):]
    assert [state_of(asked), state_of(answered)] == ["input-required", "input-required"]
    assert (ask, answer) == (2, 2)  # the claim with its reads, then the end's save
    # the same statements as before, in the same order
    assert ask_sent == ["INSERT llamon_claims", "SELECT llamon_tasks", "INSERT checkpoint_blobs",
                        "INSERT checkpoints", "INSERT checkpoint_writes", "WITH llamon_claims"]
    assert answer_sent == ["INSERT llamon_claims", "SELECT llamon_tasks",
                           "SELECT jsonb_each_text", "INSERT checkpoints",
                           "INSERT checkpoint_writes", "WITH llamon_claims"]
    assert await rows(postgres_url, "SELECT count(*) FROM llamon_claims") == [(0,)]


async def test_the_checkpoint_read_with_the_claim_is_taken_once_by_its_own_saver(
    postgres_url: str,
) -> None:
    async with open_storage(postgres_url) as storage:
        saver = storage.checkpointer
        assert isinstance(saver, InlinePostgresSaver)
        thread = f"t-{uuid.uuid4().hex}"
        root = {"configurable": {"thread_id": thread}}
        await ask_graph(saver).ainvoke({"answers": []}, root)
        stored = await saver.aget_tuple(root)
        assert stored is not None
        writes = TurnWrites(thread)
        async with storage.pool.connection() as conn:
            writes.checkpoint = await saver.read_on(conn, thread)
        ahead = writes.checkpoint.found
        assert ahead.checkpoint["id"] == stored.checkpoint["id"]

        assert await saver.aget_tuple(root) is not ahead  # not inside the turn's unit
        other = InlinePostgresSaver(storage.pool)
        with holding(writes):
            # another saver, a subgraph's namespace, a given checkpoint id: read as usual
            assert await other.aget_tuple(root) is not ahead
            assert await saver.aget_tuple(
                {"configurable": {"thread_id": thread, "checkpoint_ns": "sub"}}) is None
            by_id = await saver.aget_tuple({"configurable": {
                "thread_id": thread, "checkpoint_id": stored.checkpoint["id"]}})
            assert by_id is not None and by_id is not ahead
            assert writes.checkpoint is not None
            assert await saver.aget_tuple(root) is ahead  # the run's first read takes it
            assert writes.checkpoint is None
            again = await saver.aget_tuple(root)  # later reads ask the database
            assert again is not None and again is not ahead
            assert again.checkpoint["id"] == stored.checkpoint["id"]


async def test_a_checkpoint_that_cannot_be_read_with_the_claim_is_read_by_the_run(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fails(self: Any, conn: Any, thread_id: str) -> Any:
        raise psycopg.OperationalError("the read with the claim failed")

    async with serve([doc_agent()], db=postgres_url, lease=3600, sweep_every=3600) as client:
        asked = await client.send(ASK, context_id="c1", agent_id="document-review")
        monkeypatch.setattr(InlinePostgresSaver, "read_on", fails)
        with statements_sent(monkeypatch) as sent:
            answered = await client.send("여권", context_id="c1", task_id=asked["id"])
    assert state_of(answered) == "input-required"  # the next question: the run resumed
    assert sent.count("SELECT jsonb_each_text") == 1  # read once, by the run
    assert await rows(postgres_url, "SELECT count(*) FROM llamon_claims") == [(0,)]


async def test_an_unreadable_latest_task_is_refused_as_before_and_frees_its_context(
    postgres_url: str,
) -> None:
    async with serve([doc_agent()], db=postgres_url, lease=3600, sweep_every=3600) as client:
        asked = await client.send(ASK, context_id="c1", agent_id="document-review")
        await rows(postgres_url, "UPDATE llamon_tasks SET task = %s WHERE id = %s",
                   (b"not json", asked["id"]))
        body = await client.call("message/send", {"message": {
            "kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
            "contextId": "c1", "parts": [{"kind": "text", "text": "여권"}]}})
    assert body["error"]["code"] == -32603
    assert body["error"]["data"] == {"taskId": asked["id"], "reason": "unreadable stored task"}
    assert await rows(postgres_url, "SELECT count(*) FROM llamon_claims") == [(0,)]


async def test_a_claim_not_taken_keeps_nothing_it_read(postgres_url: str) -> None:
    from llamon_agent.backends.pg_claims import PostgresClaims
    from llamon_agent.runtime.claims import ClaimTaken
    from llamon_agent.stores.pg_claim_reads import PostgresClaimReads
    from llamon_agent.stores.turn_writes import UNREAD

    async with serve([doc_agent()], db=postgres_url, lease=3600, sweep_every=3600) as client:
        asked = await client.send(ASK, context_id="c1", agent_id="document-review")
    key = (await rows(postgres_url, "SELECT context_id FROM llamon_tasks WHERE id = %s",
                      (asked["id"],)))[0][0]
    async with open_storage(postgres_url) as storage:
        reads = PostgresClaimReads(storage.pool, storage.checkpointer)
        async with PostgresClaims(storage.pool, with_task_saves=True, reads=reads) as claims:
            mine = TurnWrites(key)
            claim = await claims.acquire_for(key, None, mine)
            assert mine.latest is not UNREAD and mine.latest is not None
            assert mine.latest.id == asked["id"]
            assert mine.checkpoint is not None and mine.checkpoint.found is not None
            theirs = TurnWrites(key)
            with pytest.raises(ClaimTaken):
                await claims.acquire_for(key, None, theirs)
            assert (theirs.latest, theirs.checkpoint) == (UNREAD, None)
            await claims.release(claim)
            empty = TurnWrites("a context without tasks")
            await claims.release(await claims.acquire_for(empty.thread_id, None, empty))
            assert (empty.latest, empty.checkpoint) == (None, None)  # no task: no checkpoint read
