"""A forwarded question is answered with the *parent's* ``interruptId`` (issue 8, finding 3).

The loan orchestrator forwards ``risk``'s collateral question: the parent task's status message
carries the parent's own interrupt id (the question it forwarded), never the child's. An answer
bound to it is taken once; sent again it is the task as it stands; a new copy is stale.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import send_params
from tests.orchestrator.helpers import HIGH_RISK, QUESTION_PARTS, review_id_of, serve_loan

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


def _answer(text: str, interrupt_id: str, context_id: str, message_id: str) -> dict[str, Any]:
    params = send_params(text, context_id=context_id, message_id=message_id)
    params["message"]["metadata"] = {"interruptId": interrupt_id}
    return params


async def test_the_forwarded_question_is_answered_with_the_parents_interrupt_id() -> None:
    async with serve_loan() as h:
        first = await h.send_loan(HIGH_RISK)
        context_id = first["contextId"]
        assert first["status"]["message"]["parts"] == QUESTION_PARTS
        forwarded = first["status"]["message"]["metadata"]["interruptId"]
        child = await h.get_child(await h.child_task_id(f"{context_id}::risk"))
        assert forwarded != child["status"]["message"]["metadata"]["interruptId"]
        stored = await h.manager._store.get(first["id"])
        assert stored is not None and stored.pending_interrupt == forwarded

        # the child's id names no question of the parent: stale, nothing runs
        wrong = child["status"]["message"]["metadata"]["interruptId"]
        body = await h.client.call("message/send", _answer("예", wrong, context_id, "m0"))
        assert body["error"]["code"] == -32602
        assert body["error"]["data"]["reason"] == "stale answer"
        assert (await h.get(first["id"]))["status"]["state"] == "input-required"

        parked = await h.client.result(
            "message/send", _answer("예", forwarded, context_id, "m1")
        )
        assert parked["status"]["state"] == "working"
        review_id = review_id_of(parked)

        again = await h.client.result("message/send", _answer("예", forwarded, context_id, "m1"))
        assert again["id"] == first["id"] and again["status"] == parked["status"]

        copy = await h.client.call("message/send", _answer("예", forwarded, context_id, "m2"))
        assert copy["error"]["code"] == -32602
        assert copy["error"]["data"]["reason"] == "stale answer"
        assert copy["error"]["data"]["taskId"] == first["id"]
        assert [r["id"] for r in await h.reviews()] == [review_id]  # no second review
