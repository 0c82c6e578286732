"""Helpers of the orchestrator and human-review tests: an in-process server that also exposes
its ``TaskManager``, the loan example's wire values, and reviewer-endpoint shortcuts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from asgi_lifespan import LifespanManager

from llamon_agent import Agent, create_app
from llamon_agent.core.principal import ANONYMOUS, context_key, space_of
from llamon_agent.runtime.tasks import TaskManager
from tests.conftest import A2AClient, assert_valid, served_on

TOKEN = "t"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REVIEW_WAIT = 0.3

HIGH_RISK = {"applicant": "Kim", "amount": 90000, "income": 20000}  # 90000 > 3 x 20000
LOW_RISK = {"applicant": "Lee", "amount": 50000, "income": 20000}  # 50000 <= 3 x 20000
COLLATERAL_QUESTION = "담보가 있습니까?"
RESUME_POINT = {"intent": "대출 심사", "next_action": "await_approval"}

QUESTION_PARTS = [
    {"kind": "text", "text": COLLATERAL_QUESTION},
    {
        "kind": "data",
        "data": {
            "hitl": {
                "schema": "llamon.hitl.question.v1",
                "question": COLLATERAL_QUESTION,
                "options": ["yes", "no"],
                "choices": [
                    {"label": "예", "value": "yes", "description": None},
                    {"label": "아니오", "value": "no", "description": None},
                ],
                "multi_select": False,
                "free_text_allowed": True,
            }
        },
    },
]

# what finalize drafts after the collateral answer "예" (risk medium) and for a low-risk request
DRAFT_WITH_COLLATERAL = {
    "decision": "approve",
    "risk": "medium",
    "amount": 90000.0,
    "intent": "대출 심사",
}
DRAFT_LOW_RISK = {"decision": "approve", "risk": "low", "amount": 50000.0, "intent": "대출 심사"}
WAITING_TEXT = "A reviewer is checking the answer."


CHILDREN = space_of(ANONYMOUS, internal=True)  # where an anonymous caller's children live


@dataclass
class Harness:
    client: A2AClient
    app: Any  # the Starlette app (``app.state.manager``, ``app.state.reviews``)

    @property
    def http(self) -> httpx.AsyncClient:
        return self.client.http

    @property
    def manager(self) -> TaskManager:
        return self.app.state.manager

    async def child_task_id(self, context_id: str) -> str:
        """The latest task of a child context, read from the task store (child contexts live
        in the server's internal space: no client can address them)."""
        latest = await self.manager._store.latest_in_context(context_key(CHILDREN, context_id))
        assert latest is not None, f"no task in context {context_id}"
        return latest.id

    async def get_child(self, task_id: str) -> dict[str, Any]:
        """A child's task, read past the wire (which refuses it: -32001)."""
        task = orjson.loads((await self.manager.get_task(task_id, space=CHILDREN)).to_json())
        assert_valid("Task", task)
        return task

    async def resume_point(self, context_id: str) -> Any:
        return (await self.manager.thread_values(context_id)).get("resume_point")

    # ---------------------------------------------------------------- wire shortcuts

    async def send_loan(self, data: dict[str, Any], **kw: Any) -> dict[str, Any]:
        task = await self.client.send(data=data, agent_id="loan", **kw)
        assert_valid("Task", task)
        return task

    async def get(self, task_id: str) -> dict[str, Any]:
        task = await self.client.result("tasks/get", {"id": task_id})
        assert_valid("Task", task)
        return task

    async def wait_state(
        self, task_id: str, states: set[str], timeout: float = 5.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            task = await self.get(task_id)
            if task["status"]["state"] in states:
                return task
            assert time.monotonic() < deadline, (
                f"task still {task['status']['state']} after {timeout}s: {task['status']}"
            )
            await asyncio.sleep(0.02)

    async def reviews(self) -> list[dict[str, Any]]:
        response = await self.http.get("/reviews", headers=AUTH)
        assert response.status_code == 200, response.text
        return response.json()["reviews"]

    async def review(self, review_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/reviews/{review_id}", headers=AUTH)
        assert response.status_code == 200, response.text
        return response.json()

    async def decide(self, review_id: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(f"/reviews/{review_id}/decision", headers=AUTH, json=body)

    async def to_review(self, data: dict[str, Any] = HIGH_RISK) -> tuple[dict[str, Any], str]:
        """A loan task waiting for a reviewer: (the blocking send's task, the review id)."""
        task = await self.send_loan(data)
        if task["status"]["state"] == "input-required":
            task = await self.client.send("예", context_id=task["contextId"])
        assert task["status"]["state"] == "working", task["status"]
        return task, review_id_of(task)


def review_id_of(task: dict[str, Any]) -> str:
    """The review id named by a task's ``working`` status message."""
    parts = task["status"]["message"]["parts"]
    ids = [
        p["data"]["review"]["id"] for p in parts if p["kind"] == "data" and "review" in p["data"]
    ]
    assert len(ids) == 1, parts
    return ids[0]


def artifact_data(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part["data"]
        for artifact in task.get("artifacts") or []
        for part in artifact["parts"]
        if part["kind"] == "data"
    ]


@asynccontextmanager
async def serve_app(agents: Sequence[Agent], **kwargs: Any) -> AsyncIterator[Harness]:
    """``create_app(agents, **kwargs)`` in process over ASGI (default: the ``backend``
    fixture's storage and events, else ``db=":memory:"``)."""
    for name, value in served_on().items():
        kwargs.setdefault(name, value)
    app = create_app(list(agents), **kwargs)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", timeout=30
        ) as http:
            yield Harness(A2AClient(http), app)


@asynccontextmanager
async def serve_loan(**kwargs: Any) -> AsyncIterator[Harness]:
    """The example agents (``app.main.AGENTS``) with a reviewer token and a short review wait."""
    from app.main import AGENTS

    kwargs.setdefault("reviewer_token", TOKEN)
    kwargs.setdefault("review_wait", REVIEW_WAIT)
    async with serve_app(AGENTS, **kwargs) as harness:
        yield harness
