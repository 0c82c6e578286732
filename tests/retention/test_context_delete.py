"""``DELETE /contexts/{contextId}``: a principal deletes one of its own contexts, with every
task, the checkpoints, the reviews and the child conversations; another principal's context is
as unknown as one that does not exist; a running turn makes it busy; ids go through the edge
limits. On SQLite and on the ``backend`` fixture's backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from app.main import AGENTS
from llamon_agent.core.principal import context_key, space_of
from tests.orchestrator.helpers import HIGH_RISK, TOKEN, Harness, serve_app
from tests.security.helpers import Gate

from .helpers import has_checkpoint, task_error

KEYS = {"alice": "key-alice", "bob": "key-bob"}
ALICE = {"X-API-Key": KEYS["alice"]}
BOB = {"X-API-Key": KEYS["bob"]}
NOT_FOUND = {"detail": "Context not found"}
REVIEWER = {"Authorization": f"Bearer {TOKEN}"}


@asynccontextmanager
async def served(gate: Gate | None = None, **kwargs: Any) -> AsyncIterator[Harness]:
    """The example agents (and ``gate``'s), API keys for alice and bob; alice calls."""
    agents = [*AGENTS, gate.agent()] if gate is not None else AGENTS
    async with serve_app(agents, api_keys=KEYS, reviewer_token=TOKEN, review_wait=0.3,
                         **kwargs) as harness:
        harness.http.headers.update(ALICE)
        yield harness


async def delete(h: Harness, context_id: str, headers: dict[str, str] = ALICE) -> Any:
    response = await h.http.delete(f"/contexts/{quote(context_id, safe='/')}", headers=headers)
    assert response.headers["content-type"] == "application/json", response.text
    return response.status_code, response.json()


async def notes(h: Harness, text: str, context_id: str | None = None) -> dict[str, Any]:
    if context_id is None:
        return await h.client.send(text, agent_id="until-done")
    return await h.client.send(text, context_id=context_id)


async def own_context_goes_with_everything_in_it(**kwargs: Any) -> None:
    async with served(**kwargs) as h:
        first = await notes(h, "note one")
        first = await notes(h, "done", first["contextId"])
        context = first["contextId"]
        waiting = await notes(h, "note two", context)  # a new task waits for a note
        assert (first["status"]["state"], waiting["status"]["state"]) == (
            "completed", "input-required")
        assert await has_checkpoint(h, context, "alice")

        assert await delete(h, context) == (200, {
            "contextId": context, "deletedTasks": 2, "deletedChildContexts": 0})
        assert await task_error(h, first["id"]) == -32001
        assert await task_error(h, waiting["id"]) == -32001
        assert not await has_checkpoint(h, context, "alice")
        assert await delete(h, context) == (404, NOT_FOUND)  # twice: nothing left

        again = await notes(h, "note three", context)  # the same id starts afresh
        assert again["status"]["state"] == "input-required" and again["id"] != waiting["id"]
        said = [m.content for m in (await h.manager.thread_values(context, space="alice"))[
            "messages"]]
        assert "note one" not in said and "note two" not in said and "note three" in said


@pytest.mark.usefixtures("backend")
async def test_a_principal_deletes_its_own_context() -> None:
    await own_context_goes_with_everything_in_it()


async def test_a_principal_deletes_its_own_context_sqlite(tmp_path: Path) -> None:
    await own_context_goes_with_everything_in_it(db=str(tmp_path / "llamon.sqlite3"))


@pytest.mark.usefixtures("backend")
async def test_another_principals_context_is_exactly_as_unknown_as_no_context() -> None:
    async with served() as h:
        task = await notes(h, "alice's note")
        context = task["contextId"]
        assert await delete(h, context, BOB) == (404, NOT_FOUND)
        assert await delete(h, "no-such-context", BOB) == (404, NOT_FOUND)
        assert await delete(h, "no-such-context") == (404, NOT_FOUND)
        unauthenticated = await h.http.delete(f"/contexts/{context}",
                                              headers={"X-API-Key": ""})
        assert (unauthenticated.status_code, unauthenticated.json()) == (
            401, {"detail": "unauthorized"})
        assert await task_error(h, task["id"]) is None  # alice's task is untouched
        assert await has_checkpoint(h, context, "alice")


@pytest.mark.usefixtures("backend")
async def test_a_context_with_a_running_turn_is_busy_and_kept() -> None:
    gate = Gate()
    async with served(gate) as h:
        task = await h.client.send("wait", agent_id="gate", configuration={"blocking": False})
        await gate.entered.wait()
        status, body = await delete(h, task["contextId"])
        assert (status, body) == (409, {"detail": "This operation is not supported: task is busy"})
        assert await task_error(h, task["id"]) is None  # nothing was deleted
        gate.release.set()
        await h.wait_state(task["id"], {"completed"})
        assert await delete(h, task["contextId"]) == (200, {
            "contextId": task["contextId"], "deletedTasks": 1, "deletedChildContexts": 0})


@pytest.mark.usefixtures("backend")
async def test_ids_go_through_the_edge_limits() -> None:
    async with served() as h:
        assert await delete(h, "x" * 257) == (422, {"detail": [{
            "type": "limit_exceeded", "loc": ["path", "contextId"],
            "msg": "contextId has 257 characters, over the limit of 256",
            "limit": "max_id_chars", "max": 256}]})
        for control in ("a\x1fb", "\x00", "\u202e"):
            assert await delete(h, control) == (400, {
                "detail": "contextId must not contain control characters"})
        assert await delete(h, "x" * 256) == (404, NOT_FOUND)  # at the limit: looked up
        # the id is the rest of the path: a contextId with slashes is deleted too
        task = await notes(h, "slashed")
        slashed = await h.client.send("note", agent_id="until-done", context_id="a/b c")
        assert slashed["contextId"] == "a/b c"
        assert await delete(h, "a/b c") == (200, {
            "contextId": "a/b c", "deletedTasks": 1, "deletedChildContexts": 0})
        assert await task_error(h, task["id"]) is None


@pytest.mark.usefixtures("backend")
async def test_an_orchestrators_children_and_reviews_go_with_its_context() -> None:
    """A loan parked for a reviewer (``working``, no turn running): its context is deleted
    with its review and the child conversations it held (in the internal space)."""
    async with served() as h:
        task = await h.send_loan(HIGH_RISK)
        if task["status"]["state"] == "input-required":
            task = await h.client.send("예", context_id=task["contextId"])
        assert task["status"]["state"] == "working"
        review_id = next(p["data"]["review"]["id"] for p in task["status"]["message"]["parts"]
                         if p["kind"] == "data" and "review" in p["data"])
        context = task["contextId"]
        internal = space_of("alice", internal=True)
        children = await h.manager._store.contexts_with_tasks(
            [context_key(internal, f"{context}::{a.id}") for a in AGENTS])
        assert children, "the loan called no child in process"
        child_tasks = [t for key in children
                       if (t := await h.manager._store.latest_in_context(key)) is not None]

        status, body = await delete(h, context)
        assert (status, body) == (200, {"contextId": context, "deletedTasks": 1,
                                        "deletedChildContexts": len(children)})
        assert await task_error(h, task["id"]) == -32001
        assert await h.manager._store.contexts_with_tasks(children) == set()
        for child in child_tasks:
            assert await h.manager._store.get(child.id) is None
        review = await h.http.get(f"/reviews/{review_id}", headers=REVIEWER)
        assert (review.status_code, review.json()) == (404, {"detail": "review not found"})
        decided = await h.http.post(f"/reviews/{review_id}/decision", headers=REVIEWER,
                                    json={"type": "approve"})
        assert decided.status_code == 404
        assert not await has_checkpoint(h, context, "alice")
