"""Black-box tests of the JSON-RPC 2.0 envelope, every error code and the non-streaming methods.

Wire contract: docs/wire.md (sections 1, 2, 5, 6, 7, 12, 13); schema in tests/spec/.
Every error body is validated against ``JSONRPCErrorResponse`` and every success against the
matching ``*SuccessResponse`` definition of the official v0.3 JSON Schema.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from llamon_agent import Agent, Limits
from tests.conftest import A2AClient, assert_valid, rpc, send_params, serve, user_message

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."
NOTES_QUESTION = "What should I note? Say 'done' when you are finished."
OUTPUT_MODES = ["text/plain", "application/json"]


# ---------------------------------------------------------------------------- helpers


async def post_raw(
    client: A2AClient, content: bytes, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """POST raw bytes; every JSON-RPC answer (errors included) is HTTP 200 application/json."""
    response = await client.http.post(
        "/", content=content, headers={"content-type": "application/json", **(headers or {})}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def assert_error(
    body: dict[str, Any], code: int, request_id: str | int | None, *, message: str | None = None
) -> dict[str, Any]:
    """Exact JSON-RPC error envelope; returns the error object."""
    assert_valid("JSONRPCErrorResponse", body)
    assert set(body) == {"jsonrpc", "id", "error"}, body
    assert body["jsonrpc"] == "2.0"
    if request_id is None:
        assert body["id"] is None, body
    else:
        assert type(body["id"]) is type(request_id)
        assert body["id"] == request_id
    error = body["error"]
    assert set(error) <= {"code", "message", "data"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str)
    assert error["message"]
    if message is not None:
        assert error["message"] == message
    return error


def assert_success(body: dict[str, Any], definition: str, request_id: str | int) -> dict[str, Any]:
    assert_valid(definition, body)
    assert set(body) == {"jsonrpc", "id", "result"}, body
    assert body["jsonrpc"] == "2.0"
    assert type(body["id"]) is type(request_id)
    assert body["id"] == request_id
    return body["result"]


def text_part(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def assert_document_question(task: dict[str, Any]) -> None:
    """The document-review agent's first question, exactly as it goes on the wire."""
    assert task["status"]["state"] == "input-required"
    question = task["status"]["message"]
    assert question["kind"] == "message"
    assert question["role"] == "agent"
    assert question["taskId"] == task["id"]
    assert question["contextId"] == task["contextId"]
    assert question["parts"][0] == text_part(DOC_QUESTION)
    hitl = question["parts"][1]
    assert hitl["kind"] == "data"
    assert hitl["data"]["hitl"]["question"] == DOC_QUESTION
    assert hitl["data"]["hitl"]["options"] == ["passport", "id_card"]
    assert [(c["label"], c["value"]) for c in hitl["data"]["hitl"]["choices"]] == [
        ("여권", "passport"),
        ("주민등록증", "id_card"),
    ]


async def send_ok(
    client: A2AClient, params: dict[str, Any], request_id: str | int = "send"
) -> dict[str, Any]:
    body = await client.call("message/send", params, request_id)
    return assert_success(body, "SendMessageSuccessResponse", request_id)


async def completed_review(client: A2AClient, context_id: str) -> dict[str, Any]:
    first = await send_ok(client, send_params("이 서류를 검증해줘", context_id=context_id))
    await send_ok(client, send_params("여권", context_id=context_id))
    done = await send_ok(client, send_params("1990-01-01", context_id=context_id))
    assert done["id"] == first["id"]
    assert done["status"]["state"] == "completed"
    return done


async def parked_review(client: A2AClient, context_id: str | None = None) -> dict[str, Any]:
    task = await send_ok(
        client, send_params("이 서류를 검증해줘", context_id=context_id or new_context())
    )
    assert_document_question(task)
    return task


def new_context() -> str:
    return f"ctx-{uuid.uuid4()}"


# ---------------------------------------------------------------------------- envelope


