"""``ReviewedChatUseCase``: chat with an agent whose tool calls wait for approval (seed 000).

Built on the task runtime (a ``TaskRuntime``: the server's ``TaskManager``), so a chat turn is an A2A turn: the
``thread_id`` is the A2A ``contextId`` (the same conversation can be continued over either),
the per-context claim applies (a second message while a turn runs is refused, never queued),
and decisions are validated before anything resumes::

    chat = ReviewedChatUseCase(manager, "email-assistant")
    turn = await chat.send_message("Email alice@example.com about Meeting: The meeting is at 10.")
    turn.pending_review        # {"action_requests": [...], "review_configs": [...]}
    turn = await chat.submit_review([{"type": "approve"}], turn.thread_id)
    turn.reply                 # the agent's answer once nothing waits

``send_message`` raises ``ReviewPendingError`` while actions wait; ``submit_review`` raises
``NoPendingReviewError`` or ``InvalidReviewDecisionError`` (seed 000's order and texts, in the
use case's language unless a call names one).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..a2a.types import DataPart, Message, MessageSendParams, Task, TextPart
from ..agent import Agent
from ..core.hitl import INTERRUPT_ID
from ..core.principal import ANONYMOUS
from .payload import REVIEW_SCHEMA

__all__ = ["ChatTurn", "ReviewedChatUseCase", "chat_messages"]


@dataclass(frozen=True)
class ChatTurn:
    """One turn of a reviewed chat.

    ``reply`` is the agent's text when nothing waits for a decision (``None`` while a review
    is pending); ``pending_review`` the payload that waits (``None`` when nothing does);
    ``interrupt_id`` the id of the review (or question) that waits, ``None`` when nothing does
    (send it back with the decisions, so a retried decision cannot decide the next review);
    ``messages`` the conversation so far with tool calls and tool results (see
    :func:`chat_messages`), so edits and rejects are visible; ``expires_at`` when what waits
    has a deadline (docs/hitl.md, "Deadlines"): then it is rejected (or the task canceled).
    """

    thread_id: str
    reply: str | None
    pending_review: dict[str, Any] | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    interrupt_id: str | None = None
    expires_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "reply": self.reply,
            "pending_review": self.pending_review,
            "interrupt_id": self.interrupt_id,
            "expires_at": self.expires_at,
            "messages": self.messages,
        }


class TaskRuntime(Protocol):
    """What the chat needs of the task runtime (``TaskManager`` is one): declared here, so
    tool review sits below the runtime and never imports it."""

    @property
    def agents(self) -> Sequence[Agent]: ...

    async def context_agent(self, context_id: str, *, space: str = ANONYMOUS) -> str | None: ...

    async def send(
        self, params: MessageSendParams, *, language: str | None = None, space: str = ANONYMOUS
    ) -> Task: ...

    async def thread_values(
        self, context_id: str, *, space: str = ANONYMOUS
    ) -> dict[str, Any]: ...


class ReviewedChatUseCase:
    """Send messages and review decisions to one agent served by a ``TaskManager``.

    ``agent_id`` is the agent new threads talk to (default: the manager's first agent); a
    thread that exists keeps the agent that started it. ``language`` (``"en"`` or ``"id"``)
    chooses the texts of errors and descriptions (default: the server's).
    """

    def __init__(
        self, manager: TaskRuntime, agent_id: str | None = None, *, language: str | None = None,
        space: str = ANONYMOUS,
    ) -> None:
        known = [a.id for a in manager.agents]
        if agent_id is not None and agent_id not in known:
            raise ValueError(f"unknown agent {agent_id!r}; served: {known}")
        self._manager = manager
        self._agent_id = agent_id or known[0]
        self._language = language
        self._space = space  # whose threads these are (core/principal.py)

    async def send_message(
        self, text: str, thread_id: str | None = None, *, agent_id: str | None = None,
        language: str | None = None,
    ) -> ChatTurn:
        """A user message on ``thread_id`` (a new thread when ``None``)."""
        thread_id = thread_id or str(uuid.uuid4())
        if agent_id is None and await self._manager.context_agent(
            thread_id, space=self._space
        ) is None:
            agent_id = self._agent_id
        part = TextPart(kind="text", text=text)
        return await self._send(thread_id, part, agent_id, language)

    async def submit_review(
        self, decisions: Sequence[Any], thread_id: str, *, language: str | None = None,
        interrupt_id: str | None = None,
    ) -> ChatTurn:
        """The decisions for the actions pending on ``thread_id``, one per action, in order.

        With ``interrupt_id`` (a turn's ``interrupt_id``) they apply only to that review: once
        it is decided they raise ``StaleAnswerError`` instead of deciding the next one."""
        payload = list(decisions) if isinstance(decisions, (list, tuple)) else decisions
        part = DataPart(kind="data", data={"decisions": payload})
        return await self._send(thread_id, part, None, language, interrupt_id)

    async def _send(
        self, thread_id: str, part: TextPart | DataPart, agent_id: str | None,
        language: str | None, interrupt_id: str | None = None,
    ) -> ChatTurn:
        message = Message(
            message_id=str(uuid.uuid4()), role="user", parts=[part], context_id=thread_id,
            metadata={INTERRUPT_ID: interrupt_id} if interrupt_id is not None else None,
        )
        params = MessageSendParams(
            message=message, metadata={"agentId": agent_id} if agent_id else None
        )
        task = await self._manager.send(
            params, language=language or self._language, space=self._space
        )
        values = await self._manager.thread_values(task.context_id, space=self._space)
        return chat_turn(task, values.get("messages"))


def chat_turn(task: Task, messages: Any) -> ChatTurn:
    pending = pending_review_of(task)
    status_message = task.status.message
    reply = None
    if pending is None and status_message is not None:
        reply = status_message.text() or None
    interrupt_id = expires_at = None
    if task.status.state == "input-required" and status_message is not None:
        found = (status_message.metadata or {}).get(INTERRUPT_ID)
        interrupt_id = found if isinstance(found, str) else None
        expires_at = _expires_at(status_message)
    return ChatTurn(task.context_id, reply, pending, chat_messages(messages), interrupt_id,
                    expires_at)


def _expires_at(message: Message) -> str | None:
    for data in message.data():
        hitl = data.get("hitl")
        if isinstance(hitl, Mapping) and isinstance(hitl.get("expires_at"), str):
            return str(hitl["expires_at"])
    return None


def pending_review_of(task: Task) -> dict[str, Any] | None:
    """The review a task waits on, read from its ``input-required`` status message."""
    message = task.status.message
    if task.status.state != "input-required" or message is None:
        return None
    for data in message.data():
        hitl = data.get("hitl")
        if isinstance(hitl, Mapping) and hitl.get("schema") == REVIEW_SCHEMA:
            return {
                "action_requests": hitl["action_requests"],
                "review_configs": hitl["review_configs"],
            }
    return None


def chat_messages(messages: Any) -> list[dict[str, Any]]:
    """The conversation as plain JSON.

    Every message: ``{"id", "type": "human" | "ai" | "tool" | "system", "content"}`` (text);
    an AI message adds ``tool_calls: [{"id", "name", "args"}]`` (after an edit: the call that
    ran); a tool result adds ``tool_call_id``, ``name`` and ``status`` (``success``/``error``).
    """
    if not isinstance(messages, list):
        return []
    plain: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, BaseMessage):
            continue
        item: dict[str, Any] = {"id": message.id, "type": message.type, "content": message.text}
        if isinstance(message, AIMessage):
            item["tool_calls"] = [
                {"id": c["id"], "name": c["name"], "args": c["args"]} for c in message.tool_calls
            ]
        if isinstance(message, ToolMessage):
            item.update(tool_call_id=message.tool_call_id, name=message.name, status=message.status)
        plain.append(item)
    return plain
