"""bench/in_process.py drives the app as ASGI, as the served benchmark does over HTTP: its HITL
round trips end ``completed`` and its CPU figure counts them (a short run, no speed asserted)."""

from __future__ import annotations

import cProfile
from pathlib import Path

import pytest

from bench.in_process import call, measure, profile_table, round_trip, task_in_state


async def test_round_trips_run_and_are_counted(tmp_path: Path) -> None:
    profiler = cProfile.Profile()
    cpu_ms, done = await measure("sqlite", 2, 0.3, profiler, str(tmp_path))
    assert done > 0
    assert cpu_ms > 0
    table = profile_table(profiler, done)
    assert "| ours (llamon_agent) |" in table
    assert "| LangGraph |" in table


async def test_an_answer_that_is_not_the_expected_task_stops_the_run(tmp_path: Path) -> None:
    from bench.agents import build_agents
    from llamon_agent import create_app

    app = create_app(build_agents(), db=str(tmp_path / "t.db"))
    async with app.router.lifespan_context(app):
        await round_trip(app)
        unknown = b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}'
        answer = await call(app, unknown)
        assert answer["error"]["code"] == -32001
        with pytest.raises(RuntimeError, match="expected a task in completed"):
            task_in_state(answer, "completed")


async def test_a_task_answer_is_read_from_its_head_and_anything_else_refused(
    tmp_path: Path,
) -> None:
    """``task_id_in_state`` reads what the parsed answer says, and refuses as ``task_in_state``
    does what is not a task in the expected state."""
    import orjson

    from bench.agents import build_agents
    from bench.hitl_client import send_body
    from bench.in_process import _TASK_ANSWER, call_raw, task_id_in_state
    from llamon_agent import create_app

    app = create_app(build_agents(), db=str(tmp_path / "t.db"))
    async with app.router.lifespan_context(app):
        asked = await call_raw(app, send_body("hitl", "start", context_id="c-1"))
        assert _TASK_ANSWER.match(asked) is not None  # the head, not the fallback
        parsed = task_in_state(orjson.loads(asked), "input-required")
        assert task_id_in_state(asked, "input-required") == parsed["id"]
        with pytest.raises(RuntimeError, match="expected a task in completed"):
            task_id_in_state(asked, "completed")
        unknown = b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}'
        with pytest.raises(RuntimeError, match="expected a task in working"):
            task_id_in_state(await call_raw(app, unknown), "working")
        done = await call_raw(app, send_body("hitl", "an answer", context_id="c-1",
                                             task_id=parsed["id"]))
        assert task_id_in_state(done, "completed") == parsed["id"]
