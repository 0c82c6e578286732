"""Who may use the server, as ``create_app`` wires it: the authentication of ``/`` and
``/hitl/*`` (``auth_middleware.py``), the reviewers of ``/reviews``, and the cards each caller
may read.

Built once from ``create_app``'s arguments and ``Settings``; a bad credential entry is a
``CredentialConfigError`` at that moment, not at the first request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.middleware import Middleware

from ..agent import Agent
from ..auth import (
    Authenticator,
    CredentialConfigError,
    JWTSettings,
    KeyTable,
    Verifier,
    authenticator_of,
    reviewers_of,
)
from ..core.principal import Principal
from ..settings import Settings
from .auth_middleware import AuthMiddleware
from .card import CardSource, build_card, load_card
from .card_v1 import v1_card
from .exposure import startup_warning
from .extended_card import extended_card_for

__all__ = ["Access"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Access:
    authenticator: Authenticator | None
    reviewers: KeyTable
    extended_template: dict[str, Any] | None = None

    @classmethod
    def configure(
        cls,
        settings: Settings,
        agents: Sequence[Agent],
        *,
        api_keys: Mapping[str, str] | None = None,
        jwt: JWTSettings | None = None,
        auth: Verifier | None = None,
        extended_card: CardSource = None,
        reviewer_token: str | None = None,
        reviewer_tokens: Mapping[str, str] | None = None,
    ) -> Access:
        authenticator = authenticator_of(settings, api_keys=api_keys, jwt=jwt, verifier=auth)
        extended = load_card(extended_card, agents) if extended_card is not None else None
        if extended is not None and authenticator is None:
            raise CredentialConfigError(
                "an extended card is for authenticated callers: configure authentication "
                "(API keys, JWT or a verifier) or leave the extended card out"
            )
        reviewers = reviewers_of(settings, reviewer_token=reviewer_token,
                                 reviewer_tokens=reviewer_tokens)
        return cls(authenticator, reviewers, extended)

    @property
    def mode(self) -> str | None:
        """How callers authenticate (``app.state.authentication``); ``None``: they do not."""
        return self.authenticator.mode if self.authenticator is not None else None

    def middleware(self) -> list[Middleware]:
        """Authentication, when configured; none at all otherwise (every caller is then
        ``anonymous``). It goes after the error guard and before anything per principal."""
        if self.authenticator is None:
            return []
        return [Middleware(AuthMiddleware, authenticator=self.authenticator)]

    def card(self, template: Mapping[str, Any], url: str, *, v1: bool = False) -> dict[str, Any]:
        """The card; ``v1``: in A2A v1.0's shape (``card_v1.py``)."""
        card = build_card(template, url, auth=self.authenticator,
                          extended=self.extended_template is not None)
        return v1_card(card) if v1 else card

    def extended_card(self, principal: Principal, url: str, *, v1: bool = False) -> dict[str, Any]:
        """Raises ``-32007`` when there is no extended card for ``principal``."""
        template = extended_card_for(principal, self.extended_template)
        return self.card(template, url, v1=v1)

    async def start(self, app: Any) -> None:
        """At the app's start: warn when nothing authenticates (unless the CLI already
        decided about it), and fetch the JWT signing keys once."""
        warning = startup_warning(app)
        if warning is not None:
            log.warning(warning)
        if self.authenticator is not None:
            await self.authenticator.start()
