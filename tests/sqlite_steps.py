"""The steps of SQLite's virtual machine a call's statements take on one connection: a count of
the work a read does, which no busy machine moves. The tests that hold a read to the rows it
needs compare it at two sizes of a file (bench/README.md, rounds twenty-seven and
twenty-eight)."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def vm_steps(conn: sqlite3.Connection, call: Callable[[], Awaitable[T]]) -> tuple[int, T]:
    """``call``'s result, and the steps its statements on ``conn`` took."""
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0  # go on

    conn.set_progress_handler(step, 1)
    try:
        result = await call()
    finally:
        conn.set_progress_handler(None, 1)
    return steps, result
