"""Answer normalisation for option questions (seed 004).

Order: an exact label or value (ignoring case, surrounding spaces and Unicode width) with no
LLM call; otherwise the agent's chat model classifies the text into one option; if that fails,
ask the same question once more; if still unclear, resume with the first option. Free-text
questions pass the answer through untouched.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

__all__ = ["Choice", "Reask", "Resolved", "choices_of", "match_choice", "normalize_answer"]

log = logging.getLogger(__name__)

UNKNOWN = "UNKNOWN"
CLASSIFY_INSTRUCTIONS = (
    "You map a person's answer to exactly one option of a question. Reply with the value of "
    f"the matching option and nothing else. If the answer matches no option, reply {UNKNOWN}."
)


@dataclass(frozen=True)
class Choice:
    label: str
    value: str


@dataclass(frozen=True)
class Resolved:
    value: Any
    how: str  # "free-text" | "exact" | "llm" | "fallback"


@dataclass(frozen=True)
class Reask:
    """The answer was unclear and the question has not been asked again yet."""


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip().casefold()


def choices_of(payload: Any) -> list[Choice]:
    """``choices`` (label/value) first, then the legacy ``options`` list of values (docs/hitl.md §5, D4)."""
    if not isinstance(payload, Mapping):
        return []
    structured = payload.get("choices")
    if isinstance(structured, list) and structured:
        return [
            Choice(label=str(c.get("label", c.get("value"))), value=str(c.get("value")))
            for c in structured
            if isinstance(c, Mapping) and "value" in c
        ]
    legacy = payload.get("options")
    if isinstance(legacy, list):
        return [Choice(label=str(v), value=str(v)) for v in legacy if isinstance(v, (str, int, float))]
    return []


def match_choice(answer: Any, choices: list[Choice]) -> str | None:
    if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
        return None
    folded = _fold(str(answer))
    for choice in choices:
        if folded in (_fold(choice.label), _fold(choice.value)):
            return choice.value
    return None


def classification_prompt(question: str, choices: list[Choice], answer: str) -> list[Any]:
    lines = "\n".join(f"- label: {c.label} | value: {c.value}" for c in choices)
    return [
        SystemMessage(content=CLASSIFY_INSTRUCTIONS),
        HumanMessage(content=f"Question: {question}\nOptions:\n{lines}\nAnswer: {answer}"),
    ]


async def _classify(llm: BaseChatModel, question: str, choices: list[Choice], answer: str) -> str | None:
    try:
        reply = await llm.ainvoke(classification_prompt(question, choices, answer))
    except Exception:  # a broken model must not break the conversation: re-ask instead
        log.exception("answer classification failed; treating the answer as unclear")
        return None
    return match_choice(reply.text, choices)


async def normalize_answer(
    payload: Any, answer: Any, *, llm: BaseChatModel | None, reasked: bool
) -> Resolved | Reask:
    choices = choices_of(payload)
    if not choices:
        return Resolved(answer, "free-text")
    exact = match_choice(answer, choices)
    if exact is not None:
        return Resolved(exact, "exact")
    if llm is not None and isinstance(answer, str) and answer.strip():
        question = str(payload.get("question", "")) if isinstance(payload, Mapping) else ""
        classified = await _classify(llm, question, choices, answer)
        if classified is not None:
            return Resolved(classified, "llm")
    if not reasked:
        return Reask()
    return Resolved(choices[0].value, "fallback")
