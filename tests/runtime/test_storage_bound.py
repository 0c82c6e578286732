"""Issue 8, finding 5: what one task may store is bounded (docs/storage.md).

Before: every answer a task accepted stayed in its history, and every turn stored one more
checkpoint holding the whole graph state, so sixty 1 MiB answers to one ``until-done`` task
made a 2 GB file. Now a message that would make its task's stored row larger than
``Limits.max_task_bytes`` is refused (-32602, nothing stored or run, the question still waits),
and a thread keeps only its latest checkpoint. The stored bytes are read from the SQLite file;
the bound itself is checked on PostgreSQL too (``backend``), where LangGraph's saver keeps every
checkpoint (docs/storage.md), so only the task row's size is read there.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.nodes import until_done_graph
from llamon_agent import Agent
from llamon_agent.core.bounds import Limits
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.offload import Offload
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect
from tests.conftest import A2AClient, durable_db, serve, user_message

from .helpers import state_of

KiB = 1024
LIMITS = Limits(max_task_bytes=256 * KiB)
ANSWER_CHARS = 60_000  # one text part (max_text_chars is 64 Ki); four of them fit the bound
#: what one task may hold in the file, for an agent that keeps every answer in its state: the
#: task row (at most max_task_bytes) plus the latest checkpoint, which holds the same answers
#: (docs/storage.md)
STORED_BOUND = 2 * LIMITS.max_task_bytes + 16 * KiB


def notes_agent() -> Agent:
    return Agent("until-done", until_done_graph())


def answer(task: dict[str, Any], text: str) -> dict[str, Any]:
    return {"message": user_message(text, task_id=task["id"], context_id=task["contextId"])}


def big_answer(number: int) -> str:
    return f"{number:04d}" + "x" * (ANSWER_CHARS - 4)


def on_postgres(db: str) -> bool:
    return db.startswith("postgresql")


def query(db: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """``sql`` (``?`` placeholders) on the server's database, past the server."""
    if on_postgres(db):
        import psycopg

        with psycopg.connect(db) as pg:
            return pg.execute(sql.replace("?", "%s"), params).fetchall()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def row_bytes(db: str, task_id: str) -> int:
    [(size,)] = query(
        db, "SELECT length(task) + COALESCE(length(extra), 0) FROM llamon_tasks WHERE id = ?",
        task_id)
    return int(size)


