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
    InvalidReviewDecisionError,
    JSONParseError,
    LlamonError,
    MethodNotFoundError,
    NoPendingReviewError,
    PushNotificationNotSupportedError,
    ReviewError,
    ReviewPendingError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from .review import (
    ALLOWED_DECISIONS,
    NO_DECISION,
    REJECTED_BY_USER_MESSAGE,
    InterruptOnConfig,
    ReviewPolicy,
    ReviewState,
    build_review_request,
    review_graph,
    validate_decisions,
)
from .review.chat import ChatTurn, ReviewedChatUseCase
from .server.app import create_app
from .stores.base import StoredTask, TaskStore
from .stores.memory import InMemoryTaskStore
from .stores.sqlite import SQLiteTaskStore
from .stores.storage import Storage, open_storage

__version__ = "0.1.0"

__all__ = [
    "ALLOWED_DECISIONS",
    "NO_DECISION",
    "REJECTED_BY_USER_MESSAGE",
    "A2AClient",
    "A2AClientError",
    "A2AError",
    "A2ARPCError",
    "Agent",
    "AgentCard",
    "AuthenticatedExtendedCardNotConfiguredError",
    "ChatTurn",
    "ContentTypeNotSupportedError",
    "EventStream",
    "HITLInterrupt",
    "HITLOption",
    "HITLQuestion",
    "InMemoryTaskStore",
    "InternalError",
    "InterruptOnConfig",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "InvalidReviewDecisionError",
    "JSONParseError",
    "LlamonError",
    "MethodNotFoundError",
    "NoPendingReviewError",
    "PushNotificationNotSupportedError",
    "ReviewError",
    "ReviewPendingError",
    "ReviewPolicy",
    "ReviewState",
    "ReviewedChatUseCase",
    "SQLiteTaskStore",
    "Storage",
    "StoredTask",
    "StreamEvent",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "TaskStore",
    "UnsupportedOperationError",
    "__version__",
    "answer_message",
    "build_review_request",
    "create_app",
    "open_storage",
    "question_of",
    "review_graph",
    "validate_decisions",
]
