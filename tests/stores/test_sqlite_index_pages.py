"""The listing indexes on SQLite are ascending and read backwards (bench/README.md, "Speed,
round twenty-nine"). Each save moves a task's entries to its new last update; descending, that
was the far edge of the owner's ended tasks, away from the leaf holding the live tasks' entries:
a second leaf page (and its parents) written per commit. Counted in the WAL's pages, not timed."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from bench.wal_pages import page_owners, read_wal
from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.stores.base import StoredTask, TaskQuery
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect

from .older_sqlite import as_an_older_release

SPACE = "anonymous"
LISTING_INDEXES = ("llamon_tasks_listing", "llamon_tasks_recent")
SERVED = 2000  # ended tasks before the measured ones: past the indexes' first pages
MEASURED = 50


def record(task_id: str, state: str) -> StoredTask:
    task = Task(id=task_id, context_id=f"c-{task_id}", status=TaskStatus(state=state))  # type: ignore[arg-type]
    return StoredTask(task=task, agent_id="orders", event_seq=1)


async def _ask_and_end(store: SQLiteTaskStore, first: int, count: int) -> None:
    """A HITL round trip's two saves of its task, each committed: asked, then completed."""
    for n in range(first, first + count):
        await store.save(record(f"t{n:06d}", "input-required"))
        await store.save(record(f"t{n:06d}", "completed"))


def _descending(conn: sqlite3.Connection, name: str) -> list[bool]:
    return [bool(desc) for (desc,) in conn.execute(
        "SELECT desc FROM pragma_index_xinfo(?) WHERE key", (name,))]


async def test_a_save_writes_one_page_of_each_listing_index(tmp_path: Path) -> None:
    path = tmp_path / "served.sqlite3"
    conn = connect(str(path))
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")  # every measured commit stays in the WAL
        store = SQLiteTaskStore(conn)
        await _ask_and_end(store, 0, SERVED)
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
        await _ask_and_end(store, SERVED, MEASURED)
        wal = read_wal(path.with_name(path.name + "-wal"))
        owners = page_owners(path)
    finally:
        conn.close()
    assert len(wal.commits) == 2 * MEASURED
    written = Counter(owners.get(page) for commit in wal.commits for page in commit)
    for name in LISTING_INDEXES:
        # one leaf per commit, and now and then a split: 1.07 and 1.06 ascending; descending,
        # 1.84 and 1.31
        assert written[name] / len(wal.commits) < 1.2, (name, written)
    # the retention index, ascending from the start: the reference (1.10)
    assert written["llamon_tasks_updated"] / len(wal.commits) < 1.2, written


async def test_an_older_files_descending_listing_indexes_are_rebuilt_ascending(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "older.sqlite3")
    conn = connect(path)
    store = SQLiteTaskStore(conn)
    await _ask_and_end(store, 0, 5)
    await store.save(record("asks", "input-required"))
    conn.close()
    as_an_older_release(
        path, "DROP INDEX llamon_tasks_listing", "DROP INDEX llamon_tasks_recent",
        "CREATE INDEX llamon_tasks_listing ON llamon_tasks (space, state, updated DESC, id DESC)",
        "CREATE INDEX llamon_tasks_recent ON llamon_tasks (space, updated DESC, id DESC)")
    conn = connect(path)
    try:
        store = SQLiteTaskStore(conn)
        assert _descending(conn, "llamon_tasks_listing") == [False] * 4
        assert _descending(conn, "llamon_tasks_recent") == [False] * 3
        every = await store.list_tasks(TaskQuery(SPACE), 4)
        assert [t.record.id for t in every.tasks] == ["asks", "t000004", "t000003", "t000002"]
        assert every.total == 6 and every.next is not None
        rest = await store.list_tasks(TaskQuery(SPACE), 4, every.next)
        assert [t.record.id for t in rest.tasks] == ["t000001", "t000000"]
        ended = await store.list_tasks(TaskQuery(SPACE, state="completed"), 10)
        assert [t.record.id for t in ended.tasks] == [f"t{n:06d}" for n in range(4, -1, -1)]
        assert await store.count_in_state(SPACE, "input-required") == 1
    finally:
        conn.close()
