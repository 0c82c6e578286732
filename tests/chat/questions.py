"""Questions and reviews as a llamon server sends them, for the pure tests."""

from __future__ import annotations

from typing import Any

from llamon_agent.a2a.types import DataPart, Message, Task, TaskStatus, TextPart
from llamon_agent.client import Question, question_of

DOC_CHOICES = [{"label": "여권", "value": "passport", "description": None},
               {"label": "주민등록증", "value": "id_card", "description": "Korean ID card"}]


def question(hitl: dict[str, Any] | None, text: str = "", **metadata: Any) -> Question:
    parts: list[Any] = [TextPart(kind="text", text=text or (hitl or {}).get("question", ""))]
    if hitl is not None:
        parts.append(DataPart(kind="data", data={"hitl": hitl}))
    message = Message(message_id="m1", role="agent", parts=parts, task_id="t1", context_id="c1",
                      metadata={"interruptId": "i1", **metadata})
    task = Task(id="t1", context_id="c1", status=TaskStatus(state="input-required",
                                                             message=message))
    found = question_of(task)
    assert found is not None
    return found


def document_question(**extra: Any) -> Question:
    return question({"schema": "llamon.hitl.question.v1", "question": "어떤 서류를 검증할까요?",
                     "options": ["passport", "id_card"], "choices": DOC_CHOICES,
                     "multi_select": False, "free_text_allowed": True, **extra})


def review(args: dict[str, Any] | None = None, allowed: list[str] | None = None,
           **extra: Any) -> Question:
    return question({
        "schema": "llamon.hitl.review.v1",
        "action_requests": [{"name": "send_email", "description": "Tool `send_email` is "
                             "awaiting approval", "args": args or {"to": "alice@example.com",
                                                                  "subject": "Meeting"}}],
        "review_configs": [{"action_name": "send_email",
                            "allowed_decisions": allowed or ["approve", "edit", "reject"]}],
        **extra,
    }, text="Awaiting approval: send_email")
