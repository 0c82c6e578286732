"""Every statement our SQLite storage runs reads through an index to the rows it needs, unless
it is named below with the reason its reading more is bounded.

SQLite keeps no statistics here (no ``ANALYZE``), so it plans a statement the same on a file of
ten rows as on one of a million, and ``EXPLAIN QUERY PLAN`` on a small file shows what a large
one would do. Three reads planned badly were found only at a million rows, each a stall of the
event loop growing with the stored tasks: the push reconciliation (round twenty-seven), the
narrowed ``ListTasks`` and the deadline sweep (round twenty-eight; bench/README.md). This test
runs what the store, the push store, the review port and the checkpointer do (a served HITL
round trip, the listings, the sweeps' reads, retention's, push deliveries, reviews) with every
connection traced, and plans each statement that reads or changes rows."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.agents import build_agents
from bench.in_process import round_trip
from llamon_agent import create_app
from llamon_agent.a2a.types import PushNotificationConfig, Task, TaskStatus
from llamon_agent.core.deadlines import Reject
from llamon_agent.core.ports import Decision, ReviewCursor
from llamon_agent.stores import storage as storage_module
from llamon_agent.stores.base import Expiry, StoredTask, TaskCursor, TaskQuery
from llamon_agent.stores.push_base import DeliveryKey, Outcome
from llamon_agent.stores.sqlite import connect

#: statements whose plan may read more than an index's way to the rows they need: a pattern of
#: the statement (literals as ``?``), the plan steps allowed for it, and why what they read is
#: bounded
ALLOWED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (r"^SELECT \? FROM llamon_tasks LIMIT \?$", ("SCAN",),
     "the readiness ping: stops at the first row"),
    (r"^SELECT state, COUNT\(\*\) FROM llamon_tasks GROUP BY state$", ("SCAN",),
     "/metrics' tasks by state: every task by design, in the worker thread"),
    (r"^SELECT COUNT\(\*\) FROM llamon_tasks WHERE space = \?( AND updated >= \?)?$",
     ("SEARCH",), "ListTasks's totalSize: every task it counts, by design, in the worker thread"),
    (r"^SELECT COUNT\(\*\) FROM llamon_tasks WHERE space = \? AND state = \?"
     r"( AND updated >= \?)?$", ("llamon_tasks_listing (space=? AND state=?",),
     "ListTasks's totalSize in a state, and the cap on an owner's waiting tasks: the tasks in"
     " that state, from the listing index"),
    (r"WHERE space = \?( AND updated >= \?)?( AND \(updated, id\) < \(\?\))?"
     r" ORDER BY updated DESC, id DESC LIMIT \?$", ("SEARCH",),
     "a ListTasks page in index order: stops after the page"),
    (r"WHERE space = \? AND state = \?( AND updated >= \?)?( AND \(updated, id\) < \(\?\))?"
     r" ORDER BY updated DESC, id DESC LIMIT \?$", ("llamon_tasks_listing (space=? AND state=?",),
     "a ListTasks page in a state, in the listing index's order: stops after the page"),
    (r"^SELECT MIN\(updated\) FROM llamon_tasks WHERE state = \? AND updated > \?$",
     ("SEARCH",), "the oldest in a state: one seek"),
    (r"FROM llamon_tasks WHERE state IN \(\?\)$", ("SEARCH",),
     "the running tasks, at start and at a takeover: as many as run"),
    (r"state IN \(\?\) AND updated (> \? AND updated < \?|<= \?)", ("SEARCH",),
     "retention: the ended tasks before the cutoff, a batch at a time"),
    (r"^SELECT \? FROM pragma_index_xinfo\(\?\) WHERE key AND desc$",
     ("SCAN pragma_index_xinfo VIRTUAL TABLE",),
     "at open, whether a listing index is descending: that index's few columns"),
    (r"^SELECT EXISTS \(SELECT \? FROM llamon_push_configs\)$", ("SCAN",),
     "whether any push config exists: stops at the first"),
    (r"^SELECT DISTINCT c\.task_id FROM llamon_push_configs c CROSS JOIN",
     ("SCAN c USING INDEX llamon_push_configs_open",),
     "the push reconciliation: the open configs' partial index"),
    (r"FROM llamon_tasks INDEXED BY llamon_tasks_context WHERE", ("TEMP B-TREE",),
     "ListTasks of one context: that context's tasks sorted"),
    (r"FROM llamon_push_configs WHERE task_id = \? ORDER BY rowid$", ("TEMP B-TREE",),
     "one task's push configs (at most max_configs) sorted"),
    (r"FROM llamon_push_deliveries WHERE task_id = \? ORDER BY seq, config_id$",
     ("TEMP B-TREE",), "one task's deliveries sorted"),
    (r"FROM llamon_reviews WHERE status = \?( AND \(created, id\) > \(\?\))?"
     r" ORDER BY created, id LIMIT \?$",
     ("SEARCH llamon_reviews USING INDEX llamon_reviews_by_status",),
     "a page of pending reviews in the index's order: stops after the page"),
    (r"^SELECT COUNT\(\*\), MIN\(created\) FROM llamon_reviews WHERE status = \?$",
     ("SEARCH llamon_reviews USING COVERING INDEX llamon_reviews_by_status (status=?)",),
     "/metrics' pending reviews: every pending review's index entry, no row read"),
    (r"^SELECT COUNT\(\*\), COUNT\(DISTINCT context_id\) FROM llamon_tasks",
     ("SEARCH", "TEMP B-TREE"), "the prune command's count (llamon prune, not the server)"),
    (r"^SELECT COUNT\(DISTINCT t\.context_id\) FROM llamon_tasks t", ("SEARCH", "TEMP B-TREE"),
     "the prune command's count (llamon prune, not the server)"),
    (r"^SELECT COALESCE\(MAX\(created\), \?\) FROM llamon_tasks$", ("SCAN",),
     "once per start"),
)
#: columns that may hold one value in most rows (one owner, the completed state, a time range):
#: a search by these alone may read most of a table
_UNSELECTIVE = {"space", "state", "updated", "status", "id"}
_SEARCH = re.compile(r"^SEARCH \w+ USING (?:COVERING )?INDEX \w+ \((?P<on>.*)\)$")
_READS_ROWS = re.compile(r"^\s*(SELECT|UPDATE|DELETE|WITH)\b", re.IGNORECASE)


def shape(sql: str) -> str:
    """The statement with its literals as ``?`` (the trace gives them bound)."""
    sql = re.sub(r"[xX]'[0-9A-Fa-f]*'", "?", sql)
    sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
    sql = re.sub(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", "?", sql)
    sql = re.sub(r"\s+", " ", sql).strip()
    return re.sub(r"\(\?(?:, \?)+\)", "(?)", sql)


def reads_more(step: str) -> bool:
    """A plan step that may read rows the statement does not need: a scan, a sort, or a
    search by unselective columns alone (``id`` alone is the key, not unselective)."""
    if "TEMP B-TREE" in step or (step.startswith("SCAN") and step != "SCAN CONSTANT ROW"):
        return True
    search = _SEARCH.match(step)
    if search is None:
        return False
    columns = set(re.findall(r"(\w+)\)?[=<>]", search["on"]))
    return columns != {"id"} and columns <= _UNSELECTIVE


def unbounded_steps(conn: sqlite3.Connection, sql: str) -> list[str]:
    """The plan's steps that may read more than needed and are not allowed above."""
    steps = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    allowed = [step for pattern, steps_, _ in ALLOWED if re.search(pattern, shape(sql))
               for step in steps_]
    return [s for s in steps if reads_more(s) and not any(s.startswith(a) or a in s
                                                           for a in allowed)]


