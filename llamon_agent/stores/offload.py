"""Large SQLite writes off the event loop: one worker thread with its own connection.

Statements run inline on the loop (``sqlite.py``): a small write is a page-cache write and a
WAL append, cheaper than any thread hand-off. A large one is not: writing a 4 MiB task row or
checkpoint (copying it into pages, the WAL append, the WAL checkpoint a commit may run) blocks
the loop for tens of milliseconds, and every other request of the server waits
(bench/large_answers.py, docs/storage.md). Writes of at least ``large_bytes`` therefore run in
one worker thread on a second connection to the same file; SQLite releases the GIL while it
copies and writes, so the loop keeps serving.

SQLite allows one writer at a time. A loop write that met the worker's open transaction would
wait for it in SQLite's busy handler, on the loop thread; so every write of the task store and
the checkpointer first waits (``await idle()``) until no large write is running, and a large
write holds the gate while it runs. (The review port's rare small writes do not wait; at worst
one waits in the busy handler until the large write ends.) Reads never wait: in WAL mode a
reader sees the last committed state.

A read whose cost grows with the stored rows (the tasks by state and the pending reviews'
count, read at every scrape of ``/metrics``: every stored task, every pending review's index
entry) runs in the same thread (``read``), so the loop keeps serving while it scans.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["LARGE_BYTES", "Offload"]

T = TypeVar("T")

#: a write of at least this many bytes runs in the worker thread. Below it a write costs the
#: loop under a millisecond, and the hand-off (a thread wake-up and a loop wake-up) would add
#: latency to every small turn (bench/README.md, "Large answers")
LARGE_BYTES = 64 * 1024


class Offload:
    """The worker thread and its connection, opened on first use and closed by ``close``."""

    def __init__(
        self, path: str, connect: Callable[[str], sqlite3.Connection],
        large_bytes: int = LARGE_BYTES,
    ) -> None:
        self.large_bytes = large_bytes
        self._path = path
        self._connect = connect
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None  # used by the worker thread only
        self._gate: asyncio.Lock | None = None
        self._closed = False

    def is_large(self, size: int) -> bool:
        return size >= self.large_bytes

    async def idle(self) -> None:
        """Return once no large write runs (at once when none does): call it right before a
        write on the loop's connection, with no ``await`` between."""
        gate = self._gate
        while gate is not None and gate.locked():
            async with gate:
                pass

    async def write(self, statements: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``statements`` in one transaction on the worker's connection, committed before
        this returns (rolled back if it raises)."""
        if self._gate is None:
            self._gate = asyncio.Lock()
        gate = self._gate
        await gate.acquire()
        try:
            done = asyncio.get_running_loop().run_in_executor(
                self._worker(), self._transaction, statements
            )
        except BaseException:
            gate.release()
            raise

        def finished(future: asyncio.Future[T]) -> None:
            gate.release()
            if not future.cancelled():
                future.exception()  # retrieved: a caller cancelled meanwhile does not log it

        # the gate opens when the thread is done, not when a cancelled caller stops waiting:
        # a later write must never overtake this one
        done.add_done_callback(finished)
        return await asyncio.shield(done)

    async def read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        """``query`` on the worker's connection, in its thread: it sees what is committed. A
        read neither waits for nor holds the gate (WAL readers do not block the writer); it
        queues behind a running large write in the one thread."""
        return await asyncio.get_running_loop().run_in_executor(self._worker(), self._read, query)

    def _worker(self) -> ThreadPoolExecutor:
        if self._closed:
            raise RuntimeError("storage is closed")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="llamon-sqlite-writer")
        return self._executor

    def _transaction(self, statements: Callable[[sqlite3.Connection], T]) -> T:
        with self._connection() as conn:  # commit, or roll back on an exception
            return statements(conn)

    def _read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        return query(self._connection())

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect(self._path)
        return self._conn

    def close(self) -> None:
        """Wait for a running write, then close the worker's connection (before the loop's
        connection and the file lock are released: ``file_lock.py``)."""
        self._closed = True
        if self._executor is None:
            return
        self._executor.submit(self._close_connection)
        self._executor.shutdown(wait=True)

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
