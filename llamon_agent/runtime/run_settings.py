"""The request's part of a run's ``RunContext``: its language and the tool reviews the client
added for the task (``RunSettings``, a tuple: a turn holds them until its run's context is built,
``Turn.run_context``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..a2a.types import MessageSendParams
from ..errors import InvalidParamsError
from ..stores.base import StoredTask
from ..tool_review import catalog
from ..tool_review.policy import parse_wire_override

__all__ = ["RunSettings", "added_reviews", "remember_reviews", "run_settings"]

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


class RunSettings(NamedTuple):
    language: str | None
    interrupt_on: Mapping[str, Any]


def run_settings(record: StoredTask, language: str | None = None) -> RunSettings:
    """The request's settings for the task's runs (the turn adds the rest:
    ``Turn.run_context``)."""
    return RunSettings(catalog.resolve(language), dict(record.added_reviews))