async def test_parse_error_is_exact_with_null_id(client: A2AClient) -> None:
    body = await post_raw(client, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert_valid("JSONRPCErrorResponse", body)
    assert body == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Invalid JSON payload"},
    }


@pytest.mark.parametrize(
    "content",
    [b"", b"\xff\xfe{}", b"{'id': 1}", b"not json"],
    ids=["empty", "bad-utf8", "single-quotes", "text"],
)
async def test_unparsable_bodies_are_parse_errors(client: A2AClient, content: bytes) -> None:
    assert_error(await post_raw(client, content), -32700, None)


async def test_batch_is_rejected_with_one_invalid_request(client: A2AClient) -> None:
    batch = [rpc("tasks/get", {"id": "a"}, 1), rpc("tasks/get", {"id": "b"}, 2)]
    body = await post_raw(client, json.dumps(batch).encode())
    assert isinstance(body, dict)  # one error object, not an array of responses
    assert_error(body, -32600, None)


@pytest.mark.parametrize("content", [b'"x"', b"42", b"null", b"true"])
async def test_non_object_body_is_invalid_request(client: A2AClient, content: bytes) -> None:
    assert_error(await post_raw(client, content), -32600, None)


async def test_request_without_id_is_invalid_request_with_null_id(client: A2AClient) -> None:
    request = {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "x"}}
    assert_error(await post_raw(client, json.dumps(request).encode()), -32600, None)


async def test_request_with_null_id_is_invalid_request(client: A2AClient) -> None:
    request = {"jsonrpc": "2.0", "id": None, "method": "tasks/get", "params": {"id": "x"}}
    assert_error(await post_raw(client, json.dumps(request).encode()), -32600, None)


@pytest.mark.parametrize(
    "bad_id", [1.5, True, {"n": 1}, [1]], ids=["float", "bool", "object", "array"]
)
async def test_bad_id_type_is_invalid_request_with_null_id(client: A2AClient, bad_id: Any) -> None:
    request = {"jsonrpc": "2.0", "id": bad_id, "method": "tasks/get", "params": {"id": "x"}}
    assert_error(await post_raw(client, json.dumps(request).encode()), -32600, None)


@pytest.mark.parametrize(
    "version", ["1.0", "2", 2.0, None], ids=["1.0", "'2'", "2.0-number", "null"]
)
async def test_wrong_jsonrpc_version_is_invalid_request_with_id(
    client: A2AClient, version: Any
) -> None:
    request = {"jsonrpc": version, "id": "v1", "method": "tasks/get", "params": {"id": "x"}}
    assert_error(await post_raw(client, json.dumps(request).encode()), -32600, "v1")


async def test_missing_jsonrpc_member_is_invalid_request_with_id(client: A2AClient) -> None:
    request = {"id": 17, "method": "tasks/get", "params": {"id": "x"}}
    assert_error(await post_raw(client, json.dumps(request).encode()), -32600, 17)


@pytest.mark.parametrize("method", [None, 5, ["message/send"]], ids=["missing", "int", "array"])
async def test_method_not_a_string_is_invalid_request_with_id(
    client: A2AClient, method: Any
) -> None:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": "m1", "params": {"id": "x"}}
    if method is not None:
        request["method"] = method
    assert_error(await post_raw(client, json.dumps(request).encode()), -32600, "m1")


@pytest.mark.parametrize(
    "method", ["tasks/list", "no/such-method", "sendMessage", "Get_Task", "message/Send", ""]
)
async def test_unknown_methods_are_method_not_found(client: A2AClient, method: str) -> None:
    assert_error(await client.call(method, {"id": "x"}, 31), -32601, 31)


@pytest.mark.parametrize("request_id", ["req-abc", 0, 7, -3, "", "ünïcode-id"])
async def test_request_id_is_echoed_with_its_type(client: A2AClient, request_id: str | int) -> None:
    body = await client.call(
        "message/send", send_params("hi", context_id=new_context()), request_id
    )
    assert_success(body, "SendMessageSuccessResponse", request_id)
    error_body = await client.call("tasks/get", {"id": "missing"}, request_id)
    assert_error(error_body, -32001, request_id)


