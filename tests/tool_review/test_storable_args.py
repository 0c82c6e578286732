"""Issue 8, finding 2: no side effect without a state that can be saved. Tool arguments that are
not storable JSON within the edge limits never reach the tool: an edit carrying them is refused
before anything resumes, and a call carrying them (from the model, or a direct resume) gets an
error result instead of running."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent import Limits, ReviewedChatUseCase
from llamon_agent.errors import LimitExceededError
from llamon_agent.tool_review import validate_decisions
from tests.orchestrator.helpers import serve_app
from tests.tool_review.helpers import SEED_ARGS, SEED_PAYLOAD, SEED_REQUEST, call, edit
from tests.tool_review.test_node import Run, asks, tool_results


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.fixture
async def outbox() -> AsyncIterator[Outbox]:
    box = Outbox(":memory:")
    yield box
    box.close()


@pytest.mark.parametrize("bad", [2**64 + 1, -(2**63) - 1, float("nan"), nested(40)])
def test_an_edit_with_unstorable_arguments_is_refused(bad: Any) -> None:
    with pytest.raises(LimitExceededError) as raised:
        validate_decisions([edit({**SEED_ARGS, "extra": bad})], SEED_PAYLOAD)
    assert raised.value.field == "decisions[0].edited_action.args"


@pytest.mark.usefixtures("backend")
async def test_the_python_api_refuses_it_and_sends_nothing(outbox: Outbox) -> None:
    async with serve_app([email_assistant(outbox)]) as harness:
        chat = ReviewedChatUseCase(harness.manager)
        thread = (await chat.send_message(SEED_REQUEST)).thread_id
        with pytest.raises(LimitExceededError):
            await chat.submit_review([edit({**SEED_ARGS, "n": 2**64 + 1})], thread)
        assert outbox.count() == 0
        done = await chat.submit_review([{"type": "approve"}], thread)
        assert done.pending_review is None
        assert outbox.count() == 1


async def test_a_model_call_with_unstorable_arguments_does_not_run(outbox: Outbox) -> None:
    deep = {**SEED_ARGS, "extra": nested(40)}
    run = Run(outbox, [asks(call("send_email", deep, "c1")), AIMessage(content="ok")],
              interrupt_on={})
    result = await run.start()
    assert outbox.count() == 0
    [(call_id, status, text)] = tool_results(result["messages"])
    assert (call_id, status) == ("c1", "error")
    assert "nested deeper than 32 levels" in text


async def test_a_storable_call_still_runs(outbox: Outbox) -> None:
    run = Run(outbox, [asks(call("send_email", SEED_ARGS, "c1")), AIMessage(content="ok")],
              interrupt_on={})
    result = await run.start()
    assert outbox.count() == 1
    assert [status for _, status, _ in tool_results(result["messages"])] == ["success"]


@pytest.mark.usefixtures("backend")
async def test_the_servers_own_limits_apply_to_edits_and_tool_calls(outbox: Outbox) -> None:
    """A server configured with larger limits than the defaults accepts an edit within them:
    the checks before the tool runs use the server's limits, not the defaults."""
    big = {**SEED_ARGS, "body": "x" * (100 * 1024)}  # over the default 64 KiB, under 1 MiB
    limits = Limits(max_data_bytes=1024 * 1024, max_text_chars=1024 * 1024)
    async with serve_app([email_assistant(outbox)], limits=limits) as harness:
        chat = ReviewedChatUseCase(harness.manager)
        thread = (await chat.send_message(SEED_REQUEST)).thread_id
        done = await chat.submit_review([edit(big)], thread)
        assert done.pending_review is None
        assert outbox.count() == 1
