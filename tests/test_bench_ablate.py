"""bench/ablate.py: each part it names is really taken out of the benchmark's app, the app
still serves the HITL round trip without it, and nothing else is taken out with it."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from bench import hitl_client as hc
from bench.ablate import PARTS, make_app, parts_from_env
from bench.agents import build_agents
from bench.in_process import call, task_in_state
from llamon_agent import create_app


def test_parts_are_read_from_a_comma_separated_list_and_an_unknown_one_is_refused() -> None:
    assert parts_from_env("") == frozenset()
    assert parts_from_env(" edge, task-row ,") == {"edge", "task-row"}
    assert parts_from_env("edge+observability") == {"edge", "observability"}
    assert parts_from_env(",".join(PARTS)) == set(PARTS)
    with pytest.raises(SystemExit, match="unknown part\\(s\\) metrics; known: observability"):
        parts_from_env("edge,metrics")


@asynccontextmanager
async def ablated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  parts: frozenset[str]) -> AsyncIterator[Any]:
    app = make_app(create_app, build_agents(), str(tmp_path / "tasks.db"), parts,
                   patch=monkeypatch.setattr)
    async with app.router.lifespan_context(app):
        yield app


async def round_trip(app: Any, context_id: str) -> dict[str, Any]:
    asked = task_in_state(await call(app, hc.send_body("hitl", "start", context_id=context_id)),
                          "input-required")
    return task_in_state(await call(app, hc.send_body("hitl", "an answer", context_id=context_id,
                                                      task_id=asked["id"])), "completed")


async def metrics_text(app: Any) -> str:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.get("/metrics")
    assert answer.status_code == 200
    return answer.text


def counted(text: str, prefix: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(prefix))


@pytest.mark.parametrize("parts", [frozenset(), frozenset({"observability"})])
async def test_observability_takes_the_request_and_task_metrics_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: frozenset[str],
) -> None:
    async with ablated(tmp_path, monkeypatch, parts) as app:
        await round_trip(app, "c-observed")
        text = await metrics_text(app)
    requests = counted(text, 'llamon_requests_total{method="message/send"')
    changes = counted(text, "llamon_task_state_changes_total{")
    if parts:
        assert (requests, changes) == (0, 0)
    else:
        assert requests == 2 and changes >= 4


def deep_metadata_body() -> bytes:
    body = orjson.loads(hc.send_body("hitl", "start", context_id="c-deep"))
    nested: Any = "bottom"
    for _ in range(60):  # past max_depth (32) plus the envelope's 8
        nested = {"n": nested}
    body["params"]["message"]["metadata"] = {"deep": nested}
    return orjson.dumps(body)


@pytest.mark.parametrize("parts", [frozenset(), frozenset({"edge"})])
async def test_edge_takes_the_bounds_past_the_parse_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: frozenset[str],
) -> None:
    async with ablated(tmp_path, monkeypatch, parts) as app:
        answer = await call(app, deep_metadata_body())
        await round_trip(app, "c-edge")
    if parts:
        assert answer["result"]["status"]["state"] == "input-required"
    else:
        assert answer["error"]["code"] == -32602
        assert answer["error"]["data"]["limit"] == "max_depth"


def stored_tasks(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        return conn.execute("SELECT COUNT(*) FROM llamon_tasks").fetchone()[0] \
            if "llamon_tasks" in tables else 0


def stored_checkpoints(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]


@pytest.mark.parametrize("parts", [frozenset(), frozenset({"task-row"})])
async def test_task_row_keeps_tasks_in_memory_and_checkpoints_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: frozenset[str],
) -> None:
    async with ablated(tmp_path, monkeypatch, parts) as app:
        done = await round_trip(app, "c-row")
    assert done["artifacts"][0]["parts"] == [{"kind": "data", "data": {"answer": "an answer"}}]
    db = tmp_path / "tasks.db"
    assert stored_checkpoints(db) >= 1
    assert stored_tasks(db) == (0 if parts else 1)


def test_task_row_is_refused_on_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit, match="task-row is for SQLite only"):
        make_app(create_app, build_agents(), "postgresql://127.0.0.1/test",
                 frozenset({"task-row"}), patch=monkeypatch.setattr)
