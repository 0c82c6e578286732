"""bench/loop_work.py counts what a round trip asks of the event loop, on the loop that runs it,
and names where the tasks come from; the wrapping is undone after the measurement."""

from __future__ import annotations

import asyncio

from bench.loop_work import METHODS, LoopWork, _count_on, _measure, langgraph_alone, report, served


async def test_counts_the_loops_calls_and_names_their_callers() -> None:
    async def step() -> None:
        await asyncio.sleep(0)

    async def round_trip() -> None:
        await asyncio.gather(*(asyncio.ensure_future(step()) for _ in range(3)))
        asyncio.get_running_loop().call_later(60, lambda: None).cancel()

    work = await _measure(round_trip, round_trips=4, warmup=1)
    assert work.calls["create_task"] == 12  # ensure_future on a coroutine: the loop's create_task
    assert work.calls["call_later"] == 4
    assert work.calls["call_soon"] >= 12  # at least each task's first step
    assert work.calls["_run_once"] >= 4
    assert work.per_round_trip("create_task") == 3.0
    ((method, caller), n), = work.sources.most_common(1)
    assert (method, n) == ("create_task", 12)
    assert caller.startswith("test_bench_loop_work.py:<genexpr> <- test_bench_loop_work.py:round_trip")


async def test_the_wrapping_is_undone() -> None:
    loop = asyncio.get_running_loop()
    work = LoopWork(1)
    undo = _count_on(loop, work)
    assert all(name in vars(loop) for name in METHODS)
    undo()
    assert not any(name in vars(loop) for name in METHODS)
    await asyncio.sleep(0)
    assert sum(work.calls.values()) == 0


async def test_ours_and_langgraph_alone_are_measured_and_reported() -> None:
    ours = await served(round_trips=3, warmup=2)
    alone = await langgraph_alone(round_trips=3, warmup=2)
    for work in (ours, alone):
        assert work.round_trips == 3
        assert work.per_round_trip("create_task") >= 1
        assert work.per_round_trip("_run_once") >= 2  # two turns, each waits at least once
    # a turn outlives its request: ours starts each turn in a task of the worker's own
    assert any("worker.py:start" in caller for (_, caller) in ours.sources)
    assert not any("worker.py" in caller for (_, caller) in alone.sources)
    text = report(ours, alone, sources=5)
    for method in METHODS:
        assert f"| `{method}` |" in text
    assert "Where our app's tasks" in text and "Where LangGraph alone's tasks" in text