def stored_bytes(db: str, task_id: str, context_id: str) -> dict[str, int]:
    """What the task holds in the file: its row, its thread's checkpoints and their writes."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT length(task) + COALESCE(length(extra), 0) FROM llamon_tasks WHERE id = ?",
            (task_id,),
        ).fetchone()
        checkpoints, checkpoint_bytes = conn.execute(
            "SELECT count(*), COALESCE(sum(length(checkpoint) + length(metadata)), 0)"
            " FROM checkpoints WHERE thread_id = ?", (context_id,),
        ).fetchone()
        write_checkpoints, write_bytes = conn.execute(
            "SELECT count(DISTINCT checkpoint_id), COALESCE(sum(length(value)), 0)"
            " FROM writes WHERE thread_id = ?", (context_id,),
        ).fetchone()
    finally:
        conn.close()
    return {
        "row": row[0], "checkpoints": checkpoints, "write_checkpoints": write_checkpoints,
        "total": row[0] + checkpoint_bytes + write_bytes,
    }


async def take_notes(client: A2AClient) -> dict[str, Any]:
    task = await client.send("take notes")
    assert state_of(task) == "input-required"
    return task


@pytest.mark.usefixtures("backend")
async def test_an_answer_over_the_task_bound_is_refused_and_the_question_still_waits(
    tmp_path: Path,
) -> None:
    db = durable_db(tmp_path, "bound.sqlite3")
    async with serve([notes_agent()], db=db, limits=LIMITS) as client:
        task = await take_notes(client)
        accepted: list[str] = []
        refused: dict[str, Any] | None = None
        for number in range(12):  # three times what fits
            before = await client.result("tasks/get", {"id": task["id"]})
            text = big_answer(number)
            body = await client.call("message/send", answer(task, text))
            if "error" in body:
                refused = body["error"]
                break
            assert state_of(body["result"]) == "input-required"
            accepted.append(text)

        assert len(accepted) == 4
        assert refused is not None
        assert refused["code"] == -32602
        assert refused["data"] == {
            "reason": "limit exceeded", "limit": "max_task_bytes", "field": "message",
            "max": LIMITS.max_task_bytes, "taskId": task["id"], "contextId": task["contextId"],
        }
        # nothing was stored or run: the task is exactly as before the refused answer
        assert await client.result("tasks/get", {"id": task["id"]}) == before
        assert row_bytes(db, task["id"]) <= LIMITS.max_task_bytes
        if not on_postgres(db):  # PostgreSQL keeps every checkpoint: no total bound there
            size = stored_bytes(db, task["id"], task["contextId"])
            assert size["total"] <= STORED_BOUND, size

        # the question still waits for a correct answer
        done = await client.send("done", task_id=task["id"])
        assert state_of(done) == "completed"
        assert done["artifacts"][0]["parts"][0]["data"] == {"notes": accepted}


@pytest.mark.usefixtures("backend")
async def test_a_first_message_over_the_bound_starts_no_task(tmp_path: Path) -> None:
    db = durable_db(tmp_path, "first.sqlite3")
    small = Limits(max_task_bytes=16 * KiB)
    async with serve([notes_agent()], db=db, limits=small) as client:
        context_id = str(uuid.uuid4())
        body = await client.call("message/send", {
            "message": user_message("x" * (20 * KiB), context_id=context_id),
        })
        assert body["error"]["code"] == -32602
        assert body["error"]["data"] == {
            "reason": "limit exceeded", "limit": "max_task_bytes", "field": "message",
            "max": small.max_task_bytes, "contextId": context_id,
        }
        assert query(db, "SELECT count(*) FROM llamon_tasks") == [(0,)]
        assert query(db, "SELECT count(*) FROM checkpoints") == [(0,)]
        # the context was not left claimed: a message that fits starts the task
        task = await client.send("take notes", context_id=context_id)
        assert state_of(task) == "input-required"


async def test_a_context_whose_graph_state_is_over_the_bound_takes_no_new_task(
    tmp_path: Path,
) -> None:
    """Each task of a context adds its first message to the thread's state, which outlives
    the task: the context's state is bounded too. SQLite only: the PostgreSQL checkpointer
    cannot tell a thread's size yet, so the check is skipped there (docs/storage.md)."""
    db = str(tmp_path / "context.sqlite3")
    small = Limits(max_task_bytes=64 * KiB)
    context_id = str(uuid.uuid4())
    async with serve([notes_agent()], db=db, limits=small) as client:
        finished = 0
        refused: dict[str, Any] | None = None
        for number in range(8):  # each task: a 20 KB first message, then "done"
            body = await client.call("message/send", {
                "message": user_message(f"{number} " + "y" * (20 * KiB), context_id=context_id),
            })
            if "error" in body:
                refused = body["error"]
                break
            done = await client.send("done", task_id=body["result"]["id"])
            assert state_of(done) == "completed"
            finished += 1

        assert refused is not None, "the context's state grew without a bound"
        assert finished == 4
        assert refused["code"] == -32602
        assert refused["data"] == {
            "reason": "limit exceeded", "limit": "max_task_bytes", "field": "message",
            "max": small.max_task_bytes, "contextId": context_id,
        }
        tasks = query(db, "SELECT count(*) FROM llamon_tasks WHERE context_id = ?", context_id)
        assert tasks == [(finished,)]  # the refused message started nothing
        [(state,)] = query(
            db, "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ?", context_id)
        # the bound plus what the last accepted task added (its first message, its answer)
        assert state <= small.max_task_bytes + 2 * 21 * KiB


async def test_a_thread_keeps_only_its_latest_checkpoint_and_resumes_from_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "prune.sqlite3")  # SQLite's own pruning: PostgreSQL keeps every one
    notes = [f"note {n}" for n in range(6)]
    async with serve([notes_agent()], db=db) as client:
        task = await take_notes(client)
        for note in notes:
            assert state_of(await client.send(note, task_id=task["id"])) == "input-required"
        size = stored_bytes(db, task["id"], task["contextId"])
        # seven turns: one checkpoint left, and writes only for it
        assert (size["checkpoints"], size["write_checkpoints"]) == (1, 1)

    async with serve([notes_agent()], db=db) as client:  # a restart resumes from it
        done = await client.send("done", task_id=task["id"])
        assert state_of(done) == "completed"
        assert done["artifacts"][0]["parts"][0]["data"] == {"notes": notes}
        size = stored_bytes(db, task["id"], task["contextId"])
        assert size["checkpoints"] == 1


async def test_a_cancelled_large_write_is_not_overtaken_by_a_later_write(tmp_path: Path) -> None:
    """A large row is written by the worker thread; a caller that stops waiting for it (a
    cancelled turn) must not let the next write of the same task land first and be lost."""
    from llamon_agent.a2a.types import Task, TaskStatus

    db = str(tmp_path / "offload.sqlite3")

    def record(state: str, text: str) -> StoredTask:
        message = user_message(text, task_id="t1", context_id="c1")
        task = Task.model_validate({
            "id": "t1", "contextId": "c1", "status": TaskStatus(state=state).to_wire(),
            "history": [message],
        })
        return StoredTask(task=task, agent_id="a")

    conn = connect(db)
    try:
        for _ in range(5):  # a new worker each time: its connection opens while the loop goes on
            offload = Offload(db, connect)
            try:
                store = SQLiteTaskStore(conn, offload=offload)
                large = asyncio.ensure_future(store.save(record("working", "x" * (512 * KiB))))
                await asyncio.sleep(0)  # the large write is handed to the worker
                large.cancel()
                await store.save(record("canceled", "small"))
            finally:
                offload.close()
            stored = await store.get("t1")
            assert stored is not None
            assert (stored.state, stored.task.history[0].text()) == ("canceled", "small")
    finally:
        conn.close()


