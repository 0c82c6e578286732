"""SQLite storage for one machine: tasks and LangGraph checkpoints in one WAL file.

Every statement runs inline on the event loop thread. In WAL mode with ``synchronous=NORMAL`` a
write is a page-cache write plus a WAL append (no fsync until a checkpoint), tens of
microseconds; handing each statement to a worker thread (aiosqlite) costs a thread wake-up and
a loop wake-up per statement and was measured as the largest cost of a turn (bench/README.md).
The exception is a write of 64 KiB or more (a large task or checkpoint): it blocks the loop for
milliseconds, so it runs in one worker thread (``offload.py``, docs/storage.md).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Collection, Sequence
from functools import partial
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from ..a2a.types import RUNNING_STATES, TERMINAL_STATES
from ..errors import UnreadableTaskError
from . import _codec
from .base import (
    DeletedTask,
    Prunable,
    StoredTask,
    TaskCursor,
    TaskPage,
    TaskQuery,
    UnreadableRow,
    check_listing,
    choose_page,
    listing_condition,
)
from .offload import LARGE_BYTES, Offload
from .saver_signatures import signatures_worked_out_once
from .turn_writes import HeldStatement, checkpoints_held_for, held_for

__all__ = ["InlineSqliteSaver", "SQLiteTaskStore", "connect"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llamon_tasks (
    id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    state TEXT NOT NULL,
    event_seq INTEGER NOT NULL,
    pending_interrupt TEXT,
    reask_count INTEGER NOT NULL,
    task BLOB NOT NULL,
    extra BLOB,
    created INTEGER NOT NULL,
    space TEXT NOT NULL DEFAULT 'anonymous',
    updated REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS llamon_tasks_context ON llamon_tasks (context_id, created);
"""
# ``context_id`` holds the context key (core/principal.py: the owner's space and the client's
# id; the client's id alone for ``anonymous``, so older files need no rewrite). ``space`` and
# ``updated`` came with authentication and metrics: an older file gets them at open, its rows
# belong to ``anonymous`` and count as updated at the epoch until they are saved again.
_ADDED_COLUMNS = (
    ("space", "ALTER TABLE llamon_tasks ADD COLUMN space TEXT NOT NULL DEFAULT 'anonymous'"),
    ("updated", "ALTER TABLE llamon_tasks ADD COLUMN updated REAL NOT NULL DEFAULT 0"),
    ("expires_at", "ALTER TABLE llamon_tasks ADD COLUMN expires_at TEXT"),
)
#: ListTasks with a state: one owner's tasks in that state, newest update first, a page at a
#: time in index order; its count, and the count of an owner's waiting tasks, read only the
#: index. Without it SQLite walked ``llamon_tasks_recent`` and read every one of the owner's
#: rows to test its state: 3.8 s on the event loop at 1,024,000 tasks for a state none had
#: (bench/README.md, "Speed, round twenty-eight")
_LISTING_INDEX = (
    "CREATE INDEX IF NOT EXISTS llamon_tasks_listing ON llamon_tasks (space, state, updated, id)"
)
#: older files have ``(space, state)``, which ``llamon_tasks_listing`` covers (one more index
#: written by every save for nothing)
_SPACE_INDEX_REPLACED = "DROP INDEX IF EXISTS llamon_tasks_space"
#: retention selects ended tasks by their last update (docs/operations.md, "Retention")
_ENDED_INDEX = "CREATE INDEX IF NOT EXISTS llamon_tasks_updated ON llamon_tasks (state, updated)"
#: older files also have ``(state)`` alone, which ``llamon_tasks_updated`` covers: every
#: save wrote both, one more page per commit (bench/README.md, "Speed, round fifteen")
_COVERED_INDEX = "DROP INDEX IF EXISTS llamon_tasks_state"
#: the deadline sweep reads only the tasks that have one (docs/hitl.md, "Deadlines")
_EXPIRY_INDEX = (
    "CREATE INDEX IF NOT EXISTS llamon_tasks_expiry ON llamon_tasks (expires_at)"
    " WHERE expires_at IS NOT NULL"
)
#: ListTasks reads one owner's tasks newest update first, a page at a time, in index order
#: (ids compare as UTF-8 bytes, SQLite's BINARY: code point order, as in memory and on
#: PostgreSQL)
_RECENT_INDEX = (
    "CREATE INDEX IF NOT EXISTS llamon_tasks_recent ON llamon_tasks (space, updated, id)"
)
#: both listing indexes are ascending and read backwards (newest first). Every save moves a
#: task's entries to its new last update: ascending, where the previous save's went, on the
#: leaf that holds the few live tasks' entries too; descending, to the far edge of the owner's
#: ended tasks, one more leaf page (and its parents) written per commit, and splits that
#: rewrite their neighbours: 4.0 against 2.5 pages of ``llamon_tasks_listing`` per round trip
#: (bench/README.md, "Speed, round twenty-nine"). A file that has them descending (rounds up
#: to twenty-eight) gets them rebuilt at open, once.
_ASCENDING_INDEXES = ("llamon_tasks_listing", "llamon_tasks_recent")
_DESCENDING_KEYS = "SELECT 1 FROM pragma_index_xinfo(?) WHERE key AND desc"

