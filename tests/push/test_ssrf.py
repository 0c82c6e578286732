"""Webhook URLs that would make the server call itself or a private network are refused when a
config is set (``-32602`` with ``data.reason``), and checked again at every delivery: a name
that resolves elsewhere later (DNS rebinding) is refused then, and nothing is sent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from llamon_agent.push.policy import PushPolicy
from tests.conftest import send_params
from tests.e2e.test_protocol import assert_error

from .helpers import Clock, config, push_of, push_server, receiving, set_config, start_order, sweep

FIELD = "params.pushNotificationConfig.url"


class Names:
    """A resolver the test controls: ``names[host]`` is what ``host`` resolves to now."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        if host not in self.names:
            raise OSError(f"{host} does not resolve")
        return self.names[host]


PUBLIC = "93.184.215.14"
NAMES = {
    "hooks.example": [PUBLIC],
    "inside.example": ["10.1.2.3"],
    "mixed.example": [PUBLIC, "192.168.1.9"],
    "v6inside.example": ["fd00::5"],
    "localhost": ["127.0.0.1", "::1"],
}


@pytest.mark.parametrize(("url", "reason"), [
    ("ftp://hooks.example/x", "scheme not http or https"),
    ("file:///etc/passwd", "scheme not http or https"),
    ("gopher://hooks.example/", "scheme not http or https"),
    ("hooks.example/x", "scheme not http or https"),
    ("http:///nohost", "no host"),
    ("http://user:pw@hooks.example/", "credentials in the URL"),
    ("http://hooks.example:99999/", "invalid port"),
    ("http://hooks .example/", "invalid URL"),
    ("http://hooks!.example/", "invalid host"),
    ("http://hooks.example:0/", "invalid port"),
    ("http://nowhere.example/", "host does not resolve"),
    ("http://127.0.0.1/", "loopback address"),
    ("http://127.1:8080/", "loopback address"),
    ("http://2130706433/", "loopback address"),
    ("http://localhost/", "loopback address"),
    ("http://[::1]/", "loopback address"),
    ("http://[::ffff:127.0.0.1]/", "loopback address"),
    ("http://10.0.0.8/", "private address"),
    ("http://172.16.5.4/", "private address"),
    ("http://192.168.0.1/", "private address"),
    ("http://100.64.0.1/", "private address"),
    ("http://[fd12::1]/", "private address"),
    ("http://[::ffff:192.168.0.1]/", "private address"),
    ("http://inside.example/", "private address"),
    ("http://v6inside.example/", "private address"),
    ("http://mixed.example/", "private address"),
    ("http://169.254.169.254/latest/meta-data/", "link-local address"),
    ("http://[fe80::1]/", "link-local address"),
    ("http://224.0.0.1/", "multicast address"),
    ("http://[ff02::1]/", "multicast address"),
    ("http://0.0.0.0/", "unspecified address"),
    ("http://[::]/", "unspecified address"),
    ("http://255.255.255.255/", "reserved address"),
    ("http://[64:ff9b::a00:1]/", "private address"),
    ("http://[2002:c0a8:1::]/", "private address"),
])
async def test_a_webhook_at_a_refused_target_is_invalid_params(url: str, reason: str) -> None:
    names = Names(NAMES)
    policy = PushPolicy(resolve=names)
    async with push_server(push_allow_private=False, push_policy=policy) as harness:
        task = await start_order(harness.client)
        body = await harness.client.call("tasks/pushNotificationConfig/set",
                                         {"taskId": task["id"],
                                          "pushNotificationConfig": config(url)}, "s")
        error = assert_error(body, -32602, "s")
        assert error["data"]["reason"] == f"webhook refused: {reason}"
        assert error["data"]["field"] == FIELD
        assert reason in error["message"]
        # the same refusal for the config of a message; nothing is started
        sent = await harness.client.call("message/send", send_params(
            "order", configuration={"pushNotificationConfig": config(url)}), "m")
        error = assert_error(sent, -32602, "m")
        assert error["data"]["reason"] == f"webhook refused: {reason}"
        assert error["data"]["field"] == "params.configuration.pushNotificationConfig.url"
        assert await harness.client.result("tasks/pushNotificationConfig/list",
                                           {"id": task["id"]}) == []


