"""What the agent card declares (``securitySchemes``, ``security``), in A2A v0.3's shapes.

The schemes are the ones the server enforces. ``security`` lists them as alternatives (an OR:
any one of them is enough). A verifier callback can check anything, so with a callback alone
the card keeps the schemes its template declares, and declares a bearer token when it has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .authenticator import API_KEY_HEADER, Authenticator

__all__ = ["API_KEY_SCHEME", "BEARER_SCHEME", "card_security"]

API_KEY_SCHEME = "apiKey"
BEARER_SCHEME = "bearer"


def _ours(auth: Authenticator, declared: bool) -> dict[str, dict[str, Any]]:
    schemes: dict[str, dict[str, Any]] = {}
    if auth.api_keys:
        schemes[API_KEY_SCHEME] = {
            "type": "apiKey", "in": "header", "name": API_KEY_HEADER,
            "description": f"an API key in {API_KEY_HEADER} (or as a bearer token)",
        }
    if auth.api_keys or auth.jwt:
        bearer: dict[str, Any] = {"type": "http", "scheme": "bearer"}
        if auth.jwt:
            bearer["bearerFormat"] = "JWT"
        schemes[BEARER_SCHEME] = bearer
    elif auth.verifier and not declared:
        schemes[BEARER_SCHEME] = {"type": "http", "scheme": "bearer"}
    return schemes


def card_security(
    card: Mapping[str, Any], auth: Authenticator | None
) -> tuple[dict[str, Any], list[dict[str, list[str]]]]:
    """``securitySchemes`` and ``security`` for ``card``: the template's own, with the
    server's schemes added (and winning on a name both use)."""
    declared = card.get("securitySchemes")
    schemes = dict(declared) if isinstance(declared, Mapping) else {}
    listed = card.get("security")
    security = [dict(s) for s in listed if isinstance(s, Mapping)] if isinstance(listed, list) else []
    if auth is None:
        return schemes, security
    ours = _ours(auth, bool(schemes))
    schemes.update(ours)
    alternatives: list[dict[str, list[str]]] = [{name: []} for name in ours]
    return schemes, alternatives + [s for s in security if s not in alternatives]
