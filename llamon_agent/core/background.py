"""Stopping a background task for sure, when a library under it may swallow the cancel.

redis-py sends every command inside ``asyncio.wait_for(..., socket_timeout)`` (its default
``socket_timeout`` is 5 s). On Python 3.11, ``wait_for`` swallows a cancel that arrives while
the call it wraps has already completed (``except CancelledError: if fut.done(): return
fut.result()`` in ``asyncio/tasks.py``; CPython gh-86296, bpo-42130, gone in 3.12 where
``wait_for`` is built on ``asyncio.timeout``). A reader cancelled just as it sends its next ``XREAD`` then
carries on reading forever, and whoever awaits it after one ``cancel()`` hangs: that is how
the follower of another process's stream never returned from its ``__aexit__``. psycopg_pool
hands out connections inside ``wait_for`` too, so the review port's listener had the same
hang. So a stop asks again until the task is done.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["stop_task"]

log = logging.getLogger(__name__)

_AGAIN = 0.05  # seconds between cancels: a lost cancel costs at most this


async def stop_task(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` until it is done, then log what it raised (other than the cancel).

    If the caller is cancelled meanwhile, the task is cancelled once more and the caller's
    cancel goes on."""
    try:
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=_AGAIN)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())
