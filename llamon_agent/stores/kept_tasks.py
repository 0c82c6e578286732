"""The large tasks this process stored or read last, kept as their JSON and their object, so
that a task with a long history is neither decoded again nor encoded whole at every turn.

A task's row is its whole history, and both its decoding and its encoding take time in
proportion to it: at 2,000 messages (612 KB), an answer decoded its task in 17.5 ms of the
event loop and encoded the next version in 7.8 ms, most of the 42 ms of CPU it cost
(bench/README.md, "Speed, round thirty-five"). Between two turns of a task:

* **decoding**: its row holds the bytes this process wrote at the end of the first turn, and
  equal bytes decode to an equal task, so the object that was encoded then is used again (the
  comparison is a ``memcmp``). A row that another replica of this release wrote for the
  next turn holds the kept version's messages, byte for byte, with new ones after them and
  another status: those bytes are cut out and only the rest is decoded, then put together
  with the kept messages (two replicas on PostgreSQL answering a task of 4,001 messages in
  turn: 32 ms of the loop an answer when each decoded it whole, 1.7 ms now; round thirty-six).
  Any other row (an older or newer release's, a hand edit, a history that does not begin with
  the kept one) is decoded whole.
* **encoding**: a turn only appends to the history (``runtime/collect.py``), so when the kept
  version's messages are the first messages of the new version, the same objects, their JSON
  is cut from the kept bytes and only the rest (the new messages, the status, the artifacts)
  is encoded. The result is byte for byte ``Task.to_json()``: only bytes this process encoded
  are cut from (a row decoded from elsewhere may hold fields the model drops).

The runtime never changes a task or a message in place (``a2a/task_json.py``), so one object
may go to every reader, and a message's JSON never goes stale. With ``task_json.VERIFY`` set
(the test suite sets it), every decoding saved is checked against a fresh encoding of the
object, and every spliced encoding against ``Task.to_json()``.

Only tasks of at least ``MIN_BYTES`` are kept (a small task decodes in microseconds, less than
keeping it costs), at most ``MAX_BYTES`` of JSON in all, the least recently used dropped first:
a decoded task takes about ten times its JSON's size in memory (docs/storage.md). A deleted
task is forgotten with its row.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from typing import NamedTuple

from ..a2a import task_json
from ..a2a.types import Task

__all__ = ["KEPT", "MAX_BYTES", "MIN_BYTES", "KeptTasks", "StaleKeptTaskError", "message_ids"]

KiB = 1024
#: the smallest task JSON kept: about 0.3 ms of decoding
MIN_BYTES = 16 * KiB
#: JSON bytes of the tasks kept, in all: one task of the default ``max_task_bytes`` (4 MiB) and
#: room for others; about 80 MiB of objects at most
MAX_BYTES = 8 * 1024 * KiB

# the fields of a task before and after its history, in the order pydantic writes them
_BEFORE_HISTORY = {"kind", "id", "context_id", "status"}
_AFTER_HISTORY = {"artifacts", "metadata"}
_HISTORY_KEY = b',"history":'
#: ``"history"`` keys of a row looked at for the kept messages (:meth:`KeptTasks._appended`)
_HISTORY_KEYS_LOOKED_AT = 8
_serializer = Task.__pydantic_serializer__
_MESSAGE_ID = operator.attrgetter("message_id")


class StaleKeptTaskError(AssertionError):
    """A kept task's JSON differs from its object's: the object was changed in place."""


class _Kept(NamedTuple):
    data: bytes  # the task's JSON, as stored
    task: Task  # what it decodes to
    ids: frozenset[str] | None  # its messages' ids, once asked for (carried to later versions)
    #: ``data`` is ``task.to_json()``, encoded here: only such bytes are spliced from. A row
    #: decoded from elsewhere may hold what the model drops (an unknown field) or writes
    #: otherwise (an alias, a default left out), which its JSON would carry on
    encoded: bool


class KeptTasks:
    """Task id -> the JSON stored for it and the task that JSON decodes to, bounded in bytes.

    Thread-safe: a store may decode in its worker thread."""

    def __init__(self, *, max_bytes: int = MAX_BYTES, min_bytes: int = MIN_BYTES) -> None:
        self._max_bytes = max_bytes
        #: a task's JSON is kept from this many bytes up
        self.min_bytes = min_bytes
        self._entries: OrderedDict[str, _Kept] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """JSON bytes of the tasks kept."""
        return self._bytes

    def recall(self, task_id: str, data: bytes | str) -> Task | None:
        """The task ``data`` decodes to, if these are the bytes kept for ``task_id``."""
        if type(data) is not bytes or len(data) < self.min_bytes:
            return None
        with self._lock:
            entry = self._entries.get(task_id)
            if entry is None or entry.data != data:
                return None
            self._entries.move_to_end(task_id)
        task = entry.task
        if task_json.VERIFY and (task.to_json() != data if entry.encoded
                                 else task != Task.model_validate_json(data)):
            raise StaleKeptTaskError(f"task {task_id} was changed in place after it was kept")
        return task

    def decode(self, task_id: str, data: bytes | str) -> Task:
        """The task a stored row of ``task_id`` decodes to: the kept object when the bytes are
        the kept ones (:meth:`recall`); when they are the kept version with messages appended
        and another status, as another replica writes the next turn, the kept messages and
        only the rest decoded (:meth:`_appended`); else the row decoded whole. The task is
        kept as what ``data`` decodes to. Raises what ``Task.model_validate_json`` raises."""
        task = self.recall(task_id, data)
        if task is None:
            task = self._appended(task_id, data)
        if task is None:
            task = Task.model_validate_json(data)
            self.remember(task_id, data, task)
        return task

    def _appended(self, task_id: str, data: bytes | str) -> Task | None:
        """The task ``data`` decodes to, if it is the kept version's JSON with other fields
        around the history and messages appended to it, decoded without those messages: the
        kept bytes' history, ``[m1,...,mN``, is found in ``data`` after a ``"history"`` key and
        cut out, and what is left, a task with the new messages alone, is decoded. None if
        it is not (the row decoded whole then).

        What is left must be exactly ``to_json()`` of what it decodes to, the history key cut
        at being that task's own: then ``data`` is byte for byte ``to_json()`` of that task
        with the kept messages put back before its own (each message's JSON stands alone).
        Only bytes this process encoded are cut from, as in :meth:`encode`."""
        entry = self._entries.get(task_id)
        if type(data) is not bytes or entry is None or not entry.encoded or not entry.task.history:
            return None
        shared = _history_of(entry.data, entry.task)[:-1]  # "[m1,...,mN": the kept messages
        # the task's own key follows its status, whose data parts and metadata may hold keys
        # of that name too: a few are looked at, each compared with the kept messages' bytes
        # until they differ, so that a status made of such keys costs a bounded number of scans
        at = data.find(_HISTORY_KEY)
        for _ in range(_HISTORY_KEYS_LOOKED_AT):
            if at == -1:
                return None
            after = at + len(_HISTORY_KEY) + len(shared)
            if data.startswith(shared, at + len(_HISTORY_KEY)) and data[after:after + 1] in (
                    b"]", b","):
                break
            at = data.find(_HISTORY_KEY, at + 1)
        else:
            return None
        rest = data[after + 1:] if data[after:after + 1] == b"," else data[after:]
        left = b"".join((data[:at], _HISTORY_KEY, b"[", rest))
        try:
            newer = Task.model_validate_json(left)
        except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
            return None  # the whole row is decoded, and says what is wrong with it
        if newer.to_json() != left or len(_around_history(newer)[0]) - 1 != at:
            return None
        added = newer.history or []
        task = newer.model_copy(update={"history": [*entry.task.history, *added]})
        if task_json.VERIFY and task.to_json() != data:
            raise StaleKeptTaskError(f"task {task_id}: the appended row decoded otherwise")
        ids = (entry.ids.union(map(_MESSAGE_ID, added)) if entry.ids is not None else None)
        self.remember(task_id, data, task, ids, encoded=True)
        return task

    def encode(self, task: Task) -> bytes:
        """``task_json(task)``: spliced from the kept version of the task when its history
        begins with the kept version's messages; the task is kept as the new version."""
        # a read under the GIL, as the worker thread's are; what moves entries takes the lock
        entry = self._entries.get(task.id)
        if entry is None:  # nothing kept to splice from: most tasks
            data, ids = task_json.task_json(task), None
        elif entry.task is task and entry.encoded:
            data, ids = entry.data, entry.ids
        else:
            old = entry.task.history
            appends = _appends_to(task, entry.task)
            known = task_json.known_json(task)
            if known is None:
                known = (_spliced(task, entry.data, entry.task) if appends and entry.encoded
                         else None) or task.to_json()
                task_json.remember_json(task, known)
            data = known
            ids = (entry.ids.union(map(_MESSAGE_ID, (task.history or ())[len(old or ()):]))
                   if appends and entry.ids is not None else None)
        if len(data) >= self.min_bytes:
            self.remember(task.id, data, task, ids, encoded=True)
        return data

    def message_ids(self, task: Task) -> frozenset[str] | None:
        """The ids of the messages in ``task``'s history, if it is the task kept for its id
        (a later version's are the kept version's and its own new ones: a set union, not a
        look at every message); None if it is not."""
        entry = self._entries.get(task.id)
        if entry is None or entry.task is not task:
            return None
        if entry.ids is not None:
            return entry.ids
        ids = frozenset(map(_MESSAGE_ID, task.history or ()))
        with self._lock:
            if self._entries.get(task.id) is entry:
                self._entries[task.id] = entry._replace(ids=ids)
        return ids

    def remember(self, task_id: str, data: bytes | str, task: Task,
                 ids: frozenset[str] | None = None, *, encoded: bool = False) -> None:
        """Keep ``task`` as what ``data`` (its JSON, as stored) decodes to; ``ids``: its
        messages' ids, if known; ``encoded``: ``data`` is ``task.to_json()``."""
        if type(data) is not bytes or len(data) < self.min_bytes:
            return
        with self._lock:
            self._drop(task_id)
            if len(data) > self._max_bytes:
                return
            self._entries[task_id] = _Kept(data, task, ids, encoded)
            self._bytes += len(data)
            while self._bytes > self._max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped.data)

    def forget(self, task_id: str) -> None:
        with self._lock:
            self._drop(task_id)

    def _drop(self, task_id: str) -> None:
        old = self._entries.pop(task_id, None)
        if old is not None:
            self._bytes -= len(old.data)


