"""What the runtime tells its operator: task state changes, turn durations, resumes.

The server's observability (logs and metrics: ``server/task_events.py``) implements
``TaskObserver``; the runtime calls it after each change is stored and published. An observer
that raises is logged and otherwise ignored: watching a task never changes what it does.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ..stores.base import StoredTask

__all__ = ["NO_OBSERVER", "TaskObserver", "notify_resumed", "notify_state", "notify_turn_ended"]

log = logging.getLogger(__name__)


class TaskObserver(Protocol):
    def task_state(self, record: StoredTask) -> None:
        """The task has a new state (``record.state``), stored and published."""
        ...

    def turn_ended(self, record: StoredTask, seconds: float) -> None:
        """A graph run ended after ``seconds``; ``record.state`` says how."""
        ...

    def resumed(self, record: StoredTask) -> None:
        """An answer, a reviewer's decision or recovery resumes the task's graph."""
        ...


class _NoObserver:
    def task_state(self, record: StoredTask) -> None:
        return None

    def turn_ended(self, record: StoredTask, seconds: float) -> None:
        return None

    def resumed(self, record: StoredTask) -> None:
        return None


NO_OBSERVER: TaskObserver = _NoObserver()


def notify_state(observer: TaskObserver, record: StoredTask) -> None:
    try:
        observer.task_state(record)
    except Exception:
        log.exception("the task observer failed on task %s", record.id)


def notify_turn_ended(observer: TaskObserver, record: StoredTask, seconds: float) -> None:
    try:
        observer.turn_ended(record, seconds)
    except Exception:
        log.exception("the task observer failed on task %s", record.id)


def notify_resumed(observer: TaskObserver, record: StoredTask) -> None:
    try:
        observer.resumed(record)
    except Exception:
        log.exception("the task observer failed on task %s", record.id)
