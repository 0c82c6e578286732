"""What retention asks of a ``TaskStore``, the same tests on every backend ``open_storage``
opens (memory, SQLite, PostgreSQL): ended tasks selected and deleted by their last update,
never an unfinished one, not even one that became unfinished after it was selected."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.stores.base import DeletedTask, Prunable, StoredTask
from llamon_agent.stores.memory import InMemoryTaskStore
from llamon_agent.stores.storage import Storage, open_storage

HOUR = 3600.0


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if request.param == "memory":
        url = ":memory:"
    elif request.param == "sqlite":
        url = str(tmp_path / "tasks.sqlite3")
    else:
        url = str(request.getfixturevalue("postgres_url"))
    async with open_storage(url) as opened:
        yield opened


def record(task_id: str, context: str, state: str) -> StoredTask:
    task = Task.model_validate({"id": task_id, "contextId": context,
                                "status": TaskStatus(state=state).to_wire()})
    return StoredTask(task=task, agent_id="until-done")


async def save(storage: Storage, *tasks: tuple[str, str, str]) -> None:
    for task_id, context, state in tasks:
        await storage.tasks.save(record(task_id, context, state))


async def undate(storage: Storage, task_id: str) -> None:
    """Make a row look stored before updates were timed (``updated = 0``)."""
    if isinstance(storage.tasks, InMemoryTaskStore):
        row = storage.tasks._rows[task_id]
        storage.tasks._rows[task_id] = (*row[:9], 0.0, *row[10:])
    elif storage.pool is None:
        assert storage.db is not None
        conn = sqlite3.connect(storage.db)
        with conn:
            conn.execute("UPDATE llamon_tasks SET updated = 0 WHERE id = ?", (task_id,))
        conn.close()
    else:
        async with storage.pool.connection() as conn:
            await conn.execute("UPDATE llamon_tasks SET updated = 0 WHERE id = %s", (task_id,))


def ids(found: list[DeletedTask]) -> set[str]:
    return {task.id for task in found}


async def test_ended_tasks_are_selected_by_their_last_update(storage: Storage) -> None:
    await save(storage, ("done", "a", "completed"), ("gone", "a", "canceled"),
               ("refused", "b", "rejected"), ("broke", "c", "failed"),
               ("asks", "d", "input-required"), ("auth", "d2", "auth-required"),
               ("runs", "e", "working"), ("new", "f", "submitted"))
    later, earlier = time.time() + HOUR, time.time() - HOUR
    found = await storage.tasks.ended_before(later, 100)
    assert ids(found) == {"done", "gone", "refused", "broke"}
    assert {(t.id, t.context_key) for t in found} >= {("done", "a"), ("broke", "c")}
    assert len(await storage.tasks.ended_before(later, 2)) == 2
    assert await storage.tasks.ended_before(earlier, 100) == []
    assert await storage.tasks.count_ended(later) == Prunable(
        tasks=4, contexts=3, emptied=3, undated=0)
    assert await storage.tasks.count_ended(earlier) == Prunable(0, 0, 0, 0)


async def test_a_context_with_an_unfinished_or_recent_task_outlives_the_cutoff(
    storage: Storage,
) -> None:
    await save(storage, ("b1", "b", "completed"), ("b2", "b", "input-required"),
               ("a1", "a", "completed"))
    later = time.time() + HOUR
    assert await storage.tasks.context_outlives("b", later) is True
    assert await storage.tasks.context_outlives("a", later) is False
    assert await storage.tasks.context_outlives("a", time.time() - HOUR) is True
    assert await storage.tasks.context_outlives("nothing", later) is False
    assert await storage.tasks.count_ended(later) == Prunable(2, 2, 1, 0)
    assert await storage.tasks.contexts_with_tasks(["a", "b", "nothing"]) == {"a", "b"}
    assert await storage.tasks.contexts_with_tasks([]) == set()


async def test_delete_in_context_with_a_cutoff_keeps_what_is_not_old_and_ended(
    storage: Storage,
) -> None:
    await save(storage, ("b1", "b", "completed"), ("b2", "b", "input-required"),
               ("b3", "b", "failed"), ("a1", "a", "completed"))
    later = time.time() + HOUR
    deleted = await storage.tasks.delete_in_context("b", 100, ended_before=later)
    assert ids(deleted) == {"b1", "b3"} and {t.context_key for t in deleted} == {"b"}
    assert await storage.tasks.get("b1") is None and await storage.tasks.get("b3") is None
    waiting = await storage.tasks.get("b2")
    assert waiting is not None and waiting.state == "input-required"
    assert (await storage.tasks.latest_in_context("b")) == waiting
    assert await storage.tasks.get("a1") is not None  # another context: untouched
    # deleting twice is harmless
    assert await storage.tasks.delete_in_context("b", 100, ended_before=later) == []


async def test_a_task_saved_again_after_it_was_selected_is_kept(storage: Storage) -> None:
    """The delete's own condition is the state and the time: what was selected as ended
    and old is not deleted once it is saved as running, or saved again (a newer update)."""
    await save(storage, ("t1", "c", "completed"), ("t2", "c", "completed"))
    cutoff = time.time() + 0.5
    assert ids(await storage.tasks.ended_before(cutoff, 10)) == {"t1", "t2"}
    await save(storage, ("t1", "c", "working"))  # a race: it runs again (or is rewritten)
    await storage.tasks.save(record("t2", "c", "completed"))
    await _stamp(storage, "t2", time.time() + HOUR)  # saved again "after" the cutoff
    assert await storage.tasks.delete_in_context("c", 10, ended_before=cutoff) == []
    assert await storage.tasks.get("t1") is not None and await storage.tasks.get("t2") is not None


async def _stamp(storage: Storage, task_id: str, updated: float) -> None:
    if isinstance(storage.tasks, InMemoryTaskStore):
        row = storage.tasks._rows[task_id]
        storage.tasks._rows[task_id] = (*row[:9], updated, *row[10:])
    elif storage.pool is None:
        assert storage.db is not None
        conn = sqlite3.connect(storage.db)
        with conn:
            conn.execute("UPDATE llamon_tasks SET updated = ? WHERE id = ?", (updated, task_id))
        conn.close()
    else:
        async with storage.pool.connection() as conn:
            await conn.execute("UPDATE llamon_tasks SET updated = %s WHERE id = %s",
                               (updated, task_id))


async def test_delete_in_context_without_a_cutoff_deletes_every_state_in_batches(
    storage: Storage,
) -> None:
    await save(storage, *[(f"t{i}", "c", "completed") for i in range(5)],
               ("w", "c", "input-required"), ("r", "c", "working"), ("o", "other", "working"))
    first = await storage.tasks.delete_in_context("c", 4)
    second = await storage.tasks.delete_in_context("c", 4)
    assert len(first) == 4 and len(second) == 3
    assert ids(first) | ids(second) == {"t0", "t1", "t2", "t3", "t4", "w", "r"}
    assert await storage.tasks.latest_in_context("c") is None
    assert await storage.tasks.contexts_with_tasks(["c", "other"]) == {"other"}


async def test_undated_ended_tasks_are_dated_not_deleted(storage: Storage) -> None:
    await save(storage, ("old", "a", "completed"), ("asks", "b", "input-required"),
               ("old2", "c", "failed"))
    for task_id in ("old", "asks", "old2"):
        await undate(storage, task_id)
    later = time.time() + HOUR
    assert await storage.tasks.count_ended(later) == Prunable(0, 0, 0, undated=2)
    assert await storage.tasks.ended_before(later, 10) == []
    assert await storage.tasks.context_outlives("a", later) is True  # unknown age: kept
    now = time.time()
    assert await storage.tasks.date_undated(now, 1) == 1  # bounded
    assert await storage.tasks.date_undated(now, 10) == 1
    assert await storage.tasks.date_undated(now, 10) == 0  # the waiting one is left alone
    assert ids(await storage.tasks.ended_before(now + 1, 10)) == {"old", "old2"}
    assert await storage.tasks.ended_before(now - 1, 10) == []


async def test_reclaim_space_runs_on_every_store(storage: Storage) -> None:
    await save(storage, ("t", "c", "completed"))
    await storage.tasks.delete_in_context("c", 10)
    await storage.tasks.reclaim_space()  # SQLite: an incremental vacuum step; others: nothing
    await storage.tasks.ping()


async def test_a_new_sqlite_file_vacuums_incrementally_and_gives_pages_back(
    tmp_path: Path,
) -> None:
    """A file created by this version is in incremental auto-vacuum mode: the pages deleted
    rows freed go back to the file system at ``reclaim_space`` (an older file reuses them)."""
    path = tmp_path / "space.sqlite3"
    async with open_storage(str(path)) as storage:
        big = record("big", "c", "completed")
        big.task = big.task.model_copy(update={"metadata": {"blob": "x" * 2_000_000}})
        await storage.tasks.save(big)
        await storage.tasks.delete_in_context("c", 10)
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)
        freed = conn.execute("PRAGMA freelist_count").fetchone()[0]
        assert freed > 400
        await storage.tasks.reclaim_space()
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] < freed
        conn.close()

