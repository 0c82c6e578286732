"""Errors raised by the A2A client.

::

    LlamonError
    └── A2AClientError                          anything this client raises on purpose
        ├── A2ATransportError                   no usable HTTP answer
        │   ├── A2AConnectionError              connect/read/write failed, connection dropped
        │   ├── A2ATimeoutError                 an httpx timeout expired
        │   ├── A2AHTTPStatusError              HTTP status other than 200 (``status_code``)
        │   │   └── A2AAuthenticationError      401 / 403 (``www_authenticate``)
        │   └── A2AStreamInterruptedError       a stream ended before its final event
        ├── A2AInvalidResponseError             not JSON-RPC, wrong id, result of the wrong shape
        ├── A2ACardNotFoundError                no agent card at any well-known path
        └── A2ARPCError(code, message, data)    the agent answered with a JSON-RPC error
            ├── RemoteJSONParseError                    -32700
            ├── RemoteInvalidRequestError               -32600
            ├── RemoteMethodNotFoundError               -32601
            ├── RemoteInvalidParamsError                -32602
            ├── RemoteInternalError                     -32603
            ├── RemoteTaskNotFoundError                 -32001
            ├── RemoteTaskNotCancelableError            -32002
            ├── RemotePushNotificationNotSupportedError -32003
            ├── RemoteUnsupportedOperationError         -32004
            ├── RemoteContentTypeNotSupportedError      -32005
            ├── RemoteInvalidAgentResponseError         -32006
            └── RemoteAuthenticatedExtendedCardNotConfiguredError  -32007

The ``Remote*`` classes take their codes from :mod:`llamon_agent.errors` (``server_error``) but
do not inherit from those server-side classes on purpose: a remote agent's ``-32001`` caught
inside our own server must not be enveloped as *our* ``-32001``. Branch on the class or on
``code``; any other code gives a plain :class:`A2ARPCError`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .. import errors as server_errors
from ..errors import LlamonError

__all__ = [
    "RPC_ERRORS",
    "A2AAuthenticationError",
    "A2ACardNotFoundError",
    "A2AClientError",
    "A2AConnectionError",
    "A2AHTTPStatusError",
    "A2AInvalidResponseError",
    "A2ARPCError",
    "A2AStreamInterruptedError",
    "A2ATimeoutError",
    "A2ATransportError",
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
    "rpc_error",
]


class A2AClientError(LlamonError):
    """Base of every error the A2A client raises on purpose."""


class A2ATransportError(A2AClientError):
    """The request got no usable HTTP answer."""


class A2AConnectionError(A2ATransportError):
    """Connecting, sending or reading failed (the connection was refused or dropped)."""


class A2ATimeoutError(A2ATransportError):
    """A configured timeout expired."""


class A2AHTTPStatusError(A2ATransportError):
    """The server answered with an HTTP status other than 200."""

    def __init__(self, status_code: int, url: str, body: str = "") -> None:
        self.status_code = status_code
        self.url = url
        self.body = body
        detail = f": {body[:200]}" if body else ""
        super().__init__(f"HTTP {status_code} from {url}{detail}")


class A2AAuthenticationError(A2AHTTPStatusError):
    """HTTP 401 or 403: the credentials are missing or wrong."""

    def __init__(
        self, status_code: int, url: str, body: str = "", www_authenticate: str | None = None
    ) -> None:
        super().__init__(status_code, url, body)
        self.www_authenticate = www_authenticate


class A2AStreamInterruptedError(A2ATransportError):
    """A ``message/stream`` or ``tasks/resubscribe`` stream ended before its final event.

    ``task_id`` and ``last_event_id`` (when known) are what ``resubscribe`` needs to continue.
    """

    def __init__(self, message: str, *, task_id: str | None, last_event_id: str | None) -> None:
        self.task_id = task_id
        self.last_event_id = last_event_id
        super().__init__(message)


class A2AInvalidResponseError(A2AClientError):
    """The answer is not a valid JSON-RPC response, or its result has the wrong shape."""


class A2ACardNotFoundError(A2AClientError):
    """No agent card at any of the well-known paths."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        super().__init__("no agent card found at " + ", ".join(urls))


class A2ARPCError(A2AClientError):
    """The agent answered with a JSON-RPC error object."""

    server_error: ClassVar[type[server_errors.A2AError] | None] = None

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(f"{message} (JSON-RPC error {code})")


class RemoteJSONParseError(A2ARPCError):
    server_error = server_errors.JSONParseError


class RemoteInvalidRequestError(A2ARPCError):
    server_error = server_errors.InvalidRequestError


class RemoteMethodNotFoundError(A2ARPCError):
    server_error = server_errors.MethodNotFoundError


class RemoteInvalidParamsError(A2ARPCError):
    server_error = server_errors.InvalidParamsError


class RemoteInternalError(A2ARPCError):
    server_error = server_errors.InternalError


class RemoteTaskNotFoundError(A2ARPCError):
    server_error = server_errors.TaskNotFoundError


class RemoteTaskNotCancelableError(A2ARPCError):
    server_error = server_errors.TaskNotCancelableError


class RemotePushNotificationNotSupportedError(A2ARPCError):
    server_error = server_errors.PushNotificationNotSupportedError


class RemoteUnsupportedOperationError(A2ARPCError):
    server_error = server_errors.UnsupportedOperationError


class RemoteContentTypeNotSupportedError(A2ARPCError):
    server_error = server_errors.ContentTypeNotSupportedError


class RemoteInvalidAgentResponseError(A2ARPCError):
    server_error = server_errors.InvalidAgentResponseError


class RemoteAuthenticatedExtendedCardNotConfiguredError(A2ARPCError):
    server_error = server_errors.AuthenticatedExtendedCardNotConfiguredError


def _by_code() -> dict[int, type[A2ARPCError]]:
    table: dict[int, type[A2ARPCError]] = {}
    for cls in A2ARPCError.__subclasses__():
        if cls.server_error is not None:
            table[cls.server_error.code] = cls
    return table


RPC_ERRORS: dict[int, type[A2ARPCError]] = _by_code()
"""JSON-RPC error code -> the client exception raised for it."""


def rpc_error(code: int, message: str, data: Any = None) -> A2ARPCError:
    """The exception for a JSON-RPC error object: a ``Remote*`` class, or ``A2ARPCError``."""
    return RPC_ERRORS.get(code, A2ARPCError)(code, message, data)