@pytest.mark.parametrize("version", ["0.3", "", "0.3.0", " 0.3 "])
async def test_a2a_version_header_naming_0_3_is_served(client: A2AClient, version: str) -> None:
    request = rpc("message/send", send_params("hi", context_id=new_context()), "h1")
    body = await post_raw(client, json.dumps(request).encode(), {"A2A-Version": version})
    task = assert_success(body, "SendMessageSuccessResponse", "h1")
    assert_document_question(task)


async def test_a_v0_3_method_in_a_request_naming_1_0_is_version_not_supported(
    client: A2AClient,
) -> None:
    """As the official SDK: the header names the version, and message/send is not v1.0's."""
    request = rpc("message/send", send_params("hi", context_id=new_context()), "h2")
    body = await post_raw(client, json.dumps(request).encode(), {"A2A-Version": "1.0"})
    assert body["id"] == "h2"
    assert body["error"]["code"] == -32009
    assert body["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"


async def test_content_type_with_charset_is_accepted(client: A2AClient) -> None:
    request = rpc("message/send", send_params("hi", context_id=new_context()), 3)
    response = await client.http.post(
        "/",
        content=json.dumps(request, ensure_ascii=False).encode(),
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200
    assert_document_question(assert_success(response.json(), "SendMessageSuccessResponse", 3))


async def test_payload_too_large(example_agents: list[Agent]) -> None:
    async with serve(example_agents, limits=Limits(max_body_bytes=2048)) as client:
        small = await client.call("message/send", send_params("hi"), "small")
        assert_success(small, "SendMessageSuccessResponse", "small")
        body = await client.call("message/send", send_params("x" * 4096), "big")
        assert_error(body, -32600, None, message="Payload too large")
        # the same limit applies to streaming requests, answered as plain JSON
        big_stream = rpc("message/stream", send_params("x" * 4096), "big-stream")
        body = await post_raw(client, json.dumps(big_stream).encode())
        assert_error(body, -32600, None, message="Payload too large")


# ---------------------------------------------------------------------------- -32602


@pytest.mark.parametrize(
    "params",
    [None, [], "x", 3, [{"id": "x"}]],
    ids=["missing", "empty-array", "string", "number", "array"],
)
@pytest.mark.parametrize("method", ["message/send", "tasks/get", "tasks/cancel"])
async def test_params_not_an_object_is_invalid_params(
    client: A2AClient, method: str, params: Any
) -> None:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": "p1", "method": method}
    if params is not None:
        request["params"] = params
    assert_error(await post_raw(client, json.dumps(request).encode()), -32602, "p1")


def _with_parts(parts: list[Any]) -> dict[str, Any]:
    message = user_message("unused")
    message["parts"] = parts
    return {"message": message}


BAD_MESSAGES: dict[str, dict[str, Any]] = {
    "empty-parts": _with_parts([]),
    "part-without-kind": _with_parts([{"text": "hi"}]),
    "part-with-type-not-kind": _with_parts([{"type": "text", "text": "hi"}]),
    "unknown-part-kind": _with_parts([{"kind": "image", "text": "hi"}]),
    "text-part-without-text": _with_parts([{"kind": "text"}]),
    "data-part-not-object": _with_parts([{"kind": "data", "data": "x"}]),
    "file-with-bytes-and-uri": _with_parts(
        [{"kind": "file", "file": {"bytes": "aGk=", "uri": "https://example.com/a"}}]
    ),
    "file-without-source": _with_parts([{"kind": "file", "file": {"name": "a.txt"}}]),
    "parts-not-a-list": _with_parts({"kind": "text", "text": "hi"}),  # type: ignore[arg-type]
    "no-message": {},
    "message-kind-task": {"message": {**user_message("hi"), "kind": "task"}},
    "empty-message-id": {"message": {**user_message("hi"), "messageId": ""}},
    "no-message-id": {"message": {k: v for k, v in user_message("hi").items() if k != "messageId"}},
    "no-role": {"message": {k: v for k, v in user_message("hi").items() if k != "role"}},
    "unknown-role": {"message": {**user_message("hi"), "role": "system"}},
    "history-length-negative": {**send_params("hi"), "configuration": {"historyLength": -1}},
    "history-length-float": {**send_params("hi"), "configuration": {"historyLength": 1.5}},
    "history-length-string": {**send_params("hi"), "configuration": {"historyLength": "2"}},
}


@pytest.mark.parametrize("params", list(BAD_MESSAGES.values()), ids=list(BAD_MESSAGES))
async def test_invalid_message_params_carry_validation_errors(
    client: A2AClient, params: dict[str, Any]
) -> None:
    error = assert_error(await client.call("message/send", params, "bad"), -32602, "bad")
    errors = error["data"]["errors"]
    assert isinstance(errors, list)
    assert errors


@pytest.mark.parametrize("history_length", [-1, 1.5, "2", True], ids=["-1", "1.5", "'2'", "true"])
async def test_tasks_get_bad_history_length(client: A2AClient, history_length: Any) -> None:
    task = await parked_review(client)
    body = await client.call("tasks/get", {"id": task["id"], "historyLength": history_length}, 9)
    error = assert_error(body, -32602, 9)
    assert error["data"]["errors"]


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
async def test_task_params_without_id_are_invalid(client: A2AClient, method: str) -> None:
    error = assert_error(await client.call(method, {"taskId": "x"}, 4), -32602, 4)
    assert error["data"]["errors"]


async def test_message_without_kind_is_a_message(client: A2AClient) -> None:
    message = user_message("이 서류를 검증해줘", context_id=new_context())
    del message["kind"]
    assert_document_question(await send_ok(client, {"message": message}))


async def test_agent_role_is_invalid_params(client: A2AClient) -> None:
    message = {**user_message("hi"), "role": "agent"}
    assert_error(await client.call("message/send", {"message": message}, 5), -32602, 5)


async def test_unknown_agent_id_is_invalid_params(client: A2AClient) -> None:
    body = await client.call("message/send", send_params("hi", agent_id="no-such-agent"), 6)
    assert_error(body, -32602, 6)


async def test_task_id_of_another_context_is_invalid_params(client: A2AClient) -> None:
    task = await parked_review(client)
    params = send_params("여권", task_id=task["id"], context_id=new_context())
    assert_error(await client.call("message/send", params, 8), -32602, 8)
    # the task was left untouched
    again = await client.result("tasks/get", {"id": task["id"]})
    assert again == task


# ---------------------------------------------------------------------------- A2A codes


async def test_unknown_task_id_in_message_is_task_not_found(client: A2AClient) -> None:
    body = await client.call("message/send", send_params("hi", task_id="no-such-task"), 10)
    error = assert_error(body, -32001, 10)
    assert error["data"]["taskId"] == "no-such-task"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
async def test_unknown_task_is_task_not_found(client: A2AClient, method: str) -> None:
    body = await client.call(method, {"id": "nope"}, 7)
    assert_valid("JSONRPCErrorResponse", body)
    assert body == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32001, "message": "Task not found", "data": {"taskId": "nope"}},
    }


