"""``InlinePostgresSaver``: LangGraph's ``AsyncPostgresSaver`` with its serialisation run on the
event loop instead of in a worker thread.

``AsyncPostgresSaver`` serialises channel values and pending writes in the default executor
(``asyncio.to_thread`` in ``aput``, ``aput_writes`` and ``aget_tuple``): several thread hops per
turn, each waking a worker thread, handing the result back through the loop's self-pipe and
passing the GIL twice, for values the edge bounds (``core/bounds.py``). Under 16 HITL users on
PostgreSQL the server did 14-20% more round trips per second, with 0.7 ms less CPU per round
trip, once the serialisation ran inline (bench/README.md, "Speed, round five"). The SQLite
saver serialises inline too (``sqlite.InlineSqliteSaver``). What the saver stores, and how, is
``AsyncPostgresSaver``'s, unchanged: a plain ``AsyncPostgresSaver`` reads it.

How, and why here: ``langgraph.checkpoint.postgres.aio`` calls ``asyncio.to_thread`` through its
module global ``asyncio``. Importing this module replaces that global, once, by a proxy whose
``to_thread`` runs a call inline when it is a method of an ``InlinePostgresSaver`` and hands
every other call to ``asyncio.to_thread`` as before, so other ``AsyncPostgresSaver``s in the
process keep their threads. This is the only use of langgraph-checkpoint-postgres's internals;
the dependency is capped to the tested minor version in ``pyproject.toml``, and
tests/stores/test_pg_saver.py fails when the module no longer calls through that global.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import langgraph.checkpoint.postgres.aio as _aio
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

__all__ = ["InlinePostgresSaver"]

_T = TypeVar("_T")


class InlinePostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` whose serialisation runs on the event loop (module docstring)."""


class _AsyncioAsTheSaversSeeIt:
    """``asyncio`` for ``langgraph.checkpoint.postgres.aio``: itself, but for ``to_thread``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def to_thread(func: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        if isinstance(getattr(func, "__self__", None), InlinePostgresSaver):
            return func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)


def _install() -> None:
    if getattr(_aio, "asyncio", None) is not asyncio and not isinstance(
        getattr(_aio, "asyncio", None), _AsyncioAsTheSaversSeeIt
    ):
        raise ImportError(
            "langgraph.checkpoint.postgres.aio no longer calls asyncio through its module "
            "global; llamon_agent/stores/pg_saver.py must be revised for this version"
        )
    _aio.asyncio = _AsyncioAsTheSaversSeeIt()  # type: ignore[assignment]


_install()
