"""Async A2A v0.3 client (JSON-RPC over httpx).

::

    async with await A2AClient.connect("http://127.0.0.1:8000") as client:
        task = await client.send("이 서류를 검증해줘")
        question = question_of(task)             # None unless input-required
        task = await client.answer(question, choice="passport")

        async with client.stream("hi") as events:
            async for event in events:           # StreamEvent: .result (typed), .id, .final
                ...

The package exports what a caller writes against. The per-code JSON-RPC errors
(``RemoteTaskNotFoundError``, ..., all subclasses of ``A2ARPCError``) are in
``llamon_agent.client.errors``; the card's parts (``AgentSkill``, ...) in
``llamon_agent.client.card``.
"""

from __future__ import annotations

from ..a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from .card import AgentCard, fetch_card
from .client import A2AClient, user_message
from .errors import (
    A2AAuthenticationError,
    A2ACardNotFoundError,
    A2AClientError,
    A2AConnectionError,
    A2AHTTPStatusError,
    A2AInvalidResponseError,
    A2ARPCError,
    A2AStreamInterruptedError,
    A2ATimeoutError,
    A2ATransportError,
)
from .hitl import (
    QUESTION_SCHEMA,
    REVIEW_SCHEMA,
    Choice,
    Question,
    answer_message,
    approve,
    edit,
    question_of,
    reject,
)
from .retry import NO_RETRY, RetryPolicy
from .stream import EventStream, StreamEvent

__all__ = [
    "NO_RETRY",
    "QUESTION_SCHEMA",
    "REVIEW_SCHEMA",
    "A2AAuthenticationError",
    "A2ACardNotFoundError",
    "A2AClient",
    "A2AClientError",
    "A2AConnectionError",
    "A2AHTTPStatusError",
    "A2AInvalidResponseError",
    "A2ARPCError",
    "A2AStreamInterruptedError",
    "A2ATimeoutError",
    "A2ATransportError",
    "AgentCard",
    "Choice",
    "EventStream",
    "Message",
    "Question",
    "RetryPolicy",
    "StreamEvent",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskStatusUpdateEvent",
    "answer_message",
    "approve",
    "edit",
    "fetch_card",
    "question_of",
    "reject",
    "user_message",
]
