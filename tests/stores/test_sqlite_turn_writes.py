"""A turn's end on SQLite is one commit (``stores/turn_writes.py``), as on PostgreSQL: the run's
checkpoint writes wait in the turn's unit and go in the transaction of the task's row. Over
HTTP a HITL round trip commits twice (it was five times: each checkpoint, the interrupt's
writes and each task row on their own); underneath, held writes are invisible until the save,
a save that fails stores none of them and gives them to the next save, a large save commits
them in the worker thread's transaction, and a task store that is not the checkpointer's own
partner never has writes held for it."""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import llamon_agent.stores.storage as storage_module
from llamon_agent.a2a.types import Task
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.memory import InMemoryTaskStore
from llamon_agent.stores.sqlite import InlineSqliteSaver, connect
from llamon_agent.stores.storage import open_storage
from llamon_agent.stores.turn_writes import TurnWrites, commits_held_writes, holding
from tests.conftest import serve
from tests.runtime.helpers import doc_agent, state_of
from tests.stores.ask_graph import ask_graph

_WRITE = re.compile(r"^\s*(INSERT(?: OR \w+)? INTO|DELETE FROM|UPDATE)\s+(\w+)", re.I)


@contextmanager
def transactions_committed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The writes of each transaction the server's SQLite connections commit, in order
    (``["INSERT checkpoints", "INSERT llamon_tasks"]``), while the list is being filled."""
    committed: list[list[str]] = []
    opened: dict[int, list[str]] = {}

    def traced(path: str) -> sqlite3.Connection:
        conn = connect(path)

        def statement(sql: str) -> None:
            verb = sql.split(None, 1)[0].upper() if sql.strip() else ""
            if verb == "BEGIN":
                opened[id(conn)] = []
            elif verb in ("COMMIT", "ROLLBACK"):
                writes = opened.pop(id(conn), [])
                if verb == "COMMIT" and writes:
                    committed.append(writes)
            elif (found := _WRITE.match(sql)) is not None and id(conn) in opened:
                kind = found.group(1).split()[0].upper()
                opened[id(conn)].append(f"{kind} {found.group(2)}")

        conn.set_trace_callback(statement)
        return conn

    monkeypatch.setattr(storage_module, "connect", traced)
    yield committed


async def test_a_hitl_round_trip_commits_each_turn_s_end_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: five transactions per round trip, and a checkpoint could be stored without the
    task row that says what it answered."""
    with transactions_committed(monkeypatch) as committed:
        async with serve([doc_agent()], db=str(tmp_path / "tasks.db")) as client:
            warm = await client.send("이 서류를 검증해줘", context_id="warm",
                                     agent_id="document-review")
            assert state_of(warm) == "input-required"
            committed.clear()
            asked = await client.send("이 서류를 검증해줘", context_id="c1",
                                      agent_id="document-review")
            assert state_of(asked) == "input-required"
            answered = await client.send("여권", context_id="c1", task_id=asked["id"])
            assert state_of(answered) == "input-required"  # the next question
            turns = list(committed)
    checkpoint = ["INSERT checkpoints", "DELETE checkpoints", "DELETE writes"]
    assert turns == [
        [*checkpoint, "INSERT writes", "INSERT llamon_tasks"],
        [*checkpoint, "INSERT writes", "INSERT llamon_tasks"],
    ]


def _record(context_id: str, *, agent_id: str = "a", text: str = "") -> StoredTask:
    status: dict[str, Any] = {"state": "input-required"}
    if text:
        status["message"] = {"kind": "message", "role": "agent", "messageId": uuid.uuid4().hex,
                             "parts": [{"kind": "text", "text": text}]}
    task = Task.model_validate({"id": uuid.uuid4().hex, "contextId": context_id,
                                "kind": "task", "status": status})
    return StoredTask(task=task, agent_id=agent_id)


def _checkpoints(db: Path, thread: str) -> int:
    with sqlite3.connect(db) as conn:  # another connection: only what was committed
        return int(conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?",
                                (thread,)).fetchone()[0])


