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

A claim's ``task_id`` is written with the row when the claim is taken for a known task (an
answer naming its task, a new task whose id is drawn first). When the turn turns out to be for
another task (an answer without ``taskId`` resumes the context's waiting task), the renewal
writes the claim's task with its new expiry: no statement of its own on every such answer. A
refusal meanwhile names the context's unfinished task, read from the task store
(``runtime.claims.busy_refusal``), which is the one such a turn is for.

A turn's end releases its claim in the transaction that stores the end (``release_with``,
``stores/turn_writes.py``): the task store deletes the row with the task's upsert, one commit
for both, and ``release`` then only forgets the claim. That needs the claims' table in the task
store's database (``with_task_saves``, as ``coordination.py`` opens them); when that save fails,
``release`` deletes the row on its own, as it always did.

A context the server has just drawn for a message that named none is claimed without a
statement (``claim_fresh``): no client can name it before the turn's first save shows it, so
that save inserts the row, in the transaction that stores the task; when that save is the one
that ends the turn (a blocking ``message/send``), the row is never written at all.

A turn's claim may bring reads along (``acquire_for`` with ``reads``, the task store's
``stores/pg_claim_reads.py``): its statement then goes in the same connection checkout as the
reads of the context's latest task and thread checkpoint that the turn makes next.

A renewal that finds a held claim's row gone or owned by another (its lease ran out, say during
a long database outage, and another process took the context) drops the claim, logs a warning
and tells ``on_lost``: the turn running under it no longer owns its context.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from ..core.background import stop_task
from ..runtime.claims import Claim, ClaimTaken
from ..stores.turn_writes import ClaimRow, TurnWrites

