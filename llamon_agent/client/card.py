"""Agent card: typed model (A2A v0.3 ``AgentCard``) and resolution from a base URL.

The card lives at the origin: ``/.well-known/agent-card.json`` (v0.3), else the deprecated
``/.well-known/agent.json`` (v0.2). When the base URL has a path, the same two paths under that
path are tried after the origin ones (servers mounted under a prefix). A URL ending in ``.json``
is taken as the card's own address.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from .errors import A2ACardNotFoundError, A2AClientError, A2AInvalidResponseError
from .retry import RetryPolicy, call_with_retries
from .rpc import check_status, decode_json, translate_errors

__all__ = [
    "CARD_PATHS",
    "AgentCapabilities",
    "AgentCard",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "card_urls",
    "fetch_card",
]

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
_NEXT_PATH_STATUSES = frozenset({404, 405, 410})


class CardModel(BaseModel):
    """camelCase on the wire; unknown fields are kept (``model_extra``), never rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class AgentProvider(CardModel):
    organization: str
    url: str


class AgentExtension(CardModel):
    uri: str
    description: str | None = None
    required: bool | None = None
    params: dict[str, Any] | None = None


class AgentCapabilities(CardModel):
    streaming: bool | None = None
    push_notifications: bool | None = None
    state_transition_history: bool | None = None
    extensions: list[AgentExtension] | None = None


class AgentSkill(CardModel):
    id: str
    name: str
    description: str
    tags: list[str]
    examples: list[str] | None = None
    input_modes: list[str] | None = None
    output_modes: list[str] | None = None
    security: list[dict[str, list[str]]] | None = None


class AgentInterface(CardModel):
    url: str
    transport: str


class AgentCard(CardModel):
    protocol_version: str
    name: str
    description: str
    url: str
    version: str
    capabilities: AgentCapabilities
    default_input_modes: list[str]
    default_output_modes: list[str]
    skills: list[AgentSkill]
    preferred_transport: str | None = None
    additional_interfaces: list[AgentInterface] | None = None
    icon_url: str | None = None
    documentation_url: str | None = None
    provider: AgentProvider | None = None
    security_schemes: dict[str, dict[str, Any]] | None = None
    security: list[dict[str, list[str]]] | None = None
    supports_authenticated_extended_card: bool | None = None
    signatures: list[dict[str, Any]] | None = None

    @property
    def streaming(self) -> bool:
        return bool(self.capabilities.streaming)

    def jsonrpc_url(self, card_url: str | None = None) -> str:
        """The JSON-RPC endpoint: ``url`` when the preferred transport is JSON-RPC (the
        default), else the JSON-RPC entry of ``additionalInterfaces``. A relative URL is
        resolved against ``card_url``."""
        url: str | None = None
        if (self.preferred_transport or "JSONRPC").upper() == "JSONRPC":
            url = self.url
        else:
            for interface in self.additional_interfaces or []:
                if interface.transport.upper() == "JSONRPC":
                    url = interface.url
                    break
        if url is None:
            raise A2AClientError(
                f"agent {self.name!r} offers no JSON-RPC interface "
                f"(preferredTransport {self.preferred_transport!r})"
            )
        return urljoin(card_url, url) if card_url else url


def card_urls(base_url: str) -> list[str]:
    """Where to look for the card of the agent at ``base_url``, in order."""
    parts = urlsplit(base_url)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"an absolute http(s) URL is needed, got {base_url!r}")
    if parts.path.endswith(".json"):
        return [base_url]
    origin = f"{parts.scheme}://{parts.netloc}"
    urls = [origin + path for path in CARD_PATHS]
    prefix = parts.path.rstrip("/")
    if prefix:
        urls += [origin + prefix + path for path in CARD_PATHS]
    return urls


async def fetch_card(
    http: httpx.AsyncClient,
    base_url: str,
    *,
    retry: RetryPolicy,
    timeout: httpx.Timeout,
    headers: dict[str, str] | None = None,
) -> tuple[AgentCard, str]:
    """The validated card and the URL it came from. A 404 (405, 410) moves on to the next
    path; transient failures are retried; anything else is raised."""
    tried: list[str] = []
    for url in card_urls(base_url):
        tried.append(url)

        async def attempt(url: str = url) -> httpx.Response:
            response = await http.get(
                url, headers={"Accept": "application/json", **(headers or {})}, timeout=timeout
            )
            if response.status_code not in _NEXT_PATH_STATUSES:
                check_status(response)
            return response

        with translate_errors():
            response = await call_with_retries(retry, attempt)
        if response.status_code in _NEXT_PATH_STATUSES:
            continue
        raw = decode_json(response.content, f"the agent card at {url}")
        try:
            return AgentCard.model_validate(raw), url
        except ValidationError as exc:
            raise A2AInvalidResponseError(f"invalid agent card at {url}: {exc}") from exc
    raise A2ACardNotFoundError(tried)

