"""HTTP alone: the benchmark's HITL exchange answered from canned tasks, served as ours is.

``bench/hitl_client.py``'s round trip (``message/send`` -> ``input-required``, the answer ->
``completed``) against an ASGI app that runs no agent, stores nothing and validates nothing: it
reads the request, takes its id, contextId and text, and answers a task of the size and shape
ours answers (the question with its message, or the completed task with its artifact). It is
served exactly as ``bench/servers/llamon.py`` serves our app (``server/serve.py``: uvicorn's
httptools protocol with our bounds, TCP_NODELAY, asyncio's loop, warnings only, no access log),
so its CPU per round trip is what serving two requests over HTTP costs on this machine before any
of the app's work: the floor under ``bench/overhead.py``'s "served" figure.
"""

from __future__ import annotations

import uuid
from collections.abc import MutableMapping
from typing import Any

import orjson

from bench.servers._serve import parser

_CARD = orjson.dumps({
    "name": "canned", "description": "HTTP alone (bench/servers/canned.py)", "version": "1",
    "url": "http://127.0.0.1/", "protocolVersion": "0.3.0", "capabilities": {},
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
})
_QUESTION = "Which option do you choose? (yes / no)"
_STAMP = "2026-12-05T12:00:00.000000+00:00"


def _message(role: str, text: str, context_id: str, task_id: str) -> dict[str, Any]:
    return {"kind": "message", "messageId": str(uuid.uuid4()), "role": role,
            "parts": [{"kind": "text", "text": text}], "contextId": context_id, "taskId": task_id}


def _task(request: dict[str, Any]) -> dict[str, Any]:
    message = request["params"]["message"]
    context_id = message.get("contextId") or uuid.uuid4().hex
    asked = message.get("taskId")
    task_id = asked or str(uuid.uuid4())
    text = message["parts"][0]["text"]
    user = _message("user", text, context_id, task_id)
    if text == "start":
        question = _message("agent", _QUESTION, context_id, task_id)
        return {"kind": "task", "id": task_id, "contextId": context_id,
                "status": {"state": "input-required", "message": question, "timestamp": _STAMP},
                "history": [user, question], "metadata": {"agentId": "hitl"}}
    artifact = {"artifactId": str(uuid.uuid4()), "name": "result",
                "parts": [{"kind": "text", "text": f"answered: {text}"}]}
    return {"kind": "task", "id": task_id, "contextId": context_id,
            "status": {"state": "completed", "timestamp": _STAMP},
            "history": [user], "artifacts": [artifact], "metadata": {"agentId": "hitl"}}


async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    if scope["method"] == "GET":
        body = _CARD
    else:
        request = orjson.loads(b"".join(chunks))
        body = orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": _task(request)})
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    args = parser(__doc__).parse_args()
    from llamon_agent.server.serve import ServeOptions, serve

    serve(app, ServeOptions(port=args.port, log_level="warning", access_log=False))


if __name__ == "__main__":
    main()