_RUNNING = tuple(sorted(RUNNING_STATES))
_RUNNING_MARKS = ", ".join("?" * len(_RUNNING))
_COLUMNS = "task, agent_id, event_seq, pending_interrupt, reask_count, extra, id, context_id"


def _decode(row: Sequence[Any]) -> StoredTask:
    return _codec.decode(*row[:6], task_id=row[6])


async def _decoded(row: Sequence[Any]) -> StoredTask:
    if len(row[0]) >= LARGE_BYTES:
        # decoding a large task takes milliseconds of the loop: the requests that are ready
        # go first (bench/large_answers.py)
        await asyncio.sleep(0)
    return _decode(row)


def _decode_or_unreadable(row: Sequence[Any]) -> StoredTask | UnreadableRow:
    try:
        return _decode(row)
    except UnreadableTaskError as exc:
        return UnreadableRow(row[6], row[7], row[1], row[2], exc.detail)


_UPSERT_TASK = (
    "INSERT INTO llamon_tasks (id, context_id, agent_id, state, event_seq,"
    " pending_interrupt, reask_count, task, extra, created, space, updated, expires_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT(id) DO UPDATE SET state = excluded.state,"
    " event_seq = excluded.event_seq, pending_interrupt = excluded.pending_interrupt,"
    " reask_count = excluded.reask_count, task = excluded.task, extra = excluded.extra,"
    " updated = excluded.updated, expires_at = excluded.expires_at"
)

# langgraph-checkpoint-sqlite's own tables and statements (SqliteSaver.put / put_writes).
# LangGraph orders checkpoint ids (uuid6, time-ordered) to find a thread's latest one; the
# same order says which are older.
_INSERT_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,"
    " parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITE_COLUMNS = (
    " INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,"
    " type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPSERT_WRITES = "INSERT OR REPLACE" + _WRITE_COLUMNS
_INSERT_WRITES = "INSERT OR IGNORE" + _WRITE_COLUMNS
_THREAD_BYTES = (
    "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
    " ORDER BY checkpoint_id DESC LIMIT 1"
)
_PRUNE_CHECKPOINTS = (
    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id < ?"
)
_PRUNE_WRITES = "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id < ?"


