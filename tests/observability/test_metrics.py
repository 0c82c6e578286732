"""``GET /metrics`` over HTTP: what a conversation, a stream, a review and a failing store show,
the token, and that no client can add a series."""

from __future__ import annotations

import asyncio
import math
import random
import string
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from llamon_agent import Agent
from llamon_agent.stores.memory import InMemoryTaskStore
from tests.conftest import send_params, serve
from tests.orchestrator.helpers import AUTH, HIGH_RISK, serve_loan

from .conftest import scrape
from .series import parse_metrics, route_methods, unfixed_labels, value

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

ASK = "이 서류를 검증해줘"


async def test_a_conversation_counts_requests_tasks_turns_and_resumes(
    example_agents: list[Agent],
) -> None:
    async with serve(example_agents) as client:
        asked = await client.send(ASK, context_id="m-1", agent_id="document-review")
        assert asked["status"]["state"] == "input-required"
        await client.call("no/such/method", {})
        await client.call("tasks/get", {"id": "no-such-task"})
        await client.call("tasks/get", {"id": 7})  # refused while parsing: still its method
        assert (await client.http.delete("/metrics")).status_code == 405
        assert (await client.http.put("/")).status_code == 405
        await asyncio.sleep(0.2)  # the waiting task grows older
        series = await scrape(client.http)

        assert value(series, "llamon_requests_total", method="message/send", outcome="ok") == 1
        assert value(series, "llamon_requests_total", method="other", outcome="-32601") == 1
        assert value(series, "llamon_requests_total", method="tasks/get", outcome="-32001") == 1
        assert value(series, "llamon_requests_total", method="tasks/get", outcome="-32602") == 1
        # routed on their paths, but no route serves their methods
        assert value(series, "llamon_requests_total", method="other", outcome="405") == 2
        assert value(series, "llamon_request_duration_seconds_count", method="message/send") == 1
        assert value(series, "llamon_tasks", state="input-required") == 1
        assert value(series, "llamon_tasks", state="completed") == 0
        assert 0.2 <= value(series, "llamon_input_required_oldest_age_seconds") < 60
        changes = {state: value(series, "llamon_task_state_changes_total",
                                agent="document-review", state=state)
                   for state in ("submitted", "working", "input-required", "completed")}
        assert changes == {"submitted": 1, "working": 1, "input-required": 1, "completed": 0}
        assert value(series, "llamon_turn_duration_seconds_count", agent="document-review",
                     state="input-required") == 1
        assert value(series, "llamon_task_resumes_total", agent="document-review") == 0

        await client.send("여권", context_id="m-1")  # resumes the graph: the next question
        series = await scrape(client.http)
        assert value(series, "llamon_task_resumes_total", agent="document-review") == 1
        assert value(series, "llamon_turn_duration_seconds_count", agent="document-review",
                     state="input-required") == 2
        assert value(series, "llamon_requests_total", method="GET /metrics", outcome="ok") == 1
        assert value(series, "llamon_requests_total", method="message/send", outcome="ok") == 2

        await client.send("1990-01-01", context_id="m-1")
        series = await scrape(client.http)
        assert value(series, "llamon_tasks", state="input-required") == 0
        assert value(series, "llamon_tasks", state="completed") == 1
        assert value(series, "llamon_input_required_oldest_age_seconds") == 0
        assert value(series, "llamon_task_state_changes_total", agent="document-review",
                     state="completed") == 1


class _Gate(TypedDict, total=False):
    result: Any


def _gated_agent(gate: asyncio.Event) -> Agent:
    async def wait(state: _Gate) -> dict[str, Any]:
        await gate.wait()
        return {"result": "done"}

    graph = StateGraph(_Gate)
    graph.add_node("wait", wait)
    graph.add_edge(START, "wait")
    return Agent("gated", graph)


async def test_stream_subscribers_count_open_streams() -> None:
    gate = asyncio.Event()
    async with serve([_gated_agent(gate)]) as client:
        streaming = asyncio.create_task(
            client.stream("message/stream", send_params("go", context_id="s-1"))
        )
        for _ in range(200):  # the stream opens while the turn waits at the gate
            series = await scrape(client.http)
            if value(series, "llamon_stream_subscribers") == 1:
                break
            await asyncio.sleep(0.01)
        assert value(series, "llamon_stream_subscribers") == 1
        gate.set()
        events = await streaming
        assert events[-1]["data"]["result"]["status"]["state"] == "completed"
        series = await scrape(client.http)
        assert value(series, "llamon_stream_subscribers") == 0
        assert value(series, "llamon_requests_total", method="message/stream", outcome="ok") == 1

        # a stream refused before it opens is counted with its error, never as a subscriber
        refused = await client.stream("tasks/resubscribe", {"id": "no-such-task"})
        assert refused[0]["data"]["error"]["code"] == -32001
        series = await scrape(client.http)
        assert value(series, "llamon_requests_total", method="tasks/resubscribe",
                     outcome="-32001") == 1
        assert value(series, "llamon_stream_subscribers") == 0


