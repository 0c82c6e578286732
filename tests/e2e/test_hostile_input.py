"""Issue 8: what a hostile client sends is refused at the edge, and nothing it sends breaks a
context, a side effect, a restart or the server. Each test reproduces one finding."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from llamon_agent import Limits
from tests.conftest import (
    A2AClient,
    assert_valid,
    durable_db,
    rpc,
    send_params,
    serve,
    user_message,
)
from tests.orchestrator.helpers import AUTH, Harness, serve_app, serve_loan
from tests.tool_review.helpers import edit, rest_server

LOAN = {"amount": 1000, "income": 20000}

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


class Client(A2AClient):
    """The raw client plus the server's ``TaskManager``, to look at what was stored."""

    def __init__(self, harness: Harness) -> None:
        super().__init__(harness.http)
        self.manager = harness.manager


@pytest.fixture
async def client(example_agents: Any) -> Any:
    async with serve_app(example_agents) as harness:
        yield Client(harness)


def nested(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


async def post(client: A2AClient, body: bytes | dict[str, Any]) -> httpx.Response:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return await client.http.post("/", content=content,
                                  headers={"Content-Type": "application/json"})


async def waiting_document_review(client: A2AClient) -> dict[str, Any]:
    task = await client.send("이 서류를 검증해줘", agent_id="document-review")
    assert task["status"]["state"] == "input-required"
    return task


def error_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert_valid("JSONRPCErrorResponse", body)
    return body["error"]


# ---------------------------------------------------------------- finding 1: nesting depth


@pytest.mark.parametrize("levels", [33, 240, 300, 1200])
async def test_a_deep_data_part_is_refused_and_nothing_is_stored(
    client: A2AClient, levels: int
) -> None:
    data = {**LOAN, "x": nested(levels) if levels < 250 else Ellipsis}
    body = rpc("message/send", send_params(data=data, agent_id="loan", context_id="p2"))
    raw = orjson.dumps(body) if levels < 250 else _deep_bytes(body, levels)
    error = error_of(await post(client, raw))
    assert error["code"] == -32602
    assert error["data"]["limit"] == "max_depth"
    assert error["data"]["reason"] == "limit exceeded"
    # nothing was stored: the context is fresh, a normal request starts its first task
    assert await client.manager.context_agent("p2") is None


def _deep_bytes(body: dict[str, Any], levels: int) -> bytes:
    """JSON nested deeper than orjson writes (it stops at 254 levels), spliced in as text."""
    raw = orjson.dumps(body, default=lambda _: "__deep__")
    return raw.replace(b'"__deep__"', b'{"a":' * levels + b"1" + b"}" * levels)


async def test_the_depth_limit_is_exact_at_the_default(client: A2AClient) -> None:
    # a data part's root object is level 1: 31 more levels and a leaf is the deepest accepted
    accepted = await client.send(data={**LOAN, "x": nested(31)}, agent_id="loan")
    assert accepted["status"]["state"] in {"input-required", "working", "completed"}
    refused = error_of(await post(client, rpc("message/send", send_params(
        data={**LOAN, "x": nested(32)}, agent_id="loan"))))
    assert refused["data"] == {"reason": "limit exceeded", "limit": "max_depth", "max": 32,
                               "field": "params.message.parts[0].data"}


async def test_a_deep_answer_leaves_the_question_waiting(client: A2AClient) -> None:
    task = await waiting_document_review(client)
    before = await client.result("tasks/get", {"id": task["id"]})
    error = error_of(await post(client, rpc("message/send", {
        "message": user_message(data={"value": nested(240)}, context_id=task["contextId"])
    })))
    assert error["code"] == -32602
    after = await client.result("tasks/get", {"id": task["id"]})
    assert after == before
    done = await client.send("passport", context_id=task["contextId"])
    assert done["status"]["state"] == "input-required"  # the next question: the birthday


async def test_deep_metadata_is_refused_wherever_it_is(client: A2AClient) -> None:
    for params in (
        {**send_params("hi"), "metadata": {"x": nested(40)}},
        {"message": {**user_message("hi"), "metadata": {"x": nested(40)}}},
        {"message": {**user_message("hi"),
                     "parts": [{"kind": "text", "text": "hi", "metadata": nested(40)}]}},
    ):
        error = error_of(await post(client, rpc("message/send", params)))
        assert (error["code"], error["data"]["limit"]) == (-32602, "max_depth"), params
    error = error_of(await post(client, rpc("tasks/get", {"id": "x", "metadata": nested(40)})))
    assert (error["code"], error["data"]["limit"]) == (-32602, "max_depth")


async def test_a_document_deeper_than_the_parser_reads_is_a_json_rpc_error(
    client: A2AClient,
) -> None:
    response = await post(client, b"[" * 5000 + b"]" * 5000)
    error = error_of(response)
    assert error["code"] == -32602
    assert response.json()["id"] is None


# ---------------------------------------------------------------- finding 2: numbers


@pytest.mark.parametrize("number", [b"100000000000000000000000000000", b"18446744073709551616",
                                    b"-9223372036854775809", b"9223372036854775808"])
async def test_an_integer_the_store_cannot_hold_is_refused(
    client: A2AClient, number: bytes
) -> None:
    raw = orjson.dumps(rpc("message/send", send_params(
        data={**LOAN, "x": "__n__"}, agent_id="loan", context_id="n1")))
    error = error_of(await post(client, raw.replace(b'"__n__"', number)))
    assert error["code"] == -32602
    assert error["data"]["limit"] == "number"
    assert await client.manager.context_agent("n1") is None


async def test_numbers_the_store_can_hold_are_kept_exactly(client: A2AClient) -> None:
    raw = orjson.dumps(rpc("message/send", send_params(
        data={"value": "__n__"}, agent_id="until-done")))
    task = (await post(client, raw.replace(b'"__n__"', b"1"))).json()["result"]
    for number in (b"9223372036854775807", b"-9223372036854775808", b"1e29", b"1.5"):
        raw = orjson.dumps(rpc("message/send", {"message": user_message(
            data={"value": "__n__"}, context_id=task["contextId"])}))
        reply = (await post(client, raw.replace(b'"__n__"', number))).json()
        assert "result" in reply, (number, reply)


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
async def test_nan_and_infinity_are_refused(client: A2AClient, literal: bytes) -> None:
    raw = orjson.dumps(rpc("message/send", send_params(data={"x": "__n__"})))
    error = error_of(await post(client, raw.replace(b'"__n__"', literal)))
    assert error["code"] == -32700


async def test_a_huge_integer_in_edited_arguments_sends_nothing() -> None:
    async with rest_server() as rest:
        thread = (await rest.pending())["thread_id"]
        huge = edit({"to": "a@example.com", "subject": "s", "body": "b", "n": "__n__"})
        response = await rest.http.post(
            "/hitl/review", content=orjson.dumps(
                {"thread_id": thread, "decisions": [huge]}
            ).replace(b'"__n__"', b"18446744073709551617"),
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 422, response.text
        issue = response.json()["detail"][0]
        assert (issue["type"], issue["limit"]) == ("limit_exceeded", "number")
        assert rest.outbox.count() == 0
        # the review still waits, and a correct decision sends exactly one email
        approved = await rest.review(thread, [{"type": "approve"}])
        assert approved.status_code == 200, approved.text
        assert rest.outbox.count() == 1


async def test_a_huge_integer_in_a_reviewer_edit_is_422_not_500() -> None:
    async with serve_loan() as loan:
        _, review_id = await loan.to_review()
        response = await loan.http.post(
            f"/reviews/{review_id}/decision", headers={**AUTH, "Content-Type": "application/json"},
            content=b'{"type": "edit", "edited": {"amount": 100000000000000000000000000000}}',
        )
        assert response.status_code == 422, response.text
        assert response.json()["detail"][0]["limit"] == "number"
        assert (await loan.review(review_id))["status"] == "pending"


# ---------------------------------------------------------------- sizes and counts


async def test_text_parts_and_files_over_their_limits_are_refused() -> None:
    limits = Limits(max_text_chars=10, max_parts=2, max_file_bytes=8, max_data_bytes=30,
                    max_id_chars=40)
    async with serve([_doc_agent()], limits=limits) as client:
        cases = {
            "max_text_chars": send_params("x" * 11),
            "max_parts": {"message": {**user_message("a"), "parts": [
                {"kind": "text", "text": "a"}] * 3}},
            "max_file_bytes": {"message": {**user_message("a"), "parts": [
                {"kind": "file", "file": {"bytes": "QUJDREVGR0hJ"}}]}},
            "max_data_bytes": send_params(data={"x": "y" * 40}),
            "max_id_chars": send_params("a", context_id="c" * 41),
        }
        for limit, params in cases.items():
            error = error_of(await post(client, rpc("message/send", params)))
            assert (error["code"], error["data"]["limit"]) == (-32602, limit), error
        assert (await client.send("ok"))["status"]["state"] == "input-required"


def _doc_agent() -> Any:
    from tests.runtime.helpers import doc_agent

    return doc_agent()


async def test_a_rest_message_over_the_text_limit_is_422() -> None:
    async with rest_server(limits=Limits(max_text_chars=5)) as rest:
        response = await rest.chat("x" * 6)
        assert response.status_code == 422
        assert response.json()["detail"][0]["limit"] == "max_text_chars"


# ---------------------------------------------------------------- finding 4: bodies


async def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    async with serve([_doc_agent()], limits=Limits(max_body_bytes=1000)) as client:
        read = 0

        async def body() -> Any:
            nonlocal read
            for _ in range(100):
                read += 1
                yield b"x" * 1000

        response = await client.http.post("/", content=body(),
                                          headers={"Content-Length": "100000"})
        assert response.json()["error"] == {
            "code": -32600, "message": "Payload too large",
            "data": {"limit": "max_body_bytes", "max": 1000},
        }
        assert response.headers["connection"] == "close"


async def test_a_chunked_body_is_cut_at_the_limit() -> None:
    async with serve([_doc_agent()], limits=Limits(max_body_bytes=1000)) as client:
        sent = 0

        async def body() -> Any:
            nonlocal sent
            for _ in range(1000):
                sent += 1
                yield b"x" * 100

        response = await client.http.post("/", content=body())
        assert response.json()["error"]["message"] == "Payload too large"
        assert sent < 1000  # the server stopped reading at the limit
        for path in ("/hitl/chat", "/hitl/review"):
            response = await client.http.post(path, content=body())
            assert response.status_code == 413
            assert response.json() == {"detail": "Payload too large"}


# ---------------------------------------------------------------- finding 8: the card's url


async def test_the_card_url_never_follows_the_host_header(client: A2AClient) -> None:
    card = (await client.http.get("/.well-known/agent-card.json",
                                  headers={"Host": "evil.example"})).json()
    assert "evil" not in card["url"]
    assert card["url"] == "http://testserver/"


async def test_the_card_url_is_the_public_url_when_given(example_agents: Any) -> None:
    async with serve(example_agents, public_url="https://agents.example/a2a/") as client:
        card = (await client.http.get("/.well-known/agent-card.json",
                                      headers={"Host": "evil.example"})).json()
        assert card["url"] == "https://agents.example/a2a/"


# ---------------------------------------------------------------- finding 9: order of checks


async def test_without_an_id_the_method_is_checked_first(client: A2AClient) -> None:
    body = (await post(client, {"jsonrpc": "2.0", "method": "no/such", "params": {}})).json()
    assert body == {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32601, "message": "Method not found",
                              "data": {"method": "no/such"}}}


async def test_without_an_id_the_params_are_checked_next(client: A2AClient) -> None:
    body = (await post(client, {"jsonrpc": "2.0", "method": "message/send",
                                "params": {"message": 5}})).json()
    assert body["id"] is None
    assert body["error"]["code"] == -32602
    body = (await post(client, {"jsonrpc": "2.0", "method": "tasks/get"})).json()
    assert body["error"]["code"] == -32602


async def test_a_request_valid_but_for_its_id_is_invalid_request(client: A2AClient) -> None:
    for envelope in ({}, {"id": None}, {"id": True}, {"id": 1.5}, {"id": [1]}):
        body = (await post(client, {"jsonrpc": "2.0", "method": "tasks/get",
                                    "params": {"id": "x"}, **envelope})).json()
        assert body["id"] is None
        assert body["error"]["code"] == -32600, envelope


async def test_an_error_with_a_usable_id_echoes_it(client: A2AClient) -> None:
    body = (await post(client, {"jsonrpc": "2.0", "id": "a", "method": "x"})).json()
    assert (body["id"], body["error"]["code"]) == ("a", -32601)
    body = (await post(client, {"jsonrpc": "1.0", "id": 7, "method": "tasks/get"})).json()
    assert (body["id"], body["error"]["code"]) == (7, -32600)


# ---------------------------------------------------------------- no plain-text 500


async def test_an_unexpected_error_is_a_json_rpc_internal_error(
    client: A2AClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = client.manager

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(manager, "thread_values", broken)
    monkeypatch.setattr(type(manager), "get_task", broken)
    body = (await post(client, rpc("tasks/get", {"id": "x"}))).json()
    assert body == {"jsonrpc": "2.0", "id": 1,
                    "error": {"code": -32603, "message": "Internal error"}}
    response = await client.http.post("/hitl/chat", json={"message": "hi"})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"detail": "Internal server error"}


# ---------------------------------------------------------------- one bad row


def _on_postgres(db: str) -> bool:
    return db.startswith("postgresql")


def _write_row(db: str, task_id: str, context_id: str, state: str, task: bytes) -> None:
    if _on_postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as pg:  # ``created`` is an identity there
            pg.execute(
                "INSERT INTO llamon_tasks (id, context_id, agent_id, state, event_seq,"
                " pending_interrupt, reask_count, task, extra)"
                " VALUES (%s, %s, 'document-review', %s, 3, NULL, 0, %s, NULL)",
                (task_id, context_id, state, task),
            )
        return
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO llamon_tasks (id, context_id, agent_id, state, event_seq,"
            " pending_interrupt, reask_count, task, extra, created)"
            " VALUES (?, ?, 'document-review', ?, 3, NULL, 0, ?, NULL, 99)",
            (task_id, context_id, state, task),
        )
    conn.close()


async def test_an_undecodable_task_is_an_error_for_that_task_only(
    example_agents: Any, tmp_path: Path
) -> None:
    db = durable_db(tmp_path, "bad.sqlite3")
    async with serve(example_agents, db=db) as client:
        good = await client.send("hi", agent_id="document-review")
    deep = b'{"x":' * 300 + b"1" + b"}" * 300
    _write_row(db, "bad-running", "ctx-a", "working", deep)
    _write_row(db, "bad-waiting", "ctx-b", "input-required", b"not json")
    async with serve(example_agents, db=db) as client:  # the server starts
        for task_id in ("bad-waiting",):
            body = await client.call("tasks/get", {"id": task_id})
            assert body["error"]["code"] == -32603
            assert body["error"]["data"] == {"taskId": task_id,
                                             "reason": "unreadable stored task"}
        recovered = await client.result("tasks/get", {"id": "bad-running"})
        assert recovered["status"]["state"] == "failed"
        assert "could not resume" in recovered["status"]["message"]["parts"][0]["text"]
        assert (await client.result("tasks/get", {"id": good["id"]}))["id"] == good["id"]
        fresh = await client.send("hi", agent_id="document-review")
        assert fresh["status"]["state"] == "input-required"


async def test_an_undecodable_checkpoint_does_not_stop_the_server(
    example_agents: Any, tmp_path: Path
) -> None:
    db = durable_db(tmp_path, "bad.sqlite3")
    async with serve_loan(db=db) as loan:
        task, _ = await loan.to_review()
    if _on_postgres(db):  # LangGraph's saver keeps the channel values in blobs there
        import psycopg

        with psycopg.connect(db, autocommit=True) as pg:
            corrupted = pg.execute(
                "UPDATE checkpoint_blobs SET blob = '\\xc1c1c1' WHERE thread_id = %s"
                " AND type = 'msgpack'", (task["contextId"],)).rowcount
        assert corrupted > 0
    else:
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE checkpoints SET checkpoint = X'C1C1C1' WHERE thread_id = ?",
                         (task["contextId"],))
        conn.close()
    async with serve_loan(db=db) as loan:  # startup recovery finishes
        recovered = await loan.get(task["id"])
        assert recovered["status"]["state"] == "failed"
        other, _ = await loan.to_review()
        assert other["status"]["state"] == "working"


async def test_unknown_paths_and_methods_are_answered_in_json(client: A2AClient) -> None:
    response = await client.http.get("/no/such/path")
    assert (response.status_code, response.json()) == (404, {"detail": "Not Found"})
    response = await client.http.delete("/")  # GET / is the landing page, POST / JSON-RPC
    assert (response.status_code, response.json()) == (405, {"detail": "Method Not Allowed"})
    assert response.headers["allow"] == "GET, HEAD, POST"
