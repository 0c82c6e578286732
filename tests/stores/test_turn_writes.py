"""A turn's end on PostgreSQL is one commit (``stores/turn_writes.py``): the run's checkpoint
writes, the task's row and the context claim's release go in one transaction. Over HTTP a HITL
round trip commits its writes in exactly two transactions besides the two claims' inserts;
underneath, held writes are invisible until the end's save, a save that fails stores none of
them (nor the release) and gives them to the next save, a renewal racing the release does not
call the claim lost, and only the turn's own thread at ``durability="exit"`` is held."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.runtime.claims import Claim
from llamon_agent.runtime.sweeper import SWEEPER_TASK
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.storage import open_storage
from llamon_agent.stores.turn_writes import TurnWrites, holding
from tests.conftest import serve
from tests.replicas.helpers import gated_agent
from tests.replicas.pg import rows, until
from tests.runtime.helpers import doc_agent, state_of
from tests.stores.ask_graph import ask_graph

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402 (needs psycopg)

from llamon_agent.backends.pg_claims import PostgresClaims  # noqa: E402 (needs psycopg)

#: the tables a turn reads (LangGraph's checkpoint read's first FROM is jsonb_each_text)
TURN_READS = {"llamon_tasks", "llamon_claims", "checkpoints", "checkpoint_blobs",
              "checkpoint_writes", "jsonb_each_text"}
#: a statement's writes, in order: its own, or those of its data-modifying CTEs and then its
#: own (``WITH released AS (DELETE FROM ...) INSERT INTO ...``); "DO UPDATE" is an upsert's
_WRITE = re.compile(r"(?:^|\bAS\s*\(|\)\s*)\s*(INSERT|UPDATE|DELETE)\s+(?:INTO\s+|FROM\s+)?\"?(\w+)",
                    re.I)


@dataclass
class Commits:
    """What the server's connections commit: each write sent outside a transaction commits on
    its own (autocommit); a transaction's writes commit with its ``COMMIT``."""

    on: bool = False
    alone: list[str] = field(default_factory=list)  # "INSERT llamon_claims", ...
    transactions: list[list[str]] = field(default_factory=list)
    _open: dict[int, list[str]] = field(default_factory=dict)  # connection id -> its writes

    def statement(self, conn: Any, query: Any) -> None:
        text = query.as_string(None) if hasattr(query, "as_string") else str(query)
        if text.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK"):  # sent as a statement
            self.command(conn, text)
            return
        # a turn's tables only: the sweeps write others (push deliveries) in the background
        writes = [f"{verb.upper()} {table}" for verb, table in _WRITE.findall(text)
                  if table in TURN_READS]
        if not self.on or not writes:
            return
        opened = self._open.get(id(conn))
        (opened if opened is not None else self.alone).extend(writes)

    def command(self, conn: Any, query: Any) -> None:
        verb = (query.decode() if isinstance(query, bytes) else str(query)).split()[0].upper()
        if verb == "BEGIN":
            self._open[id(conn)] = []
        elif verb in ("COMMIT", "ROLLBACK"):
            writes = self._open.pop(id(conn), None)
            if verb == "COMMIT" and self.on and writes:
                self.transactions.append(writes)


