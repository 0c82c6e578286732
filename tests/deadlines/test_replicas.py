"""Two replicas on one PostgreSQL and Redis sweep at the same moment: each expired wait is
handled once (a question, a tool review, a reviewer's draft)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from app.assistant import email_assistant
from app.nodes import document_review_graph
from app.outbox import Outbox
from llamon_agent import Agent, InterruptOnConfig
from llamon_agent.core.deadlines import AnswerWith, Cancel, Deadline, Reject, WaitPolicy
from tests.backends_redis import REDIS_URL, fresh_prefix
from tests.deadlines.helpers import MovableClock, Served, serve_clocked
from tests.tool_review.helpers import SEED_REQUEST

REVIEWER = {"Authorization": "Bearer t"}


@asynccontextmanager
async def two_replicas(url: str, agents: Sequence[Agent], **kwargs: Any,
                       ) -> AsyncIterator[tuple[Served, Served]]:
    clock = MovableClock()
    with fresh_prefix() as prefix:
        on = {"db": url, "events": f"{REDIS_URL}?prefix={prefix}"}
        async with AsyncExitStack() as stack:
            a = await stack.enter_async_context(serve_clocked(agents, clock, **on, **kwargs))
            b = await stack.enter_async_context(serve_clocked(agents, clock, **on, **kwargs))
            yield a, b


async def both_sweep(a: Served, b: Served, job: str) -> int:
    reports = await asyncio.gather(a.sweep(), b.sweep())
    return sum(report.handled[job] for report in reports)


async def test_a_cancel_deadline_cancels_once_with_two_replicas(postgres_url: str) -> None:
    policy = WaitPolicy(questions=Deadline(60, Cancel("gone")))
    agent = Agent("document-review", document_review_graph(), wait_policy=policy)
    async with two_replicas(postgres_url, [agent]) as (a, b):
        tasks = [await b.client.send("start") for _ in range(5)]
        a.clock.advance(61)
        handled = await both_sweep(a, b, "deadlines")
        handled += await both_sweep(a, b, "deadlines")  # a context busy at first is taken now
        assert handled == 5
        for task in tasks:
            done = await a.client.result("tasks/get", {"id": task["id"]})
            assert done["status"]["state"] == "canceled"


async def test_a_question_expires_once_with_two_replicas_sweeping(postgres_url: str) -> None:
    policy = WaitPolicy(questions=Deadline(60, AnswerWith("passport")))
    agent = Agent("document-review", document_review_graph(), wait_policy=policy)
    async with two_replicas(postgres_url, [agent]) as (a, b):
        tasks = [await a.client.send("start") for _ in range(5)]
        a.clock.advance(61)
        assert await both_sweep(a, b, "deadlines") == 5
        for task in tasks:
            done = await b.settled(task["id"])
            answers = [m for m in done["history"]
                       if (m.get("metadata") or {}).get("answeredBy") == "deadline"]
            assert len(answers) == 1, done["history"]
            assert done["status"]["state"] == "input-required"  # the next question
        assert await both_sweep(a, b, "deadlines") == 0


async def test_a_tool_review_expires_once_with_two_replicas(postgres_url: str) -> None:
    outbox = Outbox(":memory:")
    agent = email_assistant(outbox, interrupt_on={"send_email": InterruptOnConfig(expires_in=60)})
    agent.wait_policy = WaitPolicy(tool_reviews=Deadline(600, Reject("too late")))
    async with two_replicas(postgres_url, [agent]) as (a, b):
        task = await b.client.send(SEED_REQUEST)
        a.clock.advance(61)
        assert await both_sweep(a, b, "deadlines") == 1
        done = await a.settled(task["id"])
        assert done["status"]["state"] == "completed"
        rejects = [m for m in done["history"] if m["role"] == "user" and m["parts"][0].get(
            "data", {}).get("decisions")]
        assert len(rejects) == 1
        assert outbox.count() == 0


async def test_a_draft_expires_once_with_two_replicas(postgres_url: str) -> None:
    from app.main import AGENTS
    from tests.orchestrator.helpers import HIGH_RISK, review_id_of

    deadline = Deadline(60, Reject("nobody reviewed it"))
    async with two_replicas(postgres_url, AGENTS, reviewer_token="t", review_wait=0.3,
                            draft_deadline=deadline) as (a, b):
        first = await a.client.send(data=HIGH_RISK, agent_id="loan")
        task = await a.client.send("예", context_id=first["contextId"])
        assert task["status"]["state"] == "working"
        review_id = review_id_of(task)
        a.clock.advance(61)
        assert await both_sweep(a, b, "draft deadlines") == 1
        done = await b.settled(task["id"], bound=15)
        assert done["status"]["state"] == "rejected"
        review = (await a.client.http.get(f"/reviews/{review_id}", headers=REVIEWER)).json()
        assert review["decidedBy"] == "deadline"
