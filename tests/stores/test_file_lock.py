"""One server per SQLite file (issue 8, finding 6): ``open_storage`` locks the file first.

The lock is taken before anything connects to the file or creates a table, held for the
storage's life and released on close; a holder that dies releases it with its process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llamon_agent.errors import LlamonError, StorageInUseError
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.file_lock import lock_file
from llamon_agent.stores.storage import open_storage

REPO_ROOT = Path(__file__).resolve().parents[2]

_HOLDER = """
import sys, time
from llamon_agent.stores.file_lock import lock_file
lock_file(sys.argv[1])
print("locked", flush=True)
time.sleep(60)
"""


def _files(db: Path) -> dict[str, bytes]:
    """The database and its WAL as bytes (the shared-memory index changes on mere reads)."""
    return {p.name: p.read_bytes() for p in sorted(db.parent.glob(db.name + "*"))
            if not p.name.endswith("-shm")}


def _holder(db: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)], cwd=REPO_ROOT, text=True,
        stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


async def _a_task(db: Path) -> StoredTask | None:
    async with open_storage(str(db)) as storage:
        return await storage.tasks.get("nope")


async def test_a_file_in_use_in_this_process_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    db = tmp_path / "llamon.sqlite3"
    async with open_storage(str(db)) as storage:
        before = _files(db)
        with pytest.raises(StorageInUseError) as refused:
            async with open_storage(str(db)):
                pytest.fail("a second storage opened a file in use")
        assert refused.value.path == str(db)
        assert str(db) in str(refused.value)
        assert isinstance(refused.value, LlamonError)
        assert _files(db) == before
        assert await storage.tasks.get("nope") is None  # the first one still works
    assert await _a_task(db) is None  # released on close: sequential opens are fine
    assert await _a_task(db) is None


async def test_a_file_another_process_holds_is_refused_until_that_process_dies(
    tmp_path: Path,
) -> None:
    db = tmp_path / "llamon.sqlite3"
    assert await _a_task(db) is None  # a database with its tables
    before = _files(db)
    holder = _holder(db)
    try:
        with pytest.raises(StorageInUseError):
            await _a_task(db)
        assert _files(db) == before
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    assert await _a_task(db) is None  # the OS released the lock with the process


async def test_the_lock_is_taken_before_the_file_is_created(tmp_path: Path) -> None:
    """A missing file is created empty and locked; a second opener finds it locked, not
    half-created."""
    db = tmp_path / "new.sqlite3"
    lock = lock_file(str(db))
    try:
        assert db.read_bytes() == b""
        with pytest.raises(StorageInUseError):
            await _a_task(db)
        assert db.read_bytes() == b""
    finally:
        lock.release()
    lock.release()  # twice is harmless
    assert await _a_task(db) is None


async def test_memory_storage_takes_no_lock() -> None:
    async with open_storage(":memory:") as first, open_storage(":memory:") as second:
        assert first.tasks is not second.tasks
