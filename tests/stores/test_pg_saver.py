"""The PostgreSQL storage's checkpointer serialises on the event loop (``stores/pg_saver.py``):
a HITL round trip through the storage's saver hands nothing to a worker thread, a plain
``AsyncPostgresSaver`` in the same process still does, and each reads what the other wrote."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.types import Command

from llamon_agent.stores.storage import open_storage
from tests.stores.ask_graph import ask_graph

pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver


def _threads_used(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the functions handed to a worker thread from now on."""
    handed: list[str] = []
    to_thread = asyncio.to_thread

    async def recorded(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(func, "__name__", repr(func)))
        return await to_thread(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", recorded)
    return handed


async def _round_trip(saver: Any, thread_id: str) -> dict[str, Any]:
    graph = ask_graph(saver)
    config = {"configurable": {"thread_id": thread_id}}
    asked = await graph.ainvoke({"answers": ["first"]}, config)
    assert [i.value for i in asked["__interrupt__"]] == [{"question": "which document?"}]
    done: dict[str, Any] = await graph.ainvoke(Command(resume="passport"), config)
    return done


async def test_the_storage_saver_serialises_inline_and_others_keep_their_threads(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with open_storage(postgres_url) as storage:
        assert storage.pool is not None
        handed = _threads_used(monkeypatch)
        done = await _round_trip(storage.checkpointer, "inline")
        assert done == {"answers": ["first", "passport"]}
        assert handed == []  # before: _dump_blobs, _dump_writes and _load_writes, every turn

        plain = AsyncPostgresSaver(storage.pool)
        assert await _round_trip(plain, "threaded") == {"answers": ["first", "passport"]}
        assert {"_dump_blobs", "_dump_writes"} <= set(handed)

        # the same rows: each saver reads the other's thread as the writer left it
        for reader, writer in ((plain, storage.checkpointer), (storage.checkpointer, plain)):
            thread = "inline" if writer is storage.checkpointer else "threaded"
            state = await ask_graph(reader).aget_state({"configurable": {"thread_id": thread}})
            assert state.values == {"answers": ["first", "passport"]} and not state.next
