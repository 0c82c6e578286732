"""The tasks-by-state count (every ``GET /metrics``) reads every stored task: on a SQLite file
it runs on the storage's worker connection, off the event loop, so a scrape of a file holding
many ended tasks does not stall the requests (bench/README.md, "Speed, round twenty-seven":
12-30 ms at 128,000 tasks, growing with them)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.stores import storage as storage_module
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect
from llamon_agent.stores.storage import open_storage


def record(task_id: str, state: str) -> StoredTask:
    task = Task(id=task_id, context_id=f"ctx-{task_id}", status=TaskStatus(state=state))  # type: ignore[arg-type]
    return StoredTask(task=task, agent_id="orders", event_seq=1)


async def test_a_files_count_by_state_runs_in_another_thread_on_another_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted_on: list[tuple[int, int]] = []  # (thread, connection) of each count

    def traced(path: str) -> sqlite3.Connection:
        conn = connect(path)

        def trace(statement: str) -> None:
            if "GROUP BY state" in statement:
                counted_on.append((threading.get_ident(), id(conn)))

        conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(storage_module, "connect", traced)
    async with open_storage(str(tmp_path / "c.sqlite3")) as storage:
        for n, state in enumerate(["completed"] * 3 + ["input-required"] * 2 + ["failed"]):
            await storage.tasks.save(record(f"t{n}", state))
        counts = await storage.tasks.count_by_state()
        assert counts == {"completed": 3, "input-required": 2, "failed": 1}
        loop_connection = id(storage.checkpointer.conn)  # type: ignore[attr-defined]
        assert counted_on
        assert all(thread != threading.get_ident() for thread, _ in counted_on)
        assert all(conn != loop_connection for _, conn in counted_on)
        # what the loop committed since is counted by the next one
        await storage.tasks.save(record("t9", "completed"))
        assert (await storage.tasks.count_by_state())["completed"] == 4
        # and the worker's read is over once counted: a checkpoint can empty the WAL (a
        # reader left open would hold it, and the WAL would grow)
        busy, _, _ = storage.checkpointer.conn.execute(  # type: ignore[attr-defined]
            "PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0


async def test_a_store_on_a_connection_alone_counts_inline(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "alone.sqlite3"))
    try:
        store = SQLiteTaskStore(conn)  # no worker: as a user's own connection makes it
        await store.save(record("a", "completed"))
        await store.save(record("b", "working"))
        assert await store.count_by_state() == {"completed": 1, "working": 1}
    finally:
        conn.close()
