"""``RedisPipe`` on a real Redis, through a proxy that can hold or cut its connection: batches
sent at once on one connection, each given exactly its own replies in the order sent; nothing
lost when a caller is cancelled; a lost or silent connection fails only the batches sent on it,
and the next batch opens a new one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llamon_agent.backends.redis_pipe import RedisPipe
from tests.backends_redis import REDIS_URL, fresh_prefix
from tests.replicas.redis_proxy import RedisProxy, redis_client


@asynccontextmanager
async def piped(*, reply_timeout: float = 5.0) -> AsyncIterator[tuple[RedisPipe, RedisProxy]]:
    async with RedisProxy() as proxy, redis_client(proxy.url) as client, asyncio.timeout(20), \
            RedisPipe(client, reply_timeout=reply_timeout) as pipe:
        yield pipe, proxy


async def stream(key: str) -> list[bytes]:
    async with redis_client() as client:
        entries: Any = await client.xrange(key, "-", "+")  # redis-py types every reply loosely
        return [fields[b"n"] for _, fields in entries]


async def test_batches_go_out_at_once_on_one_connection_each_with_its_own_replies(
    redis_prefix: str,
) -> None:
    key = f"{redis_prefix}s"
    async with piped() as (pipe, proxy):
        sent = [pipe.send([("XADD", key, "*", "n", str(n)), ("ECHO", f"batch {n}")])
                for n in range(200)]
        replies = await asyncio.gather(*sent)
        assert [r[1] for r in replies] == [f"batch {n}".encode() for n in range(200)]
        assert all(isinstance(r[0], bytes) and b"-" in r[0] for r in replies)  # stream ids
        assert pipe.connections_opened == 1 and proxy.connections == 1
    assert await stream(key) == [str(n).encode() for n in range(200)]


async def test_a_refused_command_is_its_reply_and_the_rest_of_the_batch_stands(
    redis_prefix: str,
) -> None:
    key = f"{redis_prefix}s"
    async with piped() as (pipe, _):
        replies = await pipe.send([("XADD", key, "*", "n", "1"), ("INCR", key),
                                   ("PEXPIRE", key, 60_000)])
    assert isinstance(replies[1], hiredis.ReplyError) and "WRONGTYPE" in str(replies[1])
    assert replies[2] == 1
    assert await stream(key) == [b"1"]


async def test_a_batch_is_done_only_once_redis_answers_and_a_cancelled_caller_drops_nothing(
    redis_prefix: str,
) -> None:
    key = f"{redis_prefix}s"
    async with piped() as (pipe, proxy):
        await pipe.send([("PING",)])  # connected
        proxy.hold()
        first = pipe.send([("XADD", key, "*", "n", "1")])

        async def caller() -> None:
            await first

        waiter = asyncio.create_task(caller())
        await asyncio.sleep(0.2)
        assert not first.done() and proxy.held_bytes > 0
        waiter.cancel()  # the caller gives up (its future with it): the batch is sent anyway
        await asyncio.gather(waiter, return_exceptions=True)
        assert first.cancelled()
        second = pipe.send([("ECHO", "second")])
        proxy.release()
        assert await asyncio.wait_for(second, 5) == [b"second"]  # not the first batch's reply
    assert await stream(key) == [b"1"]


async def test_a_lost_connection_fails_its_batches_and_the_next_one_reconnects(
    redis_prefix: str,
) -> None:
    key = f"{redis_prefix}s"
    async with piped() as (pipe, proxy):
        await pipe.send([("PING",)])
        proxy.hold()
        lost = pipe.send([("XADD", key, "*", "n", "1")])
        await asyncio.sleep(0.1)
        proxy.cut()
        proxy.release()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(lost, 5)
        assert await asyncio.wait_for(pipe.send([("XADD", key, "*", "n", "2")]), 5)
        assert pipe.connections_opened == 2 and proxy.connections == 2
    assert await stream(key) == [b"2"]


async def test_redis_answering_nothing_fails_the_batch_after_the_timeout_and_no_late_reply_is_misread(
) -> None:
    async with piped(reply_timeout=0.5) as (pipe, proxy):
        await pipe.send([("PING",)])
        proxy.hold()
        silent = pipe.send([("ECHO", "old")])
        with pytest.raises(ConnectionError, match="answered nothing"):
            await asyncio.wait_for(silent, 5)
        proxy.release()  # the old request reaches Redis now: its reply must not be taken
        assert await asyncio.wait_for(pipe.send([("ECHO", "new")]), 5) == [b"new"]
        assert pipe.connections_opened == 2


async def test_a_redis_that_cannot_be_reached_fails_the_batch() -> None:
    unused = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = unused.sockets[0].getsockname()[1]
    unused.close()
    await unused.wait_closed()
    async with redis_client(f"redis://127.0.0.1:{port}/0") as client, \
            RedisPipe(client, reply_timeout=2) as pipe:
        with pytest.raises(ConnectionError, match="could not connect"):
            await asyncio.wait_for(pipe.send([("PING",)]), 5)


async def test_closing_waits_for_the_replies_due_and_refuses_later_batches(
    redis_prefix: str,
) -> None:
    key = f"{redis_prefix}s"
    async with piped() as (pipe, _):
        sent = pipe.send([("XADD", key, "*", "n", "1")])  # not connected yet: queued
    assert sent.done() and isinstance(sent.result()[0], bytes)
    with pytest.raises(ConnectionError, match="closed"):
        await pipe.send([("PING",)])
    assert await stream(key) == [b"1"]


def test_the_reply_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="reply_timeout"):
        RedisPipe(object(), reply_timeout=0)


_ROUNDS = st.lists(st.tuples(
    st.booleans(),  # held: Redis gets nothing of the round's batches until its end
    st.lists(st.integers(1, 4), min_size=1, max_size=4),  # the round's batches, by size
    st.sampled_from(["release", "cut", "silence"]),  # how the round ends
), min_size=1, max_size=5)
_TIMEOUT = 0.2


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=_ROUNDS)
def test_every_batch_gets_its_own_replies_or_fails_whatever_the_connection_does(
    rounds: list[tuple[bool, list[int], str]],
) -> None:
    """Rounds of batches, each round's traffic held or not, ending with Redis answering, the
    connection cut, or Redis silent past the timeout: a batch gets exactly its own replies, or
    ``ConnectionError`` when Redis cannot have answered it; never another batch's replies, and
    the next round works on a new connection."""
    with fresh_prefix():  # skips (or fails under CI) without Redis
        asyncio.run(_run_rounds(rounds))


async def _run_rounds(rounds: list[tuple[bool, list[int], str]]) -> None:
    async with piped(reply_timeout=_TIMEOUT) as (pipe, proxy):
        for number, (held, sizes, end) in enumerate(rounds):
            if held:
                proxy.hold()
            sent = []
            for batch, size in enumerate(sizes):
                words = [f"{number}.{batch}.{i}".encode() for i in range(size)]
                sent.append((words, pipe.send([("ECHO", w) for w in words])))
            await asyncio.sleep(0.01)
            if end == "cut":
                proxy.cut()
                # the pipe notices within a few loop turns; a batch sent before that fails
                await asyncio.sleep(0.05)
            elif end == "silence":
                await asyncio.sleep(_TIMEOUT * 2)
            proxy.release()
            for words, done in sent:
                try:
                    replies = await asyncio.wait_for(done, 5)
                except ConnectionError:
                    assert end == "cut" or (held and end == "silence"), (number, words)
                    continue
                assert not held or end == "release", (number, words)
                assert replies == words


async def test_the_connection_is_opened_as_the_url_says(redis_prefix: str) -> None:
    """User, password and database from the client's URL (redis-py opens the connection): a
    user allowed only the test's keys writes those, is refused the others (a refused command
    is its reply), and a wrong password fails the batch with the reason."""
    user, password = f"{redis_prefix.rstrip(':')}_user", "s3cret-pw"
    async with redis_client() as admin:
        await admin.acl_setuser(user, enabled=True, passwords=[f"+{password}"],
                                keys=[f"{redis_prefix}*"], commands=["+@all"])
        try:
            async with redis_client(_as_user(user, password)) as client, \
                    RedisPipe(client, reply_timeout=5) as pipe:
                allowed, refused, who, info = await pipe.send([
                    ("XADD", f"{redis_prefix}s", "*", "n", "1"),
                    ("XADD", "llamon_other:s", "*", "n", "1"),
                    ("ACL", "WHOAMI"), ("CLIENT", "INFO")])
            assert isinstance(allowed, bytes)
            assert isinstance(refused, hiredis.ReplyError) and "NOPERM" in str(refused)
            assert who == user.encode()
            assert f" db={urlsplit(REDIS_URL).path.strip('/') or 0} ".encode() in info
            async with redis_client(_as_user(user, "wrong")) as client, \
                    RedisPipe(client, reply_timeout=5) as pipe:
                with pytest.raises(ConnectionError, match="could not connect"):
                    await pipe.send([("PING",)])
        finally:
            await admin.acl_deluser(user)
    assert await stream(f"{redis_prefix}s") == [b"1"]


def _as_user(user: str, password: str) -> str:
    """The test Redis's URL, signed in as ``user``."""
    parts = urlsplit(REDIS_URL)
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port or 6379}"))


async def test_a_stalled_loop_is_not_taken_for_a_silent_redis() -> None:
    """The loop blocked past the timeout (a long collection, a blocking call) while Redis
    answered: the reply waiting in the socket is read before the timeout is judged."""
    async with redis_client() as client, RedisPipe(client, reply_timeout=0.2) as pipe:
        await pipe.send([("PING",)])  # connected
        sent = pipe.send([("ECHO", "late")])
        time.sleep(0.5)  # the loop stalls; Redis answers meanwhile
        assert await asyncio.wait_for(sent, 5) == [b"late"]
        assert pipe.connections_opened == 1