async def test_held_writes_wait_for_the_save_and_a_failed_save_stores_none_of_them(
    tmp_path: Path,
) -> None:
    db = tmp_path / "tasks.db"
    async with open_storage(str(db)) as storage:
        graph = ask_graph(storage.checkpointer)
        with holding(TurnWrites("c1")) as held:
            asked = await graph.ainvoke({"answers": []}, {"configurable": {"thread_id": "c1"}},
                                        durability="exit")
            assert "__interrupt__" in asked
            assert held.statements and _checkpoints(db, "c1") == 0
            recorded = list(held.statements)

            broken = _record("c1", agent_id="a\ud800b")  # not UTF-8: the upsert cannot bind it
            with pytest.raises(UnicodeEncodeError):
                await storage.tasks.save(broken)
            assert _checkpoints(db, "c1") == 0  # rolled back with the row
            assert held.statements == recorded  # restored, in order: the next save sends them

            saved = _record("c1")
            await storage.tasks.save(saved)
            assert held.statements == []
        assert _checkpoints(db, "c1") == 1
        assert await storage.tasks.get(saved.id) is not None
        assert await storage.tasks.get(broken.id) is None
        resumed = await graph.aget_state({"configurable": {"thread_id": "c1"}})
        assert resumed.next == ("ask",)  # the interrupt's writes were stored with it


async def test_a_large_save_commits_the_held_writes_in_the_worker_s_transaction(
    tmp_path: Path,
) -> None:
    db = tmp_path / "tasks.db"
    async with open_storage(str(db)) as storage:
        with holding(TurnWrites("c1")) as held:
            await ask_graph(storage.checkpointer).ainvoke(
                {"answers": []}, {"configurable": {"thread_id": "c1"}}, durability="exit")
            large = _record("c1", text="서" * 40_000)  # 120,000 bytes: over LARGE_BYTES
            await storage.tasks.save(large)
            assert held.statements == []
        assert _checkpoints(db, "c1") == 1
        stored = await storage.tasks.get(large.id)
        assert stored is not None and stored.task == large.task


async def test_a_new_task_in_a_context_without_tasks_reads_no_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A checkpoint is stored only with its task's row, so a context without tasks has none."""
    read: list[str] = []
    get_tuple = InlineSqliteSaver.get_tuple

    def noted(self: InlineSqliteSaver, config: Any) -> Any:
        read.append(config["configurable"]["thread_id"])
        return get_tuple(self, config)

    monkeypatch.setattr(InlineSqliteSaver, "get_tuple", noted)
    async with serve([doc_agent()], db=str(tmp_path / "tasks.db")) as client:
        asked = await client.send("이 서류를 검증해줘", context_id="c1",
                                  agent_id="document-review")
        assert read == []
        answered = await client.send("여권", context_id="c1")
    assert [state_of(asked), state_of(answered)] == ["input-required", "input-required"]
    assert read == ["c1"]  # the answer resumes from the stored checkpoint


@pytest.mark.parametrize("pair", ["memory-store", "another-connection"])
async def test_a_store_that_is_not_the_saver_s_partner_gets_no_held_writes(
    tmp_path: Path, pair: str,
) -> None:
    """``create_app(task_store=..., checkpointer=...)`` may pair any two: a held write would
    wait for a save that never stores it, so such a pair's turns store their checkpoints at
    once (a HITL answer then resumes where the question stopped)."""
    conn = connect(str(tmp_path / "checkpoints.db"))
    saver = InlineSqliteSaver(conn)
    saver.setup()
    if pair == "memory-store":
        tasks: Any = InMemoryTaskStore()
    else:
        from llamon_agent.stores.sqlite import SQLiteTaskStore

        tasks = SQLiteTaskStore(connect(str(tmp_path / "tasks.db")))
    assert commits_held_writes(tasks, saver) is False
    try:
        async with serve([doc_agent()], task_store=tasks, checkpointer=saver) as client:
            asked = await client.send("이 서류를 검증해줘", context_id="c1",
                                      agent_id="document-review")
            assert _checkpoints(tmp_path / "checkpoints.db", "c1") >= 1
            answered = await client.send("여권", context_id="c1")
        assert state_of(asked) == state_of(answered) == "input-required"
        assert answered["id"] == asked["id"]  # the same task, resumed
        assert answered["status"]["message"]["parts"] != asked["status"]["message"]["parts"]
    finally:
        conn.close()


async def test_the_storage_s_own_pair_holds(tmp_path: Path) -> None:
    async with open_storage(str(tmp_path / "tasks.db")) as storage:
        assert commits_held_writes(storage.tasks, storage.checkpointer) is True
