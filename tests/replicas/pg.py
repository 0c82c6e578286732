"""A connection pool for the PostgreSQL claim tests: built as the package's own pool is
(``stores.postgres.CONNECTION_KWARGS``: autocommit, dict rows), or with psycopg's defaults
(``plain=True``: a transaction per checkout, tuple rows), so the claims are proved on both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
from psycopg_pool import AsyncConnectionPool

from llamon_agent.stores.postgres import CONNECTION_KWARGS

__all__ = ["open_pool", "rows", "until"]


@asynccontextmanager
async def open_pool(url: str, *, plain: bool = False,
                    max_size: int = 10) -> AsyncIterator[AsyncConnectionPool[Any]]:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, min_size=1, max_size=max_size, kwargs=None if plain else CONNECTION_KWARGS,
        open=False,
    )
    await pool.open(wait=True, timeout=10)
    try:
        yield pool
    finally:
        await pool.close()


async def rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """A query on a connection of its own (what another process would see)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(sql, params)
        return await cur.fetchall() if cur.description is not None else []


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.01)
