"""``/playground``: a page to talk to the served agents by hand (docs/playground.md).

Three static files shipped in the package (``server/playground/``), read once when the app is
built. They hold no data: the page asks ``GET /`` for the agents and talks JSON-RPC to
``POST /`` (authenticated as usual), so the paths are public (``auth_middleware.py``).

Agent text, questions and tool arguments reach the page from users; the page builds every node
with ``textContent`` and runs under a policy that allows its own script and style only (no
inline script or style, no ``eval``, no other origin), so markup in data stays text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["CSP", "PATHS", "playground_routes"]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_FILES: dict[str, tuple[str, str]] = {  # path -> (file, media type)
    "/playground": ("index.html", "text/html; charset=utf-8"),
    "/playground/playground.js": ("playground.js", "text/javascript; charset=utf-8"),
    "/playground/playground.css": ("playground.css", "text/css; charset=utf-8"),
}
#: every path the page is served at (public: the files hold no data)
PATHS = frozenset(_FILES)


@dataclass(frozen=True, slots=True)
class _Asset:
    body: bytes
    media_type: str
    etag: str


def _load(name: str, media_type: str) -> _Asset:
    body = (resources.files(__package__ or "llamon_agent.server") / "playground" / name).read_bytes()
    return _Asset(body, media_type, f'"{hashlib.sha256(body).hexdigest()[:32]}"')


def _headers(asset: _Asset) -> dict[str, str]:
    # no-cache: the browser revalidates with the ETag, so an upgraded server is seen at once
    return {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache", "ETag": asset.etag, "Referrer-Policy": "no-referrer"}


def _endpoint(asset: _Asset) -> Callable[[Request], Awaitable[Response]]:
    async def serve_file(request: Request) -> Response:
        if asset.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=_headers(asset))
        return Response(asset.body, media_type=asset.media_type, headers=_headers(asset))

    return serve_file


def playground_routes() -> list[Route]:
    """``GET`` (and ``HEAD``) of each file of the page."""
    return [Route(path, _endpoint(_load(name, media_type)), methods=["GET"])
            for path, (name, media_type) in _FILES.items()]
