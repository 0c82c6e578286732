"""``GET /``: what a person who opens the server in a browser needs (an HTML page), or the same
as JSON for a program (any client that does not ask for ``text/html`` by name).

The agents (id, name, description) and links to the card, the reviewed-chat OpenAPI document,
the health endpoints, the metrics and the Playground (whose agent picker reads this JSON).
Links are relative: the page never repeats the request's ``Host`` header, which any client can
set. ``POST /`` is the JSON-RPC endpoint (``app.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from html import escape
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from ..agent import Agent

__all__ = ["landing_page", "wants_html"]

#: name -> (path, what it is)
LINKS: dict[str, tuple[str, str]] = {
    "agentCard": ("/.well-known/agent-card.json", "the A2A agent card"),
    "hitlOpenapi": ("/hitl/openapi.json", "OpenAPI document of /hitl/chat and /hitl/review"),
    "healthz": ("/healthz", "liveness: the process serves"),
    "readyz": ("/readyz", "readiness: storage reachable, recovery done"),
    "metrics": ("/metrics", "Prometheus metrics"),
    "playground": ("/playground", "the Playground: talk to an agent in the browser"),
}
_HEADERS = {
    "Vary": "Accept",
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}
# the page has no script, no image and no external resource: forbid them all
_HTML_HEADERS = {**_HEADERS, "Content-Security-Policy": "default-src 'none'; "
                 "style-src 'unsafe-inline'; frame-ancestors 'none'"}


def _quality(accept: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        found[media.lower()] = max(q, found.get(media.lower(), 0.0))
    return found


def wants_html(accept: str | None) -> bool:
    """A browser names ``text/html``; curl, httpx and A2A clients send ``*/*`` or JSON."""
    q = _quality(accept or "")
    return q.get("text/html", 0.0) > 0 and q["text/html"] >= q.get("application/json", 0.0)


def _document(
    card: Mapping[str, Any], agents: Sequence[Agent], metrics_token: bool
) -> dict[str, Any]:
    links = {name: path for name, (path, _) in LINKS.items()}
    return {
        "name": card.get("name"),
        "description": card.get("description"),
        "protocol": "A2A v0.3, JSON-RPC 2.0 at POST /",
        "agents": [{"id": a.id, "name": a.name, "description": a.description} for a in agents],
        "links": links,
        "metricsNeedToken": metrics_token,
    }


def _html(doc: Mapping[str, Any]) -> str:
    def text(value: Any) -> str:
        return escape("" if value is None else str(value))

    agents = "\n".join(
        f"<li><code>{text(a['id'])}</code> <strong>{text(a['name'])}</strong>: "
        f"{text(a['description'])}</li>"
        for a in doc["agents"]
    )
    links = "\n".join(
        f'<li><a href="{escape(path)}">{escape(path)}</a>: {escape(what)}'
        + (" (<code>Authorization: Bearer</code> token)" if name == "metrics"
           and doc["metricsNeedToken"] else "") + "</li>"
        for name, (path, what) in LINKS.items()
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{text(doc['name'])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;
line-height:1.5}}code{{background:#f2f2f2;padding:0 .2em}}</style></head>
<body><h1>{text(doc['name'])}</h1>
<p>{text(doc['description'])}</p>
<p>An A2A v0.3 server: send JSON-RPC 2.0 requests (<code>message/send</code>,
<code>message/stream</code>, <code>tasks/get</code>, ...) with <code>POST /</code>; choose an agent
with <code>params.metadata.agentId</code>.</p>
<h2>Agents</h2>
<ul>
{agents}
</ul>
<h2>Links</h2>
<ul>
{links}
</ul>
</body></html>
"""


def landing_page(
    card: Mapping[str, Any], agents: Sequence[Agent], *, metrics_token: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint; the page is built once (nothing on it changes while the app runs)."""
    doc = _document(card, agents, metrics_token)
    as_json = orjson.dumps(doc)
    as_html = _html(doc).encode()

    async def landing(request: Request) -> Response:
        if wants_html(request.headers.get("accept")):
            return Response(as_html, media_type="text/html; charset=utf-8",
                            headers=_HTML_HEADERS)
        return Response(as_json, media_type="application/json", headers=_HEADERS)

    return landing
