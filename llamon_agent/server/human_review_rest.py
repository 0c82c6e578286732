"""The reviewer endpoints of the ``HumanReviewPort``, behind a bearer token.

``GET /reviews`` (pending, the oldest first, a page at a time: ``pageSize`` 1 to 100, default
50, and the ``nextPageToken`` of the previous page as ``pageToken``), ``GET /reviews/{id}``,
``POST /reviews/{id}/decision`` with ``{"type": "approve" | "edit" | "reject", "edited":
<answer>?, "message": str?}``. A review whose task ended (completed, canceled, rejected,
failed) before a decision is ``closed`` (``GET /reviews/{id}`` shows when and why); deciding
it, or deciding twice, is 409. Secure by default: with no token configured
(``LLAMON_REVIEWER_TOKEN``, ``LLAMON_REVIEWER_TOKENS``) every endpoint answers 403; a missing
or wrong token is 401. Reviewers have names (the single token is the reviewer ``reviewer``); a
decision records its reviewer (``decidedBy``) and time (``decided``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, model_validator
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..auth import KeyTable, bearer_of
from ..core.bounds import Limits, check_text, check_value
from ..core.clock import Clock, iso, system_clock
from ..core.deadlines import Deadline
from ..core.ports import (
    Decision,
    HumanReviewPort,
    Review,
    ReviewClosedError,
    ReviewCursor,
    ReviewNotFoundError,
    UnreadableReviewError,
)
from ..runtime.deadlines import draft_expires_at
from .page_tokens import parts_of, token_of
from .rest_edge import read_model

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "PageAsked", "page_asked", "review_routes"]

log = logging.getLogger(__name__)


class DecisionBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["approve", "edit", "reject"]
    edited: Any = None
    message: str | None = None

    def check_limits(self, limits: Limits) -> None:
        check_value(self.edited, limits, "edited")
        if self.message is not None:
            check_text(self.message, limits, "message")

    @model_validator(mode="after")
    def _edit_needs_answer(self) -> DecisionBody:
        if self.type == "edit" and "edited" not in self.model_fields_set:
            raise ValueError("an 'edit' decision needs 'edited' (the corrected answer)")
        return self


#: reviews on one page of ``GET /reviews``: by default, and at most
DEFAULT_PAGE = 50
MAX_PAGE = 100
_PAGE_PARAMS = ("pageSize", "pageToken")


@dataclass(frozen=True)
class PageAsked:
    size: int
    after: ReviewCursor | None


def page_asked(query: list[tuple[str, str]]) -> PageAsked | str:
    """The page a ``GET /reviews`` query asks for, or what is wrong with the query."""
    given: dict[str, str] = {}
    for name, value in query:
        if name not in _PAGE_PARAMS:
            return (f"unknown query parameter {name[:40]!r}: GET /reviews takes pageSize and "
                    "pageToken")
        if name in given:
            return f"{name} is given more than once"
        given[name] = value
    size = DEFAULT_PAGE
    if "pageSize" in given:
        text = given["pageSize"]
        # at most three digits before int(): past 4,300 it raises, and any more is out of range
        if not (len(text) <= 3 and text.isascii() and text.isdigit()
                and 1 <= int(text) <= MAX_PAGE):
            return f"pageSize must be a whole number from 1 to {MAX_PAGE}"
        size = int(text)
    after = None
    if given.get("pageToken"):  # empty: the first page, as the last page's nextPageToken says
        try:
            created, review_id = parts_of(given["pageToken"], str, str)
            if "\x00" in created + review_id:  # ours never hold NUL: no text column can
                raise ValueError("NUL")
        except ValueError:
            return ("pageToken is not a page token of this server (use the nextPageToken of "
                    "a previous page)")
        after = ReviewCursor(created, review_id)
    return PageAsked(size, after)


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers=headers)


def _unreadable(exc: UnreadableReviewError) -> Response:
    """That one review's refusal (its row does not decode); the others are served."""
    log.error("review %s is stored unreadable: %s", exc.review_id, exc.reason)
    return _json({"detail": str(exc)}, 500)


def review_routes(
    reviewers: KeyTable, limits: Limits | None = None, *, deadline: Deadline | None = None,
    clock: Clock = system_clock,
) -> list[Route]:
    """The routes; the port is the one the app's lifespan opened (``app.state.reviews``);
    ``reviewers`` maps each reviewer's name to their token. With a draft ``deadline`` every
    pending review shows ``expiresAt``, and a decision after it is refused (409): the
    deadline's action is taken instead (docs/orchestrators.md, "Deadlines")."""

    limits = limits or Limits()

    def shown(review: Review) -> dict[str, Any]:
        return {**review.to_json(), "expiresAt": draft_expires_at(review, deadline)}

    def port_of(request: Request) -> HumanReviewPort:
        return request.app.state.reviews

    def reviewer(request: Request) -> str | Response:
        """The reviewer's name, or the refusal."""
        if not reviewers:
            return _json({"detail": "reviewer endpoints are disabled: no reviewer token is "
                                    "configured (LLAMON_REVIEWER_TOKEN)"}, 403)
        given = bearer_of(request.headers.get("authorization"))
        name = reviewers.match(given) if given is not None else None
        if name is None:
            return _json({"detail": "a valid reviewer bearer token is required"}, 401,
                         {"WWW-Authenticate": 'Bearer realm="llamon-reviewers"'})
        return name

    async def pending(request: Request) -> Response:
        if isinstance(denied := reviewer(request), Response):
            return denied
        asked = page_asked(request.query_params.multi_items())
        if isinstance(asked, str):
            return _json({"detail": asked}, 400)
        # one more than the page: whether another page follows, without a count
        page = await port_of(request).pending(asked.size + 1, asked.after)
        following = ""
        if len(page) > asked.size:
            del page[asked.size:]
            following = token_of(page[-1].created, page[-1].id)
        return _json({"reviews": [shown(r) for r in page], "nextPageToken": following})

    async def one(request: Request) -> Response:
        if isinstance(denied := reviewer(request), Response):
            return denied
        try:
            review = await port_of(request).get(request.path_params["review_id"])
        except ReviewNotFoundError:
            return _json({"detail": "review not found"}, 404)
        except UnreadableReviewError as exc:
            return _unreadable(exc)
        return _json(shown(review))

    async def decide(request: Request) -> Response:
        if isinstance(name := reviewer(request), Response):
            return name
        body = await read_model(request, DecisionBody, limits)
        if isinstance(body, Response):
            return body
        decision = Decision(type=body.type, edited=body.edited, message=body.message, by=name)
        review_id = request.path_params["review_id"]
        try:  # the review is read first only when drafts have a deadline
            pending = await port_of(request).get(review_id) if deadline is not None else None
            expires_at = draft_expires_at(pending, deadline) if pending is not None else None
            if expires_at is not None and expires_at <= iso(clock()):
                return _json({"detail": "review expired: its deadline passed, so the "
                                        "deadline's action is taken instead",
                              "expiresAt": expires_at}, 409)
            review = await port_of(request).decide(review_id, decision)
        except ReviewNotFoundError:
            return _json({"detail": "review not found"}, 404)
        except ReviewClosedError as exc:  # decided, or closed because its task ended
            return _json({"detail": exc.message}, 409)
        except UnreadableReviewError as exc:  # nothing was written
            return _unreadable(exc)
        return _json(shown(review))

    return [
        Route("/reviews", pending, methods=["GET"]),
        Route("/reviews/{review_id}", one, methods=["GET"]),
        Route("/reviews/{review_id}/decision", decide, methods=["POST"]),
    ]
