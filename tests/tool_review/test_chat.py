"""``ReviewedChatUseCase`` over a ``TaskManager`` (no HTTP): the seed's ``submit_review`` column."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent import ChatTurn, ReviewedChatUseCase
from llamon_agent.errors import (
    InvalidReviewDecisionError,
    NoPendingReviewError,
    ReviewError,
    ReviewPendingError,
)
from llamon_agent.runtime.tasks import TaskManager
from tests.conftest import on_backend
from tests.tool_review.helpers import (
    MESSAGES,
    SEED_PAYLOAD,
    SEED_REQUEST,
    TWO_REQUEST,
    edit,
    payload,
)

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
async def outbox() -> AsyncIterator[Outbox]:
    box = Outbox(":memory:")
    yield box
    box.close()


@pytest.fixture
async def manager(outbox: Outbox) -> AsyncIterator[TaskManager]:
    async with on_backend() as backend, backend.manager([email_assistant(outbox)]) as running:
        yield running


async def _error(call: Any) -> tuple[type, str]:
    with pytest.raises(ReviewError) as caught:
        await call
    return type(caught.value), caught.value.message


async def test_send_message_and_submit_review(manager: TaskManager, outbox: Outbox) -> None:
    chat = ReviewedChatUseCase(manager, "email-assistant", language="id")
    turn = await chat.send_message(SEED_REQUEST)
    assert isinstance(turn, ChatTurn)
    assert turn.pending_review == SEED_PAYLOAD
    assert turn.reply is None
    assert [m["type"] for m in turn.messages] == ["human", "ai"]
    done = await chat.submit_review([{"type": "approve"}], turn.thread_id)
    assert done.thread_id == turn.thread_id
    assert done.pending_review is None
    assert done.reply == "Sent an email to alice@example.com with subject 'Meeting'."
    assert done.to_dict() == {
        "thread_id": turn.thread_id, "reply": done.reply, "pending_review": None,
        "interrupt_id": None, "expires_at": None, "messages": done.messages,
    }
    assert [r["thread_id"] for r in outbox.rows()] == [turn.thread_id]


async def test_send_message_refuses_while_actions_wait(manager: TaskManager) -> None:
    chat = ReviewedChatUseCase(manager)
    turn = await chat.send_message(SEED_REQUEST, "thread-1")
    assert turn.thread_id == "thread-1"
    assert await _error(chat.send_message("hello", "thread-1", language="id")) == (
        ReviewPendingError, MESSAGES["id"]["review_pending"]
    )
    assert await _error(chat.send_message("hello", "thread-1")) == (
        ReviewPendingError, MESSAGES["en"]["review_pending"]
    )


@pytest.mark.parametrize("language", ["id", "en"])
@pytest.mark.parametrize(
    ("request_text", "decisions", "error", "key"),
    [
        # seed 000's validation table, the submit_review column (all of it, 422 rows included)
        (None, [{"type": "approve"}], NoPendingReviewError, "no_pending"),
        (SEED_REQUEST, [], InvalidReviewDecisionError, "count_1_0"),
        (TWO_REQUEST, [{"type": "approve"}], InvalidReviewDecisionError, "count_2_1"),
        (SEED_REQUEST, [{"type": "postpone"}], InvalidReviewDecisionError, "postpone"),
        (SEED_REQUEST, ["approve"], InvalidReviewDecisionError, "none"),
        (SEED_REQUEST, [{"type": "edit"}], InvalidReviewDecisionError, "edit_needs"),
        (SEED_REQUEST, [{"type": "edit", "edited_action": {"name": 1, "args": {}}}],
         InvalidReviewDecisionError, "shape"),
        (SEED_REQUEST, [{"type": "edit", "edited_action": {"name": "send_email", "args": "x"}}],
         InvalidReviewDecisionError, "shape"),
        (SEED_REQUEST, [{"type": "respond", "message": "x"}], InvalidReviewDecisionError, "respond"),
    ],
)
async def test_the_validation_table_via_submit_review(
    manager: TaskManager, outbox: Outbox, language: str, request_text: str | None,
    decisions: Any, error: type, key: str,
) -> None:
    chat = ReviewedChatUseCase(manager, language=language)
    thread = "fresh-thread"
    if request_text is not None:
        thread = (await chat.send_message(request_text)).thread_id
    assert await _error(chat.submit_review(decisions, thread)) == (error, MESSAGES[language][key])
    assert outbox.count() == 0


async def test_check_order_via_submit_review(manager: TaskManager) -> None:
    chat = ReviewedChatUseCase(manager, language="id")
    texts = MESSAGES["id"]
    # 1. an action is pending, before anything about the decisions
    assert (await _error(chat.submit_review([5, {"type": "x"}], "nothing-here")))[0] is (
        NoPendingReviewError
    )
    one = (await chat.send_message(SEED_REQUEST)).thread_id
    two = (await chat.send_message(TWO_REQUEST)).thread_id
    # 2. the count, before any decision's type
    assert (await _error(chat.submit_review([{"type": "postpone"}, 5], one)))[1] == texts["count_1_2"]
    # 3. each decision in order: its type, then its edited_action
    assert (await _error(chat.submit_review([{"type": "edit"}, {"type": "postpone"}], two)))[1] == (
        texts["edit_needs"]
    )
    assert (await _error(chat.submit_review([{"type": "postpone"}, {"type": "edit"}], two)))[1] == (
        texts["postpone"]
    )
    assert (await _error(chat.submit_review([{"type": "approve"}, None], two)))[1] == texts["none"]
    assert (await _error(chat.submit_review([{"type": "x", "edited_action": 1}], one)))[1] == (
        "Jenis keputusan 'x' tidak dikenal. Pilihan: ['approve', 'edit', 'reject']"
    )


async def test_a_rejected_validation_changes_nothing(manager: TaskManager, outbox: Outbox) -> None:
    chat = ReviewedChatUseCase(manager, language="en")
    turn = await chat.send_message(SEED_REQUEST)
    before = await manager.thread_values(turn.thread_id)
    for bad in ([], [{"type": "edit"}], [{"type": "approve"}, {"type": "approve"}]):
        with pytest.raises(InvalidReviewDecisionError):
            await chat.submit_review(bad, turn.thread_id)
    with pytest.raises(ReviewPendingError):
        await chat.send_message("and another thing", turn.thread_id)
    assert await manager.thread_values(turn.thread_id) == before
    assert outbox.count() == 0
    done = await chat.submit_review([edit()], turn.thread_id)
    assert done.pending_review is None
    assert [r["subject"] for r in outbox.rows()] == ["Meeting moved"]


async def test_language_of_the_use_case_and_of_a_call(manager: TaskManager) -> None:
    chat = ReviewedChatUseCase(manager)  # the server's default: English
    turn = await chat.send_message(SEED_REQUEST)
    assert turn.pending_review == payload(language="en")
    indonesian = await chat.send_message(SEED_REQUEST, language="id")
    assert indonesian.pending_review == SEED_PAYLOAD


def test_an_unknown_agent_is_refused(manager: TaskManager) -> None:
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        ReviewedChatUseCase(manager, "nope")
