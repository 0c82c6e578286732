"""A ``message/send`` or ``message/stream`` request as the runtime reads it, checked once.

Everything here is decided from the request alone (no store, no claim): a refusal costs
nothing and changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..a2a.types import Message, MessageSendParams, PushNotificationConfig
from ..core.principal import ANONYMOUS
from ..errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
)
from .run_settings import added_reviews

__all__ = ["OUTPUT_MODES", "Request", "checked_request"]

OUTPUT_MODES = ("text/plain", "application/json")


@dataclass(frozen=True)
class Request:
    """``agent_hint`` is ``metadata.agentId``; ``added_reviews`` the client's ``interruptOn``;
    ``language`` the request's (``Accept-Language``; review texts use it)."""

    message: Message
    agent_hint: str | None
    added_reviews: dict[str, Any]
    blocking: bool
    history_length: int | None
    language: str | None
    #: the caller's space (core/principal.py): whose contexts and tasks the message may reach
    space: str = ANONYMOUS
    #: the interrupt whose deadline this message answers in a person's place (the sweeper's
    #: own messages only: ``checked_request`` never sets it, so no client can)
    expiring: str | None = None
    #: ``configuration.pushNotificationConfig``: registered for the task the message reaches
    #: (the edge checked the webhook: ``server/push_methods.py``)
    push_config: PushNotificationConfig | None = None


def checked_request(
    params: MessageSendParams, agent_ids: Collection[str], language: str | None = None,
    space: str = ANONYMOUS, *, push: bool = False,
) -> Request:
    """``push``: the server delivers push notifications (else a config is ``-32003``)."""
    message = params.message
    if message.role != "user":
        raise InvalidParamsError("messages sent to an agent must have role 'user'")
    config = params.configuration
    push_config = config.push_notification_config if config is not None else None
    if push_config is not None and not push:
        raise PushNotificationNotSupportedError()
    hint = (params.metadata or {}).get("agentId")
    if hint is not None and (not isinstance(hint, str) or hint not in agent_ids):
        raise InvalidParamsError(f"Unknown agentId {hint!r}", data={"agentIds": list(agent_ids)})
    added = added_reviews(params)
    accepted = config.accepted_output_modes if config is not None else None
    if accepted and not set(accepted) & set(OUTPUT_MODES):
        raise ContentTypeNotSupportedError(
            data={"acceptedOutputModes": accepted, "outputModes": list(OUTPUT_MODES)}
        )
    return Request(
        message=message,
        agent_hint=hint,
        added_reviews=added,
        blocking=config is None or config.blocking is not False,
        history_length=config.history_length if config is not None else None,
        language=language,
        space=space,
        push_config=push_config,
    )