def record(task_id: str, state: str, context: str, *, due: str | None = None) -> StoredTask:
    task = Task(id=task_id, context_id=context, status=TaskStatus(state=state))  # type: ignore[arg-type]
    stored = StoredTask(task=task, agent_id="hitl", event_seq=2, pending_interrupt="q")
    if due is not None:
        stored.deadline = Expiry("q", due, Reject())
    return stored


async def exercise(app: Any) -> None:
    """What a server does with its storage, each kind of statement at least once."""
    for _ in range(2):
        await round_trip(app)
    storage = app.state.manager._storage
    tasks, push, reviews = storage.tasks, storage.push, storage.reviews
    await tasks.save(record("due", "input-required", "ctx-a", due="2026-01-01T00:00:00+00:00"))
    await tasks.save(record("done", "completed", "ctx-a"))
    for query in (TaskQuery("anonymous"), TaskQuery("anonymous", state="failed"),
                  TaskQuery("anonymous", context_key="ctx-a"),
                  TaskQuery("anonymous", context_key="ctx-a", state="completed"),
                  TaskQuery("anonymous", updated_since=0.0),
                  TaskQuery("anonymous", state="completed", updated_since=0.0)):
        await tasks.list_tasks(query, 5)
        await tasks.list_tasks(query, 5, TaskCursor(1e12, "z"))
    await tasks.get("due")
    await tasks.latest_in_context("ctx-a")
    await tasks.unfinished()
    await tasks.ping()
    await tasks.expiring("2026-12-07T00:00:00+00:00", 10)
    await tasks.count_by_state()
    await tasks.count_in_state("anonymous", "input-required")
    await tasks.oldest_in_state("input-required")
    await tasks.date_undated(1.0, 10)
    await tasks.ended_before(1e12, 10)
    await tasks.count_ended(1e12)
    await tasks.context_outlives("ctx-a", 1e12)
    await tasks.contexts_with_tasks(["ctx-a", "ctx-b"])
    await tasks.delete_in_context("ctx-none", 10, ended_before=1e12)
    await tasks.delete_in_context("ctx-none", 10)
    hook = PushNotificationConfig(url="http://127.0.0.1:9/h", id="h")
    await push.put_config(record("due", "input-required", "ctx-a"), hook, max_configs=5)
    await push.get_configs("due")
    answered = record("due", "completed", "ctx-a")
    answered.event_seq += 1  # a change after the config was set
    keys = await push.enqueue(answered, lambda: b"{}", 1.0)
    await push.stale_tasks(10)
    await push.claim_due(2.0, 3.0, 10)
    assert keys  # the config is open: the change is enqueued, so claimed and finished here
    await push.claim(keys[0], 2.0, 3.0)
    await push.finish(keys[0], Outcome("delivered", 1), 2.0)
    await push.claim(DeliveryKey("due", "h", 99), 2.0, 3.0)
    await push.deliveries("due")
    await push.delete_config("due", "h")
    await push.delete_tasks(["due"])
    await push.delete_context("ctx-a")
    review = await reviews.submit(task_id="due", context_id="ctx-a", agent_id="hitl", draft={})
    await reviews.get(review.id)
    first = await reviews.pending(100)
    await reviews.pending(1, ReviewCursor.after(first[0]))
    await reviews.pending_summary()
    await reviews.decide(review.id, Decision("approve", by="ann"))
    await reviews.close_for_task("due", "ended")
    await reviews.delete_for_tasks(["due"])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/metrics")).status_code == 200
        assert (await client.delete("/contexts/ctx-a")).status_code == 200
    await app.state.manager.sweeper.sweep_once()
    await tasks.reclaim_space()


