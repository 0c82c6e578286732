"""The one error tree of llamon_agent.

::

    LlamonError
    └── A2AError                      carries a JSON-RPC code; enveloped in exactly one place
        ├── JSONParseError                      -32700
        ├── InvalidRequestError                 -32600
        ├── MethodNotFoundError                 -32601
        ├── InvalidParamsError                  -32602
        │   └── ReviewError                     tool-call review (seed 000); REST: HTTP 400
        │       ├── NoPendingReviewError
        │       ├── ReviewPendingError
        │       └── InvalidReviewDecisionError
        ├── InternalError                       -32603
        ├── TaskNotFoundError                   -32001
        ├── TaskNotCancelableError              -32002
        ├── PushNotificationNotSupportedError   -32003
        ├── UnsupportedOperationError           -32004  (terminal task, busy context)
        ├── ContentTypeNotSupportedError        -32005
        ├── InvalidAgentResponseError           -32006
        └── AuthenticatedExtendedCardNotConfiguredError  -32007

Default messages are the ``@default`` texts of the A2A v0.3 schema; raise sites may give a
more specific sentence and put machine-readable details in ``data``. JSON-RPC errors travel
with HTTP 200 (a2a-v0.3.md section 1).

Review errors carry seed 000's message (in the request's language, see ``review/catalog.py``):
over A2A they are ``-32602`` with that message and ``data.error`` naming the exception; over
the REST API (``POST /hitl/*``) they are HTTP ``http_status`` (400) with the message as
``detail``.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "A2AError",
    "AuthenticatedExtendedCardNotConfiguredError",
    "ContentTypeNotSupportedError",
    "InternalError",
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
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnsupportedOperationError",
]


class LlamonError(Exception):
    """Base of every error the SDK raises on purpose."""


class A2AError(LlamonError):
    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class JSONParseError(A2AError):
    code = -32700
    default_message = "Invalid JSON payload"


class InvalidRequestError(A2AError):
    code = -32600
    default_message = "Request payload validation error"


class MethodNotFoundError(A2AError):
    code = -32601
    default_message = "Method not found"


class InvalidParamsError(A2AError):
    code = -32602
    default_message = "Invalid parameters"


class ReviewError(InvalidParamsError):
    """A tool-call review that cannot go ahead; nothing was changed."""

    http_status: ClassVar[int] = 400

    def __init__(self, message: str) -> None:
        super().__init__(message, data={"error": type(self).__name__})


class NoPendingReviewError(ReviewError):
    """Decisions sent to a conversation where no action awaits approval."""


class ReviewPendingError(ReviewError):
    """A new chat message while actions still await approval."""


class InvalidReviewDecisionError(ReviewError):
    """Decisions that do not fit the pending actions (count, type, ``edited_action``, ...)."""


class InternalError(A2AError):
    code = -32603
    default_message = "Internal error"


class TaskNotFoundError(A2AError):
    code = -32001
    default_message = "Task not found"


class TaskNotCancelableError(A2AError):
    code = -32002
    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(A2AError):
    code = -32003
    default_message = "Push Notification is not supported"


class UnsupportedOperationError(A2AError):
    code = -32004
    default_message = "This operation is not supported"


class ContentTypeNotSupportedError(A2AError):
    code = -32005
    default_message = "Incompatible content types"


class InvalidAgentResponseError(A2AError):
    code = -32006
    default_message = "Invalid agent response"


class AuthenticatedExtendedCardNotConfiguredError(A2AError):
    code = -32007
    default_message = "Authenticated Extended Card is not configured"
