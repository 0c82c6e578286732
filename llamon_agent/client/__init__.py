"""Async A2A v0.3 client (JSON-RPC over httpx).

::

    async with await A2AClient.connect("http://127.0.0.1:8000") as client:
        task = await client.send("이 서류를 검증해줘")
        question = question_of(task)             # None unless input-required
        task = await client.answer(question, choice="passport")

        async with client.stream("hi") as events:
            async for event in events:           # StreamEvent: .result (typed), .id, .final
                ...
"""

from __future__ import annotations

from ..a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from .card import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    card_urls,
    fetch_card,
)
from .client import DEFAULT_RETRY, DEFAULT_TIMEOUT, A2AClient, user_message
from .errors import (
    RPC_ERRORS,
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
    RemoteAuthenticatedExtendedCardNotConfiguredError,
    RemoteContentTypeNotSupportedError,
    RemoteInternalError,
    RemoteInvalidAgentResponseError,
    RemoteInvalidParamsError,
    RemoteInvalidRequestError,
    RemoteJSONParseError,
    RemoteMethodNotFoundError,
    RemotePushNotificationNotSupportedError,
    RemoteTaskNotCancelableError,
    RemoteTaskNotFoundError,
    RemoteUnsupportedOperationError,
    rpc_error,
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
from .rpc import A2AEvent
from .sse import SSEMessage, aiter_sse
from .stream import EventStream, StreamEvent, apply_event

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUT",
    "NO_RETRY",
    "QUESTION_SCHEMA",
    "REVIEW_SCHEMA",
    "RPC_ERRORS",
    "A2AAuthenticationError",
    "A2ACardNotFoundError",
    "A2AClient",
    "A2AClientError",
    "A2AConnectionError",
    "A2AEvent",
    "A2AHTTPStatusError",
    "A2AInvalidResponseError",
    "A2ARPCError",
    "A2AStreamInterruptedError",
    "A2ATimeoutError",
    "A2ATransportError",
    "AgentCapabilities",
    "AgentCard",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Choice",
    "EventStream",
    "Message",
    "Question",
    "RemoteAuthenticatedExtendedCardNotConfiguredError",
    "RemoteContentTypeNotSupportedError",
    "RemoteInternalError",
    "RemoteInvalidAgentResponseError",
    "RemoteInvalidParamsError",
    "RemoteInvalidRequestError",
    "RemoteJSONParseError",
    "RemoteMethodNotFoundError",
    "RemotePushNotificationNotSupportedError",
    "RemoteTaskNotCancelableError",
    "RemoteTaskNotFoundError",
    "RemoteUnsupportedOperationError",
    "RetryPolicy",
    "SSEMessage",
    "StreamEvent",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskStatusUpdateEvent",
    "aiter_sse",
    "answer_message",
    "apply_event",
    "approve",
    "card_urls",
    "edit",
    "fetch_card",
    "question_of",
    "reject",
    "rpc_error",
    "user_message",
]
