"""The push store's contract on each storage (memory, a SQLite file, PostgreSQL): configs,
enqueueing once per change, claims held by one server at a time, reconciliation, and the
deletions retention uses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from llamon_agent.a2a.types import PushNotificationConfig, Task, TaskStatus
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.push_base import DeliveryKey, Outcome
from llamon_agent.stores.storage import Storage, open_storage

from ..sqlite_steps import vm_steps

KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=KINDS)
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[
        tuple[Storage, Storage]]:
    """Two storages on one database, as two replicas see it (memory: the same one twice; a
    SQLite file allows one server, so the second is the first too)."""
    async with AsyncExitStack() as stack:
        if request.param == "postgres":
            url = request.getfixturevalue("postgres_url")
            first = await stack.enter_async_context(open_storage(url))
            second = await stack.enter_async_context(open_storage(url))
        else:
            db = ":memory:" if request.param == "memory" else str(tmp_path / "l.sqlite3")
            first = second = await stack.enter_async_context(open_storage(db))
        yield first, second


def record(task_id: str, state: str, seq: int, context: str = "ctx") -> StoredTask:
    task = Task(id=task_id, context_id=context, status=TaskStatus(state=state))  # type: ignore[arg-type]
    return StoredTask(task=task, agent_id="orders", event_seq=seq)


def hook(config_id: str) -> PushNotificationConfig:
    return PushNotificationConfig(url=f"http://127.0.0.1:9/{config_id}", id=config_id)


async def test_configs_are_listed_in_the_order_set_and_bounded_per_task(
    two: tuple[Storage, Storage],
) -> None:
    store = two[0].push
    task = record("t1", "input-required", 1)
    assert await store.put_config(task, hook("a"), max_configs=2)
    assert await store.put_config(task, hook("b"), max_configs=2)
    assert not await store.put_config(task, hook("c"), max_configs=2)  # full
    replaced = PushNotificationConfig(url="http://127.0.0.1:9/new", id="a", token="t")
    assert await store.put_config(task, replaced, max_configs=2)  # a replacement fits
    assert await store.get_configs("t1") == [replaced, hook("b")]
    await store.delete_config("t1", "a")
    await store.delete_config("t1", "a")
    assert await store.get_configs("t1") == [hook("b")]


async def test_a_change_is_enqueued_once_per_config_whoever_enqueues_it(
    two: tuple[Storage, Storage],
) -> None:
    first, second = two
    waiting = record("t2", "input-required", 1)
    await first.push.put_config(waiting, hook("a"), max_configs=5)
    await first.push.put_config(waiting, hook("b"), max_configs=5)
    asked = record("t2", "input-required", 3)
    made = await asyncio.gather(first.push.enqueue(asked, lambda: b'{"x":1}', 100.0),
                                second.push.enqueue(asked, lambda: b'{"x":1}', 100.0))
    assert sorted(k.config_id for keys in made for k in keys) == ["a", "b"]
    assert await first.push.enqueue(asked, lambda: b"{}", 101.0) == []
    records = await second.push.deliveries("t2")
    assert [(r.key.config_id, r.key.seq, r.state, r.status) for r in records] == [
        ("a", 3, "input-required", "pending"), ("b", 3, "input-required", "pending")]
    # a config set after a change does not get it; it gets the next one
    await first.push.put_config(record("t2", "input-required", 3), hook("c"), max_configs=5)
    done = record("t2", "completed", 5)
    keys = await first.push.enqueue(done, lambda: b"{}", 102.0)
    assert sorted(k.config_id for k in keys) == ["a", "b", "c"]


async def test_a_delivery_is_claimed_by_one_server_at_a_time(
    two: tuple[Storage, Storage],
) -> None:
    first, second = two
    task = record("t3", "input-required", 1)
    for name in "abcdef":
        await first.push.put_config(task, hook(name), max_configs=10)
    await first.push.enqueue(record("t3", "completed", 2), lambda: b"{}", 10.0)
    claims = await asyncio.gather(first.push.claim_due(10.0, 40.0, 4),
                                  second.push.claim_due(10.0, 40.0, 4))
    claimed = [d.key.config_id for batch in claims for d in batch]
    assert sorted(claimed) == list("abcdef")  # each once, none twice
    assert all(d.config.id == d.key.config_id for batch in claims for d in batch)
    key = claims[0][0].key
    assert await second.push.claim(key, 39.0, 70.0) is None  # still leased
    assert await second.push.claim_due(39.0, 70.0, 10) == []
    again = await second.push.claim(key, 40.0, 70.0)  # the lease lapsed: taken over
    assert again is not None and again.attempts == 0
    await second.push.finish(key, Outcome("pending", attempts=1, next_at=100.0,
                                          error="HTTP 500"), 41.0)
    assert key not in {d.key for d in await first.push.claim_due(99.0, 130.0, 10)}
    (retry,) = [d for d in await first.push.claim_due(100.0, 130.0, 10) if d.key == key]
    assert retry.attempts == 1
    await first.push.finish(key, Outcome("delivered", attempts=2), 101.0)
    assert key not in {d.key for d in await first.push.claim_due(10_000.0, 10_030.0, 10)}
    (done,) = [r for r in await first.push.deliveries("t3") if r.key == key]
    assert (done.status, done.attempts, done.last_error) == ("delivered", 2, None)


async def test_reconciliation_finds_the_tasks_whose_change_was_not_enqueued(
    two: tuple[Storage, Storage],
) -> None:
    storage = two[0]
    task = record("t4", "input-required", 4)
    await storage.tasks.save(task)
    await storage.push.put_config(record("t4", "working", 2), hook("a"), max_configs=5)
    assert "t4" in await storage.push.stale_tasks(100)
    await storage.push.enqueue(task, lambda: b"{}", 1.0)
    if storage.db != ":memory:":  # memory has no task table to join: every open config's task
        assert "t4" not in await storage.push.stale_tasks(100)


async def test_retention_deletes_the_configs_and_deliveries_of_tasks_and_contexts(
    two: tuple[Storage, Storage],
) -> None:
    store = two[0].push
    for task_id, context in (("x1", "c1"), ("x2", "c1"), ("x3", "c2"), ("x4", "c3")):
        await store.put_config(record(task_id, "working", 0, context), hook("a"), max_configs=5)
        await store.enqueue(record(task_id, "completed", 1, context), lambda: b"{}", 1.0)
    await store.delete_tasks(["x1", "nope"])  # its config and its delivery
    assert await store.get_configs("x1") == [] and await store.deliveries("x1") == []
    await store.delete_context("c1")
    assert await store.get_configs("x2") == [] and await store.deliveries("x2") == []
    assert [len(await store.get_configs(t)) for t in ("x3", "x4")] == [1, 1]
    assert [len(await store.deliveries(t)) for t in ("x3", "x4")] == [1, 1]


def test_delivery_ids_are_stable_and_distinct() -> None:
    one = DeliveryKey("t", "c", 3)
    assert one.delivery_id == DeliveryKey("t", "c", 3).delivery_id
    assert len({one.delivery_id, DeliveryKey("t", "c", 4).delivery_id,
                DeliveryKey("t", "d", 3).delivery_id, DeliveryKey("u", "c", 3).delivery_id}) == 4


async def test_a_task_without_configs_costs_one_read_and_no_transaction(
    two: tuple[Storage, Storage], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every saved state of every task is offered to the push store: on PostgreSQL, a task
    with no config (nearly all of them) must not pay a transaction (BEGIN, UPDATE, COMMIT);
    a config set behind that read's back is enqueued by the reconciliation."""
    storage = two[0]
    task = record("t5", "input-required", 2)
    await storage.tasks.save(task)
    sent: list[str] = []
    if storage.db.startswith("postgres"):
        import psycopg

        execute = psycopg.AsyncCursor.execute

        def counted(self: object, query: object, *args: object, **kwargs: object) -> object:
            sent.append(str(query))
            return execute(self, query, *args, **kwargs)  # type: ignore[arg-type]

        # a transaction would show as its UPDATE here (BEGIN and COMMIT bypass cursors)
        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted)
    assert await storage.push.enqueue(task, lambda: b"{}", 1.0) == []
    if storage.db.startswith("postgres"):
        assert len(sent) == 1 and sent[0].lstrip().upper().startswith("SELECT"), sent
        monkeypatch.undo()
    # the config arrives as if between that read and the save: the sweep's query finds it
    await storage.push.put_config(record("t5", "working", 1), hook("a"), max_configs=5)
    assert "t5" in await storage.push.stale_tasks(100)
    keys = await storage.push.enqueue(task, lambda: b"{}", 2.0)
    assert [k.config_id for k in keys] == ["a"]


