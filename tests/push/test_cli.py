"""``llamon-agent serve --push-allow-private`` and ``LLAMON_PUSH_*``: what a server started from
the command line allows and how it retries."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from llamon_agent import cli
from llamon_agent.push.policy import PushPolicy
from llamon_agent.settings import Settings
from tests.conftest import A2AClient, send_params

LOOPBACK = {"url": "http://127.0.0.1:9/hook"}


async def _set_loopback(app: Any) -> dict[str, Any]:
    async with LifespanManager(app) as served, httpx.AsyncClient(
        transport=httpx.ASGITransport(app=served.app), base_url="http://testserver",
    ) as http:
        client = A2AClient(http)
        task = await client.result("message/send", send_params("hi"))
        return await client.call("tasks/pushNotificationConfig/set",
                                 {"taskId": task["id"], "pushNotificationConfig": LOOPBACK})


@pytest.mark.parametrize(("argv", "env", "allowed"), [
    ([], {}, False),
    (["--push-allow-private"], {}, True),
    ([], {"LLAMON_PUSH_ALLOW_PRIVATE": "1"}, True),
    ([], {"LLAMON_PUSH_ALLOW_PRIVATE": "0"}, False),
])
async def test_private_webhooks_are_allowed_by_the_flag_or_the_environment(
    argv: list[str], env: dict[str, str], allowed: bool, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    served: list[Any] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(app))
    cli.main(["serve", "--db", ":memory:", *argv])
    body = await _set_loopback(served[0])
    if allowed:
        assert body["result"]["pushNotificationConfig"]["url"] == LOOPBACK["url"]
    else:
        assert body["error"]["data"]["reason"] == "webhook refused: loopback address"


def test_the_settings_read_the_push_variables() -> None:
    settings = Settings.from_env({"LLAMON_PUSH_MAX_ATTEMPTS": "3",
                                  "LLAMON_PUSH_TIMEOUT_SECONDS": "2.5",
                                  "LLAMON_PUSH_ALLOW_PRIVATE": "yes"})
    policy = PushPolicy.from_settings(settings)
    assert (policy.max_attempts, policy.timeout, policy.allow_private) == (3, 2.5, True)
    assert PushPolicy.from_settings(Settings.from_env({})) == PushPolicy()
    for name, value in (("LLAMON_PUSH_ALLOW_PRIVATE", "maybe"),
                        ("LLAMON_PUSH_MAX_ATTEMPTS", "0"),
                        ("LLAMON_PUSH_TIMEOUT_SECONDS", "-1")):
        with pytest.raises(ValueError, match=name):
            Settings.from_env({name: value})


def test_a_policy_is_checked_and_its_backoff_doubles_up_to_its_cap() -> None:
    policy = PushPolicy(backoff=10, max_backoff=45)
    assert [policy.retry_delay(n) for n in range(1, 5)] == [10, 20, 40, 45]
    for bad in ({"max_attempts": 0}, {"timeout": float("nan")}, {"history_length": -1},
                {"concurrency": True}):
        with pytest.raises(ValueError):
            PushPolicy(**bad)