def test_an_event_log_keeps_one_task_snapshot() -> None:
    """Each turn publishes the whole task first, read anew from the store; a log that kept
    every turn's copy held turns x history (hundreds of MB for a task of many small answers).
    A replay from before a dropped snapshot falls back, as for events no longer retained."""
    from llamon_agent.a2a.types import Task, TaskStatus, TaskStatusUpdateEvent
    from llamon_agent.runtime.events import EventHub

    def snapshot(turn: int) -> Task:
        history = [user_message(f"answer {n}", task_id="t1", context_id="c1")
                   for n in range(turn)]
        return Task.model_validate({
            "id": "t1", "contextId": "c1", "status": {"state": "working"}, "history": history,
        })

    def status(state: str) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(task_id="t1", context_id="c1", final=True,
                                     status=TaskStatus.model_validate({"state": state}))

    log = EventHub().open("t1", 0)
    seq = 0
    for turn in range(1, 6):  # each turn: the task, working, then the final status
        for payload in (snapshot(turn), status("working"), status("input-required")):
            seq += 1
            log.publish(seq, payload)
    kept = [seq for seq, payload in log.events if isinstance(payload, Task)]
    assert kept == [13]  # the fifth turn's
    assert log.replay_after(9) is None  # the fourth turn's snapshot (10) is gone: fall back
    assert [seq for seq, _ in log.replay_after(10) or []] == [11, 12, 13, 14, 15]  # exact


def test_a_finished_event_log_lets_go_of_its_latest_task() -> None:
    """The hub keeps up to 1,024 finished logs; each may not hold a whole task besides the
    one its events replay (a resubscribe to a task that is not running reads the store)."""
    from llamon_agent.a2a.types import Task
    from llamon_agent.runtime.events import EventHub

    log = EventHub().open("t1", 0)
    log.snapshot = Task.model_validate({"id": "t1", "contextId": "c1",
                                        "status": {"state": "working"}})
    log.close()
    assert log.snapshot is None


def test_a_finished_event_log_keeps_its_events_as_wire_json_and_replays_them_exactly() -> None:
    """The hub's finished logs are the most long-lived objects of a busy server; as pydantic
    models (a dict and a set each) every collection of the older generations walked them.
    Once a turn ends its events are kept as bytes, which the collector never walks, and a
    late replay reads back the very events that were published."""
    import gc

    from llamon_agent.a2a.types import (
        Artifact,
        Task,
        TaskArtifactUpdateEvent,
        TaskStatus,
        TaskStatusUpdateEvent,
    )
    from llamon_agent.runtime.events import EventHub

    def status(state: str, *, final: bool = False, question: str | None = None
               ) -> TaskStatusUpdateEvent:
        message = None if question is None else user_message(question, task_id="t1",
                                                              context_id="c1")
        return TaskStatusUpdateEvent(task_id="t1", context_id="c1", final=final,
                                     status=TaskStatus(state=state, message=message))

    first_turn = [
        Task.model_validate({"id": "t1", "contextId": "c1", "status": {"state": "working"},
                             "metadata": {"n": 1.5, "nested": {"list": [1, "two", None]}}}),
        status("working"),
        status("input-required", final=True, question="Which one?"),
    ]
    second_turn = [
        status("working"),
        TaskArtifactUpdateEvent.model_validate({
            "taskId": "t1", "contextId": "c1",
            "artifact": Artifact.model_validate({"artifactId": "a1", "parts": [
                {"kind": "data", "data": {"answer": "the red one"}},
                {"kind": "file", "file": {"name": "f.txt", "bytes": "aGk="}}]}).to_wire()}),
        status("completed", final=True),
    ]
    hub = EventHub()
    log = hub.open("t1", 0)
    for seq, payload in enumerate(first_turn, start=1):
        log.publish(seq, payload, final=seq == len(first_turn))
    assert log.finished
    assert not any(gc.is_tracked(part) for event in log.events for part in event)
    log = hub.open("t1", 3)  # the answer's turn: the same log, packed and live events mixed
    log.publish(4, second_turn[0])
    mixed = log.replay_after(1) or []
    assert [(seq, type(p), p.to_json()) for seq, p in mixed] == [
        (n, type(p), p.to_json()) for n, p in [(2, first_turn[1]), (3, first_turn[2]),
                                              (4, second_turn[0])]]
    for seq, payload in enumerate(second_turn[1:], start=5):
        log.publish(seq, payload, final=seq == 6)
    assert not any(gc.is_tracked(part) for event in log.events for part in event)
    replayed = log.replay_after(1) or []
    published = [*first_turn[1:], *second_turn]
    assert [seq for seq, _ in replayed] == [2, 3, 4, 5, 6]
    assert [(type(p), p.to_json()) for _, p in replayed] == [
        (type(p), p.to_json()) for p in published]  # the wire form: what every reader uses
    # the first turn's snapshot went when that turn ended: from before it, the store answers
    assert log.replay_after(0) is None


