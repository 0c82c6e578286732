"""The agent card: loaded from a file or built from the agents, then made truthful.

Whatever the file says, ``url``, ``protocolVersion``, ``preferredTransport``, the
capabilities, ``supportsAuthenticatedExtendedCard`` and the security schemes the server enforces
(``auth/schemes.py``) are set to what this server really does. The card is v0.3's with v1.0's
``supportedInterfaces`` and ``capabilities.extendedAgentCard`` added (both official clients
read it); ``card_v1.py`` writes the pure v1.0 form for clients that ask for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..agent import Agent
from ..auth import Authenticator, card_security
from ..runtime.requests import OUTPUT_MODES
from .card_v1 import interfaces

__all__ = ["CardSource", "build_card", "load_card"]

CardSource = str | Path | Mapping[str, Any] | None
PROTOCOL_VERSION = "0.3.0"


def load_card(source: CardSource, agents: Sequence[Agent]) -> dict[str, Any]:
    if source is None:
        first = agents[0]
        return {
            "name": first.name if len(agents) == 1 else "llamon-agent",
            "description": first.description if len(agents) == 1 else
            "Agents: " + ", ".join(a.name for a in agents),
            "version": "1.0.0",
            "defaultInputModes": list(OUTPUT_MODES),
            "defaultOutputModes": list(OUTPUT_MODES),
            "skills": [skill for a in agents for skill in a.skills],
        }
    if isinstance(source, Mapping):
        return dict(source)
    card = orjson.loads(Path(source).read_bytes())
    if not isinstance(card, dict):
        raise ValueError(f"{source}: an agent card must be a JSON object")
    return card


def build_card(
    template: Mapping[str, Any], url: str, *, auth: Authenticator | None = None,
    extended: bool = False,
) -> dict[str, Any]:
    """The card served: ``auth`` adds the schemes callers authenticate with; ``extended``
    says an extended card awaits authenticated callers."""
    card = dict(template)
    card["url"] = url
    card["protocolVersion"] = PROTOCOL_VERSION
    card["preferredTransport"] = "JSONRPC"
    card["capabilities"] = {
        **dict(card.get("capabilities") or {}),
        "streaming": True,
        "pushNotifications": True,  # docs/operations.md, "Push notifications"
        "stateTransitionHistory": False,
        "extendedAgentCard": extended,
    }
    card["supportsAuthenticatedExtendedCard"] = extended
    card["supportedInterfaces"] = interfaces(url)
    schemes, security = card_security(template, auth)
    for key, value in (("securitySchemes", schemes), ("security", security)):
        if value:
            card[key] = value
        else:
            card.pop(key, None)
    card.setdefault("version", "1.0.0")
    card.setdefault("defaultInputModes", list(OUTPUT_MODES))
    card.setdefault("defaultOutputModes", list(OUTPUT_MODES))
    return card
