"""The agent card in A2A v1.0's shape, for a client that asks with ``A2A-Version: 1.0``.

The card every other client reads (``card.py``) is v0.3's with v1.0's two additions,
``supportedInterfaces`` and ``capabilities.extendedAgentCard``: v0.3 clients ignore them, and
the official 1.x client reads that document too (it maps the v0.3 fields itself). A v1.0
client that asks gets the pure v1.0 form, where security schemes are ``oneof`` objects and
requirements are ``securityRequirements``: a strict ProtoJSON reader of v0.3's ``type``
-tagged schemes would find no scheme at all (docs/versions.md, "The agent card").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["interfaces", "v1_card"]

#: v0.3 card fields that v1.0 replaced (by ``supportedInterfaces`` and the capability)
_V03_ONLY = ("url", "protocolVersion", "preferredTransport", "additionalInterfaces",
             "supportsAuthenticatedExtendedCard", "security")
_SCHEME_KINDS = {
    "apiKey": "apiKeySecurityScheme",
    "http": "httpAuthSecurityScheme",
    "oauth2": "oauth2SecurityScheme",
    "openIdConnect": "openIdConnectSecurityScheme",
    "mutualTLS": "mtlsSecurityScheme",
}
#: v1.0's flows, first the ones it prefers (``implicit`` and ``password`` are deprecated)
_FLOWS = ("authorizationCode", "clientCredentials", "deviceCode", "implicit", "password")
_SKILL_FIELDS = ("id", "name", "description", "tags", "examples", "inputModes", "outputModes")


def interfaces(url: str) -> list[dict[str, str]]:
    """What one endpoint speaks: JSON-RPC in v1.0 and in v0.3 (v1.0 first: clients that
    pick the first usable interface take the newest)."""
    return [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]


def v1_card(card: Mapping[str, Any]) -> dict[str, Any]:
    """``card`` (as ``card.build_card`` serves it) in v1.0's shape."""
    out = {key: value for key, value in card.items() if key not in _V03_ONLY}
    capabilities = dict(card.get("capabilities") or {})
    capabilities.pop("stateTransitionHistory", None)  # not in v1.0
    capabilities["extendedAgentCard"] = bool(card.get("supportsAuthenticatedExtendedCard"))
    out["capabilities"] = capabilities
    schemes = card.get("securitySchemes")
    if schemes:
        out["securitySchemes"] = {name: _scheme(s) for name, s in schemes.items()}
    requirements = card.get("security")
    if requirements:
        out["securityRequirements"] = _requirements(requirements)
    out["skills"] = [_skill(skill) for skill in card.get("skills") or []]
    return out


def _scheme(scheme: Mapping[str, Any]) -> dict[str, Any]:
    kind = _SCHEME_KINDS.get(str(scheme.get("type")))
    if kind is None:  # not a scheme v0.3 knows: kept as given (a card file's own choice)
        return dict(scheme)
    body = {key: value for key, value in scheme.items() if key != "type"}
    if kind == "apiKeySecurityScheme" and "in" in body:
        body["location"] = body.pop("in")
    if kind == "oauth2SecurityScheme" and isinstance(body.get("flows"), Mapping):
        flows = body["flows"]
        chosen = next((name for name in _FLOWS if name in flows), None)
        body["flows"] = {} if chosen is None else {chosen: flows[chosen]}
    return {kind: body}


def _requirements(requirements: Any) -> list[dict[str, Any]]:
    return [{"schemes": {name: {"list": list(scopes)} for name, scopes in entry.items()}}
            for entry in requirements if isinstance(entry, Mapping)]


def _skill(skill: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: skill[key] for key in _SKILL_FIELDS if key in skill}
    out.setdefault("tags", [])
    if skill.get("security"):
        out["securityRequirements"] = _requirements(skill["security"])
    return out
