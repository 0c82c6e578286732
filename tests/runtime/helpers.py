"""Shared builders for the runtime HITL tests: agents, graphs and wire accessors."""

from __future__ import annotations

from typing import Any

from app.nodes import document_review_graph
from llamon_agent import Agent

DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."

# seed 004's JSON-RPC example, step 2 (verbatim; the README's conversation)
DOC_PAYLOAD: dict[str, Any] = {
    "schema": "llamon.hitl.question.v1",
    "question": DOC_QUESTION,
    "options": ["passport", "id_card"],
    "choices": [
        {"label": "여권", "value": "passport", "description": None},
        {"label": "주민등록증", "value": "id_card", "description": None},
    ],
    "multi_select": False,
    "free_text_allowed": True,
}
DOC_PARTS: list[dict[str, Any]] = [
    {"kind": "text", "text": DOC_QUESTION},
    {"kind": "data", "data": {"hitl": DOC_PAYLOAD}},
]
BIRTHDAY_PARTS: list[dict[str, Any]] = [
    {"kind": "text", "text": BIRTHDAY_QUESTION},
    {"kind": "data", "data": {"hitl": {"question": BIRTHDAY_QUESTION}}},
]


def doc_agent(llm: Any = None, agent_id: str = "document-review") -> Agent:
    """The example document-review agent with a known model (none by default, i.e. offline)."""
    return Agent(agent_id, document_review_graph(), llm=llm)


def state_of(task: dict[str, Any]) -> str:
    return task["status"]["state"]


def status_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    return task["status"]["message"]["parts"]


def question_text(task: dict[str, Any]) -> str:
    assert state_of(task) == "input-required", task["status"]
    return status_parts(task)[0]["text"]


def status_text(task: dict[str, Any]) -> str:
    return "\n".join(p["text"] for p in status_parts(task) if p["kind"] == "text")


def result_data(task: dict[str, Any]) -> Any:
    """The data part of the single result artifact of a completed task."""
    assert state_of(task) == "completed", task["status"]
    artifacts = task["artifacts"]
    assert len(artifacts) == 1, artifacts
    data = [p["data"] for p in artifacts[0]["parts"] if p["kind"] == "data"]
    assert len(data) == 1, artifacts[0]["parts"]
    return data[0]
