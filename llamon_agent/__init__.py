"""llamon-agent: LangGraph agents over A2A v0.3 that stop to ask a human and resume exactly there."""

from .agent import Agent
from .client import (
    A2AClient,
    A2AClientError,
    A2ARPCError,
    AgentCard,
    EventStream,
    StreamEvent,
    answer_message,
    question_of,
)
from .core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from .errors import (
    A2AError,
    AuthenticatedExtendedCardNotConfiguredError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    LlamonError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from .server.app import create_app
from .stores.base import StoredTask, TaskStore
from .stores.memory import InMemoryTaskStore
from .stores.sqlite import SQLiteTaskStore
from .stores.storage import Storage, open_storage

__version__ = "0.1.0"

__all__ = [
    "A2AClient",
    "A2AClientError",
    "A2ARPCError",
    "AgentCard",
    "EventStream",
    "StreamEvent",
    "answer_message",
    "question_of",
    "A2AError",
    "Agent",
    "AuthenticatedExtendedCardNotConfiguredError",
    "ContentTypeNotSupportedError",
    "HITLInterrupt",
    "HITLOption",
    "HITLQuestion",
    "InMemoryTaskStore",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "LlamonError",
    "MethodNotFoundError",
    "PushNotificationNotSupportedError",
    "SQLiteTaskStore",
    "Storage",
    "StoredTask",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "TaskStore",
    "UnsupportedOperationError",
    "__version__",
    "create_app",
    "open_storage",
]
