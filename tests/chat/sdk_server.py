"""An official ``a2a-sdk==0.3.26`` server for the chat's pseudo-terminal tests, run with
uvicorn (``tests.chat.sdk_server:app``; ``CHAT_SDK_URL`` is the URL its card advertises).

A handwritten ``AgentExecutor`` with a document-review-like flow, then a tool review:

1. ``DOC_QUESTION`` with choices, as llamon's ``{"hitl": {...}}`` data part (a choice's
   description carries escape sequences, ``HOSTILE``);
2. ``BIRTHDAY_QUESTION``, free text;
3. a ``working`` progress message (``PROGRESS``), then a ``llamon.hitl.review.v1`` review of a ``send_email`` call, answered with
   ``{"decisions": [...]}``;
4. completed, with a text naming what was decided.

``SLOW_REQUEST`` as the first message keeps the task ``working`` for ``SLOW_SECONDS`` first.

Each step continues only on the **same task**: the SDK gives a message without ``taskId`` a
new task, which starts again at step 1 (so a test that reaches step 4 proves the chat sent the
``taskId``). Every answer must carry the question's ``interruptId`` in its metadata, or the
executor asks the same question again, saying so.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    DataPart,
    Message,
    Part,
    TaskState,
    TextPart,
)
from a2a.utils import get_message_text, new_task

DOC_QUESTION = "Which document should I check?"
BIRTHDAY_QUESTION = "What is the date of birth?"
REVIEW_TEXT = "Awaiting approval: send_email"
MISSING_INTERRUPT = "The answer did not name the question (interruptId); asking again."
SLOW_REQUEST = "take your time"
SLOW_SECONDS = 30.0
PROGRESS = "preparing the email"
#: in a choice's description: escape sequences that would set the window title, clear the
#: screen and plant a hyperlink if the chat printed them
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://evil.example\x1b\\the blue booklet"
EMAIL_ARGS = {"to": "alice@example.com", "subject": "Documents", "body": "Checked."}


class _Progress:
    """Where one task is: its step, the answers so far, and the interrupt id asked."""

    def __init__(self) -> None:
        self.step = 0
        self.answers: list[Any] = []
        self.interrupt_id = ""


def _answer(message: Message) -> Any:
    for part in message.parts:
        if isinstance(part.root, DataPart):
            data = part.root.data
            if "decisions" in data:
                return data["decisions"]
            if "value" in data:
                return data["value"]
    return get_message_text(message)


class DocumentThenReview(AgentExecutor):
    def __init__(self) -> None:
        self.tasks: dict[str, _Progress] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        progress = self.tasks.setdefault(task.id, _Progress())
        await updater.start_work()
        if progress.step == 0 and get_message_text(context.message) == SLOW_REQUEST:
            await asyncio.sleep(SLOW_SECONDS)  # a reply that takes long: the chat's Ctrl-C test
        if progress.step > 0:
            sent = (context.message.metadata or {}).get("interruptId")
            if sent != progress.interrupt_id:
                await self._ask(updater, progress, again=True)
                return
            progress.answers.append(_answer(context.message))
        progress.step += 1
        if progress.step == 3:
            await updater.update_status(TaskState.working, updater.new_agent_message(
                [Part(root=TextPart(text=PROGRESS))]))
        if progress.step <= 3:
            await self._ask(updater, progress, again=False)
            return
        doc, birthday, decisions = progress.answers
        decision = decisions[0] if isinstance(decisions, list) and decisions else {}
        args = (decision.get("edited_action") or {}).get("args", EMAIL_ARGS)
        summary = (f"Checked {doc} for {birthday}; send_email {decision.get('type')}: "
                   f"to {args.get('to')}")
        await updater.add_artifact([Part(root=TextPart(text=summary))], name="result")
        await updater.complete(updater.new_agent_message([Part(root=TextPart(text=summary))]))

    async def _ask(self, updater: TaskUpdater, progress: _Progress, *, again: bool) -> None:
        if again:
            await updater.update_status(
                TaskState.working, updater.new_agent_message(
                    [Part(root=TextPart(text=MISSING_INTERRUPT))]))
        progress.interrupt_id = uuid.uuid4().hex
        text, hitl = _question(progress.step)
        message = updater.new_agent_message(
            [Part(root=TextPart(text=text)), Part(root=DataPart(data={"hitl": hitl}))],
            metadata={"interruptId": progress.interrupt_id},
        )
        await updater.requires_input(message, final=True)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def _question(step: int) -> tuple[str, dict[str, Any]]:
    if step == 1:
        return DOC_QUESTION, {
            "schema": "llamon.hitl.question.v1", "question": DOC_QUESTION,
            "options": ["passport", "id_card"],
            "choices": [{"label": "Passport", "value": "passport", "description": HOSTILE},
                        {"label": "ID card", "value": "id_card"}],
            "multi_select": False, "free_text_allowed": True,
        }
    if step == 2:
        return BIRTHDAY_QUESTION, {"question": BIRTHDAY_QUESTION}
    return REVIEW_TEXT, {
        "schema": "llamon.hitl.review.v1",
        "action_requests": [{"name": "send_email", "args": EMAIL_ARGS,
                             "description": "Tool `send_email` is awaiting approval"}],
        "review_configs": [{"action_name": "send_email",
                            "allowed_decisions": ["approve", "edit", "reject"]}],
    }


def card(url: str) -> AgentCard:
    return AgentCard(
        name="SDK document agent",
        description="Asks for a document and a date of birth, then reviews an email.",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="documents", name="Documents", description="Checks a document",
                           tags=["hitl"])],
    )


app = A2AStarletteApplication(
    agent_card=card(os.environ.get("CHAT_SDK_URL", "http://127.0.0.1:8000/")),
    http_handler=DefaultRequestHandler(agent_executor=DocumentThenReview(),
                                       task_store=InMemoryTaskStore()),
).build()