async def test_message_to_terminal_task_is_unsupported_operation(client: A2AClient) -> None:
    context_id = new_context()
    done = await completed_review(client, context_id)
    for request_id, params in [
        ("by-task", send_params("again", task_id=done["id"])),
        ("by-both", send_params("again", task_id=done["id"], context_id=context_id)),
    ]:
        body = await client.call("message/send", params, request_id)
        error = assert_error(body, -32004, request_id)
        assert error["data"]["reason"] == "task is in a terminal state"
        assert error["data"]["taskId"] == done["id"]
        assert error["data"]["state"] == "completed"
    # nothing changed on the task
    assert await client.result("tasks/get", {"id": done["id"]}) == done


async def test_cancel_of_terminal_task_is_not_cancelable(client: A2AClient) -> None:
    done = await completed_review(client, new_context())
    error = assert_error(await client.call("tasks/cancel", {"id": done["id"]}, 11), -32002, 11)
    assert error["data"]["taskId"] == done["id"]
    assert (await client.result("tasks/get", {"id": done["id"]}))["status"]["state"] == "completed"


# push notifications are on (tests/push has the whole contract); a webhook on a private
# address is refused unless the server allows private targets
PUSH_CALLS = {
    "tasks/pushNotificationConfig/set": {
        "taskId": "t1",
        "pushNotificationConfig": {"url": "http://10.0.0.1/hook"},
    },
    "tasks/pushNotificationConfig/get": {"id": "t1"},
    "tasks/pushNotificationConfig/list": {"id": "t1"},
    "tasks/pushNotificationConfig/delete": {"id": "t1", "pushNotificationConfigId": "c1"},
}
PUSH_ANSWERS: dict[str, Any] = {
    "tasks/pushNotificationConfig/set": {"code": -32602, "reason": "webhook refused: private address"},
    "tasks/pushNotificationConfig/get": {"code": -32602, "reason": "unknown push notification config"},
    "tasks/pushNotificationConfig/list": [],
    "tasks/pushNotificationConfig/delete": None,
}