async def test_pending_reviews_and_their_age() -> None:
    async with serve_loan() as harness:
        series = await scrape(harness.http)
        assert value(series, "llamon_reviews_pending") == 0
        assert value(series, "llamon_reviews_pending_oldest_age_seconds") == 0
        task, review_id = await harness.to_review(HIGH_RISK)
        await asyncio.sleep(0.1)
        series = await scrape(harness.http)
        assert value(series, "llamon_reviews_pending") == 1
        assert 0.1 <= value(series, "llamon_reviews_pending_oldest_age_seconds") < 60
        assert value(series, "llamon_tasks", state="working") == 1

        response = await harness.decide(review_id, {"type": "approve"})
        assert response.status_code == 200, response.text
        await harness.wait_state(task["id"], {"completed"})
        series = await scrape(harness.http)
        assert value(series, "llamon_reviews_pending") == 0
        assert value(series, "llamon_task_resumes_total", agent="loan") >= 1
        assert value(series, "llamon_requests_total", method="POST /reviews/{review_id}/decision",
                     outcome="ok") == 1


async def test_a_metrics_token_guards_the_endpoint(example_agents: list[Agent]) -> None:
    async with serve(example_agents, metrics_token="scrape-me") as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "scrape-me"},
                        {"X-API-Key": "scrape-me"}):
            response = await client.http.get("/metrics", headers=headers)
            assert response.status_code == 401
            assert response.json() == {"detail": "unauthorized"}
            assert response.headers["www-authenticate"].startswith("Bearer")
        series = await scrape(client.http, Authorization="Bearer scrape-me")
        assert value(series, "llamon_requests_total", method="GET /metrics", outcome="401") == 4


async def test_each_app_has_its_own_registry(example_agents: list[Agent]) -> None:
    async with serve(example_agents) as one, serve(example_agents) as other:
        await one.send(ASK, context_id="r-1")
        assert value(await scrape(one.http), "llamon_requests_total", method="message/send",
                     outcome="ok") == 1
        assert value(await scrape(other.http), "llamon_requests_total", method="message/send",
                     outcome="ok") == 0


class _FailingStore(InMemoryTaskStore):
    """A store whose metrics and health queries fail while ``down``."""

    down = False

    async def ping(self) -> None:
        if self.down:
            raise OSError("disk gone")

    async def count_by_state(self) -> dict[str, int]:
        if self.down:
            raise OSError("disk gone")
        return await super().count_by_state()


async def test_a_failing_store_shows_unknown_values_not_stale_ones(
    example_agents: list[Agent],
) -> None:
    store = _FailingStore()
    async with serve(example_agents, task_store=store, checkpointer=InMemorySaver()) as client:
        await client.send(ASK, context_id="f-1")
        assert value(await scrape(client.http), "llamon_tasks", state="input-required") == 1
        store.down = True
        series = await scrape(client.http)  # still answers: request metrics are in memory
        assert math.isnan(value(series, "llamon_tasks", state="input-required"))
        assert value(series, "llamon_requests_total", method="message/send", outcome="ok") == 1
        store.down = False
        assert value(await scrape(client.http), "llamon_tasks", state="input-required") == 1


# --------------------------------------------------------------- no client adds a series


def _word(rng: random.Random, size: int = 12) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits + "/-_.") for _ in range(size))


async def _hostile(client: Any, rng: random.Random, kind: int) -> None:
    """One request a client may shape freely; the outcome of each kind is always the same."""
    http = client.http
    junk = {"User-Agent": _word(rng), "X-Forwarded-For": _word(rng), "X-Request-Id": _word(rng)}
    if kind == 0:
        body = await client.call("x/" + _word(rng), {"id": _word(rng)}, _word(rng))
        assert body["error"]["code"] == -32601
    elif kind == 1:
        body = await client.call("tasks/get", {"id": _word(rng)}, rng.randrange(10**9))
        assert body["error"]["code"] == -32001
    elif kind == 2:
        response = await http.get("/zz" + _word(rng), headers=junk)
        assert response.status_code == 404
    elif kind == 3:
        method = rng.choice(["PUT", "PATCH", "DELETE", "OPTIONS", "BREW" + _word(rng, 3).upper()])
        response = await http.request(method, "/zz" + _word(rng), headers=junk)
        assert response.status_code == 404
    elif kind == 4:
        response = await http.get("/reviews/" + _word(rng).replace("/", "_"), headers=AUTH)
        assert response.status_code == 404
    else:
        response = await http.post("/", content=b"{" + _word(rng).encode(), headers=junk)
        assert response.json()["error"]["code"] == -32700


