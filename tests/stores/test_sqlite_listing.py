"""``ListTasks`` on a SQLite file that holds many tasks (bench/README.md, "Speed, round
twenty-eight"). A listing narrowed by state or by context reads what it lists, not every task of
the owner: SQLite, without statistics, walked ``llamon_tasks_recent`` and read every row to test
its state or context, 3.4 to 4.8 s on the event loop at 1,024,000 tasks. And the count and the
page run on the storage's worker connection, in one read transaction that ends with them."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.stores import storage as storage_module
from llamon_agent.stores.base import StoredTask, TaskQuery
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect
from llamon_agent.stores.storage import open_storage

from ..sqlite_steps import vm_steps
from .older_sqlite import as_an_older_release

SPACE = "anonymous"


def record(task_id: str, state: str, context: str) -> StoredTask:
    task = Task(id=task_id, context_id=context, status=TaskStatus(state=state))  # type: ignore[arg-type]
    return StoredTask(task=task, agent_id="orders", event_seq=1)


def _indexes(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'llamon_tasks'"
        " AND name NOT LIKE 'sqlite_autoindex%'")}


@pytest.mark.parametrize("query", [
    TaskQuery(SPACE, state="failed"),  # none has it
    TaskQuery(SPACE, state="input-required"),  # one has it
    TaskQuery(SPACE, context_key="watched"),
    TaskQuery(SPACE, context_key="watched", state="input-required"),
    TaskQuery(SPACE, context_key="watched", updated_since=0.0),
], ids=["state-none-has", "state-one-has", "context", "context-and-state", "context-since"])
async def test_a_narrowed_listing_reads_the_same_however_many_other_tasks_are_stored(
    tmp_path: Path, query: TaskQuery,
) -> None:
    """Counted in the virtual machine's steps (``set_progress_handler``), not timed: the
    listing's work with 50 and with 1,000 completed tasks of other contexts is the same."""
    conn = connect(str(tmp_path / "l.sqlite3"))
    try:
        store = SQLiteTaskStore(conn)  # no worker thread: every statement on ``conn``
        await store.save(record("asks", "input-required", "watched"))
        await store.save(record("done-in-watched", "completed", "watched"))

        async def steps_of_a_listing() -> tuple[int, list[str], int]:
            steps, page = await vm_steps(conn, lambda: store.list_tasks(query, 10))
            return steps, [t.record.id for t in page.tasks], page.total

        async def others(first: int, count: int) -> None:
            for n in range(first, first + count):
                await store.save(record(f"other-{n}", "completed", f"c{n}"))

        await others(0, 50)
        few, listed_few, total_few = await steps_of_a_listing()
        await others(50, 950)
        many, listed_many, total_many = await steps_of_a_listing()
        assert (listed_many, total_many) == (listed_few, total_few)
        assert many == few, (few, many)
    finally:
        conn.close()


async def test_a_files_listing_runs_on_the_worker_connection_in_one_read_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    traced: list[tuple[int, int, str]] = []  # (thread, connection, statement)

    def connect_traced(path: str) -> sqlite3.Connection:
        conn = connect(path)
        conn.set_trace_callback(lambda sql: traced.append((threading.get_ident(), id(conn), sql)))
        return conn

    monkeypatch.setattr(storage_module, "connect", connect_traced)
    async with open_storage(str(tmp_path / "w.sqlite3")) as storage:
        for n in range(3):
            await storage.tasks.save(record(f"t{n}", "completed", f"c{n}"))
        loop_connection = id(storage.checkpointer.conn)  # type: ignore[attr-defined]
        traced.clear()
        page = await storage.tasks.list_tasks(TaskQuery(SPACE), 2)
        assert (page.total, len(page.tasks)) == (3, 2)
        worker = [(thread, conn, sql) for thread, conn, sql in traced if conn != loop_connection]
        assert not [sql for _, conn, sql in traced if conn == loop_connection]
        assert worker and threading.get_ident() not in {thread for thread, _, _ in worker}
        statements = [sql.split()[0].upper() + (" COUNT" if "COUNT(*)" in sql else "")
                      for _, _, sql in worker]
        # the count, the rows' sizes, the page's rows
        assert statements == ["BEGIN", "SELECT COUNT", "SELECT", "SELECT", "ROLLBACK"], statements
        # a save the loop committed since is listed by the next listing
        await storage.tasks.save(record("t9", "completed", "c9"))
        page = await storage.tasks.list_tasks(TaskQuery(SPACE), 10)
        assert page.total == 4 and "t9" in {t.record.id for t in page.tasks}
        # the worker's read is over: a checkpoint can empty the WAL past it
        busy, _, _ = storage.checkpointer.conn.execute(  # type: ignore[attr-defined]
            "PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0


async def test_an_older_files_owner_and_state_index_is_replaced_by_the_listing_index(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "older.sqlite3")
    conn = connect(path)
    SQLiteTaskStore(conn)
    conn.close()
    as_an_older_release(path, "DROP INDEX llamon_tasks_listing",
                        "CREATE INDEX llamon_tasks_space ON llamon_tasks (space, state)")
    conn = connect(path)
    try:
        store = SQLiteTaskStore(conn)
        assert "llamon_tasks_space" not in _indexes(conn)
        assert "llamon_tasks_listing" in _indexes(conn)
        await store.save(record("a", "input-required", "c"))
        assert await store.count_in_state(SPACE, "input-required") == 1
    finally:
        conn.close()
