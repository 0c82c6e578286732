"""The agents a server lists at ``GET /`` (a llamon server's landing page, as JSON).

A server with several agents picks one by ``params.metadata.agentId``; a server without such a
list (the official SDK's) serves one agent and needs none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

__all__ = ["MAX_AGENTS", "ListedAgent", "listed_agents"]

MAX_LISTING_BYTES = 1024 * 1024
MAX_AGENTS = 500
MAX_FIELD_CHARS = 1000


@dataclass(frozen=True, slots=True)
class ListedAgent:
    id: str
    name: str
    description: str


async def listed_agents(
    http: httpx.AsyncClient, url: str, headers: Mapping[str, str]
) -> list[ListedAgent]:
    """The agents ``GET url`` lists as JSON; none when it answers anything else (not JSON, no
    ``agents``, an error status): such a server is not one that names its agents."""
    try:
        async with http.stream("GET", url, headers={**headers, "Accept": "application/json"},
                               timeout=10.0) as response:
            if response.status_code != 200:
                return []
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_LISTING_BYTES:
                    return []
    except httpx.HTTPError:
        return []
    try:
        document = json.loads(body)
    except ValueError:
        return []
    agents = document.get("agents") if isinstance(document, dict) else None
    if not isinstance(agents, list):
        return []
    listed = []
    for item in agents[:MAX_AGENTS]:
        agent_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(agent_id, str) or not 0 < len(agent_id) <= MAX_FIELD_CHARS:
            continue  # an id cut short would name another agent, or none
        name, description = item.get("name"), item.get("description")
        listed.append(ListedAgent(
            id=agent_id,
            name=name[:MAX_FIELD_CHARS] if isinstance(name, str) else agent_id,
            description=description[:MAX_FIELD_CHARS] if isinstance(description, str) else "",
        ))
    return listed