KINDS = 6


@pytest.mark.parametrize("seed", [7])
async def test_no_client_can_grow_the_number_of_series(seed: int) -> None:
    rng = random.Random(seed)
    async with serve_loan() as harness:
        app_routes = route_methods(harness.app.routes)
        for kind in range(KINDS):  # every kind once: its series exist from now on
            await _hostile(harness.client, rng, kind)
        await scrape(harness.http)
        baseline = await scrape(harness.http)
        for i in range(200):
            await _hostile(harness.client, rng, i % KINDS)
        after = parse_metrics((await harness.http.get("/metrics")).text)
        assert sorted(set(after) - set(baseline)) == []
        assert len(after) == len(baseline)
        assert value(after, "llamon_requests_total", method="other", outcome="-32601") == 1 + 34
        from app.main import AGENTS

        assert unfixed_labels(after, app_routes, {a.id for a in AGENTS}) == []


def test_task_series_keep_each_agent_and_state_apart() -> None:
    """The task series' children are kept per label values (no ``labels()`` per change): each
    agent and state counts on its own, an unknown agent or state as ``other``."""
    from prometheus_client.exposition import generate_latest

    from llamon_agent.server.metrics import Metrics

    metrics = Metrics(["a", "b"])
    for agent, state in [("a", "working"), ("a", "working"), ("b", "working"),
                         ("a", "completed"), ("stranger", "working"), ("b", "no-such-state")]:
        metrics.state_changed(agent, state)
    metrics.turn_ended("a", "completed", 0.5)
    metrics.turn_ended("b", "completed", 1.5)
    metrics.turn_ended("b", "completed", 2.5)
    metrics.resumed("b")
    metrics.resumed("nobody")
    series = parse_metrics(generate_latest(metrics.registry).decode())
    changes = "llamon_task_state_changes_total"
    assert value(series, changes, agent="a", state="working") == 2
    assert value(series, changes, agent="b", state="working") == 1
    assert value(series, changes, agent="a", state="completed") == 1
    assert value(series, changes, agent="other", state="working") == 1
    assert value(series, changes, agent="b", state="other") == 1
    turns = "llamon_turn_duration_seconds"
    assert value(series, f"{turns}_count", agent="a", state="completed") == 1
    assert value(series, f"{turns}_sum", agent="b", state="completed") == 4.0
    assert value(series, "llamon_task_resumes_total", agent="b") == 1
    assert value(series, "llamon_task_resumes_total", agent="other") == 1


def test_updates_are_kept_only_for_label_values_so_clients_cannot_grow_them() -> None:
    """Each update's bound ``inc``/``observe`` is kept by the values it was asked with, and only
    when those are label values themselves: methods, outcomes, agents and states that are not
    count as ``other`` (``error``) every time and leave nothing behind."""
    from prometheus_client.exposition import generate_latest

    from llamon_agent.server.metrics import Metrics

    metrics = Metrics(["a"])
    for n in range(50):
        metrics.request(f"no/such/method/{n}", "ok", 0.01)
        metrics.request("message/send", f"weird-{n}", 0.01)
        metrics.state_changed(f"stranger-{n}", "working")
        metrics.state_changed("a", f"no-such-state-{n}")
        metrics.turn_ended(f"stranger-{n}", "completed", 0.1)
        metrics.resumed(f"nobody-{n}")
    metrics.request("message/send", "ok", 0.02)
    metrics.request("message/send", "ok", 0.03)
    metrics.state_changed("a", "working")
    kept = (metrics._request_updates, metrics._state_changes, metrics._turn_ends,
            metrics._resumes)
    assert [sorted(k) for k in kept] == [[("message/send", "ok")], [("a", "working")], [], []]
    series = parse_metrics(generate_latest(metrics.registry).decode())
    assert value(series, "llamon_requests_total", method="other", outcome="ok") == 50
    assert value(series, "llamon_requests_total", method="message/send", outcome="error") == 50
    assert value(series, "llamon_requests_total", method="message/send", outcome="ok") == 2
    assert value(series, "llamon_request_duration_seconds_sum", method="message/send") == (
        pytest.approx(50 * 0.01 + 0.05))
    changes = "llamon_task_state_changes_total"
    assert value(series, changes, agent="other", state="working") == 50
    assert value(series, changes, agent="a", state="other") == 50
    assert value(series, changes, agent="a", state="working") == 1
    assert value(series, "llamon_turn_duration_seconds_count", agent="other",
                 state="completed") == 50
    assert value(series, "llamon_task_resumes_total", agent="other") == 50