async def test_every_statement_reads_through_an_index_or_is_named_with_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    traced: list[str] = []

    def connect_traced(path: str) -> sqlite3.Connection:
        conn = connect(path)
        conn.set_trace_callback(traced.append)
        return conn

    monkeypatch.setattr(storage_module, "connect", connect_traced)
    path = tmp_path / "plans.sqlite3"
    app = create_app(build_agents(), db=str(path), retention=30 * 86400)
    async with app.router.lifespan_context(app):
        await exercise(app)
    shapes = {shape(sql): sql for sql in traced if _READS_ROWS.match(sql)}
    # the kinds of statement the exercise must have reached, or it proves nothing
    for reached in ("expires_at IS NOT NULL", "AND context_id = ?", "ORDER BY updated DESC",
                    "FROM llamon_push_deliveries", "FROM llamon_reviews", "FROM checkpoints",
                    "DELETE FROM writes", "GROUP BY state", "updated < ?"):
        assert any(reached in s for s in shapes), reached
    conn = sqlite3.connect(path)
    try:
        found = {s: steps for s, sql in shapes.items()
                 if (steps := unbounded_steps(conn, sql))}
    finally:
        conn.close()
    assert not found, "\n".join(f"{s}\n    {steps}" for s, steps in found.items())


def test_the_check_sees_a_statement_that_reads_every_row(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "one.sqlite3"))
    try:
        from llamon_agent.stores.sqlite import SQLiteTaskStore

        SQLiteTaskStore(conn)
        waiting = ("SELECT id FROM llamon_tasks WHERE expires_at IS NOT NULL AND expires_at <= 'x'"
                   " AND state = 'input-required' ORDER BY expires_at LIMIT 5")
        assert unbounded_steps(conn, waiting)  # the deadline sweep's read as it was
        assert not unbounded_steps(conn, waiting.replace(
            "FROM llamon_tasks", "FROM llamon_tasks INDEXED BY llamon_tasks_expiry"))
        assert unbounded_steps(conn, "SELECT id FROM llamon_tasks WHERE agent_id = 'x'")
        by_context = ("SELECT id FROM llamon_tasks WHERE space = 'a' AND context_id = 'c'"
                      " ORDER BY updated DESC, id DESC LIMIT 5")
        assert unbounded_steps(conn, by_context)  # ListTasks of a context as it was
        assert not unbounded_steps(conn, "SELECT id FROM llamon_tasks WHERE id = 'x'")
    finally:
        conn.close()
