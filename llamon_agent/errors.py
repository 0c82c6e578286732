"""The one error tree of llamon_agent.

::

    LlamonError
    ├── StorageInUseError             the SQLite file is held by another server; refused at start
    └── A2AError                      carries a JSON-RPC code; enveloped in exactly one place
        ├── JSONParseError                      -32700
        ├── InvalidRequestError                 -32600
        │   └── PayloadTooLargeError            REST: HTTP 413
        ├── MethodNotFoundError                 -32601
        ├── InvalidParamsError                  -32602  REST: HTTP 400
        │   ├── LimitExceededError              an edge limit (core/bounds.py); REST: HTTP 422
        │   ├── StaleAnswerError                an answer to a question no longer pending; REST: 409
        │   ├── QuestionExpiredError            an answer after the question's deadline; REST: 409
        │   └── ReviewError                     tool-call review (seed 000); REST: HTTP 400
        │       ├── NoPendingReviewError
        │       ├── ReviewPendingError
        │       └── InvalidReviewDecisionError
        ├── InternalError                       -32603  REST: HTTP 500 (JSON)
        │   └── UnreadableTaskError             a stored row that cannot be decoded
        ├── TaskNotFoundError                   -32001  REST: HTTP 404
        ├── TaskNotCancelableError              -32002
        ├── PushNotificationNotSupportedError   -32003
        ├── UnsupportedOperationError           -32004  (terminal task, busy context); REST: 409
        │   └── QuotaExceededError              a principal's quota (server/quotas.py); REST: 429
        ├── ContentTypeNotSupportedError        -32005
        ├── InvalidAgentResponseError           -32006
        ├── AuthenticatedExtendedCardNotConfiguredError  -32007
        └── VersionNotSupportedError            -32009  (A2A-Version; v1.0)

Default messages are the ``@default`` texts of the A2A v0.3 schema; raise sites may give a
more specific sentence and put machine-readable details in ``data``. JSON-RPC errors travel
with HTTP 200 (docs/wire.md §1); the REST endpoints answer ``http_status``.

Over A2A v1.0 (docs/versions.md) the same errors carry, as ``data``, the list v1.0 asks for:
a ``google.rpc.ErrorInfo`` (the class's ``reason``, domain ``a2a-protocol.org``, the v0.3
``data`` as string metadata) and, for invalid params, a ``google.rpc.BadRequest`` naming the
fields (``to_error_v1``).

Review errors carry seed 000's message (in the request's language, see ``tool_review/catalog.py``):
over A2A they are ``-32602`` with that message and ``data.error`` naming the exception; over
the REST API (``POST /hitl/*``) they are HTTP ``http_status`` (400) with the message as
``detail``.
"""

from __future__ import annotations

import json
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
    "LimitExceededError",
    "LlamonError",
    "MethodNotFoundError",
    "NoPendingReviewError",
    "PayloadTooLargeError",
    "PushNotificationNotSupportedError",
    "QuestionExpiredError",
    "QuotaExceededError",
    "ReviewError",
    "ReviewPendingError",
    "StaleAnswerError",
    "StorageInUseError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnreadableTaskError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
]

_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_DOMAIN = "a2a-protocol.org"
_MAX_DETAIL = 1024  # characters of one metadata value in a v1.0 error


class LlamonError(Exception):
    """Base of every error the SDK raises on purpose."""


