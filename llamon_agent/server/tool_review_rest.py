"""The reviewed-chat REST API (seed 000): ``POST /hitl/chat``, ``POST /hitl/review``.

Both answer a ``ChatTurn`` as JSON: ``{"thread_id", "reply", "pending_review", "interrupt_id",
"messages"}``. ``thread_id`` is the A2A ``contextId`` of the same conversation;
``interrupt_id`` names what waits (``null`` when nothing does): sent back in ``/hitl/review``'s
body, it binds the decisions to that review, so a retried request cannot decide the next one.
Status codes follow the seed:

* 422: the body's shape (pydantic: ``ChatRequest`` / ``ReviewRequest``), with FastAPI's
  ``{"detail": [{"type", "loc", "msg"}]}``; e.g. ``decisions`` empty, a decision that is not an
  object, a ``type`` outside approve/edit/reject/respond, an ``edited_action`` without a text
  ``name`` or an object ``args``;
* 400: a review error with its message as ``detail`` (``NoPendingReviewError``,
  ``ReviewPendingError``, ``InvalidReviewDecisionError``: the count, a type the action does not
  allow, ``edit`` without ``edited_action``, ``args`` failing the tool's ``args_schema``); other
  bad requests (an unknown ``agent_id``, a thread of another agent) are 400 too;
* 409: the thread is busy (a turn is running) or otherwise cannot take a message, or
  ``interrupt_id`` names a review that is no longer pending (``StaleAnswerError``).

Texts follow the request's ``Accept-Language`` (``id`` or ``en``), else ``$LLAMON_LANGUAGE``.
``GET /hitl/openapi.json`` is the OpenAPI 3.1 document of both endpoints.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..agent import Agent
from ..core.bounds import Limits, check_id, check_text, check_value
from ..core.hitl import MAX_INTERRUPT_ID
from ..core.principal import space_of
from ..errors import A2AError, LimitExceededError
from ..tool_review.catalog import language_of
from ..tool_review.chat import ReviewedChatUseCase
from .principal import principal_of
from .rest_edge import error_response, json_response, read_model

__all__ = [
    "CHAT_AGENT",
    "ChatRequest",
    "ReviewRequest",
    "default_chat_agent",
    "hitl_routes",
    "openapi_document",
]

log = logging.getLogger(__name__)

#: the agent ``/hitl/chat`` talks to when neither the request nor ``create_app`` names one
CHAT_AGENT = "email-assistant"


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ChatRequest(_Body):
    """``POST /hitl/chat``: a user message, on a new thread when ``thread_id`` is null."""

    message: Annotated[StrictStr, Field(min_length=1)]
    thread_id: StrictStr | None = None
    agent_id: StrictStr | None = None

    def check_limits(self, limits: Limits) -> None:
        check_text(self.message, limits, "message")
        check_id(self.thread_id, limits, "thread_id")
        check_id(self.agent_id, limits, "agent_id")


class EditedAction(_Body):
    name: StrictStr
    args: dict[str, Any]


class ApproveDecision(_Body):
    type: Literal["approve"]


class EditDecision(_Body):
    type: Literal["edit"]
    edited_action: EditedAction | None = None


class RejectDecision(_Body):
    type: Literal["reject"]
    message: StrictStr | None = None


class RespondDecision(_Body):
    type: Literal["respond"]
    message: StrictStr | None = None


Decision = Annotated[
    ApproveDecision | EditDecision | RejectDecision | RespondDecision,
    Field(discriminator="type"),
]


class ReviewRequest(_Body):
    """``POST /hitl/review``: one decision per pending action, in order (seed 000)."""

    thread_id: StrictStr
    decisions: Annotated[list[Decision], Field(min_length=1)]
    interrupt_id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_INTERRUPT_ID)] | None = (
        Field(default=None, description="the `interrupt_id` of the turn that showed the review: "
              "the decisions then apply to that review only (409 once it is no longer pending), "
              "so a retried request cannot decide the next review")
    )

    def check_limits(self, limits: Limits) -> None:
        check_id(self.thread_id, limits, "thread_id")
        if len(self.decisions) > limits.max_parts:
            raise LimitExceededError(
                f"decisions has {len(self.decisions)} entries, over the limit of "
                f"{limits.max_parts}", limit="max_parts", field="decisions",
                maximum=limits.max_parts,
            )
        for i, decision in enumerate(self.decisions):
            if isinstance(decision, EditDecision) and decision.edited_action is not None:
                edited = decision.edited_action
                check_id(edited.name, limits, f"decisions.{i}.edited_action.name")
                check_value(edited.args, limits, f"decisions.{i}.edited_action.args")
            elif isinstance(decision, (RejectDecision, RespondDecision)) and decision.message:
                check_text(decision.message, limits, f"decisions.{i}.message")


# ----------------------------------------------------------------------------- documented replies


class ActionRequestOut(BaseModel):
    name: str
    args: dict[str, Any]
    description: str


class ReviewConfigOut(BaseModel):
    action_name: str
    allowed_decisions: list[Literal["approve", "edit", "reject", "respond"]]
    args_schema: dict[str, Any] | None = Field(
        default=None, description="present only when the tool's policy gives one"
    )


class PendingReviewOut(BaseModel):
    action_requests: list[ActionRequestOut]
    review_configs: list[ReviewConfigOut]


class ToolCallOut(BaseModel):
    id: str | None
    name: str
    args: dict[str, Any]


class ChatMessageOut(BaseModel):
    id: str | None
    type: str = Field(description="human, ai, tool or system")
    content: str
    tool_calls: list[ToolCallOut] | None = Field(default=None, description="ai messages")
    tool_call_id: str | None = Field(default=None, description="tool results")
    name: str | None = Field(default=None, description="tool results: the tool")
    status: Literal["success", "error"] | None = Field(default=None, description="tool results")


class ChatTurnOut(BaseModel):
    thread_id: str = Field(description="the A2A contextId of the conversation")
    reply: str | None = Field(description="the agent's text; null while a review is pending")
    pending_review: PendingReviewOut | None
    interrupt_id: str | None = Field(
        description="the id of what waits (send it back in `/hitl/review`); null when nothing does"
    )
    expires_at: str | None = Field(
        default=None,
        description="when what waits is rejected (or its task canceled) unless decided first; "
        "null when it has no deadline",
    )
    messages: list[ChatMessageOut]


class ErrorOut(BaseModel):
    detail: str


class ValidationIssueOut(BaseModel):
    type: str
    loc: list[str | int]
    msg: str
    limit: str | None = Field(
        default=None, description="type `limit_exceeded`: the edge limit (docs/limits.md)"
    )
    max: int | None = Field(default=None, description="type `limit_exceeded`: its value")


class ValidationErrorOut(BaseModel):
    detail: list[ValidationIssueOut]


# ----------------------------------------------------------------------------- routes


def default_chat_agent(agents: Sequence[Agent]) -> str:
    ids = [a.id for a in agents]
    return CHAT_AGENT if CHAT_AGENT in ids else ids[0]


def hitl_routes(chat_agent: str, limits: Limits | None = None) -> list[Route]:
    """The REST routes; the app's ``state.manager`` is the ``TaskManager`` they use."""

    limits = limits or Limits()

    def use_case(request: Request) -> ReviewedChatUseCase:
        space = space_of(principal_of(request.scope).name)
        return ReviewedChatUseCase(request.app.state.manager, chat_agent, space=space)

    async def chat(request: Request) -> Response:
        body = await read_model(request, ChatRequest, limits)
        if isinstance(body, Response):
            return body
        assert isinstance(body, ChatRequest)
        language = language_of(request.headers.get("accept-language"))
        try:
            turn = await use_case(request).send_message(
                body.message, body.thread_id, agent_id=body.agent_id, language=language
            )
        except A2AError as exc:
            return error_response(exc)
        return json_response(turn.to_dict())

    async def review(request: Request) -> Response:
        body = await read_model(request, ReviewRequest, limits)
        if isinstance(body, Response):
            return body
        assert isinstance(body, ReviewRequest)
        language = language_of(request.headers.get("accept-language"))
        decisions = [d.model_dump(exclude_none=True) for d in body.decisions]
        try:
            turn = await use_case(request).submit_review(
                decisions, body.thread_id, language=language, interrupt_id=body.interrupt_id
            )
        except A2AError as exc:
            return error_response(exc)
        return json_response(turn.to_dict())

    async def openapi(request: Request) -> Response:
        return json_response(openapi_document())

    return [
        Route("/hitl/chat", chat, methods=["POST"]),
        Route("/hitl/review", review, methods=["POST"]),
        Route("/hitl/openapi.json", openapi, methods=["GET"]),
    ]


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 for ``POST /hitl/chat`` and ``POST /hitl/review``."""
    models: list[type[BaseModel]] = [
        ChatRequest, ReviewRequest, ChatTurnOut, ErrorOut, ValidationErrorOut
    ]
    refs, definitions = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    ref = {m.__name__: refs[(m, "validation")] for m in models}

    def content(name: str) -> dict[str, Any]:
        return {"application/json": {"schema": ref[name]}}

    def responses(description: str) -> dict[str, Any]:
        return {
            "200": {"description": description, "content": content("ChatTurnOut")},
            "400": {"description": "a review error or a bad request; the text is `detail`",
                    "content": content("ErrorOut")},
            "409": {"description": "the thread is busy, or `interrupt_id` names a review that "
                    "is no longer pending (a stale retry)", "content": content("ErrorOut")},
            "413": {"description": "the body is over the size limit; the connection is closed",
                    "content": content("ErrorOut")},
            "422": {"description": "the body's shape, or an edge limit (`limit_exceeded`, "
                    "naming `limit` and `max`)", "content": content("ValidationErrorOut")},
            "500": {"description": "an unexpected server error", "content": content("ErrorOut")},
        }

    language = {
        "name": "Accept-Language", "in": "header", "required": False,
        "description": "`id` for seed 000's Indonesian texts, else English "
        "(default: $LLAMON_LANGUAGE)",
        "schema": {"type": "string"},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "llamon-agent reviewed chat", "version": "1.0.0"},
        "paths": {
            "/hitl/chat": {"post": {
                "summary": "Send a chat message (400 ReviewPendingError while actions wait)",
                "operationId": "chat",
                "parameters": [language],
                "requestBody": {"required": True, "content": content("ChatRequest")},
                "responses": responses("the turn: a reply, or the actions awaiting approval"),
            }},
            "/hitl/review": {"post": {
                "summary": "Decide the pending actions: one decision per action, in order",
                "operationId": "review",
                "parameters": [language],
                "requestBody": {"required": True, "content": content("ReviewRequest")},
                "responses": responses("the turn after the decisions were applied"),
            }},
        },
        "components": {"schemas": definitions.get("$defs", {})},
    }
