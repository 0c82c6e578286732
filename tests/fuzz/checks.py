"""The properties every response must have, the outcome counts, and the stored-state check.

A violation raises ``AssertionError`` naming the request as sent (cut to a readable length,
with its full size), so that a failing example can be replayed by hand.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llamon_agent.core.principal import ANONYMOUS
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect

from .schema import schema_errors
from .values import INT64_MIN, Deep, Raw
from .wire import Reply

#: JSON-RPC errors that mean the request never got past the envelope and params checks
#: (-32009: the method's A2A version is not the one the request names)
ENVELOPE_CODES = frozenset({-32700, -32600, -32601, -32602, -32009})
INTERNAL = -32603
#: ``-32602`` reasons a handler gives after the envelope and the params passed: the push
#: service's refusal of a webhook or a config, a config the task does not have, an answer to a
#: question no longer pending or past its deadline
HANDLER_REASONS = ("webhook refused", "push config refused", "unknown push notification config",
                   "stale answer", "question expired")
#: ``-32602`` errors a tool-call review gives after the params passed (``data.error``)
HANDLER_ERRORS = frozenset({"NoPendingReviewError", "ReviewPendingError",
                            "InvalidReviewDecisionError"})


def past_the_envelope(code: int, details: dict[str, Any]) -> bool:
    """Whether an error came from a handler, after the envelope and the params' checks."""
    if code not in ENVELOPE_CODES:
        return True
    reason = details.get("reason")
    return (isinstance(reason, str) and reason.startswith(HANDLER_REASONS)) or (
        details.get("error") in HANDLER_ERRORS)


#: the success shape of each method, as the official schema names it
SUCCESS_SHAPES = {
    "message/send": "SendMessageSuccessResponse",
    "message/stream": "SendStreamingMessageSuccessResponse",
    "tasks/resubscribe": "SendStreamingMessageSuccessResponse",
    "tasks/get": "GetTaskSuccessResponse",
    "tasks/cancel": "CancelTaskSuccessResponse",
    "tasks/pushNotificationConfig/set": "SetTaskPushNotificationConfigSuccessResponse",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfigSuccessResponse",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigSuccessResponse",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfigSuccessResponse",
}


def shown(body: bytes, limit: int = 1500) -> str:
    text = body.decode("utf-8", "backslashreplace")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(body)} bytes in all)"


@dataclass
class Stats:
    """Outcomes of one fuzz run, by label (``result``, ``error -32602``, ``http 422`` ...)."""

    name: str
    outcomes: Counter[str] = field(default_factory=Counter)
    #: what was sent, by kind (valid, soft, hard ...)
    kinds: Counter[str] = field(default_factory=Counter)
    #: stored tasks read back at the end (over the wire and through the store)
    stored: int | None = None
    #: JSON-RPC requests that got past the envelope (a result or a handler's error)
    reached: int = 0
    requests: int = 0
    #: of ``reached``, by the kind sent (``rpc_case``'s requests only)
    reached_kinds: Counter[str] = field(default_factory=Counter)

    def add(self, label: str, *, reached: bool | None = None) -> None:
        self.outcomes[label] += 1
        if reached is not None:
            self.requests += 1
            self.reached += reached

    def line(self) -> str:
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(self.outcomes.items()))
        text = f"{self.name}: {sum(self.outcomes.values())} cases ({counts})"
        if self.kinds:
            text += "; sent " + ", ".join(f"{k}: {v}" for k, v in sorted(self.kinds.items()))
        if self.requests:
            text += f"; past the envelope {self.reached}/{self.requests}"
        if self.reached_kinds:
            text += " (" + ", ".join(f"{k}: {self.reached_kinds[k]}/{self.kinds[k]}"
                                     for k in sorted(self.kinds)) + ")"
        if self.stored is not None:
            text += f"; {self.stored} stored tasks read back"
        return text


#: every Stats of this session, printed at the end (``conftest.pytest_terminal_summary``)
REPORT: list[Stats] = []


def new_stats(name: str) -> Stats:
    stats = Stats(name)
    REPORT.append(stats)
    return stats


def usable_id(request: Any) -> Any:
    """The id the server must echo, ``None`` when there is none, ``...`` when the request's
    id is text this side did not parse (``Raw``/``Deep``) and any well-typed id will do."""
    if not isinstance(request, dict):
        return ...  # raw bytes: this side did not parse them
    value = request.get("id")
    if isinstance(value, (Raw, Deep)):
        return ...
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None  # a lone surrogate: the body is not valid JSON text for the server
        return value
    # orjson reads integers within 64 bits (signed or unsigned) as integers, larger as floats
    if isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value < 2**64:
        return value
    return None


def rpc_envelope(reply: Reply, request: bytes) -> dict[str, Any]:
    """The reply of a non-streaming JSON-RPC request: HTTP 200, JSON, a JSON-RPC response."""
    context = f"\nrequest: {shown(request)}\nreply: {reply.status} {shown(reply.content, 600)}"
    assert reply.status == 200, f"JSON-RPC answered HTTP {reply.status}{context}"
    assert reply.media_type == "application/json", f"not JSON: {reply.media_type}{context}"
    try:
        body = json.loads(reply.content)
    except ValueError:
        raise AssertionError(f"the body is not JSON{context}") from None
    errors = schema_errors("JSONRPCErrorResponse" if "error" in body else "JSONRPCSuccessResponse",
                           body)
    assert errors == [], f"not a JSON-RPC response: {errors}{context}"
    assert ("error" in body) != ("result" in body), f"result and error{context}"
    if "error" in body:
        assert body["error"]["code"] != INTERNAL, f"-32603 for a client's request{context}"
    return body


