"""The deadline sweep's read on SQLite (``SQLiteTaskStore.expiring``, every few seconds, on the
event loop) reads the tasks past their deadline, not every waiting task. SQLite, without
statistics, went through the (state, updated) index: every ``input-required`` task read and
sorted, 47 ms a sweep at 64,000 waiting tasks and 431 ms at 256,000 (bench/README.md, "Speed,
round twenty-eight"). Counted in the virtual machine's steps, not timed."""

from __future__ import annotations

from pathlib import Path

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.core.deadlines import Reject
from llamon_agent.stores.base import Expiry, StoredTask
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect

from ..sqlite_steps import vm_steps

PAST = "2026-01-01T00:00:00.000000+00:00"
FUTURE = "2099-01-01T00:00:00.000000+00:00"
NOW = "2026-12-07T00:00:00.000000+00:00"


def waiting(task_id: str, expires_at: str | None) -> StoredTask:
    task = Task(id=task_id, context_id=f"ctx-{task_id}",
                status=TaskStatus(state="input-required"))  # type: ignore[arg-type]
    record = StoredTask(task=task, agent_id="orders", event_seq=1, pending_interrupt="q")
    if expires_at is not None:
        record.deadline = Expiry("q", expires_at, Reject())
    return record


async def test_the_sweeps_read_of_deadlines_is_the_same_however_many_tasks_wait(
    tmp_path: Path,
) -> None:
    conn = connect(str(tmp_path / "d.sqlite3"))
    try:
        store = SQLiteTaskStore(conn)
        await store.save(waiting("due", PAST))
        await store.save(waiting("later", FUTURE))

        async def steps_of_a_read() -> tuple[int, list[str | None]]:
            steps, found = await vm_steps(conn, lambda: store.expiring(NOW, 100))
            return steps, [getattr(r, "id", None) for r in found]

        async def waiting_without_a_deadline(first: int, count: int) -> None:
            for n in range(first, first + count):
                await store.save(waiting(f"waits-{n}", None))

        await waiting_without_a_deadline(0, 50)
        few, found_few = await steps_of_a_read()
        await waiting_without_a_deadline(50, 950)
        many, found_many = await steps_of_a_read()
        assert found_few == found_many == ["due"]
        assert many == few, (few, many)
    finally:
        conn.close()
