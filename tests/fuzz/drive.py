"""One fuzz case, sent and checked: shared by the test suite and the long run (``run_long``).

Each ``*_case`` function sends one generated case over ``served.wire``, checks every property
of the reply (``checks.py``), counts its outcome, and checks that a normal request still works
afterwards. A violation raises ``AssertionError`` naming the request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance

from .cases import RpcCase, mutate_body
from .checks import Stats, check_rest, check_rpc, shown
from .scene import EMAIL_PROMPT, Scene
from .values import encode
from .wire import Wire

TOKEN = "fuzz-reviewer-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Served:
    wire: Wire
    scene: Scene
    db: Path | str  # the SQLite file, or the PostgreSQL URL


# ----------------------------------------------------------------------------- JSON-RPC


def rpc_case(served: Served, case: RpcCase, stats: Stats) -> None:
    scene = served.scene
    tree = case.tree if case.slot is None else scene.fill(case.tree, case.slot)
    body = encode(tree)
    stats.kinds[case.kind] += 1
    reply = served.wire.request("POST", "/", body, case.headers())
    if case.slot is not None:
        scene.used(case.slot)
    reached = stats.reached
    check_rpc(reply, tree, body, case.method(), stats)
    stats.reached_kinds[case.kind] += stats.reached - reached
    scene.healthy()


def raw_case(served: Served, body: bytes, stats: Stats) -> None:
    reply = served.wire.request("POST", "/", body)
    check_rpc(reply, None, body, None, stats)
    served.scene.healthy()


# ----------------------------------------------------------------------------- /hitl/*

_HITL_CHECKS = [not_a_server_error, response_schema_conformance]

_EDIT = {"type": "edit", "edited_action": {
    "name": "send_email", "args": {"to": "bob@example.com", "subject": "s", "body": "b"}}}
#: decisions a reviewer sends for the one pending email, right and wrong
_DECISIONS = [
    [{"type": "approve"}], [{"type": "reject", "message": "not now"}], [_EDIT],
    [{"type": "approve"}, {"type": "approve"}], [{"type": "respond", "message": "x"}],
    [{"type": "edit", "edited_action": {"name": "send_email", "args": {"to": 1}}}],
    [{"type": "edit", "edited_action": {"name": "other_tool", "args": {}}}],
]
#: a generated body as it is, aimed at the waiting thread, with hostile leaves, or both
HITL_MODES = ["aimed", "as generated", "mutated", "aimed, mutated"]


def hitl_operation(served: Served, path: str) -> Any:
    """The operation of ``path`` in the OpenAPI document the server serves."""
    reply = served.wire.request("GET", "/hitl/openapi.json")
    assert reply.status == 200
    schema = schemathesis.openapi.from_dict(json.loads(reply.content))
    return schema[path]["POST"]


def hitl_cases(operation: Any) -> st.SearchStrategy[Any]:
    """schemathesis's cases: bodies that fit the document, and bodies that do not."""
    return st.one_of(operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
                     operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))


def _headers(case: Any) -> dict[str, str]:
    """The generated headers that HTTP can carry (header values are Latin-1 at most)."""
    return {name: value for name, value in (case.headers or {}).items()
            if isinstance(value, str) and value.isascii() and value.isprintable()}


def _content(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, (dict, list, str, int, float, bool)) or body is None:
        return encode(body)
    return b""  # schemathesis's "no body"


@st.composite
def _aimed(draw: st.DrawFn, body: Any, path: str, scene: Scene) -> Any:
    """The body addressed to the thread whose email waits for approval (or a stale one)."""
    if not isinstance(body, dict):
        return body
    thread, interrupt = scene.pending_thread()
    body = dict(body)
    if path == "/hitl/chat":
        if draw(st.booleans()):
            body["message"] = EMAIL_PROMPT
        else:
            body["thread_id"] = thread
        return body
    body["thread_id"] = thread
    if draw(st.integers(0, 3)):
        body["decisions"] = draw(st.sampled_from(_DECISIONS))
    which = draw(st.sampled_from(["current", "none", "current", "stale"]))
    if which == "current":
        body["interrupt_id"] = interrupt
    elif which == "stale" and scene.stale_thread is not None:
        body["thread_id"], body["interrupt_id"] = scene.stale_thread
    return body


def hitl_case(served: Served, path: str, case: Any, data: st.DataObject, stats: Stats) -> None:
    """One schemathesis case, as generated, aimed at a waiting thread, or with hostile
    leaves; checked by schemathesis and by the suite."""
    scene = served.scene
    body = case.body
    mode = data.draw(st.sampled_from(HITL_MODES), label="mode")
    stats.kinds[mode] += 1
    if mode.startswith("aimed"):
        body = data.draw(_aimed(body, path, scene), label="aimed")
    if mode.endswith("mutated") and isinstance(body, (dict, list)):
        body, _ = data.draw(mutate_body(body), label="mutated")
    content = _content(body)
    reply = served.wire.request("POST", path, content, _headers(case))
    if isinstance(body, dict) and scene.has_thread(body.get("thread_id")):
        scene.thread_used()
    check_rest(reply, content, stats, path)
    try:
        case.validate_response(reply.response, checks=_HITL_CHECKS)
    except Exception as exc:  # schemathesis's FailureGroup: re-raised with the request
        raise AssertionError(f"POST {path}\nrequest: {shown(content)}\n{exc}") from None
    scene.healthy()


