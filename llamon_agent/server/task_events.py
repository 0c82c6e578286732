"""The runtime's observer (``runtime/observer.py`` ``TaskObserver``): a log line per task state
change, and the task metrics (state changes, resumes, turn durations by agent).

The line names the task, its context (the client's id), its agent, its owner and the new
state; never the task's messages or artifacts.
"""

from __future__ import annotations

import logging

from ..core.principal import principal_of_space
from ..stores.base import StoredTask
from .logs import fields
from .metrics import Metrics

__all__ = ["TaskEvents"]

log = logging.getLogger("llamon_agent.tasks")


class TaskEvents:
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def task_state(self, record: StoredTask) -> None:
        self._metrics.state_changed(record.agent_id, record.state)
        if log.isEnabledFor(logging.INFO):
            log.info("task state", extra=fields(
                event="task",
                task=record.id,
                context=record.context_id,
                agent=record.agent_id,
                principal=principal_of_space(record.space),
                state=record.state,
            ))

    def turn_ended(self, record: StoredTask, seconds: float) -> None:
        self._metrics.turn_ended(record.agent_id, record.state, seconds)

    def resumed(self, record: StoredTask) -> None:
        self._metrics.resumed(record.agent_id)
