"""``PostgresClaims`` on a real PostgreSQL: one holder among 50 acquirers on two pools, a lease
that the heartbeat renews and that a silent holder loses, ``on_lost`` for a claim found taken
over, a table created once however many start, and rows deleted on the way out. The contract
it shares with ``LocalClaims`` is ``tests/runtime/test_claims_contract.py``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest

from llamon_agent.runtime.claims import Claim, ClaimTaken

from .pg import open_pool, rows, until

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from llamon_agent.backends.pg_claims import PostgresClaims  # noqa: E402 (needs psycopg)

LEASE = 0.3  # seconds: renewed every 0.1 s


class FlakyPool:
    """A replica's pool whose database can go away (``down``): a killed process, or an outage
    long enough for its claims to expire. ``cancel_after_next``: the next statement commits,
    then its caller is cancelled (a client gone at the worst moment)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.down = False
        self.cancel_after_next = False
        #: the next statement waits for this event before it runs; ``paused`` is set meanwhile
        self.pause_next: asyncio.Event | None = None
        self.paused = asyncio.Event()
        #: the next statement waits until cancelled and swallows that cancel, as psycopg_pool's
        #: ``wait_for`` can on Python 3.11; ``swallowing`` is set while it waits
        self.lose_next_cancel = False
        self.swallowing = asyncio.Event()
        self.lost = 0

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        if self.down:
            raise psycopg.OperationalError("the database is away (test)")
        if self.lose_next_cancel:
            self.lose_next_cancel = False
            self.swallowing.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.lost += 1  # the caller goes on as if the call had failed
            raise psycopg.OperationalError("a cancel was lost (test)")
        if self.pause_next is not None:
            gate, self.pause_next = self.pause_next, None
            self.paused.set()
            await gate.wait()
        async with self._pool.connection() as conn:
            yield conn
        if self.cancel_after_next:
            self.cancel_after_next = False
            raise asyncio.CancelledError


async def claim_rows(url: str) -> list[tuple[Any, ...]]:
    return await rows(url, "SELECT key, task_id FROM llamon_claims ORDER BY key")


async def database_passed(url: str, moment: datetime) -> bool:
    """The database's clock (the only one leases are measured by) is past ``moment``."""
    return bool((await rows(url, "SELECT now() > %s", (moment,)))[0][0])


async def expiry(url: str, key: str) -> datetime:
    found = await rows(url, "SELECT expires_at FROM llamon_claims WHERE key = %s", (key,))
    assert len(found) == 1
    moment = found[0][0]
    assert isinstance(moment, datetime)
    return moment


async def refused(claims: PostgresClaims, key: str) -> str | None:
    with pytest.raises(ClaimTaken) as taken:
        await claims.acquire(key)
    return taken.value.task_id


async def test_fifty_acquires_across_two_pools_have_exactly_one_winner(postgres_url: str) -> None:
    """Two processes' pools (one as the package builds it, one with psycopg's defaults), two
    claim objects on each: one acquire wins, 49 are refused, and once the winner's task is
    known (written at the claim's next renewal) every object's refusal names it."""
    async with (open_pool(postgres_url) as ours, open_pool(postgres_url, plain=True) as plain,
                AsyncExitStack() as stack):
        objects = [await stack.enter_async_context(PostgresClaims(p, lease=LEASE))
                   for p in (ours, plain, ours, plain)]
        outcomes = await asyncio.gather(
            *(objects[i % 4].acquire("s:c1") for i in range(50)), return_exceptions=True
        )
        won = [o for o in outcomes if isinstance(o, Claim)]
        lost = [o for o in outcomes if isinstance(o, ClaimTaken)]
        assert (len(won), len(lost)) == (1, 49), outcomes
        assert {taken.task_id for taken in lost} == {None}
        assert await claim_rows(postgres_url) == [("s:c1", None)]

        won[0].task_id = "task-1"

        async def written() -> bool:
            return await claim_rows(postgres_url) == [("s:c1", "task-1")]

        await until(written)
        assert [await refused(o, "s:c1") for o in objects] == ["task-1"] * 4


