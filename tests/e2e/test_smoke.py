from __future__ import annotations

import pytest

from tests.conftest import A2AClient, assert_valid

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


async def test_seed_conversation_over_send(client: A2AClient) -> None:
    first = await client.send("이 서류를 검증해줘", context_id="case-123", agent_id="document-review")
    assert first["status"]["state"] == "input-required"
    assert_valid("Task", first)
    answered = await client.send("여권", context_id="case-123")
    assert answered["id"] == first["id"]
    assert answered["status"]["message"]["parts"][0]["text"] == "생년월일을 알려주세요."
    done = await client.send("1990-01-01", context_id="case-123")
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["data"] == {"doc_type": "passport", "birthday": "1990-01-01"}
