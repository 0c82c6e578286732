"""The request's part of a run's ``RunContext``: its language and the tool reviews the client
added for the task."""

from __future__ import annotations

from typing import Any

from ..a2a.types import MessageSendParams
from ..core.run_context import RunContext
from ..errors import InvalidParamsError
from ..stores.base import StoredTask
from ..tool_review import catalog
from ..tool_review.policy import parse_wire_override

__all__ = ["added_reviews", "remember_reviews", "run_settings"]

_WIRE_OVERRIDE = "interruptOn"  # message or request metadata key of those additions


def added_reviews(params: MessageSendParams) -> dict[str, Any]:
    """Tool reviews the client adds for this task: ``interruptOn`` in the message's or the
    request's metadata (they can only add reviews; see ``ReviewPolicy.add``)."""
    added: dict[str, Any] = {}
    for metadata in (params.metadata, params.message.metadata):
        if metadata and _WIRE_OVERRIDE in metadata:
            try:
                added.update(parse_wire_override(metadata[_WIRE_OVERRIDE]))
            except ValueError as exc:
                raise InvalidParamsError(f"Invalid metadata.interruptOn: {exc}") from None
    return added


def remember_reviews(record: StoredTask, added: dict[str, Any]) -> None:
    """Additions last for the whole task; a later message can only add more."""
    if added:
        record.added_reviews = {**added, **record.added_reviews}


def run_settings(record: StoredTask, language: str | None = None) -> RunContext:
    """The request's settings for the task's runs (the server adds the rest: ``_run_context``
    of ``TaskManager``)."""
    return RunContext(
        language=catalog.resolve(language),
        interrupt_on=dict(record.added_reviews),
    )