@pytest.mark.parametrize("method", list(PUSH_CALLS))
async def test_push_notification_methods_answer_for_an_existing_task(
    client: A2AClient, method: str
) -> None:
    task = await parked_review(client)
    params = json.loads(json.dumps(PUSH_CALLS[method]).replace('"t1"', json.dumps(task["id"])))
    body = await client.call(method, params, "push")
    expected = PUSH_ANSWERS[method]
    if isinstance(expected, dict):
        error = assert_error(body, expected["code"], "push")
        assert error["data"]["reason"] == expected["reason"]
    else:
        assert body["result"] == expected


async def test_a_refused_push_config_in_send_configuration_starts_nothing(
    client: A2AClient,
) -> None:
    context_id = new_context()
    params = send_params(
        "hi",
        context_id=context_id,
        configuration={"pushNotificationConfig": {"url": "http://10.0.0.1/hook", "token": "t"}},
    )
    assert_error(await client.call("message/send", params, 12), -32602, 12)
    # rejected before anything ran: the context is still free and has no task
    assert_document_question(await send_ok(client, send_params("hi", context_id=context_id)))


@pytest.mark.parametrize("params", [None, {}], ids=["no-params", "empty-params"])
async def test_authenticated_extended_card_is_not_configured(
    client: A2AClient, params: Any
) -> None:
    request: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 13,
        "method": "agent/getAuthenticatedExtendedCard",
    }
    if params is not None:
        request["params"] = params
    assert_error(await post_raw(client, json.dumps(request).encode()), -32007, 13)


@pytest.mark.parametrize("modes", [["image/png"], ["text/html", "application/xml"]])
async def test_incompatible_accepted_output_modes(client: A2AClient, modes: list[str]) -> None:
    params = send_params("hi", configuration={"acceptedOutputModes": modes})
    assert_error(await client.call("message/send", params, 14), -32005, 14)


@pytest.mark.parametrize(
    "modes", [[], ["text/plain"], ["application/json"], ["image/png", "application/json"]]
)
async def test_compatible_accepted_output_modes(client: A2AClient, modes: list[str]) -> None:
    params = send_params(
        "hi",
        context_id=new_context(),
        configuration={"acceptedOutputModes": modes, "blocking": True},
    )
    assert_document_question(await send_ok(client, params))


# ---------------------------------------------------------------------------- message/send