#: pages (4 KiB each by default) one ``reclaim_space`` gives back: a short write, repeated at
#: every retention sweep until the free pages are gone
RECLAIM_PAGES = 2048
_INCREMENTAL = 2  # ``PRAGMA auto_vacuum``'s value for INCREMENTAL
_KEYS_PER_QUERY = 500
_ENDED_STATES = tuple(sorted(TERMINAL_STATES))
_ENDED_MARKS = ", ".join("?" * len(_ENDED_STATES))
#: "ended before the cutoff" (its parameters: ``_ENDED_STATES``, then the cutoff)
_ENDED = f"state IN ({_ENDED_MARKS}) AND updated > 0 AND updated < ?"
_DATE_UNDATED = (
    "UPDATE llamon_tasks SET updated = ? WHERE id IN (SELECT id FROM llamon_tasks"
    f" WHERE state IN ({_ENDED_MARKS}) AND updated <= 0 LIMIT ?) AND updated <= 0"
)
_COUNT_EMPTIED = (
    "SELECT COUNT(DISTINCT t.context_id) FROM llamon_tasks t"
    f" WHERE t.state IN ({_ENDED_MARKS}) AND t.updated > 0 AND t.updated < ?"
    " AND NOT EXISTS (SELECT 1 FROM llamon_tasks o WHERE o.context_id = t.context_id"
    f" AND NOT (o.state IN ({_ENDED_MARKS}) AND o.updated > 0 AND o.updated < ?))"
)
_DELETE_IN_CONTEXT = (
    "DELETE FROM llamon_tasks WHERE id IN"
    " (SELECT id FROM llamon_tasks WHERE context_id = ? LIMIT ?) RETURNING id"
)
# the condition twice: the subquery picks, the outer statement deletes only what still holds
_DELETE_ENDED_IN_CONTEXT = (
    "DELETE FROM llamon_tasks WHERE id IN"
    f" (SELECT id FROM llamon_tasks WHERE context_id = ? AND {_ENDED} LIMIT ?)"
    f" AND {_ENDED} RETURNING id"
)


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False)
    # takes effect only on a new file, and only before WAL mode is set: an existing file keeps
    # its mode until a VACUUM (docs/storage.md, "Retention and deletion")
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


