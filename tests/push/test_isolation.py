"""Push configs belong to the principal whose task they are set on: another principal naming
the task gets exactly what it gets for a task that does not exist (``-32001``), and its calls
change nothing of the owner's configs or deliveries."""

from __future__ import annotations

from typing import Any

import pytest

from tests.security.helpers import Pair, answer, error_of, random_id, replaced, two_principals

from .helpers import config, order_agent, push_of, receiving, set_config, start_order

CALLS: dict[str, Any] = {
    "set": lambda t: ("tasks/pushNotificationConfig/set",
                      {"taskId": t, "pushNotificationConfig": config("http://127.0.0.1:9/b",
                                                                     id="mine")}),
    "get": lambda t: ("tasks/pushNotificationConfig/get", {"id": t}),
    "get by id": lambda t: ("tasks/pushNotificationConfig/get",
                            {"id": t, "pushNotificationConfigId": "mine"}),
    "list": lambda t: ("tasks/pushNotificationConfig/list", {"id": t}),
    "delete": lambda t: ("tasks/pushNotificationConfig/delete",
                         {"id": t, "pushNotificationConfigId": "mine"}),
}


@pytest.fixture
async def pair() -> Any:
    async with two_principals([order_agent()], push_allow_private=True) as pair:
        yield pair


@pytest.mark.parametrize("name", list(CALLS))
async def test_another_principals_task_is_unknown_to_its_push_methods(pair: Pair,
                                                                      name: str) -> None:
    async with receiving() as receiver:
        task = await start_order(pair.alice, config(receiver.hook(), id="mine", token="alice"))
        before = await pair.alice.result("tasks/pushNotificationConfig/list", {"id": task["id"]})

        method, params = CALLS[name](task["id"])
        named = await answer(pair.bob, method, params, "same")
        unknown_id = random_id()
        method, params = CALLS[name](unknown_id)
        unknown = await answer(pair.bob, method, params, "same")
        assert replaced(named, task["id"], unknown_id) == unknown
        assert error_of(unknown)["error"]["code"] == -32001

        after = await pair.alice.result("tasks/pushNotificationConfig/list", {"id": task["id"]})
        assert after == before
        assert after[0]["pushNotificationConfig"]["url"] == receiver.hook()
        await pair.alice.send("yes", context_id=task["contextId"])
        await receiver.wait_for(2)
        await push_of(pair).settle()
    assert receiver.states() == ["input-required", "completed"]
    assert {r.headers["x-a2a-notification-token"] for r in receiver.received} == {"alice"}


async def test_each_principal_sees_only_its_own_configs(pair: Pair) -> None:
    alices = await start_order(pair.alice)
    bobs = await start_order(pair.bob)
    await set_config(pair.alice, alices["id"], config("http://127.0.0.1:9/a", id="c"))
    await set_config(pair.bob, bobs["id"], config("http://127.0.0.1:9/b", id="c"))
    for client, task, url in ((pair.alice, alices, "/a"), (pair.bob, bobs, "/b")):
        listed = await client.result("tasks/pushNotificationConfig/list", {"id": task["id"]})
        assert [c["pushNotificationConfig"]["url"] for c in listed] == ["http://127.0.0.1:9" + url]
