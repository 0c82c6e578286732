"""Remote children over A2A, with real processes.

A second ``llamon-agent serve`` process serves the loan example's ``risk`` agent
(``tests.orchestrator.remote_agents:AGENTS``); the orchestrator declares it as
``RemoteAgent("risk", url)`` and keeps ``finalize`` local.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.orchestrator.helpers import (
    AUTH,
    DRAFT_WITH_COLLATERAL,
    HIGH_RISK,
    QUESTION_PARTS,
    RESUME_POINT,
    TOKEN,
    artifact_data,
    review_id_of,
    serve_app,
)
from tests.orchestrator.remote_agents import RISK_URL_ENV, loan_agents
from tests.process.conftest import Launch, Server, _free_port, connect

RISK_TARGET = "tests.orchestrator.remote_agents:AGENTS"
LOAN_TARGET = "tests.orchestrator.remote_agents:LOAN_AGENTS"
ENDED = {"completed", "failed", "rejected", "canceled"}
PROMPT = 5.0  # a failing remote child must end the task well within this


def remote_task_id(server: Server, context_id: str) -> str:
    """The latest task of ``context_id`` in a server's SQLite file."""
    conn = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT id FROM llamon_tasks WHERE context_id = ? ORDER BY created DESC LIMIT 1",
            (context_id,),
        ).fetchone()
    finally:
        conn.close()
    assert row is not None, f"no task of context {context_id} on {server.url}"
    return str(row[0])


async def remote_get(server: Server, task_id: str) -> dict[str, Any]:
    async with connect(server) as client:
        return await client.result("tasks/get", {"id": task_id})


def failure_text(task: dict[str, Any]) -> str:
    return " ".join(p["text"] for p in task["status"]["message"]["parts"] if p["kind"] == "text")


@pytest.mark.usefixtures("backend")
async def test_a_remote_childs_question_is_forwarded_and_the_answer_resumes_it_remotely(
    launch: Launch, tmp_path: Path
) -> None:
    risk = launch(RISK_TARGET, tmp_path / "risk.sqlite3")
    async with serve_app(loan_agents(risk.url), reviewer_token=TOKEN, review_wait=0.3) as h:
        first = await h.send_loan(HIGH_RISK)
        context_id = first["contextId"]
        assert first["status"]["state"] == "input-required"
        assert first["status"]["message"]["parts"] == QUESTION_PARTS
        assert await h.resume_point(context_id) == RESUME_POINT

        # the question came from the remote process, on the child's own context
        child_context = f"{context_id}::risk"
        child_id = remote_task_id(risk, child_context)
        child = await remote_get(risk, child_id)
        assert child["contextId"] == child_context
        assert child["status"]["state"] == "input-required"
        assert child["status"]["message"]["parts"] == QUESTION_PARTS

        task = await h.client.send("예", context_id=context_id)
        assert task["status"]["state"] == "working"
        review_id = review_id_of(task)
        assert (await h.review(review_id))["draft"] == DRAFT_WITH_COLLATERAL

        # the answer resumed the same remote task
        assert remote_task_id(risk, child_context) == child_id
        child = await remote_get(risk, child_id)
        assert child["status"]["state"] == "completed"
        assert artifact_data(child)[0]["collateral"] == "yes"
        user_texts = [
            p["text"]
            for m in child["history"]
            if m["role"] == "user"
            for p in m["parts"]
            if p["kind"] == "text"
        ]
        assert user_texts[-1] in ("yes", "예")

        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        done = await h.wait_state(first["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]


@pytest.mark.usefixtures("backend")
async def test_an_unreachable_remote_child_fails_the_task_promptly(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    async with serve_app(loan_agents(url), reviewer_token=TOKEN) as h:
        started = time.monotonic()
        task = await asyncio.wait_for(h.send_loan(HIGH_RISK), PROMPT)
        assert time.monotonic() - started < PROMPT
        assert task["status"]["state"] == "failed"
        text = failure_text(task)
        assert "'risk'" in text
        assert url in text
        assert await h.reviews() == []


@pytest.mark.usefixtures("backend")
async def test_a_remote_child_that_dies_mid_conversation_fails_the_answer_promptly(
    launch: Launch, tmp_path: Path
) -> None:
    risk = launch(RISK_TARGET, tmp_path / "risk.sqlite3")
    async with serve_app(loan_agents(risk.url), reviewer_token=TOKEN) as h:
        first = await h.send_loan(HIGH_RISK)
        assert first["status"]["state"] == "input-required"
        risk.sigkill()
        started = time.monotonic()
        task = await asyncio.wait_for(h.client.send("예", context_id=first["contextId"]), PROMPT)
        assert time.monotonic() - started < PROMPT
        assert task["id"] == first["id"]
        assert task["status"]["state"] == "failed"
        assert "'risk'" in failure_text(task)
        assert await h.reviews() == []


@pytest.mark.usefixtures("backend")
async def test_a_remote_child_url_that_is_not_an_a2a_endpoint_fails_the_task(
    launch: Launch, tmp_path: Path
) -> None:
    risk = launch(RISK_TARGET, tmp_path / "risk.sqlite3")
    async with serve_app(loan_agents(risk.url + "/no-such-endpoint")) as h:
        task = await asyncio.wait_for(h.send_loan(HIGH_RISK), PROMPT)
        assert task["status"]["state"] == "failed"
        assert "'risk'" in failure_text(task)


async def test_both_sides_as_real_processes(
    launch: Launch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    risk = launch(RISK_TARGET, tmp_path / "risk.sqlite3")
    monkeypatch.setenv(RISK_URL_ENV, risk.url)
    monkeypatch.setenv("LLAMON_REVIEWER_TOKEN", TOKEN)
    loan = launch(LOAN_TARGET, tmp_path / "loan.sqlite3")

    async with connect(loan) as client:
        first = await client.send(data=HIGH_RISK)
        assert first["status"]["state"] == "input-required"
        assert first["status"]["message"]["parts"] == QUESTION_PARTS
        context_id = first["contextId"]
        assert remote_task_id(risk, f"{context_id}::risk")

        answered = await client.send("예", context_id=context_id, configuration={"blocking": False})
        assert answered["id"] == first["id"]

        async with httpx.AsyncClient(base_url=loan.url, trust_env=False, timeout=10) as http:
            deadline = time.monotonic() + 10
            while not (reviews := (await http.get("/reviews", headers=AUTH)).json()["reviews"]):
                assert time.monotonic() < deadline, "no review appeared"
                await asyncio.sleep(0.05)
            assert [(r["taskId"], r["draft"]) for r in reviews] == [
                (first["id"], DRAFT_WITH_COLLATERAL)
            ]
            decided = await http.post(
                f"/reviews/{reviews[0]['id']}/decision", headers=AUTH, json={"type": "approve"}
            )
            assert decided.status_code == 200

        deadline = time.monotonic() + 10
        while (task := await client.result("tasks/get", {"id": first["id"]}))["status"][
            "state"
        ] not in ENDED:
            assert time.monotonic() < deadline, task["status"]
            await asyncio.sleep(0.05)
        assert task["status"]["state"] == "completed"
        assert artifact_data(task) == [DRAFT_WITH_COLLATERAL]