async def test_the_heartbeat_keeps_a_claim_past_many_leases(postgres_url: str) -> None:
    async with (open_pool(postgres_url) as pool, PostgresClaims(pool, lease=LEASE) as a,
                PostgresClaims(pool, lease=LEASE) as b):
        await a.acquire("s:c1")
        first = await expiry(postgres_url, "s:c1")

        async def three_leases_on() -> bool:  # the first lease ran out two leases ago
            return await database_passed(postgres_url, first + timedelta(seconds=2 * LEASE))

        await until(three_leases_on)
        assert await refused(b, "s:c1") is None
        assert await b.held("s:c1") is True
        assert await expiry(postgres_url, "s:c1") > first + timedelta(seconds=2 * LEASE)


async def test_a_silent_holder_loses_its_claim_once_it_expires(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Replica A loses its database (killed, or a long outage): its claim is refused to B
    until it expires by the database's clock, then B takes it over. When A's database comes
    back, its renewal finds the claim gone: ``on_lost`` is told once, A's release and A's exit
    leave B's claim alone."""
    caplog.set_level(logging.WARNING, logger="llamon_agent.backends.pg_claims")
    lost: list[Claim] = []
    async with open_pool(postgres_url) as pool, PostgresClaims(pool, lease=LEASE) as b:
        flaky = FlakyPool(pool)
        async with PostgresClaims(flaky, lease=LEASE, on_lost=lost.append) as a:
            old = await a.acquire("s:c1")
            old.task_id = "task-old"

            async def written() -> bool:
                return await claim_rows(postgres_url) == [("s:c1", "task-old")]

            await until(written)
            flaky.down = True
            refusals: list[str | None] = []
            taken_over: list[Claim] = []

            async def b_takes_it() -> bool:
                try:
                    taken_over.append(await b.acquire("s:c1"))
                except ClaimTaken as taken:
                    refusals.append(taken.task_id)
                return bool(taken_over)

            await until(b_takes_it)
            assert set(refusals) <= {"task-old"}  # never another holder, never none
            new = taken_over[0]
            assert (new.key, new.task_id) == ("s:c1", None)
            assert await claim_rows(postgres_url) == [("s:c1", None)]
            assert await database_passed(postgres_url, await expiry(postgres_url, "s:c1")) \
                is False
            assert lost == []

            flaky.down = False

            async def told() -> bool:
                return bool(lost)

            await until(told)
            assert lost == [old]
            await a.release(old)
            assert await b.held("s:c1") is True
            assert await claim_rows(postgres_url) == [("s:c1", None)]
        assert await claim_rows(postgres_url) == [("s:c1", None)]  # A's exit left it
        assert await refused(b, "s:c1") is None
        assert lost == [old]  # told once, however many renewals followed
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                    and r.name == "llamon_agent.backends.pg_claims" and "lost" in r.message]
        assert len(warnings) == 1 and "task-old" in warnings[0].message