class SQLiteTaskStore:
    """Every ``save`` commits before it returns: a task the client saw is durable."""

    def __init__(self, conn: sqlite3.Connection, *, offload: Offload | None = None) -> None:
        self._conn = conn
        self._offload = offload  # large rows are written by its worker thread
        conn.executescript(_SCHEMA)
        present = {row[1] for row in conn.execute("PRAGMA table_info(llamon_tasks)")}
        for column, statement in _ADDED_COLUMNS:
            if column not in present:
                conn.execute(statement)
        for name in _ASCENDING_INDEXES:
            if conn.execute(_DESCENDING_KEYS, (name,)).fetchone() is not None:
                conn.execute(f"DROP INDEX {name}")
        conn.execute(_LISTING_INDEX)
        conn.execute(_SPACE_INDEX_REPLACED)
        conn.execute(_EXPIRY_INDEX)
        conn.execute(_ENDED_INDEX)
        conn.execute(_COVERED_INDEX)
        conn.execute(_RECENT_INDEX)
        conn.commit()
        self._incremental = conn.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL
        row = conn.execute("SELECT COALESCE(MAX(created), 0) FROM llamon_tasks").fetchone()
        self._created = int(row[0])

    async def get(self, task_id: str) -> StoredTask | None:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return None if row is None else await _decoded(row)

    def commits_held_writes_of(self, checkpointer: object) -> bool:
        """Its saves commit what an ``InlineSqliteSaver`` on the same connection held."""
        return isinstance(checkpointer, InlineSqliteSaver) and checkpointer.conn is self._conn

    async def save(self, record: StoredTask) -> None:
        """One upsert; inside a turn that holds its checkpoint writes (``turn_writes.py``), in
        one transaction after them: one commit for the turn's end instead of one per write,
        and a checkpoint is never stored without the task row that says what it answered."""
        self._created += 1
        task, extra = _codec.encode_task(record), _codec.encode_extra(record)
        statements = [HeldStatement(_UPSERT_TASK, (
            record.id, record.context_key, record.agent_id, record.state, record.event_seq,
            record.pending_interrupt, record.reask_count, task, extra, self._created,
            record.space, time.time(), record.expires_at), size=len(task) + len(extra))]
        held = held_for(record.context_key)
        if held is not None and held.statements:
            statements[:0], held.statements = held.statements, []
        try:
            offload = self._offload
            if offload is not None and offload.is_large(sum(s.size for s in statements)):
                await offload.write(partial(_execute, statements))
                return
            if offload is not None:
                await offload.idle()
            with self._conn:
                _execute(statements, self._conn)
        except BaseException:
            # rolled back, so a later save sends them (a large write whose caller was
            # cancelled still commits: sending its statements again rewrites the same rows)
            if held is not None:
                held.statements[:0] = statements[:-1]
            raise

    async def latest_in_context(self, context_key: str) -> StoredTask | None:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE context_id = ?"
            " ORDER BY created DESC LIMIT 1",
            (context_key,),
        ).fetchone()
        return None if row is None else await _decoded(row)

    async def list_tasks(
        self, query: TaskQuery, limit: int, after: TaskCursor | None = None, *,
        history: int | None = None,
    ) -> TaskPage:
        """The count and the page are read in one snapshot; with a worker thread, there: the
        count reads every task the query matches, and one request must not hold the loop
        while it does (``offload.py``)."""
        check_listing(query, limit, after)
        where, params = listing_condition(query, "?")
        # a context's tasks are few: found by their context, then sorted. Left to itself,
        # SQLite (no statistics) walked the owner's tasks in ``llamon_tasks_recent``'s order
        # and read each row to find the context's: seconds at a million tasks
        source = ("llamon_tasks INDEXED BY llamon_tasks_context" if query.context_key is not None
                  else "llamon_tasks")
        count = (f"SELECT COUNT(*) FROM {source} WHERE {where}", params)
        if after is not None:
            where += " AND (updated, id) < (?, ?)"
            params = (*params, after.updated, after.id)
        # the page's rows are chosen by their sizes (``choose_page``), then read: a row past
        # the page is not read whole (a BLOB's length is in its header)
        heads = (f"SELECT id, updated, length(task) FROM {source} WHERE {where}"
                 " ORDER BY updated DESC, id DESC LIMIT ?", (*params, limit + 1))
        if self._offload is None:
            total, ids, rows, after = _listing(count, heads, limit, self._conn)
        else:
            total, ids, rows, after = await self._offload.read(
                partial(_listing, count, heads, limit, snapshot=True))
        return TaskPage(tasks=await _codec.decode_page(ids, rows, history), total=int(total),
                        next=after)

    async def unfinished(self) -> list[StoredTask | UnreadableRow]:
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE state IN ({_RUNNING_MARKS})",
            _RUNNING,
        ).fetchall()
        return [_decode_or_unreadable(row) for row in rows]

    async def ping(self) -> None:
        self._conn.execute("SELECT 1 FROM llamon_tasks LIMIT 1").fetchall()

    async def expiring(self, before: str, limit: int) -> list[StoredTask | UnreadableRow]:
        """Every sweep, on the loop: the tasks past their deadline, read in the deadlines'
        index order, so only they are read. Left to itself, SQLite (no statistics) read every
        waiting task through ``llamon_tasks_updated`` and sorted them: 47 ms a sweep at
        64,000 waiting tasks, 431 ms at 256,000 (bench/README.md, "Speed, round
        twenty-eight")."""
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks INDEXED BY llamon_tasks_expiry"
            " WHERE expires_at IS NOT NULL"
            " AND expires_at <= ? AND state = 'input-required' ORDER BY expires_at LIMIT ?",
            (before, limit),
        ).fetchall()
        return [_decode_or_unreadable(row) for row in rows]

    async def count_by_state(self) -> dict[str, int]:
        """Every stored task is read (a covering index's scan): with a worker thread, there,
        off the loop (``offload.py``)."""
        if self._offload is None:
            rows = _count_by_state(self._conn)
        else:
            rows = await self._offload.read(_count_by_state)
        return {str(state): int(count) for state, count in rows}

    async def count_in_state(self, space: str, state: str) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM llamon_tasks WHERE space = ? AND state = ?", (space, state)
        ).fetchone()
        return int(row[0])

    async def oldest_in_state(self, state: str) -> float | None:
        row = self._conn.execute(
            # rows from before the column existed (updated = 0) have no known age
            "SELECT MIN(updated) FROM llamon_tasks WHERE state = ? AND updated > 0", (state,)
        ).fetchone()
        return None if row[0] is None else float(row[0])

    # ------------------------------------------------------------------ retention

    async def _write(self, sql: str, params: Sequence[Any]) -> tuple[list[Any], int]:
        """One statement in its own transaction on the loop's connection (after any large
        write of the worker thread: ``offload.py``): its rows, read before the commit, and
        how many rows it changed."""
        if self._offload is not None:
            await self._offload.idle()
        with self._conn:
            cur = self._conn.execute(sql, params)
            rows = cur.fetchall()
        return rows, cur.rowcount

    async def date_undated(self, now: float, limit: int) -> int:
        return (await self._write(_DATE_UNDATED, (now, *_ENDED_STATES, limit)))[1]

    async def ended_before(self, cutoff: float, limit: int) -> list[DeletedTask]:
        rows = self._conn.execute(
            f"SELECT id, context_id FROM llamon_tasks WHERE {_ENDED} LIMIT ?",
            (*_ENDED_STATES, cutoff, limit),
        ).fetchall()
        return [DeletedTask(row[0], row[1]) for row in rows]

    async def count_ended(self, cutoff: float) -> Prunable:
        tasks, contexts = self._conn.execute(
            f"SELECT COUNT(*), COUNT(DISTINCT context_id) FROM llamon_tasks WHERE {_ENDED}",
            (*_ENDED_STATES, cutoff),
        ).fetchone()
        emptied = self._conn.execute(_COUNT_EMPTIED, (*_ENDED_STATES, cutoff) * 2).fetchone()[0]
        undated = self._conn.execute(
            f"SELECT COUNT(*) FROM llamon_tasks WHERE state IN ({_ENDED_MARKS}) AND updated <= 0",
            _ENDED_STATES,
        ).fetchone()[0]
        return Prunable(int(tasks), int(contexts), int(emptied), int(undated))

    async def context_outlives(self, context_key: str, cutoff: float) -> bool:
        row = self._conn.execute(
            f"SELECT 1 FROM llamon_tasks WHERE context_id = ? AND NOT ({_ENDED}) LIMIT 1",
            (context_key, *_ENDED_STATES, cutoff),
        ).fetchone()
        return row is not None

    async def contexts_with_tasks(self, context_keys: Collection[str]) -> set[str]:
        keys = list(context_keys)
        found: set[str] = set()
        for start in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = keys[start:start + _KEYS_PER_QUERY]
            rows = self._conn.execute(
                "SELECT DISTINCT context_id FROM llamon_tasks"
                f" WHERE context_id IN ({', '.join('?' * len(chunk))})", chunk,
            ).fetchall()
            found.update(row[0] for row in rows)
        return found

    async def delete_in_context(
        self, context_key: str, limit: int, *, ended_before: float | None = None
    ) -> list[DeletedTask]:
        if ended_before is None:
            rows, _ = await self._write(_DELETE_IN_CONTEXT, (context_key, limit))
        else:
            ended = (*_ENDED_STATES, ended_before)
            rows, _ = await self._write(_DELETE_ENDED_IN_CONTEXT,
                                        (context_key, *ended, limit, *ended))
        deleted = [DeletedTask(row[0], context_key) for row in rows]
        _codec.forget(d.id for d in deleted)
        return deleted

    async def reclaim_space(self) -> None:
        if not self._incremental:
            return  # an older file: freed pages are reused, VACUUM gives them back
        if self._offload is not None:
            await self._offload.idle()
        # ``executescript`` runs the pragma to its end (``execute`` would free one page)
        self._conn.executescript(f"PRAGMA incremental_vacuum({RECLAIM_PAGES});")


