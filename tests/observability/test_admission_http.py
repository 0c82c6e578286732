"""Requests served at once (``--max-active-requests``) over HTTP: agents that wait on other
services are never held, a saturated loop holds and counts, and the setting's bad values."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from llamon_agent import Agent, cli, create_app
from llamon_agent.settings import Settings, parse_active_requests
from tests.conftest import serve

from .conftest import scrape
from .series import value


class _State(TypedDict, total=False):
    result: Any


def _agent(agent_id: str, node: Any) -> Agent:
    graph = StateGraph(_State)
    graph.add_node("work", node)
    graph.add_edge(START, "work")
    return Agent(agent_id, graph)


async def _waits_on_a_service(state: _State) -> dict[str, Any]:
    await asyncio.sleep(0.3)  # a model's API, a tool: the loop is idle meanwhile
    return {"result": "answered"}


async def _computes(state: _State) -> dict[str, Any]:
    end = time.perf_counter() + 0.03
    while time.perf_counter() < end:  # 30 ms of the loop's own CPU, no await
        pass
    return {"result": "computed"}


async def test_agents_that_wait_on_other_services_are_never_held() -> None:
    async with serve([_agent("waits", _waits_on_a_service)], max_active_requests=2) as client:
        started = time.perf_counter()
        tasks = await asyncio.gather(*(client.send("go", context_id=f"w-{n}")
                                       for n in range(8)))
        elapsed = time.perf_counter() - started
        assert [t["status"]["state"] for t in tasks] == ["completed"] * 8
        # held two at a time, eight would take four rounds of 0.3 s
        assert elapsed < 1.0, elapsed
        series = await scrape(client.http)
        assert value(series, "llamon_requests_held_total") == 0
        assert value(series, "llamon_requests_waiting") == 0


@pytest.mark.parametrize(("limit", "held"), [(1, True), (0, False)])
async def test_a_saturated_loop_holds_requests_beyond_the_limit(limit: int, held: bool) -> None:
    async with serve([_agent("computes", _computes)], max_active_requests=limit) as client:
        for n in range(4):  # one request after another: more than a window of a busy loop
            await client.send("warm up", context_id=f"c-warm-{n}")
        tasks = await asyncio.gather(*(client.send("go", context_id=f"c-{n}")
                                       for n in range(8)))
        assert [t["status"]["state"] for t in tasks] == ["completed"] * 8
        series = await scrape(client.http)
        count = value(series, "llamon_requests_held_total")
        assert (count > 0) is held, count  # 0 turns the limit off: nothing is ever held
        assert value(series, "llamon_requests_waiting") == 0
        assert value(series, "llamon_requests_total", method="message/send", outcome="ok") == 12


@pytest.mark.parametrize("bad", [-1, 100_001, True, 2.5, "16"])
def test_create_app_refuses_a_bad_limit(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_active_requests must be a whole number from 0"):
        create_app([_agent("computes", _computes)], db=":memory:", max_active_requests=bad)


def test_the_setting_reads_its_variable() -> None:
    assert Settings.from_env({}).max_active_requests == 16
    assert Settings.from_env({"LLAMON_MAX_ACTIVE_REQUESTS": "0"}).max_active_requests == 0
    assert Settings.from_env({"LLAMON_MAX_ACTIVE_REQUESTS": " 64 "}).max_active_requests == 64
    for bad, message in [("-1", "from 0 (no limit) to 100000, got -1"),
                         ("100001", "got 100001"), ("x", "expected a whole number, got 'x'")]:
        with pytest.raises(ValueError, match="LLAMON_MAX_ACTIVE_REQUESTS"):
            Settings.from_env({"LLAMON_MAX_ACTIVE_REQUESTS": bad})
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_active_requests(bad)


@pytest.mark.parametrize(("argv", "env", "limit"), [
    ([], {}, 16),
    (["--max-active-requests", "4"], {}, 4),
    ([], {"LLAMON_MAX_ACTIVE_REQUESTS": "0"}, None),
    (["--max-active-requests", "8"], {"LLAMON_MAX_ACTIVE_REQUESTS": "0"}, 8),
])
def test_the_command_line_sets_the_apps_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], env: dict[str, str],
    limit: int | None,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLAMON_MAX_ACTIVE_REQUESTS", raising=False)
    for name, text in env.items():
        monkeypatch.setenv(name, text)
    served: list[Any] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(app))
    cli.main(["serve", "--db", ":memory:", *argv])
    assert [app.state.admission.limit for app in served] == [limit]