__all__ = ["ClaimReads", "LostClaim", "PostgresClaims"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

#: told of a held claim that a renewal found gone or owned by another process
LostClaim = Callable[[Claim], None]
#: runs the claim's statement (its SQL and parameters) with the reads of the turn whose unit
#: it is given, and returns the statement's rows (``stores/pg_claim_reads.py``)
ClaimReads = Callable[[str, tuple[Any, ...], TurnWrites], Awaitable[list[tuple[Any, ...]]]]


@dataclass(eq=False)
class _HeldClaim(Claim):
    owner: str = ""
    #: the turn's end save offered to delete the row (``release_with``)
    writes: TurnWrites | None = None
    #: a fresh context's claim: its row is written by this unit's first save (``claim_fresh``)
    born_in: TurnWrites | None = None

    @property
    def released_by_save(self) -> bool:
        return self.writes is not None and self.writes.released

    @property
    def releasing(self) -> bool:
        """A save that deletes the row runs now (its commit may be in before it returns)."""
        return self.writes is not None and self.writes.releasing

    @property
    def stored(self) -> bool:
        """Its row is in the table (or was, until a save released it)."""
        return self.born_in is None or self.born_in.claim_stored


class PostgresClaims:
    """An async context manager over a ``psycopg_pool.AsyncConnectionPool`` (the caller's, opened
    and closed by it; autocommit or not, any row factory): entering creates the table
    (idempotently, under an advisory lock, so replicas starting together do not race), deletes
    expired rows and starts the heartbeat; leaving stops it and deletes the claims still held
    (a clean stop frees its contexts at once). ``on_lost`` runs in the heartbeat task and must
    not block; it is given the very ``Claim`` that ``acquire`` returned."""

    def __init__(
        self, pool: AsyncConnectionPool[Any], *, lease: float = 30.0,
        table: str = "llamon_claims", on_lost: LostClaim | None = None,
        with_task_saves: bool = False, reads: ClaimReads | None = None,
    ) -> None:
        if not _NAME.match(table):
            raise ValueError(f"not a plain table name: {table!r}")
        if lease <= 0:
            raise ValueError("the lease must be positive")
        self._pool = pool
        self._lease = float(lease)
        self._table = table
        self._on_lost = on_lost
        #: the task store writes to the same database (``release_with``)
        self._with_task_saves = with_task_saves
        self._reads = reads
        self._held: dict[str, _HeldClaim] = {}  # owner token -> claim
        self._heartbeat: asyncio.Task[None] | None = None
        self._cleanups: set[asyncio.Task[None]] = set()

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """One statement, committed when it returns (the pool commits a connection given back
        in a transaction); rows as tuples whatever the pool's row factory."""
        async with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, params)
            return await cur.fetchall() if cur.description is not None else []

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> PostgresClaims:
        t = self._table
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"llamon:{t}",))
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {t} (key text PRIMARY KEY, owner text NOT NULL, "
                "task_id text, expires_at timestamptz NOT NULL)"
            )
            # dead processes' rows: free to take anyway, and nothing else would delete them
            await conn.execute(f"DELETE FROM {t} WHERE expires_at < now()")
        self._heartbeat = asyncio.create_task(self._beat(), name="llamon-claims-heartbeat")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._heartbeat is not None:  # stop_task: cancelled and awaited
            await stop_task(self._heartbeat)
            self._heartbeat = None
        if self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)
        held = list(self._held.values())
        self._held.clear()
        await self._delete(held)

    # ------------------------------------------------------------------ ContextClaims

    async def acquire(self, key: str, task_id: str | None = None) -> Claim:
        return await self._acquire(key, task_id, None)

    async def acquire_for(self, key: str, task_id: str | None, writes: TurnWrites) -> Claim:
        """``acquire``, with the turn's reads in the same checkout when this has ``reads``."""
        if self._reads is None:
            return await self.acquire(key, task_id)
        return await self._acquire(key, task_id, writes)

    async def _acquire(self, key: str, task_id: str | None, writes: TurnWrites | None) -> Claim:
        if self._heartbeat is None:
            raise RuntimeError("the claims are not running (use them as an async context)")
        owner = uuid.uuid4().hex
        t = self._table
        sql = (f"INSERT INTO {t} (key, owner, task_id, expires_at) "
               "VALUES (%s, %s, %s, now() + make_interval(secs => %s)) "
               "ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, "
               "task_id = EXCLUDED.task_id, "
               f"expires_at = EXCLUDED.expires_at WHERE {t}.expires_at < now() "
               "RETURNING owner")
        params = (key, owner, task_id, self._lease)
        for _ in range(3):  # the holder may release between the insert and the read
            try:
                taken = await (self._rows(sql, params) if writes is None or self._reads is None
                               else self._reads(sql, params, writes))
            except BaseException:
                # cancelled (or failed) after the row may have committed: nobody would renew
                # it, and the context would stay busy for a whole lease
                self._delete_later(_HeldClaim(key, None, owner))
                raise
            if taken:
                claim = _HeldClaim(key, task_id, owner)
                self._held[owner] = claim
                return claim
            holder = await self._rows(f"SELECT task_id FROM {t} WHERE key = %s", (key,))
            if holder:
                raise ClaimTaken(holder[0][0])
        raise ClaimTaken(None)

    async def release(self, claim: Claim) -> None:
        """Deletes the row only while this claim owns it (never a claim taken over since).
        Never raises for the database: the row of a claim not deleted expires with its lease,
        and the turn that ends must not fail for it."""
        held = self._own(claim)
        if held is None:
            return
        del self._held[held.owner]
        if held.stored and not held.released_by_save:
            await self._delete([held])

    async def claim_fresh(self, key: str, task_id: str, writes: TurnWrites) -> Claim:
        """No statement: the first save of the turn writes the row (module docstring)."""
        if not self._with_task_saves:
            return await self.acquire(key, task_id)
        if self._heartbeat is None:
            raise RuntimeError("the claims are not running (use them as an async context)")
        claim = _HeldClaim(key, task_id, uuid.uuid4().hex, born_in=writes)
        writes.claim = ClaimRow(self._table, key, claim.owner, task_id, self._lease)
        self._held[claim.owner] = claim
        return claim

    def release_with(self, claim: Claim, writes: TurnWrites) -> None:
        """The end's save deletes the row in its transaction: one commit fewer per turn."""
        held = self._own(claim)
        if held is None or not self._with_task_saves:
            return
        held.writes = writes
        writes.release = ClaimRow(self._table, held.key, held.owner)

    def _own(self, claim: Claim) -> _HeldClaim | None:
        owner = getattr(claim, "owner", None)
        held = self._held.get(owner) if isinstance(owner, str) else None
        return held if held is claim else None

    async def held(self, key: str) -> bool:
        found = await self._rows(
            f"SELECT 1 FROM {self._table} WHERE key = %s AND expires_at >= now()", (key,)
        )
        return bool(found)

    async def held_among(self, keys: Collection[str]) -> set[str]:
        if not keys:
            return set()
        found = await self._rows(
            f"SELECT key FROM {self._table} WHERE key = ANY(%s) AND expires_at >= now()",
            (list(keys),),
        )
        return {row[0] for row in found}

    # ------------------------------------------------------------------ rows

    async def _delete(self, claims: list[_HeldClaim]) -> None:
        if not claims:
            return
        try:
            await self._rows(
                f"DELETE FROM {self._table} AS c USING unnest(%s::text[], %s::text[]) "
                "AS v(key, owner) WHERE c.key = v.key AND c.owner = v.owner",
                ([c.key for c in claims], [c.owner for c in claims]),
            )
        except Exception as exc:  # the database away: the rows expire with their lease
            log.warning("could not delete %d context claim(s), they expire with their lease: "
                        "%s", len(claims), exc)

    def _delete_later(self, claim: _HeldClaim) -> None:
        task = asyncio.create_task(self._delete([claim]))
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    # ------------------------------------------------------------------ heartbeat

    async def _beat(self) -> None:
        """Renew every held claim every ``lease / 3`` seconds; a failed renewal is tried again
        at the next beat."""
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                await self._renew()
            except Exception as exc:
                log.warning("could not renew the context claims: %s", exc)

    async def _renew(self) -> None:
        """New expiries, and each claim's task as the turn knows it now (``task_id``)."""
        # a fresh context's claim whose row its first save has not written yet: nothing to
        # renew, and no other process can know the context meanwhile
        held = [claim for claim in self._held.values() if claim.stored]
        if not held:
            return
        renewed = {row[0] for row in await self._rows(
            f"UPDATE {self._table} AS c SET expires_at = now() + make_interval(secs => %s), "
            "task_id = v.task_id FROM unnest(%s::text[], %s::text[], %s::text[]) "
            "AS v(key, owner, task_id) "
            "WHERE c.key = v.key AND c.owner = v.owner RETURNING c.owner",
            (self._lease, [c.key for c in held], [c.owner for c in held],
             [c.task_id for c in held]),
        )}
        for claim in held:
            if (claim.owner in renewed or self._held.get(claim.owner) is not claim
                    or claim.released_by_save or claim.releasing):
                continue  # renewed, or released while the renewal ran
            self._lose(claim)

    def _lose(self, claim: _HeldClaim) -> None:
        self._held.pop(claim.owner, None)
        log.warning("the claim on the context of task %s was lost: it was not renewed within "
                    "its lease and another process took it over", claim.task_id)
        if self._on_lost is not None:
            try:
                self._on_lost(claim)
            except Exception:
                log.exception("on_lost failed for the claim of task %s", claim.task_id)
