"""The official client (``a2a-sdk==0.3.26``) calls an API-key-protected ``llamon-agent serve``:
it reads the card's ``securitySchemes``, sends the key its credential service holds, and fetches
the extended card."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from a2a.client import (
    A2ACardResolver,
    A2AClientHTTPError,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    create_text_message_object,
)
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.types import Role, Task, TaskQueryParams

from tests.process.conftest import Launch

from .helpers import ALICE_KEY
from .test_card import EXTENDED


async def test_the_official_client_calls_a_server_protected_by_api_keys(
    launch: Launch, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alice={ALICE_KEY}\n")
    extended = tmp_path / "extended.json"
    extended.write_text(json.dumps(EXTENDED))
    server = launch(extra_args=["--api-keys", str(keys), "--extended-card", str(extended)])
    credentials = InMemoryContextCredentialStore()
    await credentials.set_credentials("session-1", "apiKey", ALICE_KEY)
    context = ClientCallContext(state={"sessionId": "session-1"})
    async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
        assert card.security == [{"apiKey": []}, {"bearer": []}]
        assert card.supports_authenticated_extended_card is True
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
        client = factory.create(card, interceptors=[AuthInterceptor(credentials)])
        message = create_text_message_object(Role.user, "hello")
        events = [event async for event in client.send_message(message, context=context)]
        task = events[-1][0] if isinstance(events[-1], tuple) else events[-1]
        assert isinstance(task, Task)
        assert task.id and task.context_id
        again = await client.get_task(TaskQueryParams(id=task.id), context=context)
        assert again.id == task.id
        full = await client.get_card(context=context)
        assert full.name == EXTENDED["name"]
        assert [s.id for s in full.skills] == ["bulk-review"]

        anonymous = factory.create(card)
        with pytest.raises(A2AClientHTTPError) as refused:
            async for _ in anonymous.send_message(create_text_message_object(Role.user, "hi")):
                pass
        assert refused.value.status_code == 401
