"""The edge of the REST endpoints (``/hitl/*``, ``/reviews/*``): bodies read within the size
limit, parsed with the same number and nesting checks as JSON-RPC, validated once, bounded.

Status codes come from the one error tree (``A2AError.http_status``): 413 for a body over the
size limit (the connection is then closed, the rest of the body is never read), 422 for a
body's shape or an edge limit (FastAPI's ``{"detail": [{"type", "loc", "msg"}]}``; a limit
adds ``limit`` and ``max``), the error's own status otherwise with ``{"detail": message}``.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from ..core import bounds
from ..core.bounds import Limits
from ..errors import A2AError, JSONParseError, LimitExceededError, PayloadTooLargeError
from .body import read_body

__all__ = ["BoundedBody", "error_response", "json_response", "path_id", "read_model"]


class BoundedBody(Protocol):
    def check_limits(self, limits: Limits) -> None:
        """Raise ``LimitExceededError`` for a field over an edge limit."""
        ...


Model = TypeVar("Model", bound=BaseModel)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(body, default=str), status_code=status, media_type="application/json",
        headers=headers,
    )


def _issue(exc: LimitExceededError, where: str = "body") -> dict[str, Any]:
    loc: list[str | int] = [where]
    if exc.field:
        loc.extend(exc.field.split("."))
    issue: dict[str, Any] = {"type": "limit_exceeded", "loc": loc, "msg": exc.message,
                             "limit": exc.limit}
    if isinstance(exc.data, dict) and "max" in exc.data:
        issue["max"] = exc.data["max"]
    return issue


def error_response(exc: A2AError) -> Response:
    if isinstance(exc, LimitExceededError):
        return json_response({"detail": [_issue(exc)]}, exc.http_status)
    if isinstance(exc, JSONParseError):
        issue = {"type": "json_invalid", "loc": ["body"], "msg": exc.message}
        return json_response({"detail": [issue]}, 422)
    if isinstance(exc, PayloadTooLargeError):
        return json_response({"detail": exc.message}, exc.http_status, {"Connection": "close"})
    return json_response({"detail": exc.message}, exc.http_status)


def path_id(request: Request, name: str, field: str, limits: Limits) -> str | Response:
    """The path parameter ``name``, an id a client chose (``field`` in messages), checked like
    every id: over ``max_id_chars`` is 422 with the issue at ``["path", field]``, a control
    character 400."""
    value: str = request.path_params[name]
    try:
        bounds.check_id(value, limits, field)
    except LimitExceededError as exc:
        return json_response({"detail": [_issue(exc, "path")]}, exc.http_status)
    except A2AError as exc:
        return error_response(exc)
    return value


def validation_response(exc: ValidationError) -> Response:
    issues = [
        {"type": e["type"], "loc": ["body", *e["loc"]], "msg": e["msg"]}
        for e in exc.errors(include_url=False, include_context=False, include_input=False)
    ]
    return json_response({"detail": issues}, 422)


async def read_model(request: Request, model: type[Model], limits: Limits) -> Model | Response:
    """The request's body as ``model``, or the error response to send instead."""
    try:
        raw = await read_body(request, limits.max_body_bytes,
                              request.headers.get("content-length")) or b"null"
        bounds.loads(raw, limits)
    except A2AError as exc:
        return error_response(exc)
    try:  # pydantic reads the JSON again: its JSON-mode error types are the documented ones
        body = model.model_validate_json(raw)
    except ValidationError as exc:
        return validation_response(exc)
    check = getattr(body, "check_limits", None)
    if check is not None:
        try:
            check(limits)
        except A2AError as exc:  # a limit, or an id with a control character
            return error_response(exc)
    return body
