"""``tasks/pushNotificationConfig/set|get|list|delete`` and ``configuration.pushNotificationConfig``
on the wire: exact shapes, checked against the official v0.3 schema (docs/wire.md §10)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from llamon_agent.core.bounds import Limits
from tests.conftest import A2AClient, assert_valid, send_params
from tests.e2e.test_protocol import assert_error, assert_success

from .helpers import config, push_server, set_config, start_order

HOOK = "http://127.0.0.1:9/hook"
BEARER = {"schemes": ["Bearer"], "credentials": "s3cret"}


async def test_the_card_says_push_notifications_are_supported() -> None:
    async with push_server() as harness:
        card = (await harness.http.get("/.well-known/agent-card.json")).json()
    assert_valid("AgentCard", card)
    assert card["capabilities"]["pushNotifications"] is True


async def test_set_returns_the_config_as_stored_with_the_clients_id_or_one_it_assigns() -> None:
    async with push_server() as harness:
        task = await start_order(harness.client)
        mine = config(HOOK, id="mine", token="tok-1", authentication=BEARER)
        assert await set_config(harness.client, task["id"], mine) == {
            "taskId": task["id"], "pushNotificationConfig": mine,
        }
        assigned = await set_config(harness.client, task["id"], config(HOOK + "2"))
        given = assigned["pushNotificationConfig"]
        assert set(given) == {"id", "url"} and given["url"] == HOOK + "2"
        assert str(uuid.UUID(given["id"])) == given["id"]  # a fresh id, never another's
        listed = await harness.client.call(
            "tasks/pushNotificationConfig/list", {"id": task["id"]}, 3)
        assert assert_success(listed, "ListTaskPushNotificationConfigSuccessResponse", 3) == [
            {"taskId": task["id"], "pushNotificationConfig": mine}, assigned,
        ]


async def test_get_by_id_and_in_the_older_task_id_form() -> None:
    async with push_server() as harness:
        task = await start_order(harness.client)
        first = await set_config(harness.client, task["id"], config(HOOK, id="a"))
        await set_config(harness.client, task["id"], config(HOOK, id="b", token="t"))
        by_id = await harness.client.call("tasks/pushNotificationConfig/get",
                                          {"id": task["id"], "pushNotificationConfigId": "b"}, 4)
        assert assert_success(by_id, "GetTaskPushNotificationConfigSuccessResponse", 4) == {
            "taskId": task["id"], "pushNotificationConfig": config(HOOK, id="b", token="t"),
        }
        # TaskIdParams (deprecated form): the task's first config
        plain = await harness.client.call("tasks/pushNotificationConfig/get",
                                          {"id": task["id"], "metadata": {"x": 1}}, 5)
        assert assert_success(plain, "GetTaskPushNotificationConfigSuccessResponse", 5) == first


async def test_get_of_an_unknown_config_is_invalid_params() -> None:
    async with push_server() as harness:
        task = await start_order(harness.client)
        none_yet = await harness.client.call("tasks/pushNotificationConfig/get",
                                             {"id": task["id"]}, 6)
        error = assert_error(none_yet, -32602, 6)
        assert error["data"] == {"reason": "unknown push notification config",
                                 "taskId": task["id"], "pushNotificationConfigId": None}
        await set_config(harness.client, task["id"], config(HOOK, id="a"))
        unknown = await harness.client.call(
            "tasks/pushNotificationConfig/get",
            {"id": task["id"], "pushNotificationConfigId": "zz"}, 7)
        assert assert_error(unknown, -32602, 7)["data"] == {
            "reason": "unknown push notification config", "taskId": task["id"],
            "pushNotificationConfigId": "zz",
        }


async def test_set_with_the_same_id_replaces_and_delete_returns_null() -> None:
    async with push_server() as harness:
        task = await start_order(harness.client)
        await set_config(harness.client, task["id"], config(HOOK, id="a"))
        await set_config(harness.client, task["id"], config(HOOK, id="b"))
        await set_config(harness.client, task["id"], config(HOOK + "/new", id="a"))
        listed = await harness.client.result("tasks/pushNotificationConfig/list",
                                             {"id": task["id"]})
        assert [c["pushNotificationConfig"] for c in listed] == [
            config(HOOK + "/new", id="a"), config(HOOK, id="b"),
        ]
        for request_id in (8, 9):  # deleting again is not an error: the config is gone
            deleted = await harness.client.call(
                "tasks/pushNotificationConfig/delete",
                {"id": task["id"], "pushNotificationConfigId": "a"}, request_id)
            assert assert_success(
                deleted, "DeleteTaskPushNotificationConfigSuccessResponse", request_id) is None
        listed = await harness.client.result("tasks/pushNotificationConfig/list",
                                             {"id": task["id"]})
        assert [c["pushNotificationConfig"]["id"] for c in listed] == ["b"]


@pytest.mark.parametrize("method", ["message/send", "message/stream"])
async def test_a_message_registers_its_config_for_the_task_it_starts(method: str) -> None:
    async with push_server() as harness:
        push = config(HOOK, token="from-send")
        params = send_params("order 1", configuration={"pushNotificationConfig": push})
        if method == "message/send":
            task = await harness.client.result(method, params)
        else:
            events = await harness.client.stream(method, params)
            task = events[0]["data"]["result"]
        listed = await harness.client.call("tasks/pushNotificationConfig/list",
                                           {"id": task["id"]}, 1)
        (stored,) = assert_success(listed, "ListTaskPushNotificationConfigSuccessResponse", 1)
        assert stored["taskId"] == task["id"]
        assert stored["pushNotificationConfig"]["token"] == "from-send"
        assert stored["pushNotificationConfig"]["url"] == HOOK
        assert stored["pushNotificationConfig"]["id"]


async def test_an_answer_registers_its_config_for_the_task_it_answers() -> None:
    async with push_server() as harness:
        task = await start_order(harness.client)
        await harness.client.send("yes", context_id=task["contextId"], configuration={
            "pushNotificationConfig": config(HOOK, id="on-answer")})
        listed = await harness.client.result("tasks/pushNotificationConfig/list",
                                             {"id": task["id"]})
        assert [c["pushNotificationConfig"]["id"] for c in listed] == ["on-answer"]


PARAMS: dict[str, dict[str, Any]] = {
    "tasks/pushNotificationConfig/set": {"taskId": "$T", "pushNotificationConfig": {"url": HOOK}},
    "tasks/pushNotificationConfig/get": {"id": "$T"},
    "tasks/pushNotificationConfig/list": {"id": "$T"},
    "tasks/pushNotificationConfig/delete": {"id": "$T", "pushNotificationConfigId": "c1"},
}


@pytest.mark.parametrize("method", list(PARAMS))
async def test_an_unknown_task_is_task_not_found(method: str) -> None:
    async with push_server() as harness:
        params = {k: ("nope" if v == "$T" else v) for k, v in PARAMS[method].items()}
        error = assert_error(await harness.client.call(method, params, "u"), -32001, "u")
        assert error["data"] == {"taskId": "nope"}


@pytest.mark.parametrize(("method", "params", "field"), [
    ("tasks/pushNotificationConfig/get", {}, "id"),
    ("tasks/pushNotificationConfig/delete", {"id": "t"}, "pushNotificationConfigId"),
    ("tasks/pushNotificationConfig/set", {"taskId": "t"}, "pushNotificationConfig"),
    ("tasks/pushNotificationConfig/set", {"taskId": "t", "pushNotificationConfig": {}},
     "pushNotificationConfig.url"),
    ("tasks/pushNotificationConfig/list", {"id": 5}, "id"),
])
async def test_malformed_params_are_invalid_params(method: str, params: Any, field: str) -> None:
    async with push_server() as harness:
        error = assert_error(await harness.client.call(method, params, "m"), -32602, "m")
        assert field in [e["field"] for e in error["data"]["errors"]]


def _limit(error: dict[str, Any]) -> tuple[str, str]:
    return error["data"]["limit"], error["data"]["field"]


async def test_edge_limits_bound_every_value_of_a_config() -> None:
    limits = Limits(max_url_chars=64, max_token_chars=8, max_push_configs=2)
    async with push_server(limits=limits) as harness:
        client: A2AClient = harness.client
        task = await start_order(client)

        async def refused(push: dict[str, Any]) -> dict[str, Any]:
            body = await client.call("tasks/pushNotificationConfig/set",
                                     {"taskId": task["id"], "pushNotificationConfig": push}, "l")
            return assert_error(body, -32602, "l")

        field = "params.pushNotificationConfig"
        long_url = "http://127.0.0.1:9/" + "x" * 64
        assert _limit(await refused(config(long_url))) == ("max_url_chars", f"{field}.url")
        assert _limit(await refused(config(HOOK, token="t" * 9))) == (
            "max_token_chars", f"{field}.token")
        assert _limit(await refused(config(HOOK, authentication={
            "schemes": ["Bearer"], "credentials": "c" * 9}))) == (
            "max_token_chars", f"{field}.authentication.credentials")
        assert _limit(await refused(config(HOOK, id="i" * 300))) == (
            "max_id_chars", f"{field}.id")
        assert _limit(await refused(config(HOOK, authentication={
            "schemes": ["Bearer"] * 40, "credentials": "c"}))) == (
            "max_parts", f"{field}.authentication.schemes")
        await set_config(client, task["id"], config(HOOK, id="a"))
        await set_config(client, task["id"], config(HOOK, id="b"))
        third = await refused(config(HOOK, id="c"))
        assert (third["data"]["limit"], third["data"]["max"]) == ("max_push_configs", 2)
        await set_config(client, task["id"], config(HOOK + "x", id="b"))  # a replacement fits
        # the same bounds on the config of a message
        body = await client.call("message/send", send_params("order", configuration={
            "pushNotificationConfig": config(long_url)}), "s")
        assert _limit(assert_error(body, -32602, "s")) == (
            "max_url_chars", "params.configuration.pushNotificationConfig.url")


@pytest.mark.parametrize(("push", "why"), [
    (config(HOOK, authentication={"schemes": ["Digest"], "credentials": "x"}),
     "unsupported authentication scheme"),
    (config(HOOK, authentication={"schemes": ["Bearer"]}), "missing credentials"),
    (config(HOOK, token="line\r\nX-Injected: 1"), "not a header value"),
    (config(HOOK, authentication={"schemes": ["Bearer"], "credentials": "a\nb"}),
     "not a header value"),
])
async def test_a_config_the_server_could_not_apply_is_refused(push: dict[str, Any],
                                                              why: str) -> None:
    async with push_server() as harness:
        task = await start_order(harness.client)
        body = await harness.client.call("tasks/pushNotificationConfig/set",
                                         {"taskId": task["id"], "pushNotificationConfig": push},
                                         "r")
        error = assert_error(body, -32602, "r")
        assert error["data"]["reason"] == f"push config refused: {why}"
        listed = await harness.client.result("tasks/pushNotificationConfig/list",
                                             {"id": task["id"]})
        assert listed == []
