"""What coordinates replicas, opened beside the storage (``create_app``'s lifespan).

* On PostgreSQL, the per-context claims are rows of the database (``pg_claims.py``), leased
  and renewed by a heartbeat; recovery takes over only the runs whose claim lapsed, at start
  and every half lease (``runtime/recovery.py`` ``LeaseRecovery``). Every server on
  PostgreSQL runs this way, one replica or many.
* With ``redis://`` events, stream events and resubscribe replay cross replicas
  (``redis_events.py``), and so do cancel requests (``redis_cancel.py``).
* Otherwise (SQLite, memory): nothing here; the ``TaskManager`` keeps its in-process parts and
  recovers everything at start, under the SQLite file lock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from ..core.ports import HumanReviewPort
from ..runtime.cancel_relay import CancelRelay
from ..runtime.claims import ContextClaims
from ..runtime.observer import NO_OBSERVER, TaskObserver
from ..runtime.publisher import EventPublisher
from ..stores.storage import Storage
from .events_url import EventsURL

__all__ = ["Coordination", "open_coordination"]


@dataclass(frozen=True)
class Coordination:
    """``TaskManager``'s replica parts; ``None`` leaves its in-process default."""

    claims: ContextClaims | None = None
    publisher: EventPublisher | None = None
    cancel_relay: CancelRelay | None = None
    takeover_every: float | None = None


@asynccontextmanager
async def open_coordination(
    storage: Storage, events: EventsURL, *, lease: float, reviews: HumanReviewPort | None,
    observer: TaskObserver = NO_OBSERVER,
) -> AsyncIterator[Coordination]:
    """Everything opened is closed on the way out, also when opening fails half-way."""
    async with AsyncExitStack() as opened:
        claims: ContextClaims | None = None
        takeover_every: float | None = None
        if storage.pool is not None:
            from ..stores.pg_claim_reads import PostgresClaimReads
            from ..stores.pg_saver import InlinePostgresSaver
            from .pg_claims import PostgresClaims

            reads = (PostgresClaimReads(storage.pool, storage.checkpointer)
                     if isinstance(storage.checkpointer, InlinePostgresSaver) else None)
            claims = await opened.enter_async_context(PostgresClaims(
                storage.pool, lease=lease, with_task_saves=True, reads=reads))
            takeover_every = lease / 2
        publisher: EventPublisher | None = None
        relay: CancelRelay | None = None
        if events.kind == "redis":
            from .redis_cancel import RedisCancelRelay
            from .redis_events import RedisPublisher

            publisher = await opened.enter_async_context(RedisPublisher(
                storage.tasks, reviews, events.url, prefix=f"{events.prefix}events:",
                observer=observer,
            ))
            relay = await opened.enter_async_context(
                RedisCancelRelay(events.url, prefix=events.prefix))
        yield Coordination(claims, publisher, relay, takeover_every)
