"""``TaskManager`` as an async context manager: what it opens, it closes (also on failure)."""

from __future__ import annotations

import asyncio

import pytest

from llamon_agent.human_review import Decision, InMemoryReviewPort, Review
from llamon_agent.runtime.children import Children
from llamon_agent.runtime.resumer import Resumer
from llamon_agent.runtime.tasks import TaskManager
from tests.conftest import on_backend
from tests.runtime.helpers import doc_agent

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


class _Heard:
    """Stands in for the manager's decision listener: records the reviews it is told of."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reviews: list[str] = []

        async def heard(resumer: Resumer, review: Review) -> None:
            self.reviews.append(review.id)

        monkeypatch.setattr(Resumer, "on_review_decision", heard)


async def _decide_one(port: InMemoryReviewPort, task_id: str) -> str:
    review = await port.submit(task_id=task_id, context_id="c", agent_id="a", draft="d")
    await port.decide(review.id, Decision("approve"))
    return review.id


async def test_a_failing_recovery_closes_what_the_start_opened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heard = _Heard(monkeypatch)
    started: list[asyncio.Task[None]] = []
    clients = []

    port = InMemoryReviewPort()
    managers: list[TaskManager] = []

    async def failing_recovery(resumer: Resumer) -> None:
        manager = managers[0]
        group = manager._worker._group
        children = next(iter(manager._served.values())).children
        assert group is not None and isinstance(children, Children)
        clients.append(children._http)
        # a turn recovery already started, then the store fails
        started.append(group.create_task(asyncio.Event().wait()))  # type: ignore[arg-type]
        raise RuntimeError("the store is unreachable")

    monkeypatch.setattr(Resumer, "recover", failing_recovery)
    async with on_backend(reviews=port) as backend:
        managers.append(backend.manager([doc_agent()]))
        with pytest.raises(RuntimeError, match="the store is unreachable"):
            async with managers[0]:
                pytest.fail("the manager started")

    assert started[0].cancelled()
    assert clients[0].is_closed
    await _decide_one(port, "t1")
    assert heard.reviews == []  # the failed manager no longer listens


async def test_exit_removes_the_review_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    heard = _Heard(monkeypatch)
    port = InMemoryReviewPort()
    async with on_backend(reviews=port) as backend:
        async with backend.manager([doc_agent()]):
            while_running = await _decide_one(port, "t1")
        await _decide_one(port, "t2")
    assert heard.reviews == [while_running]
