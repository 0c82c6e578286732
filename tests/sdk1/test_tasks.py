"""The 1.x client's task methods in native v1.0 mode: GetTask, ListTasks, CancelTask,
SubscribeToTask, and the errors the client maps from the server's codes."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.process.conftest import Server
from tests.sdk1.client import Sdk1Client, data, sdk1_client, text, user_message
from tests.sdk1.flows import (
    BIRTHDAY_QUESTION,
    COMPLETED,
    DOC_HITL,
    DOC_QUESTION,
    DOC_REQUEST,
    INPUT_REQUIRED,
    assert_chosen,
    context,
    question,
)
from tests.sdk1.harness import Driver
from tests.sdk1.wire import assert_v1_error, assert_v1_exchange
from tests.tool_review.helpers import TWO_REQUEST


def _ask(client: Sdk1Client, context_id: str | None = None) -> dict[str, Any]:
    task = client.send(user_message(text(DOC_REQUEST), context_id=context_id)).done
    assert question(task)[0] == DOC_QUESTION
    return task


def _complete(client: Sdk1Client, task: dict[str, Any]) -> dict[str, Any]:
    ids = {"context_id": task["contextId"], "task_id": task["id"]}
    assert question(client.send(user_message(text("여권"), **ids)).done)[0] == BIRTHDAY_QUESTION
    done = client.send(user_message(text("1990-01-01"), **ids)).done
    assert done["status"]["state"] == COMPLETED
    return done


def _only_call(wire: list[Any], method: str) -> None:
    (exchange,) = [e for e in wire if e.rpc_method is not None]
    assert exchange.rpc_method == method
    assert_v1_exchange(exchange)


def test_list_tasks_of_a_context(driver: Driver, server: Server) -> None:
    context_id = context("list")
    with sdk1_client(driver, server.url, streaming=False) as (client, connected):
        assert_chosen(connected, "native")
        first = _complete(client, _ask(client, context_id))
        second = _ask(client, context_id)
        _ask(client)  # another context: not listed

        listed = client.list_tasks(contextId=context_id)
        body = listed.ok()
        _only_call(listed.wire, "ListTasks")
        # most recently updated first
        assert [t["id"] for t in body["tasks"]] == [second["id"], first["id"]]
        assert [t["status"]["state"] for t in body["tasks"]] == [INPUT_REQUIRED, COMPLETED]

        page = client.list_tasks(contextId=context_id, pageSize=1).ok()
        assert [t["id"] for t in page["tasks"]] == [second["id"]]
        assert page["nextPageToken"]
        rest = client.list_tasks(contextId=context_id, pageSize=1,
                                 pageToken=page["nextPageToken"]).ok()
        assert [t["id"] for t in rest["tasks"]] == [first["id"]]
        assert not rest.get("nextPageToken")


def test_cancel_a_waiting_task_then_not_again(driver: Driver, server: Server) -> None:
    with sdk1_client(driver, server.url, streaming=False) as (client, _):
        task = _ask(client)
        canceled = client.cancel(task["id"])
        assert canceled.ok()["status"]["state"] == "TASK_STATE_CANCELED"
        _only_call(canceled.wire, "CancelTask")
        again = client.cancel(task["id"])
        assert again.error is not None
        assert (again.error.type, again.error.code) == ("TaskNotCancelableError", -32002)
        (exchange,) = [e for e in again.wire if e.rpc_method is not None]
        assert_v1_error(exchange, -32002, "TASK_NOT_CANCELABLE")


def test_subscribe_to_a_waiting_task_gives_its_snapshot(driver: Driver, server: Server) -> None:
    with sdk1_client(driver, server.url, streaming=True) as (client, _):
        task = _ask(client)
        subscribed = client.subscribe(task["id"], timeout=10)
        assert subscribed.error is None, subscribed.error
        assert "task" in subscribed.events[0], subscribed.events
        assert subscribed.events[0]["task"]["id"] == task["id"]
        assert question(subscribed.events[0]["task"]) == (DOC_QUESTION, DOC_HITL)
        _only_call(subscribed.wire, "SubscribeToTask")


def test_errors_keep_their_codes(driver: Driver, server: Server) -> None:
    with sdk1_client(driver, server.url, streaming=True) as (client, _):
        missing = client.get_task(str(uuid.uuid4()))
        assert missing.error is not None
        assert (missing.error.type, missing.error.code) == ("TaskNotFoundError", -32001)
        assert_v1_error(missing.rpc[0], -32001, "TASK_NOT_FOUND")

        done = _complete(client, _ask(client))
        late = client.subscribe(done["id"], timeout=10)
        assert late.error is not None
        assert (late.error.type, late.error.code) == ("UnsupportedOperationError", -32004)
        assert_v1_error(late.rpc[0], -32004, "UNSUPPORTED_OPERATION")

        terminal = client.send(user_message(text("again"), context_id=done["contextId"],
                                            task_id=done["id"]))
        assert terminal.error is not None
        assert (terminal.error.type, terminal.error.code) == ("UnsupportedOperationError", -32004)
        assert_v1_error(terminal.rpc[0], -32004, "UNSUPPORTED_OPERATION")


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_bad_review_answer_is_invalid_params(
    driver: Driver, server: Server, streaming: bool
) -> None:
    context_id = context("bad-review")
    metadata = {"agentId": "email-assistant"}
    headers = {"Accept-Language": "id"}
    with sdk1_client(driver, server.url, streaming=streaming, headers=headers) as (client, conn):
        assert_chosen(conn, "native")
        task = client.send(user_message(text(TWO_REQUEST), context_id=context_id),
                           metadata=metadata).done
        assert task["status"]["state"] == INPUT_REQUIRED
        one = {"decisions": [{"type": "approve"}]}
        refused = client.send(user_message(data(one), context_id=context_id), metadata=metadata)
        assert refused.error is not None
        assert (refused.error.type, refused.error.code, refused.error.message) == (
            "InvalidParamsError", -32602, "Butuh 2 keputusan (satu per aksi), diterima 1")
        (exchange,) = refused.rpc
        assert exchange.rpc_method == ("SendStreamingMessage" if streaming else "SendMessage")
        assert_v1_error(exchange, -32602, "INVALID_PARAMS")
        still = client.get_task(task["id"]).ok()
        assert still["status"]["state"] == INPUT_REQUIRED


def test_return_immediately_then_get_task_until_it_asks(driver: Driver, server: Server) -> None:
    with sdk1_client(driver, server.url, streaming=False) as (client, _):
        sent = client.send(user_message(text(DOC_REQUEST)),
                           configuration={"returnImmediately": True})
        task = sent.done
        assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        (exchange,) = sent.rpc
        assert exchange.request["params"]["configuration"]["returnImmediately"] is True
        assert_v1_exchange(exchange, streaming=False)
        deadline = time.monotonic() + 10
        while (task := client.get_task(task["id"]).ok())["status"]["state"] != INPUT_REQUIRED:
            assert time.monotonic() < deadline, task["status"]
            time.sleep(0.05)
        assert question(task) == (DOC_QUESTION, DOC_HITL)
