"""Unit tests of the HITL types and the answer normalisation order (seed 004)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from llamon_agent.core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from llamon_agent.core.normalize import Reask, Resolved, normalize_answer

from .helpers import DOC_PAYLOAD, DOC_QUESTION

DOC = HITLQuestion(
    DOC_QUESTION,
    options=[
        HITLOption(label="여권", value="passport"),
        HITLOption(label="주민등록증", value="id_card"),
    ],
)


class Calls(BaseCallbackHandler):
    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.prompts.extend(messages)


def model(*replies: str) -> tuple[GenericFakeChatModel, Calls]:
    calls = Calls()
    return GenericFakeChatModel(
        messages=iter([AIMessage(content=r) for r in replies]), callbacks=[calls]
    ), calls


def test_to_payload_is_the_seed_superset() -> None:
    assert DOC.to_payload() == DOC_PAYLOAD
    assert HITLQuestion(prompt="free?").to_payload() == {
        "schema": "llamon.hitl.question.v1",
        "question": "free?",
        "options": [],
        "choices": [],
        "multi_select": False,
        "free_text_allowed": True,
    }


def test_hitl_interrupt_accepts_a_question_and_defaults_the_key() -> None:
    request = HITLInterrupt(DOC, "case-123")
    assert request.payload == DOC_PAYLOAD
    assert request.thread_id == "case-123"
    assert request.key == "hitl_answer"
    assert HITLInterrupt({"question": "q"}, "t", key="birthday").key == "birthday"


@pytest.mark.parametrize(
    ("payload", "thread_id", "error"),
    [
        ({"question": ""}, "t", ValueError),
        ({"text": "no question key"}, "t", ValueError),
        ({"question": "q"}, "", ValueError),
        ("just a string", "t", TypeError),
    ],
)
def test_hitl_interrupt_rejects_bad_arguments(payload: Any, thread_id: str, error: type) -> None:
    with pytest.raises(error):
        HITLInterrupt(payload, thread_id)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("여권", "passport"),
        ("passport", "passport"),
        (" PASSPORT ", "passport"),
        ("\uff50\uff41\uff53\uff53\uff50\uff4f\uff52\uff54", "passport"),
        ("주민등록증", "id_card"),
        ("Id_Card", "id_card"),
    ],
)
async def test_exact_match_needs_no_model(answer: str, expected: str) -> None:
    llm, calls = model("id_card")
    outcome = await normalize_answer(DOC_PAYLOAD, answer, llm=llm, reasked=False)
    assert outcome == Resolved(expected, "exact")
    assert calls.prompts == []


async def test_free_text_passes_through_unchanged() -> None:
    llm, calls = model("x")
    for answer in ("  1990년 1월 1일 ", "", {"nested": [1, 2]}, 7):
        outcome = await normalize_answer({"question": "생일?"}, answer, llm=llm, reasked=False)
        assert outcome == Resolved(answer, "free-text")
    assert calls.prompts == []


async def test_model_classifies_once_with_question_labels_and_values() -> None:
    llm, calls = model("  ID_CARD \n")
    outcome = await normalize_answer(DOC_PAYLOAD, "신분증이요", llm=llm, reasked=False)
    assert outcome == Resolved("id_card", "llm")
    assert len(calls.prompts) == 1
    text = "\n".join(m.text for m in calls.prompts[0])
    for needle in (DOC_QUESTION, "여권", "passport", "주민등록증", "id_card", "신분증이요"):
        assert needle in text


async def test_model_may_answer_with_a_label() -> None:
    llm, _ = model("여권")
    assert await normalize_answer(DOC_PAYLOAD, "그 해외 갈 때 쓰는 거", llm=llm, reasked=False) == (
        Resolved("passport", "llm")
    )


async def test_unclear_without_model_reasks_then_falls_back() -> None:
    assert await normalize_answer(DOC_PAYLOAD, "모르겠어", llm=None, reasked=False) == Reask()
    assert await normalize_answer(DOC_PAYLOAD, "모르겠어", llm=None, reasked=True) == Resolved(
        "passport", "fallback"
    )


async def test_model_garbage_reasks_then_falls_back() -> None:
    llm, calls = model("UNKNOWN", "a banana")
    assert await normalize_answer(DOC_PAYLOAD, "흠", llm=llm, reasked=False) == Reask()
    assert await normalize_answer(DOC_PAYLOAD, "흠", llm=llm, reasked=True) == Resolved(
        "passport", "fallback"
    )
    assert len(calls.prompts) == 2


async def test_blank_or_non_text_answers_to_option_questions_skip_the_model() -> None:
    llm, calls = model("passport")
    assert await normalize_answer(DOC_PAYLOAD, "   ", llm=llm, reasked=False) == Reask()
    assert await normalize_answer(DOC_PAYLOAD, True, llm=llm, reasked=False) == Reask()
    assert await normalize_answer(DOC_PAYLOAD, {"x": 1}, llm=llm, reasked=True) == Resolved(
        "passport", "fallback"
    )
    assert calls.prompts == []


async def test_legacy_options_list_is_used_when_there_are_no_choices() -> None:
    legacy = {"question": "size?", "options": ["small", "large"]}
    assert await normalize_answer(legacy, " LARGE", llm=None, reasked=False) == Resolved(
        "large", "exact"
    )
    assert await normalize_answer(legacy, "huge", llm=None, reasked=True) == Resolved(
        "small", "fallback"
    )


async def test_choices_win_over_options() -> None:
    payload = {
        "question": "q?",
        "options": ["legacy"],
        "choices": [{"label": "Yes", "value": "y", "description": None}],
    }
    assert await normalize_answer(payload, "yes", llm=None, reasked=False) == Resolved("y", "exact")
    assert await normalize_answer(payload, "legacy", llm=None, reasked=True) == Resolved(
        "y", "fallback"
    )