@contextmanager
def commits_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Commits]:
    counted = Commits()
    for cls in (psycopg.AsyncCursor, psycopg.AsyncServerCursor):
        for name in ("execute", "executemany"):
            original = getattr(cls, name)

            def wrapped(self: Any, query: Any, *args: Any, __original: Any = original,
                        **kwargs: Any) -> Any:
                if not in_sweeper():
                    counted.statement(self.connection, query)
                return __original(self, query, *args, **kwargs)

            monkeypatch.setattr(cls, name, wrapped)
    # outside a transaction of its own, what a pipeline sends before its Sync (at its end) is
    # one transaction: it commits when the pipeline ends without an error
    enter, leave = psycopg.AsyncPipeline.__aenter__, psycopg.AsyncPipeline.__aexit__

    async def pipeline_entered(self: Any) -> Any:
        if self.level == 0 and id(self._conn) not in counted._open and not in_sweeper():
            counted.command(self._conn, "BEGIN")
            self.counted_as_transaction = True
        return await enter(self)

    async def pipeline_left(self: Any, kind: Any, exc: Any, tb: Any) -> None:
        try:
            await leave(self, kind, exc, tb)
        except BaseException:
            exc = exc or True
            raise
        finally:
            if self.level == 0 and getattr(self, "counted_as_transaction", False):
                self.counted_as_transaction = False
                counted.command(self._conn, "ROLLBACK" if exc else "COMMIT")

    monkeypatch.setattr(psycopg.AsyncPipeline, "__aenter__", pipeline_entered)
    monkeypatch.setattr(psycopg.AsyncPipeline, "__aexit__", pipeline_left)
    # ``conn.transaction()`` sends BEGIN and COMMIT through this private generator (psycopg 3)
    command = psycopg.AsyncConnection._exec_command

    def exec_command(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if not in_sweeper():
            counted.command(self, query)
        return (yield from command(self, query, *args, **kwargs))

    monkeypatch.setattr(psycopg.AsyncConnection, "_exec_command", exec_command)
    yield counted


async def test_a_hitl_round_trip_commits_each_turn_s_end_once(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: every checkpoint statement, the task's upsert and the claim's delete committed
    on their own: 11 autocommitted writes per round trip, and no transaction."""
    async with serve([doc_agent()], db=postgres_url, lease=3600, sweep_every=3600) as client:
        warm = await client.send("이 서류를 검증해줘", context_id="warm", agent_id="document-review")
        assert state_of(warm) == "input-required"
        with commits_counted(monkeypatch) as counted:
            counted.on = True
            asked = await client.send("이 서류를 검증해줘", context_id="c1",
                                      agent_id="document-review")
            assert state_of(asked) == "input-required"
            answered = await client.send("여권", context_id="c1", task_id=asked["id"])
            assert state_of(answered) == "input-required"  # the next question
            counted.on = False
    assert counted.alone == []
    # each turn's claim commits at once, in the pipeline that reads the context's latest task
    # (``stores/pg_claim_reads.py``); then one commit per turn's end: its checkpoint first (the
    # answer's has no new blob), then the task's upsert, which deletes the claim's row in the
    # same statement
    claim = ["INSERT llamon_claims"]
    end = ["INSERT checkpoints", "INSERT checkpoint_writes", "DELETE llamon_claims",
           "INSERT llamon_tasks"]
    assert counted.transactions == [claim, ["INSERT checkpoint_blobs", *end], claim, end]
    assert await rows(postgres_url, "SELECT count(*) FROM llamon_claims") == [(0,)]


@contextmanager
def statements_sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The first words of every statement the server's cursors send (an ``executemany`` is
    one), while ``on`` is set: ``["INSERT llamon_claims", "SELECT llamon_tasks", ...]``.
    Not the sweeper's: its first sweep runs at start, beside the first requests, and on a
    busy machine its push claim (``WITH llamon_push_deliveries``) landed among the requests'
    statements."""
    sent: list[str] = []
    word = re.compile(r"^\s*(\w+)(?:.*?\b(?:INTO|FROM)\s+\"?(\w+))?", re.I | re.S)
    for name in ("execute", "executemany"):
        original = getattr(psycopg.AsyncCursor, name)

        def noted(self: Any, query: Any, *args: Any, __original: Any = original,
                  **kwargs: Any) -> Any:
            text = query.as_string(None) if hasattr(query, "as_string") else str(query)
            found = word.match(text)
            if found is not None and not in_sweeper():
                verb, table = found.groups()
                sent.append(f"{verb.upper()} {table}" if table else verb.upper())
            return __original(self, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, name, noted)
    yield sent


def in_sweeper() -> bool:
    """Whether the running task is the sweeper's: its first sweep runs at start, beside the
    first requests, and the helpers here count the requests' work only."""
    task = asyncio.current_task()
    return task is not None and task.get_name() == SWEEPER_TASK


async def test_a_new_task_in_a_context_without_tasks_reads_no_checkpoint(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under its claim the plan found no task of the context stored, so its thread has no
    checkpoint (one is stored only with its task's row): LangGraph's read is not sent. Before:
    ``SELECT jsonb_each_text`` (the checkpoint read) in the ask too. The claim's row goes with
    the end's upsert in one statement (before: a ``DELETE`` of its own), and the end is one
    pipeline's implicit transaction (before: ``BEGIN`` and ``COMMIT`` statements too): 6
    statements per request, 12 per HITL round trip, where there were 19."""
    async with serve([doc_agent()], db=postgres_url, lease=3600, sweep_every=3600) as client:
        warm = await client.send("이 서류를 검증해줘", context_id="warm", agent_id="document-review")
        assert state_of(warm) == "input-required"
        with statements_sent(monkeypatch) as sent:
            asked = await client.send("이 서류를 검증해줘", context_id="c1",
                                      agent_id="document-review")
            ask = list(sent)
            sent.clear()
            answered = await client.send("여권", context_id="c1")
            answer = list(sent)
            sent.clear()
            done = await client.send("1990-01-01", context_id="c1")
            sent.clear()
            # a new task in a context whose tasks ended: the conversation's checkpoint is read
            again = await client.send("이 서류를 검증해줘", context_id="c1")
            new_in_ended = list(sent)
    assert [state_of(t) for t in (asked, answered, done, again)] == [
        "input-required", "input-required", "completed", "input-required"]
    # the end's statements are one pipeline: one implicit transaction, without BEGIN/COMMIT
    assert ask == ["INSERT llamon_claims", "SELECT llamon_tasks", "INSERT checkpoint_blobs",
                   "INSERT checkpoints", "INSERT checkpoint_writes", "WITH llamon_claims"]
    assert answer == ["INSERT llamon_claims", "SELECT llamon_tasks", "SELECT jsonb_each_text",
                      "INSERT checkpoints", "INSERT checkpoint_writes", "WITH llamon_claims"]
    assert "SELECT jsonb_each_text" in new_in_ended
    assert again["id"] != asked["id"]


def _record(context_id: str, *, agent_id: str = "a") -> StoredTask:
    task = Task.model_validate({"id": uuid.uuid4().hex, "contextId": context_id,
                                "status": TaskStatus(state="input-required").to_wire()})
    return StoredTask(task=task, agent_id=agent_id)


async def _checkpoints(url: str, thread: str) -> int:
    found = await rows(url, "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,))
    return int(found[0][0])


async def _claimed(url: str, key: str) -> bool:
    return bool(await rows(url, "SELECT 1 FROM llamon_claims WHERE key = %s", (key,)))


async def test_held_writes_wait_for_the_save_and_a_failed_save_stores_none_of_them(
    postgres_url: str,
) -> None:
    async with (
        open_storage(postgres_url) as storage,
        PostgresClaims(storage.pool, lease=30, with_task_saves=True) as claims,
    ):
        claim = await claims.acquire("c1")
        with holding(TurnWrites("c1")) as held:
            asked = await ask_graph(storage.checkpointer).ainvoke(
                {"answers": []}, {"configurable": {"thread_id": "c1"}}, durability="exit")
            assert "__interrupt__" in asked
            assert held.statements and await _checkpoints(postgres_url, "c1") == 0
            claims.release_with(claim, held)

            broken = _record("c1", agent_id="a\x00b")  # no text column holds NUL
            with pytest.raises(psycopg.DataError):
                await storage.tasks.save(broken)
            assert await _checkpoints(postgres_url, "c1") == 0  # nothing of it committed
            assert await _claimed(postgres_url, "c1") and not held.released
            assert held.pending  # restored: the next save sends them

            saved = _record("c1")
            await storage.tasks.save(saved)
            assert not held.pending and held.released
        assert await _checkpoints(postgres_url, "c1") == 1
        assert await _claimed(postgres_url, "c1") is False  # released by the save
        assert await storage.tasks.get(saved.id) is not None
        await claims.release(claim)  # forgets it, deletes nothing
        again = await claims.acquire("c1")  # and the context is free
        await claims.release(again)


async def test_a_save_cancelled_midway_stores_none_of_it(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The end's statements are one pipeline's implicit transaction, which its Sync commits:
    a save cancelled after the checkpoint's statements went out, before the task's upsert,
    must not let the pipeline's end send that Sync (the connection is closed instead)."""
    async with (
        open_storage(postgres_url) as storage,
        PostgresClaims(storage.pool, lease=30, with_task_saves=True) as claims,
    ):
        claim = await claims.acquire("c1")
        with holding(TurnWrites("c1")) as held:
            await ask_graph(storage.checkpointer).ainvoke(
                {"answers": []}, {"configurable": {"thread_id": "c1"}}, durability="exit")
            claims.release_with(claim, held)
            reached = asyncio.Event()
            execute = psycopg.AsyncCursor.execute

            async def stalled(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
                if "llamon_tasks" in str(query):  # the upsert: the checkpoint's are sent
                    reached.set()
                    await asyncio.Event().wait()
                return await execute(self, query, *args, **kwargs)

            monkeypatch.setattr(psycopg.AsyncCursor, "execute", stalled)
            save = asyncio.create_task(storage.tasks.save(_record("c1")))
            await reached.wait()
            save.cancel()
            with pytest.raises(asyncio.CancelledError):
                await save
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
            assert await _checkpoints(postgres_url, "c1") == 0
            assert await _claimed(postgres_url, "c1") and held.pending
            await storage.tasks.save(_record("c1"))  # the next save sends them
        assert await _checkpoints(postgres_url, "c1") == 1
        assert await _claimed(postgres_url, "c1") is False
        await claims.release(claim)


#: text that a statement built by hand would take for its own: placeholders, a quote, a
#: statement's end, a backslash, non-ASCII
AWKWARD = "%s %(x)s 50% '; DELETE FROM llamon_tasks;\nDELETE FROM checkpoints; -- \\ \u00e9\u4e2d"


async def test_a_held_save_stores_awkward_text_and_bytes_exactly(postgres_url: str) -> None:
    """What the held statements carry is stored as it was, in the checkpoint (jsonb and bytea,
    read back by LangGraph's own saver) and in the task's row."""
    async with open_storage(postgres_url) as storage:
        graph = ask_graph(storage.checkpointer)
        config = {"configurable": {"thread_id": "awkward"}}
        with holding(TurnWrites("awkward")) as held:
            await graph.ainvoke({"answers": [AWKWARD, "\x00 in a blob"]}, config,
                                durability="exit")
            assert held.statements and await _checkpoints(postgres_url, "awkward") == 0
            record = _record("awkward", agent_id=AWKWARD)
            await storage.tasks.save(record)
            assert not held.pending
        stored = await storage.tasks.get(record.id)
        assert stored is not None and stored.agent_id == AWKWARD
        assert stored.task == record.task
        reader = AsyncPostgresSaver(storage.pool)
        found = await reader.aget_tuple(config)
        assert found is not None
        assert found.checkpoint["channel_values"]["answers"] == [AWKWARD, "\x00 in a blob"]
        assert [write[1] for write in found.pending_writes] == ["__interrupt__"]


async def test_a_release_that_failed_with_its_save_is_done_by_release(postgres_url: str) -> None:
    async with (
        open_storage(postgres_url) as storage,
        PostgresClaims(storage.pool, lease=30, with_task_saves=True) as claims,
    ):
        claim = await claims.acquire("c1")
        with holding(TurnWrites("c1")) as held:
            claims.release_with(claim, held)
            with pytest.raises(psycopg.DataError):
                await storage.tasks.save(_record("c1", agent_id="\x00"))
        assert await _claimed(postgres_url, "c1")
        await claims.release(claim)
        assert await _claimed(postgres_url, "c1") is False


async def test_only_the_turn_s_own_thread_at_exit_durability_is_held(postgres_url: str) -> None:
    """A child's run on another thread (a parent's node calling a local child), and an agent
    asking for ``durability="sync"``, store their checkpoints at once."""
    async with open_storage(postgres_url) as storage:
        graph = ask_graph(storage.checkpointer)
        with holding(TurnWrites("parent")) as held:
            await graph.ainvoke({"answers": []}, {"configurable": {"thread_id": "child"}},
                                durability="exit")
            assert held.statements == [] and await _checkpoints(postgres_url, "child") == 1
        with holding(TurnWrites("sync", checkpoints=False)) as held:
            await graph.ainvoke({"answers": []}, {"configurable": {"thread_id": "sync"}},
                                durability="sync")
            assert held.statements == [] and await _checkpoints(postgres_url, "sync") >= 1


async def test_claims_on_another_database_are_not_released_by_saves(postgres_url: str) -> None:
    """Only claims told that the task store shares their database (``with_task_saves``) hand
    their release to a save: elsewhere the store could not delete the row."""
    async with (
        open_storage(postgres_url) as storage,
        PostgresClaims(storage.pool, lease=30) as claims,
    ):
        claim = await claims.acquire("c1")
        with holding(TurnWrites("c1")) as held:
            claims.release_with(claim, held)
            assert held.release is None
        await claims.release(claim)
        assert await _claimed(postgres_url, "c1") is False


async def test_a_renewal_racing_a_save_s_release_does_not_lose_the_claim(
    postgres_url: str,
) -> None:
    lost: list[Claim] = []
    async with open_storage(postgres_url) as storage:
        from tests.replicas.test_pg_claims import FlakyPool

        flaky = FlakyPool(storage.pool)
        async with PostgresClaims(flaky,  # type: ignore[arg-type]
                                  lease=0.3, on_lost=lost.append,
                                  with_task_saves=True) as claims:
            claim = await claims.acquire("c1")
            gate = flaky.pause_next = asyncio.Event()
            async with asyncio.timeout(5):
                await flaky.paused.wait()  # the next renewal, about to renew the claim
            with holding(TurnWrites("c1")) as held:
                claims.release_with(claim, held)
                await storage.tasks.save(_record("c1"))  # deletes the row the renewal wants
            gate.set()
            await asyncio.sleep(0.25)  # the paused renewal, then the next beat
            assert lost == []
            await claims.release(claim)
            assert await _claimed(postgres_url, "c1") is False


async def test_an_instant_send_to_a_context_it_does_not_name_is_one_transaction(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server draws the context: nothing of it can be stored, so nothing is read (no
    task, no checkpoint), and its claim's row is born and gone in the turn's one transaction,
    so it is never written. Before: the claim's insert, two reads, four commits more."""
    read: list[str] = []
    select = re.compile(r"^\s*SELECT .*?\bFROM\s+(\w+)", re.I | re.S)

    opened = asyncio.Event()
    opened.set()  # the gated agent, never waiting: an instant agent
    # the sweeps and the takeover read in the background: not within the counted request
    async with serve([gated_agent(opened, 0, 0)], db=postgres_url, lease=3600,
                     sweep_every=3600) as client:
        await client.send("warm", agent_id="gated")
        with commits_counted(monkeypatch) as counted:
            execute = psycopg.AsyncCursor.execute  # the counted one

            async def noted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
                text = query.as_string(None) if hasattr(query, "as_string") else str(query)
                if (found := select.match(text)) is not None:
                    read.append(found.group(1))
                return await execute(self, query, *args, **kwargs)

            monkeypatch.setattr(psycopg.AsyncCursor, "execute", noted)
            counted.on = True
            done = await client.send("go", agent_id="gated")
            counted.on = False
    assert state_of(done) == "completed"
    assert counted.alone == []
    # what the request would read: the context's latest task, LangGraph's checkpoint
    assert [table for table in read if table in TURN_READS] == []
    assert counted.transactions == [["INSERT checkpoint_blobs", "INSERT checkpoints",
                                     "INSERT llamon_tasks"]]
    assert await rows(postgres_url, "SELECT count(*) FROM llamon_claims") == [(0,)]


async def test_a_streamed_task_of_a_drawn_context_is_stored_with_its_claim(
    postgres_url: str,
) -> None:
    """The stream's first event shows the task: the save before it writes the task's row and
    its claim's row in one transaction, so another replica finds the context claimed (its
    recovery leaves the run alone, a message to the context is refused busy)."""
    from llamon_agent.a2a.types import MessageSendParams
    from llamon_agent.runtime.tasks import TaskManager
    from tests.conftest import send_params

    gate = asyncio.Event()
    async with (
        open_storage(postgres_url) as storage,
        PostgresClaims(storage.pool, lease=30, with_task_saves=True) as claims,
        PostgresClaims(storage.pool, lease=30) as other_replica,
        TaskManager([gated_agent(gate, 0, 0)], storage, claims=claims) as manager,
    ):
        events = await manager.stream(MessageSendParams.model_validate(
            send_params("go", agent_id="gated")))
        _, first = await anext(events)
        assert isinstance(first, Task) and first.status.state == "submitted"
        stored = await storage.tasks.get(first.id)
        assert stored is not None and stored.state == "submitted"
        assert await other_replica.held(first.context_id) is True
        assert await rows(postgres_url, "SELECT task_id FROM llamon_claims WHERE key = %s",
                          (first.context_id,)) == [(first.id,)]
        gate.set()
        rest = [payload async for _, payload in events]
        assert rest[-1].status.state == "completed"  # type: ignore[attr-defined]
        assert await other_replica.held(first.context_id) is False  # released with the end


async def test_a_drawn_context_s_claim_is_renewed_only_once_stored(postgres_url: str) -> None:
    lost: list[Claim] = []
    async with (
        open_storage(postgres_url) as storage,
        PostgresClaims(storage.pool, lease=0.3, on_lost=lost.append,
                       with_task_saves=True) as claims,
    ):
        with holding(TurnWrites("drawn")) as held:
            held.fresh = True
            claim = await claims.claim_fresh("drawn", "t1", held)
            await asyncio.sleep(0.5)  # renewals meanwhile: nothing to renew, nothing lost
            assert lost == [] and not await _claimed(postgres_url, "drawn")
            await storage.tasks.save(_record("drawn"))  # the first save writes the row
            assert held.claim_stored and await _claimed(postgres_url, "drawn")
            expiry = "SELECT expires_at FROM llamon_claims WHERE key = 'drawn'"
            found = await rows(postgres_url, expiry)

            async def renewed() -> bool:  # a renewal moves it on (every 0.1 s)
                return bool((await rows(postgres_url, expiry))[0][0] > found[0][0])

            await until(renewed)
            assert lost == []
        await claims.release(claim)
        assert not await _claimed(postgres_url, "drawn")


async def test_a_renewal_finding_the_row_gone_before_the_save_returns_keeps_the_claim(
    postgres_url: str,
) -> None:
    """The save's commit deleted the row, and a renewal hears of that before the save's
    coroutine does: the claim is being released, not lost (seen twice in a benchmark run
    before ``TurnWrites.releasing``: 'the claim ... was lost')."""
    from llamon_agent.stores.postgres import PostgresTaskStore

    returned, gate = asyncio.Event(), asyncio.Event()

    class SlowToReturn:
        """The store's pool: a connection given back waits for ``gate``."""

        def __init__(self, pool: Any) -> None:
            self._pool = pool

        @asynccontextmanager
        async def connection(self) -> AsyncIterator[Any]:
            async with self._pool.connection() as conn:
                yield conn
            returned.set()
            await gate.wait()

    lost: list[Claim] = []
    async with open_storage(postgres_url) as storage:
        store = PostgresTaskStore(SlowToReturn(storage.pool))  # type: ignore[arg-type]
        async with PostgresClaims(storage.pool, lease=0.3, on_lost=lost.append,
                                  with_task_saves=True) as claims:
            claim = await claims.acquire("c1")
            with holding(TurnWrites("c1")) as held:
                claims.release_with(claim, held)
                saving = asyncio.create_task(store.save(_record("c1")))
                async with asyncio.timeout(5):
                    await returned.wait()  # committed: the row is gone, the save not back
                assert await _claimed(postgres_url, "c1") is False
                await asyncio.sleep(0.3)  # renewals meanwhile find it gone
                gate.set()
                await saving
            assert lost == [] and held.released
            await claims.release(claim)


async def test_a_store_that_is_not_the_saver_s_partner_gets_no_held_writes(
    postgres_url: str,
) -> None:
    """``create_app(task_store=..., checkpointer=...)`` may pair any two. Before, a turn held
    the writes of this pool's saver for an in-memory store that never sent them: the question
    was asked, no checkpoint was stored, and the answer started the graph over."""
    from llamon_agent.stores.memory import InMemoryTaskStore
    from llamon_agent.stores.turn_writes import commits_held_writes

    async with open_storage(postgres_url) as storage:
        tasks = InMemoryTaskStore()
        assert commits_held_writes(tasks, storage.checkpointer) is False
        assert commits_held_writes(storage.tasks, storage.checkpointer) is True
        async with serve([doc_agent()], task_store=tasks,
                         checkpointer=storage.checkpointer) as client:
            asked = await client.send("이 서류를 검증해줘", context_id="c1",
                                      agent_id="document-review")
            assert await _checkpoints(postgres_url, "c1") >= 1
            answered = await client.send("여권", context_id="c1")
    assert state_of(asked) == state_of(answered) == "input-required"
    assert answered["id"] == asked["id"]
    assert answered["status"]["message"]["parts"] != asked["status"]["message"]["parts"]
