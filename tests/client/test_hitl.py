"""Reading questions from tasks and building answers (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_agent.a2a.types import DataPart, Task, TaskStatusUpdateEvent, TextPart
from llamon_agent.client import (
    QUESTION_SCHEMA,
    REVIEW_SCHEMA,
    Choice,
    answer_message,
    approve,
    edit,
    question_of,
    reject,
)

QUESTION_HITL = {
    "schema": QUESTION_SCHEMA,
    "question": "어떤 서류를 검증할까요?",
    "options": ["passport", "id_card"],
    "choices": [
        {"label": "여권", "value": "passport", "description": None},
        {"label": "주민등록증", "value": "id_card", "description": "ID"},
    ],
    "multi_select": False,
    "free_text_allowed": True,
}
REVIEW_HITL = {
    "schema": REVIEW_SCHEMA,
    "question": "Review the tool calls",
    "action_requests": [{"name": "send_email", "args": {"to": "a@example.com"},
                         "description": "Tool `send_email` menunggu persetujuan"}],
    "review_configs": [{"action_name": "send_email",
                        "allowed_decisions": ["approve", "edit", "reject"]}],
}


def parked(parts: list[dict[str, Any]], state: str = "input-required") -> Task:
    return Task.model_validate({
        "kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": state, "message": {
            "kind": "message", "messageId": "q1", "role": "agent", "taskId": "t1",
            "contextId": "c1", "metadata": {"interruptId": "ab" * 16}, "parts": parts,
        }},
    })


def hitl_task(hitl: dict[str, Any], text: str = "ignored text part") -> Task:
    return parked([{"kind": "text", "text": text}, {"kind": "data", "data": {"hitl": hitl}}])


def test_question_with_choices() -> None:
    question = question_of(hitl_task(QUESTION_HITL))
    assert question is not None
    assert question.text == "어떤 서류를 검증할까요?"  # from the payload, not the text part
    assert (question.task_id, question.context_id) == ("t1", "c1")
    assert question.choices == (
        Choice("여권", "passport", None), Choice("주민등록증", "id_card", "ID")
    )
    assert question.hitl == QUESTION_HITL
    assert question.schema == QUESTION_SCHEMA
    assert not question.is_review
    assert question.interrupt_id == "ab" * 16
    assert question.free_text_allowed and not question.multi_select


def test_choices_fall_back_to_options() -> None:
    hitl = {**QUESTION_HITL, "choices": []}
    question = question_of(hitl_task(hitl))
    assert question is not None
    assert question.choices == (Choice("passport", "passport"), Choice("id_card", "id_card"))


def test_text_only_question() -> None:
    question = question_of(parked([{"kind": "text", "text": "Where to?"},
                                   {"kind": "text", "text": "(city)"}]))
    assert question is not None
    assert question.text == "Where to?\n(city)"
    assert question.choices == () and question.hitl is None and question.schema is None


def test_review_question() -> None:
    from llamon_agent.tool_review.payload import REVIEW_SCHEMA as SERVER_REVIEW_SCHEMA

    assert REVIEW_SCHEMA == SERVER_REVIEW_SCHEMA  # what the server's tool review sends
    question = question_of(hitl_task(REVIEW_HITL))
    assert question is not None and question.is_review
    assert question.action_requests == REVIEW_HITL["action_requests"]


def test_question_from_final_status_event() -> None:
    task = hitl_task(QUESTION_HITL)
    event = TaskStatusUpdateEvent(task_id="t1", context_id="c1", status=task.status, final=True)
    question = question_of(event)
    assert question is not None and question.task_id == "t1" and len(question.choices) == 2


@pytest.mark.parametrize("state", ["completed", "working", "auth-required"])
def test_no_question_unless_input_required(state: str) -> None:
    assert question_of(parked([{"kind": "text", "text": "x"}], state)) is None
    with pytest.raises(ValueError, match=state):
        answer_message(parked([{"kind": "text", "text": "x"}], state), "hello")


def test_answers_keep_the_ids() -> None:
    task = hitl_task(QUESTION_HITL)
    question = question_of(task)
    assert question is not None
    for source in (task, question):
        message = answer_message(source, "여권")
        assert (message.task_id, message.context_id, message.role) == ("t1", "c1", "user")
        assert message.parts == [TextPart(kind="text", text="여권")]
    assert answer_message(task, "a").message_id != answer_message(task, "a").message_id


@pytest.mark.parametrize("given", ["passport", "여권"], ids=["value", "label"])
def test_answer_with_a_choice(given: str) -> None:
    message = answer_message(hitl_task(QUESTION_HITL), choice=given)
    assert message.parts == [
        TextPart(kind="text", text="passport"),
        DataPart(kind="data", data={"value": "passport"}),
    ]


def test_answer_with_an_unknown_choice() -> None:
    with pytest.raises(ValueError, match="not one of the choices"):
        answer_message(hitl_task(QUESTION_HITL), choice="driver_license")


def test_answer_with_a_value_and_with_decisions() -> None:
    task = hitl_task(REVIEW_HITL)
    assert answer_message(task, value={"x": [1]}).parts == [
        DataPart(kind="data", data={"value": {"x": [1]}})
    ]
    assert answer_message(task, value=None).parts == [DataPart(kind="data", data={"value": None})]
    decisions = [approve(), edit("send_email", {"to": "b@example.com"}), reject("no"), reject()]
    assert answer_message(task, decisions=decisions).parts == [DataPart(kind="data", data={
        "decisions": [
            {"type": "approve"},
            {"type": "edit", "edited_action": {"name": "send_email",
                                               "args": {"to": "b@example.com"}}},
            {"type": "reject", "message": "no"},
            {"type": "reject"},
        ]
    })]
    with pytest.raises(ValueError, match="type"):
        answer_message(task, decisions=[{"approve": True}])


@pytest.mark.parametrize("kwargs", [{}, {"text": "a", "value": 1}, {"choice": "a", "decisions": []}])
def test_exactly_one_kind_of_answer(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="exactly one"):
        answer_message(hitl_task(QUESTION_HITL), **kwargs)


def test_every_answer_carries_the_questions_interrupt_id() -> None:
    """Issue 8, finding 3: an answer says which question it answers, so a retry of it can
    never answer the next question."""
    for hitl, kwargs in [
        (QUESTION_HITL, {"text": "여권"}),
        (QUESTION_HITL, {"choice": "passport"}),
        (QUESTION_HITL, {"value": "passport"}),
        (REVIEW_HITL, {"decisions": [approve()]}),
    ]:
        task = hitl_task(hitl)
        question = question_of(task)
        assert question is not None and question.interrupt_id == "ab" * 16
        for source in (task, question):
            message = answer_message(source, **kwargs)
            assert message.metadata == {"interruptId": "ab" * 16}
    merged = answer_message(hitl_task(QUESTION_HITL), "여권", metadata={"lang": "ko"})
    assert merged.metadata == {"interruptId": "ab" * 16, "lang": "ko"}


def test_a_question_without_interrupt_id_sends_none() -> None:
    """Questions of other A2A agents may carry no id: the answer then carries none either."""
    task = Task.model_validate({
        "kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": "input-required", "message": {
            "kind": "message", "messageId": "q1", "role": "agent",
            "parts": [{"kind": "text", "text": "Which one?"}],
        }},
    })
    assert answer_message(task, "this one").metadata is None
    assert answer_message(task, "x", metadata={"a": 1}).metadata == {"a": 1}