def test_an_ended_turn_lets_go_of_its_task_snapshot() -> None:
    """A turn's first event holds the whole task (up to ``max_task_bytes``); the hub keeps up
    to 1,024 finished logs, and each held its latest turn's copy, encoded at the turn's end.
    An ended turn keeps its other events; a replay from before its snapshot falls back to
    the store, as for events no longer retained. Only the turn's own events are packed."""
    from llamon_agent.a2a.types import Task, TaskStatus, TaskStatusUpdateEvent
    from llamon_agent.runtime.events import EventHub

    def status(state: str) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(task_id="t1", context_id="c1", final=False,
                                     status=TaskStatus(state=state))

    snapshot = Task.model_validate({"id": "t1", "contextId": "c1",
                                    "status": {"state": "working"}, "history": []})
    log = EventHub(retain=4).open("t1", 0)
    log.publish(1, status("working"))
    log.publish(2, snapshot)
    log.publish(3, status("working"))
    log.close()
    assert [(seq, kind) for seq, kind, _ in log.events] == [  # type: ignore[misc]
        (1, "status-update"), (3, "status-update")]
    assert log.replay_after(1) is None  # the snapshot (2) is gone
    assert [seq for seq, _ in log.replay_after(2) or []] == [3]
    log.finished = False  # the task's next turn, on the same log (``EventHub.open``)
    for seq in range(4, 9):  # more than ``retain``: the oldest events go first
        log.publish(seq, status("working"))
    assert [len(event) for event in log.events] == [2, 2, 2, 2]
    log.close()
    assert [(event[0], len(event)) for event in log.events] == [(5, 3), (6, 3), (7, 3), (8, 3)]
    assert log.replay_after(3) is None  # 4 is no longer retained
    assert [seq for seq, _ in log.replay_after(4) or []] == [5, 6, 7, 8]


def measured_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads whose graph state is measured from now on (``thread_bytes`` calls)."""
    from llamon_agent.stores.sqlite import InlineSqliteSaver

    measured: list[str] = []
    thread_bytes = InlineSqliteSaver.thread_bytes

    def counted(self: InlineSqliteSaver, thread_id: str) -> int:
        measured.append(thread_id)
        return thread_bytes(self, thread_id)

    monkeypatch.setattr(InlineSqliteSaver, "thread_bytes", counted)
    return measured


async def test_only_a_context_with_a_stored_task_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A message that names no context gets one drawn for it, which has no graph state: its
    size is not read (before: one ``SELECT length(checkpoint)`` per such message). Nor is a
    context the client names that holds no stored task: a held checkpoint is stored only with
    its task's row (round twenty: it was read for every new context a client named). A
    context with a stored task is measured."""
    measured = measured_threads(monkeypatch)
    async with serve([notes_agent()], db=str(tmp_path / "drawn.sqlite3"), limits=LIMITS) as client:
        drawn = await client.send("take notes")
        assert state_of(drawn) == "input-required"
        assert measured == []
        named = await client.send("take notes", context_id="mine")
        assert state_of(named) == "input-required"
        assert measured == []
        done = await client.send("done", task_id=named["id"], context_id="mine")
        assert state_of(done) == "completed"
        assert measured == []  # an answer is not measured for its state (module docstring)
        again = await client.send("take notes", context_id="mine")
        assert state_of(again) == "input-required"
        assert measured == ["mine"]


async def test_a_new_context_of_an_agent_storing_each_step_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent at ``durability="sync"`` stores each step as it ends, so its thread may hold a
    checkpoint with no task row beside it (a server stopped mid-turn): a context the client
    names is measured even before a task of it is stored."""
    measured = measured_threads(monkeypatch)
    stepwise = Agent("until-done", until_done_graph(), durability="sync")
    async with serve([stepwise], db=str(tmp_path / "sync.sqlite3"), limits=LIMITS) as client:
        named = await client.send("take notes", context_id="theirs")
        assert state_of(named) == "input-required"
        assert measured == ["theirs"]