async def test_new_task_wire_shape(client: A2AClient) -> None:
    params = send_params("이 서류를 검증해줘", context_id="case-wire", agent_id="document-review")
    sent = params["message"]
    task = await send_ok(client, params, "req-003")
    assert set(task) == {"kind", "id", "contextId", "status", "history"}
    assert task["kind"] == "task"
    assert task["contextId"] == "case-wire"
    assert isinstance(task["id"], str)
    assert task["id"]
    assert task["id"] != sent["messageId"]
    assert isinstance(task["status"]["timestamp"], str)
    assert_document_question(task)
    assert task["history"] == [{**sent, "taskId": task["id"], "contextId": "case-wire"}]


async def test_server_generates_context_when_absent(client: A2AClient) -> None:
    first = await send_ok(client, send_params("hi"))
    second = await send_ok(client, send_params("hi"))
    assert first["contextId"]
    assert second["contextId"]
    assert first["contextId"] != second["contextId"]
    assert first["id"] != second["id"]


async def test_full_hitl_conversation_over_send(client: A2AClient) -> None:
    context_id = new_context()
    first = await send_ok(client, send_params("이 서류를 검증해줘", context_id=context_id))
    assert_document_question(first)

    # the llamon form: contextId only resumes the waiting task
    second = await send_ok(client, send_params("여권", context_id=context_id))
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "input-required"
    assert second["status"]["message"]["role"] == "agent"
    assert second["status"]["message"]["parts"][0] == text_part(BIRTHDAY_QUESTION)

    # the spec form: taskId (and no contextId) resumes too
    third = await send_ok(client, send_params("1990-01-01", task_id=first["id"]))
    assert third["id"] == first["id"]
    assert third["contextId"] == context_id
    assert third["status"]["state"] == "completed"
    assert len(third["artifacts"]) == 1
    artifact = third["artifacts"][0]
    assert artifact["parts"][0] == {
        "kind": "data",
        "data": {"doc_type": "passport", "birthday": "1990-01-01"},
    }
    assert artifact["parts"][1]["kind"] == "text"
    assert "passport" in artifact["parts"][1]["text"]
    assert [(m["role"], m["parts"][0]["text"]) for m in third["history"]] == [
        ("user", "이 서류를 검증해줘"),
        ("agent", DOC_QUESTION),
        ("user", "여권"),
        ("agent", BIRTHDAY_QUESTION),
        ("user", "1990-01-01"),
    ]
    assert all(
        m["taskId"] == first["id"] and m["contextId"] == context_id for m in third["history"]
    )
    # the agent messages in history are the questions that were asked
    assert third["history"][1] == first["status"]["message"]
    assert third["history"][3] == second["status"]["message"]


async def test_option_value_answer_and_data_part_answer(client: A2AClient) -> None:
    context_id = new_context()
    task = await parked_review(client, context_id)
    # the option value instead of its label, then a {"value": ...} data part
    await send_ok(client, send_params("id_card", task_id=task["id"]))
    done = await send_ok(client, send_params(data={"value": "2001-02-03"}, context_id=context_id))
    assert done["id"] == task["id"]
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["data"] == {
        "doc_type": "id_card",
        "birthday": "2001-02-03",
    }


async def test_different_context_never_resumes(client: A2AClient) -> None:
    waiting = await parked_review(client)
    other = await send_ok(client, send_params("여권", context_id=new_context()))
    assert other["id"] != waiting["id"]
    assert other["contextId"] != waiting["contextId"]
    assert_document_question(other)  # a fresh review asks the first question again
    assert await client.result("tasks/get", {"id": waiting["id"]}) == waiting


async def test_agent_selected_by_metadata(client: A2AClient) -> None:
    context_id = new_context()
    first = await send_ok(
        client, send_params("take notes", context_id=context_id, agent_id="until-done")
    )
    assert first["status"]["state"] == "input-required"
    assert first["status"]["message"]["parts"][0] == text_part(NOTES_QUESTION)
    second = await send_ok(client, send_params("milk", context_id=context_id))
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "input-required"
    done = await send_ok(client, send_params("done", context_id=context_id))
    assert done["id"] == first["id"]
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0] == {"kind": "data", "data": {"notes": ["milk"]}}


