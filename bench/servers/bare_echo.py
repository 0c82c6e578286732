"""The stack's limit: bare Starlette answering every JSON-RPC call with one fixed completed Task."""

from __future__ import annotations

import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.servers._serve import parser, serve

_TASK = json.dumps(
    {
        "kind": "task",
        "id": "00000000-0000-0000-0000-000000000001",
        "contextId": "00000000-0000-0000-0000-000000000002",
        "status": {"state": "completed", "timestamp": "2025-01-01T00:00:00+00:00"},
        "artifacts": [
            {"artifactId": "result", "name": "result", "parts": [{"kind": "data", "data": {"ok": True}}]}
        ],
    },
    separators=(",", ":"),
)
_CARD = json.dumps(
    {
        "name": "bare-echo",
        "description": "Fixed completed Task for every call",
        "url": "http://127.0.0.1/",
        "version": "0",
        "protocolVersion": "0.3.0",
        "capabilities": {},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [],
    }
).encode()


async def rpc(request: Request) -> Response:
    call = json.loads(await request.body())
    body = '{"jsonrpc":"2.0","id":' + json.dumps(call.get("id")) + ',"result":' + _TASK + "}"
    return Response(body, media_type="application/json")


async def card(request: Request) -> Response:
    return Response(_CARD, media_type="application/json")


app = Starlette(
    routes=[
        Route("/", rpc, methods=["POST"]),
        Route("/.well-known/agent-card.json", card, methods=["GET"]),
    ]
)


def main() -> None:
    serve(app, parser(__doc__).parse_args().port)


if __name__ == "__main__":
    main()
