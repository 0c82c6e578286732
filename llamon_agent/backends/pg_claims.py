"""``PostgresClaims``: the per-context claim across processes (``runtime.claims.ContextClaims``).

A claim is a row of ``llamon_claims`` (``key`` primary key, ``owner`` a token of this claim,
``task_id``, ``expires_at``), taken with one statement::

    INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE llamon_claims.expires_at < now()

so exactly one of many concurrent acquirers gets the row (the others wait on the key's index
entry, then find it held), and a row whose owner stopped renewing it is taken over. Rows, not
advisory locks: a session advisory lock lives on one connection, so every held claim would pin a
pooled connection for the whole turn (50 waiting answers on 50 contexts: 50 connections) and the
release would have to come back on that connection; rows need a connection only for the
statement, say who holds them (the refused answer is told the holder's task), and work through
a transaction-pooling proxy. What a lock gives for free, freeing a dead process's claims, the
lease gives: ``expires_at`` is ``lease`` seconds ahead, and a heartbeat renews every claim this
process holds every ``lease / 3`` seconds, so a live owner's claim never expires from under it
(a claim held longer than the lease is renewed), while a dead owner's is free one lease after
its last renewal. Times are the database's clock, never a replica's.

A claim's ``task_id`` is set by the turn once its task is known (``TurnWorker.start``); the
claim notices and the heartbeat task writes it at once, so that a refused message on another
replica names the task that keeps the context busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any

from ..runtime.claims import Claim, ClaimTaken

__all__ = ["PostgresClaims"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(eq=False)
class _HeldClaim(Claim):
    owner: str = ""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        notify = self.__dict__.get("_notify")
        if name == "task_id" and notify is not None:
            notify(self)


class PostgresClaims:
    """An async context manager over a ``psycopg_pool.AsyncConnectionPool`` (the caller's):
    entering creates the table (idempotently, under an advisory lock, so replicas starting
    together do not race) and starts the heartbeat; leaving stops it and deletes the claims
    still held (a clean stop frees its contexts at once)."""

    def __init__(self, pool: Any, *, lease: float = 30.0, table: str = "llamon_claims") -> None:
        if not _NAME.match(table):
            raise ValueError(f"not a plain table name: {table!r}")
        if lease <= 0:
            raise ValueError("the lease must be positive")
        self._pool = pool
        self._lease = lease
        self._table = table
        self._held: dict[str, _HeldClaim] = {}  # owner token -> claim
        self._noted: set[str] = set()  # owners whose task id is not written yet
        self._wake = asyncio.Event()
        self._heartbeat: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> PostgresClaims:
        t = self._table
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"llamon:{t}",))
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {t} (key text PRIMARY KEY, owner text NOT NULL, "
                "task_id text, expires_at timestamptz NOT NULL)"
            )
        self._heartbeat = asyncio.create_task(self._beat(), name="llamon-claims-heartbeat")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None
        owners = list(self._held)
        self._held.clear()
        if owners:
            with contextlib.suppress(Exception):  # the database gone: the rows expire
                async with self._pool.connection() as conn:
                    await conn.execute(
                        f"DELETE FROM {self._table} WHERE owner = ANY(%s)", (owners,)
                    )

    # ------------------------------------------------------------------ ContextClaims

    async def acquire(self, key: str) -> Claim:
        if self._heartbeat is None:
            raise RuntimeError("the claims are not running (use them as an async context)")
        owner = uuid.uuid4().hex
        t = self._table
        for _ in range(3):  # the holder may release between the insert and the read
            async with self._pool.connection() as conn:
                taken = await (await conn.execute(
                    f"INSERT INTO {t} (key, owner, task_id, expires_at) "
                    "VALUES (%s, %s, NULL, now() + make_interval(secs => %s)) "
                    "ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, task_id = NULL, "
                    f"expires_at = EXCLUDED.expires_at WHERE {t}.expires_at < now() "
                    "RETURNING owner",
                    (key, owner, self._lease),
                )).fetchone()
                if taken is not None:
                    claim = _HeldClaim(key, None, owner)
                    claim._notify = self._note
                    self._held[owner] = claim
                    return claim
                holder = await (await conn.execute(
                    f"SELECT task_id FROM {t} WHERE key = %s", (key,)
                )).fetchone()
            if holder is not None:
                raise ClaimTaken(holder[0])
        raise ClaimTaken(None)

    async def release(self, claim: Claim) -> None:
        """Deletes the row only while this claim owns it (never a claim taken over since)."""
        owner = getattr(claim, "owner", None)
        if owner is None or self._held.pop(owner, None) is None:
            return
        self._noted.discard(owner)
        async with self._pool.connection() as conn:
            await conn.execute(
                f"DELETE FROM {self._table} WHERE key = %s AND owner = %s", (claim.key, owner)
            )

    async def held(self, key: str) -> bool:
        async with self._pool.connection() as conn:
            row = await (await conn.execute(
                f"SELECT 1 FROM {self._table} WHERE key = %s AND expires_at >= now()", (key,)
            )).fetchone()
        return row is not None

    # ------------------------------------------------------------------ heartbeat

    def _note(self, claim: _HeldClaim) -> None:
        if claim.owner in self._held:
            self._noted.add(claim.owner)
            self._wake.set()

    async def _beat(self) -> None:
        """Write noted task ids at once; renew every held claim every ``lease / 3`` seconds."""
        interval = self._lease / 3
        loop = asyncio.get_running_loop()
        next_renewal = loop.time() + interval
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, next_renewal - loop.time()))
            self._wake.clear()
            try:
                await self._write_task_ids()
                if loop.time() >= next_renewal:
                    next_renewal = loop.time() + interval
                    await self._renew()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database away: try again at the next beat
                log.exception("claims heartbeat failed")

    async def _write_task_ids(self) -> None:
        noted = [self._held[o] for o in list(self._noted) if o in self._held]
        self._noted.clear()
        if not noted:
            return
        async with self._pool.connection() as conn:
            await conn.execute(
                f"UPDATE {self._table} AS c SET task_id = v.task_id "
                "FROM unnest(%s::text[], %s::text[]) AS v(owner, task_id) WHERE c.owner = v.owner",
                ([c.owner for c in noted], [c.task_id for c in noted]),
            )

    async def _renew(self) -> None:
        owners = list(self._held)
        if not owners:
            return
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                f"UPDATE {self._table} SET expires_at = now() + make_interval(secs => %s) "
                "WHERE owner = ANY(%s)", (self._lease, owners),
            )
        if cursor.rowcount < len(owners):  # renewed too late: another process took some
            log.warning("%d of %d context claims were lost (not renewed within the lease)",
                        len(owners) - cursor.rowcount, len(owners))