# ----------------------------------------------------------------------------- /reviews/*

REVIEW_TARGETS = ["pending", "pending", "decided", "unknown", "hostile"]
AUTHS = ["token", "token", "token", "none", "wrong"]


@dataclass
class Reviews:
    """Reviews of one run: the one waiting (parked as needed) and those decided."""

    pending: list[str] = field(default_factory=list)
    decided: list[str] = field(default_factory=list)


def decision_case(served: Served, reviews: Reviews, drawn: tuple[Any, str], target: str,
                  hostile_id: str, auth: str, stats: Stats) -> None:
    body, kind = drawn
    stats.kinds[kind] += 1
    if target == "pending" or (target == "decided" and not reviews.decided):
        if not reviews.pending:
            reviews.pending.append(served.scene.parked_review())
        review_id = reviews.pending[0]
    elif target == "decided":
        review_id = reviews.decided[-1]
    elif target == "unknown":
        review_id = "0f" * 16
    else:
        review_id = hostile_id
    headers = {"token": AUTH, "none": {}, "wrong": {"Authorization": "Bearer nope"}}[auth]
    # dots too: a client resolves a ``..`` segment before sending, the route never sees it
    path = f"/reviews/{quote(review_id, safe='').replace('.', '%2E')}/decision"
    content = encode(body)
    reply = served.wire.request("POST", path, content, headers)
    answer = check_rest(reply, content, stats, path)
    if reply.status == 200:
        assert answer["id"] == review_id, f"{answer}\nrequest: {shown(content)}"
        if review_id in reviews.pending:
            reviews.pending.remove(review_id)
            reviews.decided.append(review_id)
    served.scene.healthy()


@dataclass
class Listing:
    """The page tokens ``GET /reviews`` gave in one run (a later case sends them back)."""

    tokens: list[str] = field(default_factory=list)


def listing_case(served: Served, listing: Listing, query: list[tuple[str, str]], auth: str,
                 stats: Stats) -> None:
    """One ``GET /reviews``: a page of pending reviews (at most the size asked, each pending,
    and a ``nextPageToken``), or a JSON refusal saying what is wrong; never a 5xx."""
    headers = {"token": AUTH, "none": {}, "wrong": {"Authorization": "Bearer nope"}}[auth]
    path = f"/reviews?{urlencode(query)}" if query else "/reviews"
    reply = served.wire.request("GET", path, None, headers)
    answer = check_rest(reply, path.encode(), stats, path)
    if reply.status != 200:
        assert reply.status in (400, 401) and set(answer) == {"detail"}, (path, answer)
        assert isinstance(answer["detail"], str) and answer["detail"], (path, answer)
        stats.kinds[f"refused {reply.status}"] += 1
        return
    assert auth == "token", (path, answer)
    assert set(answer) == {"reviews", "nextPageToken"}, (path, answer)
    sizes = [int(v) for name, v in query if name == "pageSize"]
    assert len(answer["reviews"]) <= (sizes[0] if sizes else 50), (path, answer)
    assert all(r["status"] == "pending" for r in answer["reviews"]), (path, answer)
    if answer["nextPageToken"]:
        listing.tokens.append(answer["nextPageToken"])
    stats.kinds["listed"] += 1
    served.scene.healthy()


# ----------------------------------------------------------------------------- /contexts/*

#: whose context a ``DELETE /contexts/{id}`` names: one made for it (a task waiting for a
#: note), the one deleted last, an unknown id, a hostile id, or generated text (the scene's
#: contexts have random ids no case names)
CONTEXT_TARGETS = ["fresh", "fresh", "deleted", "unknown", "hostile", "generated"]


@dataclass
class Contexts:
    """The contexts one run deleted (the scene's own are never named)."""

    deleted: list[str] = field(default_factory=list)


def context_case(served: Served, contexts: Contexts, target: str, hostile_id: str,
                 generated: str, body: bytes | None, stats: Stats) -> None:
    """One ``DELETE /contexts/{id}``: a context made for it is deleted (200, its task then
    unknown); any other id is a JSON refusal, never a 5xx."""
    stats.kinds[target] += 1
    task: dict[str, Any] | None = None
    if target == "fresh" or (target == "deleted" and not contexts.deleted):
        task = served.scene.send([{"kind": "text", "text": "a note to forget"}], "until-done")
        context_id = task["contextId"]
    elif target == "deleted":
        context_id = contexts.deleted[-1]
    elif target == "unknown":
        context_id = "0f" * 16
    elif target == "hostile":
        context_id = hostile_id
    else:
        context_id = generated
    path = f"/contexts/{quote(context_id, safe='').replace('.', '%2E')}"
    content = body or b""
    reply = served.wire.request("DELETE", path, content)
    answer = check_rest(reply, content, stats, path)
    if task is not None:
        assert (reply.status, answer) == (200, {
            "contextId": context_id, "deletedTasks": 1, "deletedChildContexts": 0}), answer
        assert served.scene.rpc("tasks/get", {"id": task["id"]})["error"]["code"] == -32001
        contexts.deleted.append(context_id)
    elif target in ("deleted", "unknown"):
        assert (reply.status, answer) == (404, {"detail": "Context not found"}), answer
    else:  # no such context (the server's own ids are random): refused at the edge, or unknown
        assert reply.status in (400, 404, 422), f"{reply.status} {answer}\n{path}"
    served.scene.healthy()
