"""Issue 14: while an app serves, the garbage collector is tuned (server/collector.py): the
objects that exist at start are frozen and the youngest generation's threshold is raised;
everything is given back when the last serving app stops."""

from __future__ import annotations

import gc

from asgi_lifespan import LifespanManager

from app.main import AGENTS
from llamon_agent import create_app
from llamon_agent.server.collector import FIRST_GENERATION


async def test_a_serving_app_freezes_the_start_and_raises_the_first_threshold() -> None:
    before = gc.get_threshold()
    assert before[0] != FIRST_GENERATION
    async with LifespanManager(create_app(AGENTS, db=":memory:")):
        assert gc.get_threshold() == (FIRST_GENERATION, before[1], before[2])
        assert gc.get_freeze_count() > 0
        gc.collect()  # every generation still collects
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


async def test_the_last_of_two_apps_to_stop_gives_the_collector_back() -> None:
    before = gc.get_threshold()
    first = LifespanManager(create_app(AGENTS, db=":memory:"))
    second = LifespanManager(create_app(AGENTS, db=":memory:"))
    await first.__aenter__()
    await second.__aenter__()
    await first.__aexit__(None, None, None)
    assert gc.get_threshold()[0] == FIRST_GENERATION  # the second still serves
    await second.__aexit__(None, None, None)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


async def test_gc_tuning_off_leaves_the_collector_alone() -> None:
    before = gc.get_threshold()
    async with LifespanManager(create_app(AGENTS, db=":memory:", gc_tuning=False)):
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() == 0
