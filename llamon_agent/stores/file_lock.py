"""One server per SQLite file: an exclusive OS lock on the database file itself.

Two servers on one file would each run startup recovery over the other's live tasks (a running
task marked failed, a waiting task rewritten). ``flock`` is held by the open file, so the OS
drops it when the process dies, even by SIGKILL: a restart never finds a stale lock to clean up.

Two details of POSIX locking shape this module:

* SQLite locks the same file with ``fcntl`` record locks, and every ``fcntl`` lock a process
  holds on a file is released when *any* descriptor of that file in the process is closed.
  ``flock`` locks are independent of them (Linux, BSD, macOS), but closing our descriptor still
  counts as such a close: :meth:`FileLock.release` must come after the SQLite connection is
  closed, and a refused attempt must not open (and close) a descriptor of a file this process
  already uses. So the process remembers which files it holds (by device and inode) and refuses
  a second in-process attempt without opening anything.
* ``flock`` on a file mounted over NFS is emulated with ``fcntl`` by Linux and would interfere
  with SQLite's own locks; SQLite on NFS is unsafe anyway (SQLite's documentation).
"""

from __future__ import annotations

import fcntl
import os
import threading

from ..errors import StorageInUseError

__all__ = ["FileLock", "lock_file"]

_held: set[tuple[int, int]] = set()  # (st_dev, st_ino) of every file this process holds
_held_guard = threading.Lock()


class FileLock:
    """An exclusive ``flock`` on one file, held until :meth:`release` (or the process ends)."""

    def __init__(self, path: str, fd: int, key: tuple[int, int]) -> None:
        self.path = path
        self._fd: int | None = fd
        self._key = key

    def release(self) -> None:
        """Unlock and close; call it only once every SQLite connection to the file is closed."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with _held_guard:
            _held.discard(self._key)
        os.close(fd)  # closing the only descriptor that holds the flock releases it


def lock_file(path: str) -> FileLock:
    """Lock ``path`` (created empty if missing, as SQLite would) or raise ``StorageInUseError``.

    Never waits: a file in use is refused at once, and the refused attempt changes nothing in
    the file. Other ``OSError``s (a missing folder, no permission) are raised as they are.
    """
    shown = os.path.abspath(path)
    with _held_guard:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            pass
        else:
            if (st.st_dev, st.st_ino) in _held:
                raise StorageInUseError(shown)
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # safe: this process has no storage open on it (that would be in _held)
            raise StorageInUseError(shown) from None
        except BaseException:
            os.close(fd)
            raise
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        _held.add(key)
        return FileLock(shown, fd, key)
