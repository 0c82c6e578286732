"""The wire JSON of a runtime's task, encoded once per ``Task`` object.

A turn's task is encoded as one object up to three times: stored (the task row), answered
(``message/send``'s result, a stream's event) and packed (its event log's snapshot, when the
turn's log closes). pydantic-core takes about 7 us for a 1 KiB task, and a HITL round trip
encoded seven tasks, three of them objects encoded before (bench/README.md, "Speed, round
twenty-six").

The runtime never changes a task in place: every change is a ``model_copy``, a new object (the
``Event`` of runtime/events.py: immutable wire objects), so an object's encoding never goes
stale. Only the runtime's own tasks come here; ``WireModel.to_json`` stays uncached for
everyone else (a client may well change the objects it holds).

An encoding is kept only while its task lives (a weak reference's callback drops it) and at
most ``MAX_ENTRIES`` of them, the oldest dropped first. With ``VERIFY`` set (the test suite sets
it) every hit is checked against a fresh encoding, so a change that mutates a task in place
fails the tests that reach it instead of serving stale JSON.
"""

from __future__ import annotations

import weakref

from .types import Task, WireModel

__all__ = ["MAX_ENTRIES", "StaleTaskJSONError", "known_json", "remember_json", "task_json",
           "wire_json"]

#: encodings kept at once: a turn's live task and its latest copies, with room for concurrent turns
MAX_ENTRIES = 64
#: check every hit against a fresh encoding (tests/conftest.py)
VERIFY = False

# id(task) -> (a weak reference to it, its wire JSON)
_encoded: dict[int, tuple[weakref.ref[Task], bytes]] = {}


class StaleTaskJSONError(AssertionError):
    """A cached encoding differs from the task's own: the task was changed in place."""


def task_json(task: Task) -> bytes:
    """``task.to_json()``, encoded once for as long as the object lives (one function, not
    :func:`known_json` then :func:`remember_json`: every saved and answered task comes here)."""
    key = id(task)
    entry = _encoded.get(key)
    if entry is not None and entry[0]() is task:
        if VERIFY and entry[1] != task.to_json():
            raise StaleTaskJSONError(f"task {task.id} was changed in place after it was encoded")
        return entry[1]
    data = task.to_json()
    remember_json(task, data)
    return data


def known_json(task: Task) -> bytes | None:
    """The task's JSON if it was encoded (or remembered) since the object was made."""
    entry = _encoded.get(id(task))
    if entry is None or entry[0]() is not task:
        return None
    if VERIFY and entry[1] != task.to_json():
        raise StaleTaskJSONError(f"task {task.id} was changed in place after it was encoded")
    return entry[1]


def remember_json(task: Task, data: bytes) -> None:
    """Keep ``data`` as the task's JSON: ``task.to_json()``, made some other way
    (stores/kept_tasks.py splices it from an earlier version's)."""
    key = id(task)
    _encoded[key] = (weakref.ref(task, lambda ref: _forget(key, ref)), data)
    if len(_encoded) > MAX_ENTRIES:
        del _encoded[next(iter(_encoded))]


def wire_json(model: WireModel) -> bytes:
    """A runtime's wire object as JSON: a task through :func:`task_json`, anything else
    encoded as it is (events and messages are encoded once in their life)."""
    return task_json(model) if isinstance(model, Task) else model.to_json()


def _forget(key: int, ref: weakref.ref[Task]) -> None:
    """The task is gone: drop its encoding, unless the key already holds a newer object's."""
    entry = _encoded.get(key)
    if entry is not None and entry[0] is ref:
        del _encoded[key]