async def test_new_task_after_completion_on_same_context(client: A2AClient) -> None:
    context_id = new_context()
    done = await completed_review(client, context_id)
    fresh = await send_ok(client, send_params("again", context_id=context_id))
    assert fresh["id"] != done["id"]
    assert fresh["contextId"] == context_id
    assert_document_question(fresh)
    assert fresh["history"] == [{**fresh["history"][0], "parts": [text_part("again")]}]
    assert "artifacts" not in fresh  # nothing of the previous task leaks into the new one


# ---------------------------------------------------------------------------- tasks/get


async def test_tasks_get_returns_the_stored_task(client: A2AClient) -> None:
    task = await parked_review(client)
    body = await client.call("tasks/get", {"id": task["id"]}, "get-1")
    assert assert_success(body, "GetTaskSuccessResponse", "get-1") == task


async def test_tasks_get_history_length(client: A2AClient) -> None:
    context_id = new_context()
    task = await parked_review(client, context_id)
    await send_ok(client, send_params("여권", context_id=context_id))

    async def get(**extra: Any) -> dict[str, Any]:
        body = await client.call("tasks/get", {"id": task["id"], **extra}, "hl")
        return assert_success(body, "GetTaskSuccessResponse", "hl")

    full = await get()
    assert [m["role"] for m in full["history"]] == ["user", "agent", "user"]
    assert (await get(historyLength=1))["history"] == full["history"][-1:]
    assert (await get(historyLength=2))["history"] == full["history"][-2:]
    assert (await get(historyLength=3))["history"] == full["history"]
    assert (await get(historyLength=50))["history"] == full["history"]
    none = await get(historyLength=0)
    assert "history" not in none
    assert none == {k: v for k, v in full.items() if k != "history"}
    # truncation is applied to the response copy only
    assert await get() == full


async def test_message_send_history_length(client: A2AClient) -> None:
    context_id = new_context()
    first = await send_ok(
        client,
        send_params(
            "이 서류를 검증해줘", context_id=context_id, configuration={"historyLength": 0}
        ),
    )
    assert "history" not in first
    assert first["status"]["state"] == "input-required"
    second = await send_ok(
        client, send_params("여권", context_id=context_id, configuration={"historyLength": 1})
    )
    assert [m["parts"] for m in second["history"]] == [[text_part("여권")]]
    stored = await client.result("tasks/get", {"id": first["id"]})
    assert [m["role"] for m in stored["history"]] == ["user", "agent", "user"]
    assert stored["history"][-1] == second["history"][0]


# ---------------------------------------------------------------------------- tasks/cancel


async def test_cancel_parked_task_then_new_task_starts_over(client: A2AClient) -> None:
    context_id = new_context()
    task = await parked_review(client, context_id)
    await send_ok(client, send_params("여권", context_id=context_id))  # first answer given

    body = await client.call("tasks/cancel", {"id": task["id"]}, "cancel-1")
    canceled = assert_success(body, "CancelTaskSuccessResponse", "cancel-1")
    assert canceled["kind"] == "task"
    assert canceled["id"] == task["id"]
    assert canceled["contextId"] == context_id
    assert canceled["status"]["state"] == "canceled"
    assert len(canceled["history"]) == 3
    assert await client.result("tasks/get", {"id": task["id"]}) == canceled

    again = await client.call("tasks/cancel", {"id": task["id"]}, "cancel-2")
    assert_error(again, -32002, "cancel-2")
    terminal = await client.call("message/send", send_params("x", task_id=task["id"]), "t")
    assert assert_error(terminal, -32004, "t")["data"]["reason"] == "task is in a terminal state"

    # a message on the same context starts a NEW task, and the review starts from the beginning
    fresh = await send_ok(client, send_params("주민등록증", context_id=context_id))
    assert fresh["id"] != task["id"]
    assert fresh["contextId"] == context_id
    assert_document_question(fresh)
    second = await send_ok(client, send_params("주민등록증", context_id=context_id))
    assert second["id"] == fresh["id"]
    assert second["status"]["message"]["parts"][0] == text_part(BIRTHDAY_QUESTION)
    done = await send_ok(client, send_params("2000-12-31", context_id=context_id))
    assert done["id"] == fresh["id"]
    assert done["artifacts"][0]["parts"][0]["data"] == {
        "doc_type": "id_card",
        "birthday": "2000-12-31",
    }
    assert (await client.result("tasks/get", {"id": task["id"]}))["status"]["state"] == "canceled"


