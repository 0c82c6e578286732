"""The official client (``a2a-sdk==0.3.26``) sets and reads a push config, registers one with a
message (``ClientConfig.push_notification_configs``), and reads what the webhook receives with
its own ``Task`` model."""

from __future__ import annotations

import httpx
from a2a.client import ClientConfig, ClientFactory, create_text_message_object
from a2a.types import (
    AgentCard,
    GetTaskPushNotificationConfigParams,
    PushNotificationAuthenticationInfo,
    PushNotificationConfig,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from asgi_lifespan import LifespanManager

from llamon_agent import create_app

from .helpers import order_agent, receiving


async def test_the_official_client_sets_gets_and_registers_push_configs() -> None:
    app = create_app([order_agent()], db=":memory:", push_allow_private=True)
    async with receiving() as receiver, LifespanManager(app) as served, httpx.AsyncClient(
        transport=httpx.ASGITransport(app=served.app), base_url="http://testserver", timeout=30,
    ) as http:
        card = AgentCard.model_validate((await http.get("/.well-known/agent-card.json")).json())
        assert card.capabilities.push_notifications is True
        on_send = PushNotificationConfig(url=receiver.hook("/sent"), token="sdk-token")
        client = ClientFactory(ClientConfig(
            httpx_client=http, streaming=False, push_notification_configs=[on_send],
        )).create(card)
        events = [e async for e in client.send_message(
            create_text_message_object(Role.user, "order 3"))]
        task = events[-1][0] if isinstance(events[-1], tuple) else events[-1]
        assert isinstance(task, Task) and task.status.state == TaskState.input_required

        wanted = TaskPushNotificationConfig(task_id=task.id, push_notification_config=(
            PushNotificationConfig(
                id="sdk", url=receiver.hook("/set"),
                authentication=PushNotificationAuthenticationInfo(schemes=["Bearer"],
                                                                  credentials="k"))))
        assert await client.set_task_callback(wanted) == wanted
        got = await client.get_task_callback(
            GetTaskPushNotificationConfigParams(id=task.id, push_notification_config_id="sdk"))
        assert got == wanted

        (first,) = await receiver.wait_for(1)  # the question, to the config of the message
        sent = Task.model_validate(first.body)
        assert (first.path, sent.id, sent.status.state) == ("/sent", task.id,
                                                              TaskState.input_required)
        assert first.headers["x-a2a-notification-token"] == "sdk-token"

        plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        reply = create_text_message_object(Role.user, "yes").model_copy(
            update={"context_id": task.context_id, "task_id": task.id})
        async for _ in plain.send_message(reply):
            pass
        later = await receiver.wait_for(3)
        await app.state.push.settle()
    ended = {r.path: r for r in later[1:]}
    assert set(ended) == {"/sent", "/set"}
    assert {Task.model_validate(r.body).status.state for r in ended.values()} == {
        TaskState.completed}
    assert ended["/set"].headers["authorization"] == "Bearer k"
    assert "authorization" not in ended["/sent"].headers