def counted_statements(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements PostgreSQL is sent from now on (none counted on the other stores)."""
    sent: list[str] = []
    if storage.db.startswith("postgres"):
        import psycopg

        execute = psycopg.AsyncCursor.execute

        def counted(self: object, query: object, *args: object, **kwargs: object) -> object:
            sent.append(" ".join(str(query).split()))
            return execute(self, query, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted)
    return sent


async def test_a_task_without_configs_costs_its_save_alone(
    two: tuple[Storage, Storage], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On PostgreSQL the task's upsert says whether a config of the task has not seen the
    change it saves, so the enqueue that follows sends nothing for a task without one: one
    statement per notified save instead of two (a HITL round trip saves two)."""
    storage = two[0]
    sent = counted_statements(storage, monkeypatch)
    asked = record("t6", "input-required", 2)
    await storage.tasks.save(asked)
    assert await storage.push.enqueue(asked, lambda: b"{}", 1.0, just_saved=True) == []
    if storage.db.startswith("postgres"):
        assert len(sent) == 1 and sent[0].startswith("INSERT INTO llamon_tasks"), sent
    # a task with a config: its save says so, and the change is enqueued
    await storage.push.put_config(asked, hook("a"), max_configs=5)
    answered = record("t6", "completed", 4)
    await storage.tasks.save(answered)
    keys = await storage.push.enqueue(answered, lambda: b"{}", 2.0, just_saved=True)
    assert [(k.config_id, k.seq) for k in keys] == [("a", 4)]
    # a config set between a save and its enqueue: either the enqueue or the sweep's query
    # finds it (PostgreSQL: the sweep, as for a config set while the read ran before)
    later = record("t7", "input-required", 2)
    await storage.tasks.save(later)
    await storage.push.put_config(record("t7", "working", 1), hook("b"), max_configs=5)
    if not await storage.push.enqueue(later, lambda: b"{}", 3.0, just_saved=True):
        assert "t7" in await storage.push.stale_tasks(100)
        keys = await storage.push.enqueue(later, lambda: b"{}", 3.0)  # as the sweep does
        assert [(k.config_id, k.seq) for k in keys] == [("b", 2)]


async def test_a_sqlite_file_without_configs_reads_nothing_per_saved_state(
    tmp_path: Path,
) -> None:
    """One server holds a SQLite file, so its push store knows when no config exists there:
    a saved state then costs no read (it cost one per turn's end). Once a config is set, or
    when the file holds one at start (a restart), the read is made and the change enqueued."""
    db = str(tmp_path / "p.sqlite3")
    async with open_storage(db) as storage:
        conn = storage.checkpointer.conn  # type: ignore[attr-defined]  # the file's one connection
        sent: list[str] = []
        conn.set_trace_callback(sent.append)
        asked = record("t1", "input-required", 2)
        assert await storage.push.enqueue(asked, lambda: b"{}", 1.0, just_saved=True) == []
        assert await storage.push.enqueue(asked, lambda: b"{}", 1.0) == []
        assert not [s for s in sent if "llamon_push_configs" in s], sent
        await storage.push.put_config(record("t1", "working", 1), hook("a"), max_configs=5)
        keys = await storage.push.enqueue(asked, lambda: b"{}", 2.0, just_saved=True)
        assert [(k.config_id, k.seq) for k in keys] == [("a", 2)]
        conn.set_trace_callback(None)
    async with open_storage(db) as storage:  # restarted: the file holds a config
        answered = record("t1", "completed", 4)
        keys = await storage.push.enqueue(answered, lambda: b"{}", 3.0, just_saved=True)
        assert [(k.config_id, k.seq) for k in keys] == [("a", 4)]


async def test_the_sqlite_reconciliation_reads_the_open_configs_not_every_ended_task(
    tmp_path: Path,
) -> None:
    """The sweep's ``stale_tasks`` runs every few seconds on the event loop. SQLite's planner,
    without statistics, drove it from the task table: every task in a notified state (every
    completed task, kept until retention) was read and probed for a config, 112 ms a sweep on
    a file of 128,000 tasks (bench/README.md, "Speed, round twenty-seven"). Driven by the open
    configs, its work is the same however many ended tasks the file holds; counted in the
    virtual machine's steps (``set_progress_handler``), not timed."""
    async with open_storage(str(tmp_path / "r.sqlite3")) as storage:
        conn = storage.checkpointer.conn  # type: ignore[attr-defined]  # the file's one connection
        await storage.tasks.save(record("watched", "input-required", 3))
        await storage.push.put_config(record("watched", "working", 1), hook("a"), max_configs=5)

        async def steps_of_a_reconciliation() -> int:
            steps, stale = await vm_steps(conn, lambda: storage.push.stale_tasks(100))
            assert stale == ["watched"]
            return steps

        async def end_tasks(first: int, count: int) -> None:
            for n in range(first, first + count):
                await storage.tasks.save(record(f"done-{n}", "completed", 2, context=f"c{n}"))

        await end_tasks(0, 50)
        few = await steps_of_a_reconciliation()
        await end_tasks(50, 950)
        many = await steps_of_a_reconciliation()
        assert many == few, (few, many)
