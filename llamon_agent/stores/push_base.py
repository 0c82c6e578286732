"""Push notifications as stored (A2A v0.3 §10; docs/operations.md, "Push notifications").

Two tables beside the tasks, in the same database (memory, SQLite, PostgreSQL):

* ``llamon_push_configs``: a task's webhook configs (several per task, keyed by the config id),
  each with ``seen_seq``, the task's event number up to which its changes were enqueued (at
  set: the task's number then, so a config hears only of what follows), and ``done`` once a
  terminal state was enqueued (a terminal task never changes again);
* ``llamon_push_deliveries``: one row per change and config (``DeliveryKey``: task, config,
  the event number of the change), holding the Task JSON as it was at that change, its status
  (``pending``, ``delivered``, ``failed``: given up), attempts, the next attempt's time and
  the last error. A server attempts a row only while it holds the row's claim
  (``claimed_until``, a lease in clock time), so one server at a time attempts it.

Every time is a Unix time from the server's clock (``core/clock.py``), passed in: tests move it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..a2a.types import INTERRUPTED_STATES, TERMINAL_STATES, PushNotificationConfig
from .base import StoredTask

__all__ = ["NOTIFIED_STATES", "Delivery", "DeliveryKey", "DeliveryRecord", "Outcome",
           "PushStore"]

#: the states a client acts on: a task stored in one of them is told to its webhooks
NOTIFIED_STATES: frozenset[str] = INTERRUPTED_STATES | TERMINAL_STATES

#: the delivery ids' namespace (``uuid5``): the same change to the same config has the same id
_DELIVERY_IDS = uuid.UUID("5e0f7a52-3c1b-4f43-9d0e-6c6c616d6f6e")

DeliveryStatus = Literal["pending", "delivered", "failed"]


@dataclass(frozen=True)
class DeliveryKey:
    task_id: str
    config_id: str
    #: the task's event number at the change (``StoredTask.event_seq`` as it was stored)
    seq: int

    @property
    def delivery_id(self) -> str:
        """``X-A2A-Delivery-Id``: stable across attempts, restarts and servers, so a receiver
        can drop a repeat. Config ids hold no control character (the edge refuses them), so
        the newline keeps the parts apart."""
        return str(uuid.uuid5(_DELIVERY_IDS, f"{self.task_id}\n{self.config_id}\n{self.seq}"))


@dataclass(frozen=True)
class Delivery:
    """A delivery this server claimed: what to send, and to which config."""

    key: DeliveryKey
    state: str
    body: bytes
    #: attempts made before this one
    attempts: int
    config: PushNotificationConfig


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended: ``delivered`` (2xx), ``pending`` (to try again at ``next_at``)
    or ``failed`` (given up); ``attempts`` counts this one."""

    status: DeliveryStatus
    attempts: int
    next_at: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class DeliveryRecord:
    """A stored delivery, for operators and tests."""

    key: DeliveryKey
    state: str
    status: DeliveryStatus
    attempts: int
    next_at: float
    last_error: str | None


class PushStore(Protocol):
    async def put_config(self, record: StoredTask, config: PushNotificationConfig, *,
                         max_configs: int) -> bool:
        """Store ``config`` (its ``id`` set) for the task: a new one hears of the changes after
        ``record.event_seq``; one with the id of an existing config replaces it (and keeps
        what was enqueued). ``False``, and nothing stored, when it would be the task's
        ``max_configs + 1``-th."""
        ...

    async def get_configs(self, task_id: str) -> list[PushNotificationConfig]:
        """The task's configs, in the order they were first set."""
        ...

    async def delete_config(self, task_id: str, config_id: str) -> None:
        """The config and its deliveries not yet made; nothing for an unknown one."""
        ...

    async def enqueue(self, record: StoredTask, body: Callable[[], bytes],
                      now: float, *, just_saved: bool = False) -> list[DeliveryKey]:
        """One delivery per config that has not seen ``record``'s change (a notified state
        at ``record.event_seq``), due at ``now``, in one transaction with the configs' new
        ``seen_seq``; ``body()`` is called only when there is one. Returns the new ones
        (none when another server enqueued them first). ``just_saved``: this process has
        just stored ``record`` (the publisher's listener), so a store may take what that
        save found instead of looking again (PostgreSQL); the sweep's reconciliation looks."""
        ...

    async def stale_tasks(self, limit: int) -> list[str]:
        """Ids of tasks stored in a notified state that some config has not seen (at most
        ``limit``; a store may return more candidates than that: the caller re-reads each)."""
        ...

    async def claim(self, key: DeliveryKey, now: float, until: float) -> Delivery | None:
        """The pending delivery, claimed until ``until``, if it is due at ``now`` and no
        claim holds it; else ``None``."""
        ...

    async def claim_due(self, now: float, until: float, limit: int) -> list[Delivery]:
        """At most ``limit`` pending deliveries due at ``now`` and unclaimed, the earliest
        first, claimed until ``until``; another server claiming at the same time gets others."""
        ...

    async def finish(self, key: DeliveryKey, outcome: Outcome, now: float) -> None:
        """Record an attempt's outcome and release the claim."""
        ...

    async def deliveries(self, task_id: str) -> list[DeliveryRecord]:
        """The task's deliveries, by change then config."""
        ...

    async def delete_tasks(self, task_ids: Sequence[str]) -> None:
        """Retention: the configs and deliveries of these tasks (``runtime/erasure.py``)."""
        ...

    async def delete_context(self, context_key: str) -> None:
        """The configs and deliveries of every task of the context (``StoredTask.context_key``)."""
        ...
