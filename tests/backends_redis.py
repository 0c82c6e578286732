"""Redis fixtures for the external backends (beside the PostgreSQL ones in ``tests/backends.py``).

Redis is shared with other work on the machine: each test gets a random key prefix
(``llamon_t_<random>:``) and, at its end, exactly the keys under that prefix are deleted
(``SCAN MATCH`` + ``UNLINK``; never ``FLUSHDB``). Redis not reachable skips the test with the
reason, and fails it under ``CI=true``.

``LLAMON_TEST_REDIS_URL`` points the tests at another server (default
``redis://127.0.0.1:6379/0``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import pytest

from tests.backends import unavailable

REDIS_URL = os.environ.get("LLAMON_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

__all__ = ["REDIS_URL", "fresh_prefix", "keys_under", "redis_prefix"]


async def keys_under(prefix: str) -> list[bytes]:
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        return sorted([key async for key in client.scan_iter(match=f"{prefix}*", count=500)])
    finally:
        await client.aclose()


@contextmanager
def fresh_prefix() -> Iterator[str]:
    """``redis_prefix`` for a synchronous fixture of any scope (servers a module's tests share):
    the same skip, the same cleanup."""
    try:
        from redis import Redis
        from redis.exceptions import RedisError
    except ImportError:
        unavailable("redis is not installed (pip install -e '.[redis]')")
    client = Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        client.ping()
    except (RedisError, OSError) as exc:
        client.close()
        unavailable(f"Redis is not reachable at {REDIS_URL}: {exc}".strip())
    prefix = f"llamon_t_{uuid.uuid4().hex[:12]}:"
    try:
        yield prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.unlink(*keys)
        client.close()


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A key prefix of this test alone; its keys are deleted after the test."""
    with fresh_prefix() as prefix:
        yield prefix