async def test_on_lost_names_exactly_the_claims_taken_over_or_gone(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A renewal that finds one claim's row owned by another and another's deleted reports
    those two, once each, and keeps renewing the third, also when ``on_lost`` raises (its
    error is logged for each claim, and does not fail the renewal)."""
    caplog.set_level(logging.WARNING, logger="llamon_agent.backends.pg_claims")
    lost: list[Claim] = []

    def on_lost(claim: Claim) -> None:
        lost.append(claim)
        raise RuntimeError("the callback failed (test)")

    async with (open_pool(postgres_url) as pool,
                PostgresClaims(pool, lease=LEASE, on_lost=on_lost) as a):
        taken, gone, kept = [await a.acquire(f"s:c{i}") for i in (1, 2, 3)]
        await rows(postgres_url, "UPDATE llamon_claims SET owner = 'another', task_id = 't9',"
                                 " expires_at = now() + interval '1 hour' WHERE key = 's:c1'")
        await rows(postgres_url, "DELETE FROM llamon_claims WHERE key = 's:c2'")
        then = await expiry(postgres_url, "s:c3")

        async def both_told() -> bool:
            return len(lost) >= 2

        await until(both_told)
        assert sorted(c.key for c in lost) == ["s:c1", "s:c2"]
        assert {id(c) for c in lost} == {id(taken), id(gone)}

        async def two_leases_on() -> bool:
            return await database_passed(postgres_url, then + timedelta(seconds=LEASE))

        await until(two_leases_on)
        assert await a.held("s:c3") is True  # still renewed: the callback's error was caught
        assert len(lost) == 2
        await a.release(taken)  # already lost: another owns the row
        assert await claim_rows(postgres_url) == [("s:c1", "t9"), ("s:c3", None)]
        await a.release(kept)
        assert await claim_rows(postgres_url) == [("s:c1", "t9")]
    messages = [(r.levelname, r.getMessage()) for r in caplog.records
                if r.name == "llamon_agent.backends.pg_claims"]
    assert [level for level, m in messages if m.startswith("on_lost failed")] == ["ERROR"] * 2
    assert [m for _, m in messages if m.startswith("could not")] == []


async def test_releasing_a_claim_taken_over_before_the_heartbeat_noticed_does_nothing(
    postgres_url: str,
) -> None:
    async with open_pool(postgres_url) as pool, PostgresClaims(pool) as a:  # renews in 10 s
        claim = await a.acquire("s:c1")
        await rows(postgres_url, "UPDATE llamon_claims SET owner = 'another', task_id = 't9'"
                                 " WHERE key = 's:c1'")
        await a.release(claim)
        assert await claim_rows(postgres_url) == [("s:c1", "t9")]
        assert await refused(a, "s:c1") == "t9"


async def test_a_claim_released_while_a_renewal_runs_is_not_reported_lost(
    postgres_url: str,
) -> None:
    lost: list[Claim] = []
    async with open_pool(postgres_url) as pool:
        flaky = FlakyPool(pool)
        async with PostgresClaims(flaky, lease=LEASE, on_lost=lost.append) as a:
            released, kept = await a.acquire("s:c1"), await a.acquire("s:c2")
            gate = flaky.pause_next = asyncio.Event()
            try:
                async with asyncio.timeout(5):
                    await flaky.paused.wait()  # the next renewal, about to renew both
                await a.release(released)
                assert await claim_rows(postgres_url) == [("s:c2", None)]
            finally:
                gate.set()
            for _ in range(2):  # the paused renewal, then one with only the kept claim
                then = await expiry(postgres_url, "s:c2")

                async def renewed_since(then: datetime = then) -> bool:
                    return await expiry(postgres_url, "s:c2") > then

                await until(renewed_since)
            assert lost == []
            assert await a.held("s:c2") is True
            await a.release(kept)


async def test_claims_starting_together_create_the_table_once(postgres_url: str) -> None:
    async with (open_pool(postgres_url) as p1, open_pool(postgres_url, plain=True) as p2,
                AsyncExitStack() as stack):
        objects = [PostgresClaims(p) for p in (p1, p2) * 4]
        await asyncio.gather(*(stack.enter_async_context(o) for o in objects))
        tables = await rows(postgres_url, "SELECT COUNT(*) FROM pg_tables"
                                          " WHERE tablename = 'llamon_claims'"
                                          " AND schemaname = current_schema()")
        assert tables == [(1,)]
        claim = await objects[0].acquire("s:c1")
        assert [await refused(o, "s:c1") for o in objects[1:]] == [None] * 7
        await objects[0].release(claim)
    async with open_pool(postgres_url) as pool, PostgresClaims(pool) as again:  # exists now
        assert (await again.acquire("s:c1")).key == "s:c1"


async def test_leaving_deletes_the_claims_still_held_and_only_them(postgres_url: str) -> None:
    async with open_pool(postgres_url) as pool, PostgresClaims(pool) as b:
        async with PostgresClaims(pool) as a:
            c1, c2, _ = [await a.acquire(f"s:c{i}") for i in (1, 2, 3)]
            c1.task_id = "t1"
            await a.release(c2)
            await b.acquire("s:c4")
            assert [key for key, _ in await claim_rows(postgres_url)] == ["s:c1", "s:c3", "s:c4"]
        assert await claim_rows(postgres_url) == [("s:c4", None)]
        assert (await b.held("s:c1"), await b.held("s:c3")) == (False, False)
        with pytest.raises(RuntimeError, match="not running"):
            await a.acquire("s:c5")


async def test_leaving_ends_the_heartbeat_although_it_lost_a_cancel(postgres_url: str) -> None:
    """Before, one lost cancel left the heartbeat running and leaving waited for it forever
    (a CI run hung here for 300 s)."""
    async with open_pool(postgres_url) as pool:
        flaky = FlakyPool(pool)

        async def body() -> None:
            async with PostgresClaims(flaky, lease=LEASE) as claims:
                await claims.acquire("s:c1")
                flaky.lose_next_cancel = True
                await flaky.swallowing.wait()  # the heartbeat's renewal is inside the call

        running = asyncio.ensure_future(body())
        await asyncio.wait({running}, timeout=5)  # from outside: a lost cancel eats timeouts
        assert running.done(), "leaving waited for the heartbeat forever"
        running.result()
        assert flaky.lost == 1


async def test_release_and_exit_without_the_database_do_not_raise(postgres_url: str) -> None:
    """A turn's end must not fail because the database is away: the lease frees the rows."""
    async with open_pool(postgres_url) as pool:
        flaky = FlakyPool(pool)
        async with PostgresClaims(flaky, lease=LEASE) as a:
            c1 = await a.acquire("s:c1")
            await a.acquire("s:c2")
            flaky.down = True
            await a.release(c1)
        assert [key for key, _ in await claim_rows(postgres_url)] == ["s:c1", "s:c2"]
        async with PostgresClaims(pool, lease=LEASE) as b:
            async def expired() -> bool:
                return not (await b.held("s:c1") or await b.held("s:c2"))

            await until(expired)
            assert await b.held_among({"s:c1", "s:c2"}) == set()
            assert (await b.acquire("s:c1")).key == "s:c1"
            assert await b.held_among({"s:c1", "s:c2"}) == {"s:c1"}


async def test_an_acquire_cancelled_after_its_row_committed_leaves_no_claim(
    postgres_url: str,
) -> None:
    """Nobody would renew or release that row: without a clean-up the context would stay busy
    (refused with no task) for a whole lease."""
    async with open_pool(postgres_url) as pool:
        flaky = FlakyPool(pool)
        async with PostgresClaims(flaky) as a, PostgresClaims(pool) as b:
            flaky.cancel_after_next = True
            with pytest.raises(asyncio.CancelledError):
                await a.acquire("s:c1")

            async def cleaned() -> bool:
                return await claim_rows(postgres_url) == []

            await until(cleaned)
            assert (await b.acquire("s:c1")).key == "s:c1"


async def test_starting_deletes_only_the_expired_claims_of_dead_processes(
    postgres_url: str,
) -> None:
    async with open_pool(postgres_url) as pool:
        async with PostgresClaims(pool):
            pass
        await rows(postgres_url, "INSERT INTO llamon_claims (key, owner, task_id, expires_at)"
                                 " VALUES ('s:dead', 'gone', 't1', now() - interval '1 second'),"
                                 " ('s:live', 'other', 't2', now() + interval '1 hour')")
        async with PostgresClaims(pool) as a:
            assert await claim_rows(postgres_url) == [("s:live", "t2")]
            assert await refused(a, "s:live") == "t2"