def sse_frames(reply: Reply, request: bytes) -> list[dict[str, Any]]:
    context = f"\nrequest: {shown(request)}\nreply: {reply.status} {shown(reply.content, 600)}"
    assert reply.status == 200, f"a stream answered HTTP {reply.status}{context}"
    frames: list[dict[str, Any]] = []
    for block in reply.content.decode("utf-8").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if not data:
            continue
        try:
            frames.append(json.loads("\n".join(data)))
        except ValueError:
            raise AssertionError(f"an SSE frame is not JSON{context}") from None
    assert frames, f"an SSE stream without a frame{context}"
    for frame in frames:
        if "error" in frame:
            assert frame["error"]["code"] != INTERNAL, f"-32603 in a stream{context}"
            assert schema_errors("JSONRPCErrorResponse", frame) == [], context
        else:
            errors = schema_errors("SendStreamingMessageSuccessResponse", frame)
            assert errors == [], f"{errors}{context}"
    return frames


def check_rpc(reply: Reply, request_tree: Any, request: bytes, method: Any,
              stats: Stats) -> None:
    """Every property of one JSON-RPC reply; counts its outcome."""
    expected = usable_id(request_tree)
    if reply.media_type == "text/event-stream":
        assert method in ("message/stream", "tasks/resubscribe"), (
            f"a stream for {method!r}\nrequest: {shown(request)}"
        )
        frames = sse_frames(reply, request)
        first = frames[0]
        if expected is not ...:
            assert all(f["id"] == expected for f in frames), f"stream ids\nrequest: {shown(request)}"
        label = f"error {first['error']['code']}" if "error" in first else "result (stream)"
        stats.add(label, reached=True)
        return
    body = rpc_envelope(reply, request)
    context = f"\nrequest: {shown(request)}\nreply: {shown(reply.content, 600)}"
    if "result" in body:
        assert expected is ... or body["id"] == expected, f"id not echoed{context}"
        shape = SUCCESS_SHAPES.get(method) if isinstance(method, str) else None
        if shape is not None:
            errors = schema_errors(shape, body)
            assert errors == [], f"{shape}: {errors}{context}"
        stats.add("result", reached=True)
        return
    error = body["error"]
    code = error["code"]
    data = error.get("data")
    # a document the parser could not read (bad JSON, nested past the parser's own limit) has
    # no id the server could know; every later check answers with the request's id
    unread = code in (-32700, -32600) or (
        code == -32602 and isinstance(data, dict) and data.get("limit") == "max_depth"
    )
    if expected is not ...:
        if unread:
            assert body["id"] in (None, expected), f"id{context}"
        else:
            assert body["id"] == expected, f"id not echoed{context}"
    stats.add(f"error {code}",
              reached=past_the_envelope(code, data if isinstance(data, dict) else {}))


def check_rest(reply: Reply, request: bytes, stats: Stats, path: str) -> Any:
    """A REST reply: never a 5xx, always JSON."""
    context = f"\nPOST {path}\nrequest: {shown(request)}\nreply: {reply.status} {shown(reply.content, 600)}"
    assert reply.status < 500, f"HTTP {reply.status}{context}"
    assert reply.media_type == "application/json", f"not JSON: {reply.media_type!r}{context}"
    try:
        body = json.loads(reply.content)
    except ValueError:
        raise AssertionError(f"the body is not JSON{context}") from None
    stats.add(f"http {reply.status}")
    return body


# ----------------------------------------------------------------------------- stored state


def every_task_reads_back(rpc: Callable[[str, Any], dict[str, Any]], db: Path | str) -> int:
    """``tasks/get`` of every stored task of the (anonymous) client answers the task (no
    ``-32603``), a task of the server's internal space (an orchestrator's child) is unknown to it
    (``-32001``), and every row decodes through the store's ``get`` (SQLite's, or PostgreSQL's
    for a ``postgresql://`` URL); returns how many rows there are."""
    rows = stored_tasks(db)
    for task_id, space in rows:
        answer = rpc("tasks/get", {"id": task_id})
        if space == ANONYMOUS:
            assert "result" in answer, f"stored task {task_id} does not read back: {answer}"
        else:
            assert answer.get("error", {}).get("code") == -32001, (task_id, space, answer)
    assert asyncio.run(decode_all(db)) >= len(rows)
    return len(rows)


def _on_postgres(db: Path | str) -> bool:
    return str(db).startswith("postgresql")


def stored_tasks(db: Path | str) -> list[tuple[str, str]]:
    """``(task id, space)`` of every stored row."""
    if _on_postgres(db):
        import psycopg

        with psycopg.connect(str(db)) as pg:
            return [(r[0], r[1]) for r in pg.execute("SELECT id, space FROM llamon_tasks")]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(row[0], row[1]) for row in conn.execute("SELECT id, space FROM llamon_tasks")]
    finally:
        conn.close()


async def decode_all(db: Path | str) -> int:
    """Read every stored task through the store's own API; an undecodable row raises."""
    if _on_postgres(db):
        from llamon_agent.stores.postgres import PostgresTaskStore
        from tests.replicas.pg import open_pool

        async with open_pool(str(db), max_size=1) as pool:
            store = PostgresTaskStore(pool)
            ids = [task_id for task_id, _ in stored_tasks(db)]
            for task_id in ids:
                record = await store.get(task_id)
                assert record is not None and record.id == task_id
            return len(ids)
    conn = connect(str(db))
    try:
        store = SQLiteTaskStore(conn)
        ids = [row[0] for row in conn.execute("SELECT id FROM llamon_tasks")]
        for task_id in ids:
            record = await store.get(task_id)
            assert record is not None and record.id == task_id
        return len(ids)
    finally:
        conn.close()
