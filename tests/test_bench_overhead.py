"""bench/overhead.py, bench/servers/canned.py and bench/profile_groups.py: the canned server
answers the benchmark's HITL exchange as the real client expects it (over HTTP, a real process),
the report's differences are the figures' own, and a profile's samples land in their groups."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bench import hitl_client as hc
from bench.in_process import call, task_in_state
from bench.overhead import report
from bench.procs import ServerProcess
from bench.profile_groups import read
from bench.profile_groups import report as groups_report
from bench.servers.canned import app
from tests.process.conftest import _free_port

ROOT = Path(__file__).resolve().parent.parent


async def test_the_canned_app_answers_the_exchange_in_its_states() -> None:
    asked = task_in_state(await call(app, hc.send_body("hitl", "start", context_id="c1")),
                          "input-required")
    assert asked["contextId"] == "c1"
    assert asked["status"]["message"]["parts"][0]["kind"] == "text"
    done = task_in_state(await call(app, hc.send_body("hitl", "an answer", context_id="c1",
                                                      task_id=asked["id"])), "completed")
    assert (done["id"], done["contextId"]) == (asked["id"], "c1")
    assert done["artifacts"][0]["parts"] == [{"kind": "text", "text": "answered: an answer"}]


def test_the_real_client_completes_round_trips_against_the_served_canned_app(
    tmp_path: Path,
) -> None:
    port = _free_port()
    server = ServerProcess("canned", [sys.executable, "-m", "bench.servers.canned", "--port",
                                      str(port)], port, tmp_path / "canned.log", cores=None,
                           cwd=ROOT)
    server.start(timeout=60)
    try:
        result = asyncio.run(hc.hitl_load(port, users=2, duration=0.3))
    finally:
        server.stop()
    assert result.errors.count == 0, result.errors.samples
    assert result.round_trips > 0


def test_the_report_splits_each_repetition_then_takes_the_median() -> None:
    data = {
        "settings": {"db": "sqlite", "users": 16, "reps": 3, "seconds": 5.0},
        "date": "2026-12-05 21:00 UTC",
        "figures": {"langgraph": [1.0, 1.2, 1.1], "served": [1.8, 2.0, 1.9],
                    "http-alone": [0.1, 0.2, 0.1]},
    }
    text = report(data)
    assert "| LangGraph alone (the graph and its checkpointer) | **1.100** (1.000 to 1.200) |" in text
    # served / LangGraph alone, per repetition: 1.8, 1.667, 1.727
    assert "(run.py's overhead target: <= 1.3) | **1.727** (1.667 to 1.800) |" in text
    # served less HTTP alone less LangGraph alone: 0.7, 0.6, 0.7
    assert "less LangGraph alone / ms | **0.700** (0.600 to 0.700) |" in text
    # 0.3 x LangGraph alone less HTTP alone: 0.2, 0.16, 0.23
    assert "less HTTP alone / ms | **0.200** (0.160 to 0.230) |" in text


def _raw(*stacks: tuple[str, int]) -> list[str]:
    return [f"{stack} {n}\n" for stack, n in stacks]


def test_profile_samples_go_to_their_innermost_known_package() -> None:
    site = "/v/lib/python3.11/site-packages"
    std = "/p/lib/python3.11"
    root = f"<module> (/r/bench/servers/llamon.py:9);run_forever ({std}/asyncio/base_events.py:607)"
    lines = _raw(
        # ours calling the standard library: ours
        (f"{root};rpc ({site}/llamon_agent/server/app.py:10);dumps ({std}/json/__init__.py:231)", 3),
        # LangGraph calling ours calling SQLite's C code: SQLite, named after our function
        (f"{root};astream ({site}/langgraph/pregel/main.py:1);save ({site}/llamon_agent/stores/"
         "sqlite.py:248);pysqlite_cursor_execute (_sqlite3.cpython-311-x86_64-linux-gnu.so);"
         "sqlite3VdbeExec (libsqlite3.so.0)", 2),
        # the collector, whatever runs
        (f"{root};astream ({site}/langgraph/pregel/main.py:1);gc_collect_main (libpython3.11.so)", 1),
        # asyncio's own loop
        (f"{root};_run_once ({std}/asyncio/base_events.py:1900)", 4),
        # start-up: left out
        ("<module> (/r/x.py:1);_find_and_load (<frozen importlib._bootstrap>:1176)", 9),
    )
    groups = read(lines)
    assert groups.samples == 10
    assert dict(groups.by_group) == {
        "ours": 3, "SQLite (C), run by save (ours)": 2, "gc": 1, "asyncio": 4}
    assert dict(groups.ours) == {"rpc (server/app.py)": 3}
    text = groups_report(groups, cpu_ms=2.0, top=5)
    assert "| asyncio | 40.0% | 800 |" in text
    assert "| rpc (server/app.py) | 30.0% | 600 |" in text


def test_an_empty_profile_is_refused(tmp_path: Path) -> None:
    from bench.profile_groups import main

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(SystemExit, match="no samples"):
        main([str(empty)])