#: the large tasks this process stored or read last (the stores' ``_codec.py`` encodes and
#: decodes through it)
KEPT = KeptTasks()


def message_ids(task: Task) -> frozenset[str] | None:
    """:meth:`KeptTasks.message_ids` of :data:`KEPT`."""
    return KEPT.message_ids(task)


def _appends_to(task: Task, kept: Task) -> bool:
    """Whether ``task``'s history begins with all of ``kept``'s messages, the same objects."""
    old, new = kept.history, task.history
    return bool(old and new and len(new) >= len(old) and all(map(operator.is_, old, new)))


def _spliced(task: Task, kept_data: bytes, kept: Task) -> bytes:
    """``task``'s JSON with the messages it shares with ``kept`` (:func:`_appends_to`) cut
    from ``kept_data``."""
    old, new = kept.history or [], task.history or []
    shared = _history_of(kept_data, kept)  # "[...]", every message of ``kept``
    added = b"".join(b"," + m.to_json() for m in new[len(old):])
    head, tail = _around_history(task)
    data = b"".join((head[:-1], _HISTORY_KEY, shared[:-1], added, b"]",
                     b"}" if tail == b"{}" else b"," + tail[1:]))
    if task_json.VERIFY and data != task.to_json():
        raise StaleKeptTaskError(f"task {task.id}: its history's messages were changed in place")
    return data


def _history_of(kept_data: bytes, kept: Task) -> memoryview:
    """The history array of ``kept_data``, ``kept.to_json()``: ``[m1,...,mN]``, not copied."""
    head, tail = _around_history(kept)
    start = len(head) - 1 + len(_HISTORY_KEY)
    end = len(kept_data) - (1 if tail == b"{}" else len(tail))
    return memoryview(kept_data)[start:end]


def _around_history(task: Task) -> tuple[bytes, bytes]:
    """The task's JSON object without its history: the fields before it, and those after."""
    return (_serializer.to_json(task, by_alias=True, exclude_none=True, include=_BEFORE_HISTORY),
            _serializer.to_json(task, by_alias=True, exclude_none=True, include=_AFTER_HISTORY))