async def test_a_public_target_is_accepted() -> None:
    policy = PushPolicy(resolve=Names(NAMES))
    async with push_server(push_allow_private=False, push_policy=policy) as harness:
        task = await start_order(harness.client)
        for url in ("https://hooks.example/x?y=1", f"http://{PUBLIC}:8443/",
                    "https://HOOKS.example./p"):
            await set_config(harness.client, task["id"], config(url))


@pytest.mark.parametrize("url", ["http://testserver/hook", "http://TESTSERVER:80/x",
                                 "https://agent.example:8443/a", "http://agent.example:8443/"])
async def test_a_webhook_at_the_server_itself_is_refused_even_with_private_targets(
    url: str,
) -> None:
    """The local address the request arrived on (``testserver:80`` in process) and the card's
    public URL are the server itself."""
    names = Names({"agent.example": [PUBLIC], "testserver": ["127.0.0.1"]})
    policy = PushPolicy(resolve=names)
    async with push_server(push_policy=policy, public_url="https://agent.example:8443/") as h:
        task = await start_order(h.client)
        body = await h.client.call("tasks/pushNotificationConfig/set",
                                   {"taskId": task["id"], "pushNotificationConfig": config(url)},
                                   "s")
        assert assert_error(body, -32602, "s")["data"]["reason"] == "webhook refused: this server"


@pytest.mark.parametrize("flag", ["argument", "environment"])
async def test_private_targets_are_allowed_only_when_said_so(
    flag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kwargs: dict[str, Any] = {}
    if flag == "argument":
        kwargs["push_allow_private"] = True
    else:
        monkeypatch.setenv("LLAMON_PUSH_ALLOW_PRIVATE", "1")
        kwargs["push_allow_private"] = None
    async with receiving() as receiver, push_server(**kwargs) as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await receiver.wait_for(1)
    assert receiver.states() == ["input-required"]
    assert task["id"] == receiver.received[0].body["id"]


async def test_a_name_that_resolves_elsewhere_at_delivery_is_refused_then() -> None:
    """DNS rebinding: the name was public when the config was set, and points at loopback (the
    receiver) when the delivery goes: nothing is sent, the delivery is given up at once and
    recorded with the reason."""
    clock = Clock()
    names = Names({"hooks.example": [PUBLIC]})
    policy = PushPolicy(resolve=names)
    async with receiving() as receiver, push_server(
        clock=clock, push_allow_private=False, push_policy=policy,
    ) as harness:
        port = receiver.url.rsplit(":", 1)[1]
        task = await start_order(harness.client)
        await set_config(harness.client, task["id"], config(f"http://hooks.example:{port}/hook"))
        names.names["hooks.example"] = ["127.0.0.1"]
        await harness.client.result("tasks/cancel", {"id": task["id"]})
        await push_of(harness).settle()
        clock.advance(3600)
        await sweep(harness)
        (record,) = await push_of(harness).deliveries(task["id"])
    assert receiver.received == []
    assert names.asked == ["hooks.example", "hooks.example"]  # at set, at the one delivery
    assert (record.status, record.attempts) == ("failed", 1)
    assert record.last_error == "webhook refused: loopback address (127.0.0.1)"


async def test_the_delivery_connects_to_the_address_it_checked() -> None:
    """The name is resolved once per attempt and the connection goes to that address (the
    ``Host`` header keeps the name): a second lookup could not point it elsewhere."""
    names = Names({"hooks.test": ["127.0.0.1"]})
    policy = PushPolicy(resolve=names)
    async with receiving() as receiver, push_server(push_policy=policy) as harness:
        port = receiver.url.rsplit(":", 1)[1]
        await start_order(harness.client, config(f"http://hooks.test:{port}/hook"))
        (received,) = await receiver.wait_for(1)
    assert received.headers["host"] == f"hooks.test:{port}"
    assert names.asked == ["hooks.test", "hooks.test"]
