"""``agent/getAuthenticatedExtendedCard``: the extended card, for authenticated callers only.

Handled here, before ``jsonrpc.dispatch``: the card is the server's, not the runtime's. With an
extended card configured (``create_app(extended_card=...)``, ``--extended-card FILE``) the
server has authentication (``create_app`` refuses the card otherwise), so the middleware has
already refused every caller without a credential; a caller that is still ``anonymous`` here
gets ``-32007`` all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.principal import ANONYMOUS, Principal
from ..errors import AuthenticatedExtendedCardNotConfiguredError

__all__ = ["METHOD", "extended_card_for"]

METHOD = "agent/getAuthenticatedExtendedCard"


def extended_card_for(principal: Principal, card: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The card to answer with; raises ``-32007`` when there is none for this caller."""
    if card is None or principal.name == ANONYMOUS:
        raise AuthenticatedExtendedCardNotConfiguredError()
    return card