@signatures_worked_out_once
class InlineSqliteSaver(SqliteSaver):
    """LangGraph's ``SqliteSaver`` with its async API served inline (see the module docstring),
    large writes in a worker thread (``offload.py``), and only the latest checkpoint of each
    thread and namespace kept.

    ``SqliteSaver`` stores every checkpoint with all channel values, so a thread whose state
    grows by ``s`` per turn holds ``s * turns**2 / 2`` bytes after ``turns`` turns (sixty 1 MiB
    answers: 1.8 GiB). The server only ever reads a thread's latest checkpoint and its pending
    writes (runs, ``aget_state`` and recovery never name a ``checkpoint_id``), so a new
    checkpoint is stored together with the deletion of the older ones of its thread and
    namespace and of their writes, in one transaction (docs/storage.md). Each subgraph
    namespace is pruned on its own: a subgraph's checkpoint is older than the parent checkpoint
    that waits on it. Not pruned: a checkpoint whose metadata says a ``DeltaChannel`` has not
    snapshotted since (LangGraph rebuilds such a channel from its ancestors' writes).
    ``keep_history=True`` keeps every checkpoint, as ``SqliteSaver`` does (for
    ``get_state_history`` and time travel).

    Inside a turn that holds its writes (``turn_writes.py``), ``aput`` and ``aput_writes`` on
    the turn's own thread record their statements in the turn's unit, and the task store's next
    save commits them with the task's row.

    The rows are the ones ``SqliteSaver.put`` and ``put_writes`` write (serialised here so that
    their size decides where they are written); langgraph-checkpoint-sqlite is capped in
    ``pyproject.toml`` for that reason.
    """

    def __init__(
        self, conn: sqlite3.Connection, *, keep_history: bool = False,
        offload: Offload | None = None,
    ) -> None:
        super().__init__(conn)
        self.keep_history = keep_history
        self._offload = offload

    # ------------------------------------------------------------------ writes

    def _checkpoint_rows(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[tuple[Any, ...], tuple[str, str, str] | None, RunnableConfig]:
        """The checkpoint row, the key of the pruning (or ``None``) and the config to return."""
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(
            get_checkpoint_metadata(config, metadata), ensure_ascii=False
        ).encode("utf-8", "ignore")
        row = (thread_id, checkpoint_ns, checkpoint["id"],
               config["configurable"].get("checkpoint_id"), type_, blob, meta)
        keep = self.keep_history or metadata.get("counters_since_delta_snapshot")
        prune = None if keep else (thread_id, checkpoint_ns, checkpoint["id"])
        saved: RunnableConfig = {"configurable": {
            "thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
        }}
        return row, prune, saved

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        row, prune, saved = self._checkpoint_rows(config, checkpoint, metadata)
        with self.cursor() as cur:
            _execute(_checkpoint_statements(row, prune), cur)
        return saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        row, prune, saved = self._checkpoint_rows(config, checkpoint, metadata)
        statements = _checkpoint_statements(row, prune)
        held = checkpoints_held_for(row[0])
        if held is not None:  # committed by the turn's end save (``turn_writes.py``)
            held.statements.extend(statements)
            return saved
        offload = self._offload
        if offload is not None and offload.is_large(len(row[5])):
            await offload.write(partial(_execute, statements))
            return saved
        if offload is not None:
            await offload.idle()
        with self.cursor() as cur:
            _execute(statements, cur)
        return saved

    def _write_rows(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str,
    ) -> tuple[str, list[tuple[Any, ...]]]:
        query = _UPSERT_WRITES if all(w[0] in WRITES_IDX_MAP for w in writes) else _INSERT_WRITES
        configurable = config["configurable"]
        rows = [
            (str(configurable["thread_id"]), str(configurable["checkpoint_ns"]),
             str(configurable["checkpoint_id"]), task_id, task_path,
             WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)
        ]
        return query, rows

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        query, rows = self._write_rows(config, writes, task_id, task_path)
        with self.cursor() as cur:
            cur.executemany(query, rows)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        query, rows = self._write_rows(config, writes, task_id, task_path)
        size = sum(len(row[8]) for row in rows)
        held = checkpoints_held_for(str(config["configurable"]["thread_id"]))
        if held is not None:  # committed by the turn's end save (``turn_writes.py``)
            held.statements.append(HeldStatement(query, rows, many=True, size=size))
            return
        offload = self._offload
        if offload is not None and offload.is_large(size):
            await offload.write(lambda conn: conn.executemany(query, rows))
            return
        if offload is not None:
            await offload.idle()
        with self.cursor() as cur:
            cur.executemany(query, rows)

    async def adelete_thread(self, thread_id: str) -> None:
        if self._offload is not None:
            await self._offload.idle()
        self.delete_thread(thread_id)

    # ------------------------------------------------------------------ reads, inline

    def thread_bytes(self, thread_id: str) -> int:
        """Bytes of the thread's latest checkpoint as stored (0 without one): the size of its
        graph state, read from the row's header (SQLite does not read a blob for its length)."""
        with self.cursor(transaction=False) as cur:
            row = cur.execute(_THREAD_BYTES, (thread_id,)).fetchone()
        return int(row[0]) if row is not None else 0

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        held = checkpoints_held_for(config.get("configurable", {}).get("thread_id"))
        if held is not None and held.thread_empty:
            return None  # no task of the context is stored, so no checkpoint either
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Any:
        return self.get_delta_channel_history(config=config, channels=channels)


_Statement = tuple[str, tuple[Any, ...]]


def _listing(
    count: _Statement, heads: _Statement, limit: int, conn: sqlite3.Connection, *,
    snapshot: bool = False,
) -> tuple[int, list[str], list[Any], TaskCursor | None]:
    """A listing's count, its page's ids (``choose_page``, from ``heads``: ``id, updated,
    length(task)`` of up to ``limit + 1`` rows in order), their rows and the next page's
    cursor. On the loop's connection nothing runs between the statements; on the worker's, a
    write committed meanwhile would, so ``snapshot`` reads them in one read transaction (ended
    here, so the WAL can be checkpointed past it)."""
    if snapshot:
        conn.execute("BEGIN")
    try:
        total = conn.execute(*count).fetchone()[0]
        ids, after = choose_page(conn.execute(*heads).fetchall(), limit)
        rows = conn.execute(f"SELECT {_COLUMNS}, updated FROM llamon_tasks WHERE id IN"
                            f" ({', '.join('?' * len(ids))})", ids).fetchall() if ids else []
    finally:
        if snapshot:
            conn.rollback()
    return total, ids, rows, after


def _count_by_state(conn: sqlite3.Connection) -> list[Any]:
    return conn.execute("SELECT state, COUNT(*) FROM llamon_tasks GROUP BY state").fetchall()


def _checkpoint_statements(
    row: tuple[Any, ...], prune: tuple[str, str, str] | None
) -> list[HeldStatement]:
    """The new checkpoint first: a thread never lacks its latest one, whatever happens."""
    insert = HeldStatement(_INSERT_CHECKPOINT, row, size=len(row[5]))
    if prune is None:
        return [insert]
    return [insert, HeldStatement(_PRUNE_CHECKPOINTS, prune), HeldStatement(_PRUNE_WRITES, prune)]


def _execute(statements: Sequence[HeldStatement], on: sqlite3.Connection | sqlite3.Cursor) -> None:
    """``statements`` in order, in the caller's transaction."""
    for statement in statements:
        if statement.many:
            on.executemany(statement.sql, statement.params)
        else:
            on.execute(statement.sql, statement.params)
