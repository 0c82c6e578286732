"""What a turn leaves behind is freed by reference counting, not left for the garbage
collector: each object in a reference cycle waits for a collection, and a busy server's
collections of the older generations held the event loop for tens of milliseconds, the tail
of issue 14 (bench/README.md, "Speed, round four")."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from llamon_agent.runtime.turn import Turn
from tests.conftest import serve

from .helpers import doc_agent, result_data, state_of


@contextmanager
def collector_off() -> Iterator[None]:
    """No collection runs inside: whatever is in a cycle is still there at the end."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def turns_alive() -> list[Turn]:
    return [o for o in gc.get_objects() if isinstance(o, Turn)]


async def test_a_finished_turn_is_freed_without_the_garbage_collector() -> None:
    async with serve([doc_agent()]) as client:
        with collector_off():
            for n in range(3):  # ask, answer, answer: three turns of one task each time
                context = f"case-{n}"
                await client.send("이 서류를 검증해줘", context_id=context,
                                  agent_id="document-review")
                await client.send("여권", context_id=context)
                done = await client.send("1990-01-01", context_id=context)
                assert state_of(done) == "completed"
                assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}
            for _ in range(100):  # the last runner hands its turn back just after the reply
                if not turns_alive():
                    break
                await asyncio.sleep(0.01)
            assert turns_alive() == []
