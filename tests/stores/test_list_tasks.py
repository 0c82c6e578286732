"""``TaskStore.list_tasks`` (A2A ``ListTasks``), the same tests on every backend ``open_storage``
opens: in memory, SQLite (a file) and PostgreSQL (skipped with a reason when no server runs,
failed under ``CI=true``). One owner's tasks, newest last update first, ties broken by id, in
pages a cursor continues without a duplicate or a gap."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.core.principal import context_key
from llamon_agent.stores import base, kept_tasks
from llamon_agent.stores.base import (
    ListedTask,
    StoredTask,
    TaskCursor,
    TaskPage,
    TaskQuery,
    TaskStore,
)
from llamon_agent.stores.kept_tasks import KeptTasks
from llamon_agent.stores.memory import InMemoryTaskStore
from llamon_agent.stores.storage import Storage, open_storage

V1_FIXTURE = Path(__file__).parent / "fixtures" / "llamon-v1.sqlite3"
_NOT_A_TASK = b'{"not": "a task"'


@dataclass
class Backend:
    name: str
    storage: Storage
    #: sets a row's last update (epoch seconds) as a save at that moment would have
    stamp: Callable[[str, float], Awaitable[None]]
    #: overwrites a row's task column with bytes no decoder accepts
    corrupt: Callable[[str], Awaitable[None]]

    @property
    def tasks(self) -> TaskStore:
        return self.storage.tasks


def _memory_backend(storage: Storage) -> Backend:
    store = storage.tasks
    assert isinstance(store, InMemoryTaskStore)

    async def stamp(task_id: str, updated: float) -> None:
        row = store._rows[task_id]
        store._rows[task_id] = (*row[:9], updated, *row[10:])

    async def corrupt(task_id: str) -> None:
        row = store._rows[task_id]
        store._rows[task_id] = (_NOT_A_TASK, *row[1:])

    return Backend("memory", storage, stamp, corrupt)


def _sqlite_backend(storage: Storage) -> Backend:
    path = storage.db
    assert path is not None

    def run(sql: str, params: tuple[object, ...]) -> None:
        conn = sqlite3.connect(path)
        with conn:
            conn.execute(sql, params)
        conn.close()

    async def stamp(task_id: str, updated: float) -> None:
        run("UPDATE llamon_tasks SET updated = ? WHERE id = ?", (updated, task_id))

    async def corrupt(task_id: str) -> None:
        run("UPDATE llamon_tasks SET task = ? WHERE id = ?", (_NOT_A_TASK, task_id))

    return Backend("sqlite", storage, stamp, corrupt)


def _postgres_backend(storage: Storage) -> Backend:
    pool = storage.pool

    async def stamp(task_id: str, updated: float) -> None:
        async with pool.connection() as conn:
            await conn.execute("UPDATE llamon_tasks SET updated = %s WHERE id = %s",
                               (updated, task_id))

    async def corrupt(task_id: str) -> None:
        async with pool.connection() as conn:
            await conn.execute("UPDATE llamon_tasks SET task = %s WHERE id = %s",
                               (_NOT_A_TASK, task_id))

    return Backend("postgres", storage, stamp, corrupt)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "memory":
        url = ":memory:"
    elif request.param == "sqlite":
        url = str(tmp_path / "tasks.sqlite3")
    else:
        url = str(request.getfixturevalue("postgres_url"))
    async with open_storage(url) as storage:
        if request.param == "memory":
            yield _memory_backend(storage)
        elif request.param == "sqlite":
            yield _sqlite_backend(storage)
        else:
            yield _postgres_backend(storage)


def record(task_id: str, context: str = "c1", state: str = "working", *,
           space: str = "alice") -> StoredTask:
    task = Task.model_validate({
        "id": task_id, "contextId": context, "status": TaskStatus(state=state).to_wire(),
        "history": [{"kind": "message", "messageId": f"m-{task_id}", "role": "user",
                     "parts": [{"kind": "text", "text": f"안녕 {task_id}"}]}],
    })
    return StoredTask(task=task, agent_id="document-review", space=space)


async def put(backend: Backend, task_id: str, updated: float, context: str = "c1",
              state: str = "working", *, space: str = "alice") -> StoredTask:
    """Save a task, then date its last update ``updated``."""
    stored = record(task_id, context, state, space=space)
    await backend.tasks.save(stored)
    await backend.stamp(task_id, updated)
    return stored


def ids(page: TaskPage) -> list[str]:
    return [listed.record.id for listed in page.tasks]


async def every_page(store: TaskStore, query: TaskQuery, limit: int) -> list[TaskPage]:
    pages = [await store.list_tasks(query, limit)]
    while pages[-1].next is not None:
        assert len(pages) < 50, "the cursor does not move"
        pages.append(await store.list_tasks(query, limit, after=pages[-1].next))
    return pages


ALICE = TaskQuery(space="alice")


async def test_tasks_come_newest_update_first(backend: Backend) -> None:
    """Real saves, no stamps: a task saved again moves to the front."""
    for task_id in ("first", "second", "third"):
        await backend.tasks.save(record(task_id, f"ctx-{task_id}"))
    await backend.tasks.save(record("first", "ctx-first", "completed"))
    page = await backend.tasks.list_tasks(ALICE, 10)
    assert ids(page) == ["first", "third", "second"]
    assert (page.total, page.next) == (3, None)
    updated = [listed.updated for listed in page.tasks]
    assert updated == sorted(updated, reverse=True) and updated[-1] > 0
    first = page.tasks[0].record
    assert first == await backend.tasks.get("first")
    assert first.state == "completed" and first.stored_bytes > 0


async def test_the_listed_update_is_the_stored_one(backend: Backend) -> None:
    await put(backend, "a", 1700000000.25)
    await put(backend, "b", 1700000001.5)
    page = await backend.tasks.list_tasks(ALICE, 10)
    a, b = await backend.tasks.get("a"), await backend.tasks.get("b")
    assert a is not None and b is not None
    assert page.tasks == [ListedTask(b, 1700000001.5), ListedTask(a, 1700000000.25)]


async def test_three_pages_without_a_duplicate_or_a_gap(backend: Backend) -> None:
    for n in range(7):
        await put(backend, f"t{n}", 1000.0 + n)
    pages = await every_page(backend.tasks, ALICE, 3)
    assert [ids(p) for p in pages] == [["t6", "t5", "t4"], ["t3", "t2", "t1"], ["t0"]]
    assert [p.total for p in pages] == [7, 7, 7]
    assert pages[0].next == TaskCursor(1004.0, "t4")
    assert pages[1].next == TaskCursor(1001.0, "t1")
    assert pages[2].next is None


async def test_a_last_page_that_is_full_has_no_next(backend: Backend) -> None:
    for n in range(6):
        await put(backend, f"t{n}", 1000.0 + n)
    pages = await every_page(backend.tasks, ALICE, 3)
    assert [ids(p) for p in pages] == [["t5", "t4", "t3"], ["t2", "t1", "t0"]]
    assert pages[1].next is None
    one = await backend.tasks.list_tasks(ALICE, 6)
    assert (len(one.tasks), one.next) == (6, None)


async def test_ties_on_the_update_are_broken_by_id_descending(backend: Backend) -> None:
    # ids compared by code point on every backend (PostgreSQL's collation does not decide)
    for task_id in ("B", "a", "é", "Z", "a-1"):
        await put(backend, task_id, 500.0)
    await put(backend, "newer", 501.0)
    await put(backend, "older", 499.0)
    expected = ["newer", "é", "a-1", "a", "Z", "B", "older"]
    assert ids(await backend.tasks.list_tasks(ALICE, 10)) == expected
    pages = await every_page(backend.tasks, ALICE, 2)  # cursors inside the tie
    assert [i for p in pages for i in ids(p)] == expected
    assert pages[1].next == TaskCursor(500.0, "a")


async def test_a_cursor_continues_strictly_after_itself(backend: Backend) -> None:
    for task_id in ("a", "b", "c"):
        await put(backend, task_id, 500.0)
    await put(backend, "d", 400.0)
    after = await backend.tasks.list_tasks(ALICE, 10, after=TaskCursor(500.0, "b"))
    assert ids(after) == ["a", "d"]
    assert after.total == 4  # the total ignores the cursor
    # a cursor no row has: the position between rows still holds
    between = await backend.tasks.list_tasks(ALICE, 10, after=TaskCursor(450.0, "zzz"))
    assert ids(between) == ["d"]
    # an id with NUL (no PostgreSQL text holds one) sorts right after its prefix
    nul = await backend.tasks.list_tasks(ALICE, 10, after=TaskCursor(500.0, "b\x00x"))
    assert ids(nul) == ["b", "a", "d"]
    past = await backend.tasks.list_tasks(ALICE, 10, after=TaskCursor(1.0, "a"))
    assert (past.tasks, past.total, past.next) == ([], 4, None)


async def test_filter_by_context(backend: Backend) -> None:
    await put(backend, "x1", 100.0, "ctx-x")
    await put(backend, "y1", 101.0, "ctx-y")
    await put(backend, "x2", 102.0, "ctx-x")
    await put(backend, "bobs-x", 103.0, "ctx-x", space="bob")  # same client context id
    query = TaskQuery(space="alice", context_key=context_key("alice", "ctx-x"))
    page = await backend.tasks.list_tasks(query, 10)
    assert (ids(page), page.total) == (["x2", "x1"], 2)
    bobs = TaskQuery(space="bob", context_key=context_key("bob", "ctx-x"))
    assert ids(await backend.tasks.list_tasks(bobs, 10)) == ["bobs-x"]
    # bob's context key under alice's space: nothing (space is always the condition)
    mixed = TaskQuery(space="alice", context_key=context_key("bob", "ctx-x"))
    assert (await backend.tasks.list_tasks(mixed, 10)).total == 0
    unknown = TaskQuery(space="alice", context_key=context_key("alice", "nope"))
    page = await backend.tasks.list_tasks(unknown, 10)
    assert (page.tasks, page.total, page.next) == ([], 0, None)


async def test_filter_by_state_with_its_total(backend: Backend) -> None:
    for n, state in enumerate(["input-required", "completed", "input-required", "working",
                               "input-required", "input-required"]):
        await put(backend, f"t{n}", 100.0 + n, f"c{n}", state)
    query = TaskQuery(space="alice", state="input-required")
    first = await backend.tasks.list_tasks(query, 3)
    assert (ids(first), first.total) == (["t5", "t4", "t2"], 4)
    assert first.next == TaskCursor(102.0, "t2")
    rest = await backend.tasks.list_tasks(query, 3, after=first.next)
    assert (ids(rest), rest.total, rest.next) == (["t0"], 4, None)
    assert all(t.record.state == "input-required" for t in first.tasks + rest.tasks)
    done = await backend.tasks.list_tasks(TaskQuery(space="alice", state="completed"), 10)
    assert (ids(done), done.total) == (["t1"], 1)
    none = await backend.tasks.list_tasks(TaskQuery(space="alice", state="canceled"), 10)
    assert (none.tasks, none.total) == ([], 0)


async def test_filter_by_updated_since_is_inclusive(backend: Backend) -> None:
    for n in range(5):
        await put(backend, f"t{n}", 100.0 + n)
    query = TaskQuery(space="alice", updated_since=102.0)
    page = await backend.tasks.list_tasks(query, 10)
    assert (ids(page), page.total) == (["t4", "t3", "t2"], 3)
    just_after = TaskQuery(space="alice", updated_since=102.001)
    assert ids(await backend.tasks.list_tasks(just_after, 10)) == ["t4", "t3"]
    later = TaskQuery(space="alice", updated_since=104.001)
    assert (await backend.tasks.list_tasks(later, 10)).total == 0


async def test_filters_combine(backend: Backend) -> None:
    await put(backend, "old-ask", 100.0, "c", "input-required")
    await put(backend, "new-ask", 200.0, "c", "input-required")
    await put(backend, "new-done", 201.0, "c", "completed")
    await put(backend, "elsewhere", 202.0, "d", "input-required")
    query = TaskQuery(space="alice", context_key=context_key("alice", "c"),
                      state="input-required", updated_since=150.0)
    page = await backend.tasks.list_tasks(query, 10)
    assert (ids(page), page.total, page.next) == (["new-ask"], 1, None)


async def test_another_spaces_tasks_never_appear(backend: Backend) -> None:
    await put(backend, "a1", 100.0, space="alice")
    await put(backend, "b1", 150.0, space="bob")  # newer: would come first without the space
    await put(backend, "a2", 120.0, space="alice")
    await put(backend, "b2", 90.0, space="bob")
    await put(backend, "n1", 130.0, space="anonymous")
    pages = await every_page(backend.tasks, ALICE, 1)
    assert [i for p in pages for i in ids(p)] == ["a2", "a1"]
    assert {p.total for p in pages} == {2}
    assert all(t.record.space == "alice" for p in pages for t in p.tasks)
    bob = await backend.tasks.list_tasks(TaskQuery(space="bob"), 10)
    assert (ids(bob), bob.total) == (["b1", "b2"], 2)
    anonymous = await backend.tasks.list_tasks(TaskQuery(space="anonymous"), 10)
    assert (ids(anonymous), anonymous.total) == (["n1"], 1)
    carol = await backend.tasks.list_tasks(TaskQuery(space="carol"), 10)
    assert (carol.tasks, carol.total, carol.next) == ([], 0, None)
    # bob's cursor in alice's list moves by position only, never into bob's tasks
    after_b1 = await backend.tasks.list_tasks(ALICE, 10, after=TaskCursor(150.0, "b1"))
    assert ids(after_b1) == ["a2", "a1"]


async def test_an_unreadable_row_is_skipped_and_the_cursor_moves_past_it(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(5):
        await put(backend, f"t{n}", 100.0 + n)
    await backend.corrupt("t3")
    with caplog.at_level(logging.WARNING):
        first = await backend.tasks.list_tasks(ALICE, 2)
    # t3 takes its place in the page: the page holds one task, the cursor is t3's
    assert ids(first) == ["t4"]
    assert first.next == TaskCursor(103.0, "t3")
    assert first.total == 5  # rows that match, readable or not
    assert any("t3" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    rest = await backend.tasks.list_tasks(ALICE, 2, after=first.next)
    assert ids(rest) == ["t2", "t1"] and rest.next == TaskCursor(101.0, "t1")
    last = await backend.tasks.list_tasks(ALICE, 2, after=rest.next)
    assert (ids(last), last.next) == (["t0"], None)
    # a page of nothing but the unreadable row still moves on
    only = await backend.tasks.list_tasks(ALICE, 1, after=TaskCursor(104.0, "t4"))
    assert (only.tasks, only.next) == ([], TaskCursor(103.0, "t3"))


async def test_a_page_holds_no_more_stored_bytes_than_the_bound(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every task listed is read and decoded whole: a page of 100 tasks of 1.3 MB held 1 GB.
    A page stops before the task that would take its rows past ``LIST_PAGE_BYTES`` (one task
    at least, however large), and the next page starts there."""
    sizes = {}
    for n in range(7):
        stored = await put(backend, f"t{n}", 1000.0 + n)
        sizes[f"t{n}"] = len(stored.task.to_json())
    assert len(set(sizes.values())) == 1  # every row the same size: "t0" to "t6" are as long
    row = sizes["t0"]
    monkeypatch.setattr(base, "LIST_PAGE_BYTES", 2 * row + row // 2)  # two and a half rows
    pages = await every_page(backend.tasks, ALICE, 5)
    assert [ids(p) for p in pages] == [["t6", "t5"], ["t4", "t3"], ["t2", "t1"], ["t0"]]
    assert [p.total for p in pages] == [7, 7, 7, 7]
    assert pages[0].next == TaskCursor(1005.0, "t5")
    assert pages[2].next == TaskCursor(1001.0, "t1")
    # exactly two rows' bytes still fit; a limit reached first ends the page as before
    monkeypatch.setattr(base, "LIST_PAGE_BYTES", 2 * row)
    assert ids(await backend.tasks.list_tasks(ALICE, 5)) == ["t6", "t5"]
    assert ids(await backend.tasks.list_tasks(ALICE, 1)) == ["t6"]
    # a task larger than the bound is listed alone, and the listing moves past it
    monkeypatch.setattr(base, "LIST_PAGE_BYTES", row // 2)
    pages = await every_page(backend.tasks, ALICE, 5)
    assert [ids(p) for p in pages] == [[f"t{n}"] for n in range(6, -1, -1)]


async def test_a_listing_may_hold_only_the_last_messages_it_shows(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``history``: a listed task holds at least its last ``history`` messages, and a large one
    only those (the others are not decoded). Stored bytes, status and the rest as read whole."""
    messages = [{"kind": "message", "messageId": f"m{n}", "role": "user" if n % 2 else "agent",
                 "parts": [{"kind": "text", "text": f"{n} " + "x" * 200}]} for n in range(120)]
    large = StoredTask(task=Task.model_validate({
        "id": "big", "contextId": "c1", "status": TaskStatus(state="input-required").to_wire(),
        "history": messages, "metadata": {"k": "v"}}), agent_id="document-review", space="alice")
    assert len(large.task.to_json()) >= kept_tasks.MIN_BYTES
    await backend.tasks.save(large)
    await put(backend, "small", 1.0)
    # as a process that has not kept the task (another replica's row, or after a start)
    monkeypatch.setattr(kept_tasks, "KEPT", KeptTasks())
    whole = await backend.tasks.get("big")
    assert whole is not None and whole.task.history is not None
    monkeypatch.setattr(kept_tasks, "KEPT", KeptTasks())
    for history, shown in ((0, None), (2, whole.task.history[-2:]), (500, whole.task.history)):
        page = await backend.tasks.list_tasks(ALICE, 10, history=history)
        assert ids(page) == ["big", "small"]
        listed = page.tasks[0].record
        assert listed.task.history == shown, history
        assert listed.task == whole.task.model_copy(update={"history": shown})
        assert listed.stored_bytes == whole.stored_bytes
        assert listed.state == "input-required"
        small = page.tasks[1].record
        assert small == await backend.tasks.get("small")  # a small task is read whole
    assert kept_tasks.KEPT.held_bytes == 0  # a listing's partial task is not kept
    assert (await backend.tasks.list_tasks(ALICE, 10)).tasks[0].record.task == whole.task


async def test_a_value_no_row_can_hold_matches_nothing(backend: Backend) -> None:
    """A NUL in a filter is an empty answer on every backend, not a database error."""
    await put(backend, "t1", 100.0, "c")
    for query in (TaskQuery(space="alice\x00"), TaskQuery(space="alice", state="wor\x00king"),
                  TaskQuery(space="alice", context_key=context_key("alice", "c\x00"))):
        page = await backend.tasks.list_tasks(query, 10)
        assert (page.tasks, page.total, page.next) == ([], 0, None)


async def test_the_limit_is_bounded(backend: Backend) -> None:
    await put(backend, "t1", 100.0)
    for limit in (0, -1, 1001):
        with pytest.raises(ValueError):
            await backend.tasks.list_tasks(ALICE, limit)
    assert ids(await backend.tasks.list_tasks(ALICE, 1000)) == ["t1"]
    for cursor in (TaskCursor(float("nan"), "t"), TaskCursor(float("inf"), "t")):
        with pytest.raises(ValueError):
            await backend.tasks.list_tasks(ALICE, 10, after=cursor)
    with pytest.raises(ValueError):
        await backend.tasks.list_tasks(TaskQuery(space="alice", updated_since=float("nan")), 10)


# ---------------------------------------------------------------------- indexes


def _sqlite_index_columns(path: Path) -> dict[str, list[tuple[str, bool]]]:
    conn = sqlite3.connect(path)
    try:
        names = [row[1] for row in conn.execute("PRAGMA index_list(llamon_tasks)")]
        # index_xinfo: (seqno, cid, name, desc, coll, key)
        return {name: [(row[2], bool(row[3])) for row in
                       conn.execute(f'PRAGMA index_xinfo("{name}")') if row[5]]
                for name in names}
    finally:
        conn.close()


def _query_plan(path: Path, sql: str, params: tuple[object, ...] = ()) -> str:
    conn = sqlite3.connect(path)
    try:
        return " ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        conn.close()


async def test_sqlite_has_the_listing_index_and_uses_it(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    async with open_storage(str(path)) as storage:
        await storage.tasks.save(record("t1"))
    indexes = _sqlite_index_columns(path)
    assert [("space", False), ("updated", False), ("id", False)] in indexes.values()
    plan = _query_plan(path, "SELECT id FROM llamon_tasks WHERE space = ? AND (updated, id) < (?, ?)"
                       " ORDER BY updated DESC, id DESC LIMIT 3", ("alice", 1.0, "x"))
    assert "TEMP B-TREE" not in plan and "llamon_tasks_recent" in plan, plan


async def test_an_older_sqlite_file_gets_the_index_and_lists(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    shutil.copyfile(V1_FIXTURE, path)
    assert "llamon_tasks_recent" not in _sqlite_index_columns(path)
    async with open_storage(str(path)) as storage:
        # rows from before updates were timed: updated 0, so ordered by id alone
        page = await storage.tasks.list_tasks(TaskQuery(space="anonymous"), 100)
        assert page.total == len(page.tasks) > 0 and page.next is None
        assert [t.updated for t in page.tasks] == [0.0] * page.total
        assert ids(page) == sorted(ids(page), reverse=True)
    assert "llamon_tasks_recent" in _sqlite_index_columns(path)


async def test_postgres_migrates_the_listing_index(postgres_url: str) -> None:
    import psycopg  # the postgres extra: imported once the fixture found a server

    from llamon_agent.stores.postgres import MIGRATIONS

    async with open_storage(postgres_url) as storage:
        await storage.tasks.save(record("t1"))
        async with storage.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'llamon_tasks'"
                " AND indexname = 'llamon_tasks_recent' AND schemaname = current_schema()")
            rows = await cur.fetchall()
            assert len(rows) == 1
            definition = rows[0]["indexdef"]
            assert "(space, updated, id COLLATE \"C\")" in definition, definition
            cur = await conn.execute("SELECT MAX(v) AS v FROM llamon_migrations")
            done = await cur.fetchone()
            assert done is not None and done["v"] == len(MIGRATIONS) - 1
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute("SET enable_seqscan = off")  # a tiny table: ask for the index
        cur = await conn.execute(
            "EXPLAIN SELECT id FROM llamon_tasks WHERE space = 'alice'"
            " AND (updated, id COLLATE \"C\") < (1.0, 'x')"
            " ORDER BY updated DESC, id COLLATE \"C\" DESC LIMIT 3")
        plan = " ".join(str(row[0]) for row in await cur.fetchall())
    assert "llamon_tasks_recent" in plan and "Backward" in plan and "Sort" not in plan, plan


TASKS, LEAF_BYTES_PER_TASK = 1500, 125


async def test_postgres_listing_index_keeps_its_leaves_full(postgres_url: str) -> None:
    """Every save moves a task's entry to its new last update. Ascending, that is the right
    edge of the owner's entries, where PostgreSQL splits the rightmost leaf leaving the old one
    full; descending (before round twenty-nine), the left edge, split in half: 158 against 93
    bytes of index per task here (bench/README.md, "Speed, round twenty-nine")."""
    async with open_storage(postgres_url) as storage:
        for n in range(TASKS):
            await storage.tasks.save(record(f"t{n:05d}", f"c{n}", "input-required"))
            await storage.tasks.save(record(f"t{n:05d}", f"c{n}", "completed"))
        async with storage.pool.connection() as conn:
            cur = await conn.execute("SELECT pg_relation_size('llamon_tasks_recent') AS size")
            row = await cur.fetchone()
    assert row is not None and row["size"] / TASKS < LEAF_BYTES_PER_TASK, row


async def test_postgres_orders_ids_by_code_point_whatever_the_collation(
    postgres_url: str,
) -> None:
    """A database whose collation is a language's (here ICU English, which puts "B" between
    "a" and "Z") still pages by code point: the order SQLite and memory give."""
    async with open_storage(postgres_url) as storage:
        await storage.tasks.save(record("seed", space="bob"))  # the table exists
        async with storage.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT 1 FROM pg_collation WHERE collname = 'en-US-x-icu'")
            if not await cur.fetchall():
                pytest.skip("this PostgreSQL has no ICU collation en-US-x-icu")
            await conn.execute(
                'ALTER TABLE llamon_tasks ALTER COLUMN id TYPE TEXT COLLATE "en-US-x-icu"')
        backend = _postgres_backend(storage)
        for task_id in ("B", "a", "é", "Z", "a-1"):
            await put(backend, task_id, 500.0)
        expected = ["é", "a-1", "a", "Z", "B"]
        assert ids(await storage.tasks.list_tasks(TaskQuery(space="alice"), 10)) == expected
        pages = await every_page(storage.tasks, TaskQuery(space="alice"), 2)
        assert [i for p in pages for i in ids(p)] == expected


# every index is written on every save: each one's leaf page is one more WAL frame per commit
# (bench/README.md, "Speed, round fifteen"), so none may be a prefix of another
SQLITE_TASK_INDEXES = {
    "llamon_tasks_context": [("context_id", False), ("created", False)],
    "llamon_tasks_listing": [("space", False), ("state", False), ("updated", False), ("id", False)],
    "llamon_tasks_updated": [("state", False), ("updated", False)],
    "llamon_tasks_expiry": [("expires_at", False)],
    "llamon_tasks_recent": [("space", False), ("updated", False), ("id", False)],
}
#: the reads by state alone, each as the store runs it
STATE_READS = (
    "SELECT state, COUNT(*) FROM llamon_tasks GROUP BY state",
    "SELECT MIN(updated) FROM llamon_tasks WHERE state = 'working' AND updated > 0",
    "SELECT id FROM llamon_tasks WHERE state IN ('submitted', 'working')",
)


def _secondary(indexes: dict[str, list[tuple[str, bool]]]) -> dict[str, list[tuple[str, bool]]]:
    return {name: cols for name, cols in indexes.items() if not name.startswith("sqlite_autoindex")}


async def test_sqlite_keeps_no_index_that_another_covers(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    async with open_storage(str(path)) as storage:
        await storage.tasks.save(record("t1"))
    assert _secondary(_sqlite_index_columns(path)) == SQLITE_TASK_INDEXES
    counted, *searched = [_query_plan(path, sql) for sql in STATE_READS]  # reads by state still go through (state, updated)
    assert counted == "SCAN llamon_tasks USING COVERING INDEX llamon_tasks_updated", counted
    for plan in searched:
        assert plan.startswith("SEARCH llamon_tasks USING") and "llamon_tasks_updated" in plan, plan


async def test_an_older_sqlite_file_loses_the_state_index(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    shutil.copyfile(V1_FIXTURE, path)
    assert _sqlite_index_columns(path)["llamon_tasks_state"] == [("state", False)]
    async with open_storage(str(path)):
        pass
    assert _secondary(_sqlite_index_columns(path)) == SQLITE_TASK_INDEXES
    async with open_storage(str(path)) as storage:  # opening it again changes nothing
        assert await storage.tasks.count_by_state()
    assert _secondary(_sqlite_index_columns(path)) == SQLITE_TASK_INDEXES