class StorageInUseError(LlamonError):
    """Another process (or another storage in this one) holds the SQLite file's lock.

    Raised by ``open_storage`` before it connects: the running server's tasks are untouched.
    Never sent to a client, so it has no JSON-RPC code."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"the database file {path} is in use by another llamon-agent server "
            "(one server per SQLite file): stop that server or use another database file"
        )
        self.path = path


class A2AError(LlamonError):
    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"
    #: the status the REST endpoints answer with (JSON-RPC errors travel with HTTP 200)
    http_status: ClassVar[int] = 500
    #: A2A v1.0's ``ErrorInfo.reason``; subclasses without one inherit their parent's
    _reason: ClassVar[str | None] = None

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def to_error_v1(self) -> dict[str, Any]:
        """The A2A v1.0 form: ``data`` is a list of typed details, an ``ErrorInfo`` first
        (its metadata is ``map<string, string>``: other values are written as JSON)."""
        metadata: dict[str, str] = {}
        violations: list[dict[str, str]] = []
        if isinstance(self.data, dict):
            for key, value in self.data.items():
                if key == "errors" and isinstance(value, list):
                    violations = [_violation(v) for v in value if isinstance(v, dict)]
                    continue
                metadata[str(key)] = _as_text(value)
        elif self.data is not None:
            metadata["detail"] = _as_text(self.data)
        details: list[dict[str, Any]] = [
            {"@type": _ERROR_INFO, "reason": self.reason, "domain": _DOMAIN,
             "metadata": metadata},
        ]
        if violations:
            details.append({"@type": _BAD_REQUEST, "fieldViolations": violations})
        return {"code": self.code, "message": self.message, "data": details}

    @property
    def reason(self) -> str:
        """The v1.0 ``ErrorInfo.reason`` (a subclass without one has its parent's)."""
        return self._reason or "INTERNAL_ERROR"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


def _violation(error: dict[str, Any]) -> dict[str, str]:
    return {"field": _as_text(error.get("field", "")),
            "description": _as_text(error.get("message", ""))}


class JSONParseError(A2AError):
    code = -32700
    _reason = "PARSE_ERROR"
    default_message = "Invalid JSON payload"
    http_status = 400


class InvalidRequestError(A2AError):
    code = -32600
    _reason = "INVALID_REQUEST"
    default_message = "Request payload validation error"
    http_status = 400


class PayloadTooLargeError(InvalidRequestError):
    """A body over the configured size; refused before the rest of it is read."""

    default_message = "Payload too large"
    http_status = 413


class MethodNotFoundError(A2AError):
    code = -32601
    _reason = "METHOD_NOT_FOUND"
    default_message = "Method not found"
    http_status = 404


class InvalidParamsError(A2AError):
    code = -32602
    _reason = "INVALID_PARAMS"
    default_message = "Invalid parameters"
    http_status = 400


class LimitExceededError(InvalidParamsError):
    """A client value over an edge limit (``core/bounds.py``): nothing was stored or run.

    ``data`` names the limit (``max_depth``, ``max_text_chars``, ``number``, ...), the field
    and the maximum, so a client can tell which bound it hit."""

    http_status = 422

    def __init__(
        self, message: str, *, limit: str, field: str | None, maximum: int | None = None
    ) -> None:
        data: dict[str, Any] = {"reason": "limit exceeded", "limit": limit}
        if field is not None:
            data["field"] = field
        if maximum is not None:
            data["max"] = maximum
        super().__init__(message, data=data)
        self.limit = limit
        self.field = field


class StaleAnswerError(InvalidParamsError):
    """An answer bound to a question (``metadata.interruptId``) that is no longer pending: a
    retry that came after its question was answered, or an answer to an old question. Nothing
    was stored or run; ``data`` is ``{"reason": "stale answer", "taskId", "interruptId"}``."""

    http_status = 409

    def __init__(self, task_id: str | None, interrupt_id: str, pending: str | None) -> None:
        super().__init__(
            f"Stale answer: interrupt {interrupt_id} is no longer pending on this task (it was "
            "answered already, or never asked here); nothing was changed",
            data={"reason": "stale answer", "taskId": task_id, "interruptId": interrupt_id,
                  "pendingInterruptId": pending},
        )


class QuestionExpiredError(InvalidParamsError):
    """An answer to a question (or decisions on a tool review) whose deadline passed: the
    deadline's action answered, rejected or canceled in its place (docs/hitl.md,
    "Deadlines"). Nothing the late answer carries was stored or run; ``data`` is
    ``{"reason": "question expired", "taskId", "interruptId", "expiredAt"}``."""

    http_status = 409

    def __init__(self, task_id: str, interrupt_id: str | None, expired_at: str | None) -> None:
        super().__init__(
            "Question expired: nobody answered it before its deadline, so its deadline's "
            "action was taken instead; this answer changed nothing",
            data={"reason": "question expired", "taskId": task_id,
                  "interruptId": interrupt_id, "expiredAt": expired_at},
        )


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
    _reason = "INTERNAL_ERROR"
    default_message = "Internal error"


class UnreadableTaskError(InternalError):
    """A stored task (or its checkpoint) this server cannot decode: an error for that task
    only; recovery marks it ``failed`` when it can and always goes on."""

    def __init__(self, task_id: str | None, reason: str = "") -> None:
        what = f"Task {task_id}" if task_id else "A task"
        super().__init__(
            f"{what} is stored in a form this server cannot read",
            data={"taskId": task_id, "reason": "unreadable stored task"} if task_id else
            {"reason": "unreadable stored task"},
        )
        self.task_id = task_id
        self.detail = reason


class TaskNotFoundError(A2AError):
    code = -32001
    _reason = "TASK_NOT_FOUND"
    default_message = "Task not found"
    http_status = 404


class TaskNotCancelableError(A2AError):
    code = -32002
    _reason = "TASK_NOT_CANCELABLE"
    default_message = "Task cannot be canceled"
    http_status = 409


class PushNotificationNotSupportedError(A2AError):
    code = -32003
    _reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"
    default_message = "Push Notification is not supported"
    http_status = 400


class UnsupportedOperationError(A2AError):
    code = -32004
    _reason = "UNSUPPORTED_OPERATION"
    default_message = "This operation is not supported"
    http_status = 409


class QuotaExceededError(UnsupportedOperationError):
    """A principal is at one of its quotas (``server/quotas.py``): nothing was opened, stored
    or run. ``data`` is ``{"reason": "quota exceeded: <what>", "quota": <the Quotas field>,
    "max": n}``; it names the quota, never another principal's task, context or agent."""

    http_status = 429

    def __init__(self, message: str, *, what: str, quota: str, maximum: int) -> None:
        super().__init__(
            message, data={"reason": f"quota exceeded: {what}", "quota": quota, "max": maximum}
        )
        self.quota = quota


class ContentTypeNotSupportedError(A2AError):
    code = -32005
    _reason = "CONTENT_TYPE_NOT_SUPPORTED"
    default_message = "Incompatible content types"
    http_status = 415


class InvalidAgentResponseError(A2AError):
    code = -32006
    _reason = "INVALID_AGENT_RESPONSE"
    default_message = "Invalid agent response"


class AuthenticatedExtendedCardNotConfiguredError(A2AError):
    code = -32007
    _reason = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    default_message = "Authenticated Extended Card is not configured"
    http_status = 404


class VersionNotSupportedError(A2AError):
    """The ``A2A-Version`` a request names is not one this server speaks (0.3, 1.0), or the
    method belongs to the other version."""

    code = -32009
    _reason = "VERSION_NOT_SUPPORTED"
    default_message = "A2A protocol version not supported"
    http_status = 400