# ---------------------------------------------------------------------------- agent card


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/.well-known/agent.json"])
async def test_agent_card(client: A2AClient, path: str) -> None:
    response = await client.http.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    card = response.json()
    assert_valid("AgentCard", card)
    assert card["protocolVersion"] == "0.3.0"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["url"] == "http://testserver/"
    assert card["capabilities"]["streaming"] is True
    assert card["capabilities"]["pushNotifications"] is True
    assert card.get("supportsAuthenticatedExtendedCard", False) is False
    assert set(card["defaultOutputModes"]) <= set(OUTPUT_MODES)
    assert card["defaultOutputModes"]
    assert [s["id"] for s in card["skills"]] == [
        "document-review", "until-done", "email-assistant", "loan", "risk", "finalize"
    ]


async def test_both_card_paths_serve_the_same_card(client: A2AClient) -> None:
    primary = await client.http.get("/.well-known/agent-card.json")
    legacy = await client.http.get("/.well-known/agent.json")
    # a client naming another version than 0.3 and 1.0 gets the card every client reads
    unknown = await client.http.get(
        "/.well-known/agent-card.json", headers={"A2A-Version": "7.1"}
    )
    assert primary.json() == legacy.json() == unknown.json()
    assert primary.headers["vary"] == "A2A-Version"


async def test_agent_card_matches_reality(client: A2AClient) -> None:
    card = (await client.http.get("/.well-known/agent-card.json")).json()
    # url: the JSON-RPC endpoint really is there
    body = (
        await client.http.post(
            card["url"],
            json=rpc("message/send", send_params("hi", context_id=new_context()), "card"),
        )
    ).json()
    assert_document_question(assert_success(body, "SendMessageSuccessResponse", "card"))
    # streaming: true -> message/stream answers with an event stream
    async with client.http.stream(
        "POST",
        card["url"],
        json=rpc("message/stream", send_params("hi", context_id=new_context()), "s"),
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        await response.aread()
    # pushNotifications: true -> push methods answer (an unknown task: -32001)
    push = await client.call("tasks/pushNotificationConfig/list", {"id": "x"}, "p")
    assert_error(push, -32001, "p")
    # supportsAuthenticatedExtendedCard false/absent -> -32007
    ext = await post_raw(
        client,
        json.dumps(
            {"jsonrpc": "2.0", "id": "e", "method": "agent/getAuthenticatedExtendedCard"}
        ).encode(),
    )
    assert_error(ext, -32007, "e")
    # every default output mode is accepted as acceptedOutputModes
    for mode in card["defaultOutputModes"]:
        params = send_params(
            "hi", context_id=new_context(), configuration={"acceptedOutputModes": [mode]}
        )
        assert_document_question(await send_ok(client, params))


async def test_agent_card_public_url(example_agents: list[Agent]) -> None:
    url = "https://agent.example.com/a2a"
    async with serve(example_agents, public_url=url) as client:
        for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"]:
            card = (await client.http.get(path)).json()
            assert_valid("AgentCard", card)
            assert card["url"] == url


async def test_agent_card_url_follows_request_origin(client: A2AClient) -> None:
    response = await client.http.get("https://other.example:8443/.well-known/agent-card.json")
    card = response.json()
    assert_valid("AgentCard", card)
    assert card["url"] == "https://other.example:8443/"
