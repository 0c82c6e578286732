"""Issue 10, isolation on a real ``llamon-agent serve --api-keys FILE`` (uvicorn, a socket):
two principals, the same ``contextId``, and each other's task ids for send, get and cancel."""

from __future__ import annotations

from pathlib import Path

from tests.process.conftest import Launch, connect
from tests.security.helpers import ALICE, BOB, answer, random_id, replaced, texts

DOC_REQUEST = "이 서류를 검증해줘"
DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."


async def test_two_api_keys_on_a_real_server(launch: Launch, tmp_path: Path) -> None:
    keys = tmp_path / "api-keys"
    keys.write_text("alice=key-a\nbob=key-b\n", encoding="utf-8")
    server = launch(extra_args=["--api-keys", str(keys)])

    async with connect(server, headers=ALICE) as alice, connect(server, headers=BOB) as bob, \
            connect(server) as nobody:
        refused = await nobody.http.post("/", json={"jsonrpc": "2.0", "id": 1,
                                                    "method": "tasks/get", "params": {"id": "x"}})
        assert refused.status_code == 401
        assert refused.json() == {"detail": "unauthorized"}
        assert "www-authenticate" in refused.headers

        mine = await alice.send(DOC_REQUEST, context_id="case-123", agent_id="document-review")
        theirs = await bob.send(DOC_REQUEST, context_id="case-123", agent_id="document-review")
        assert mine["id"] != theirs["id"]
        assert mine["contextId"] == theirs["contextId"] == "case-123"

        calls = {
            "tasks/get": lambda t: {"id": t},
            "tasks/cancel": lambda t: {"id": t},
            "message/send": lambda t: {"message": {
                "kind": "message", "messageId": "bob-1", "role": "user", "taskId": t,
                "parts": [{"kind": "text", "text": "여권"}]}},
        }
        for method, params in calls.items():
            named = await answer(bob, method, params(mine["id"]), "same")
            unknown_id = random_id()
            unknown = await answer(bob, method, params(unknown_id), "same")
            assert unknown["body"]["error"]["code"] == -32001
            assert replaced(named, mine["id"], unknown_id) == unknown, method

        # alice's task is untouched; her answer resumes it, her cancel ends it
        still = await alice.result("tasks/get", {"id": mine["id"]})
        assert still["status"]["state"] == "input-required"
        assert texts(still["status"]["message"]) == [DOC_QUESTION]
        resumed = await alice.send("여권", context_id="case-123")
        assert resumed["id"] == mine["id"]
        assert texts(resumed["status"]["message"]) == [BIRTHDAY_QUESTION]
        canceled = await alice.result("tasks/cancel", {"id": mine["id"]})
        assert canceled["status"]["state"] == "canceled"

        # bob's own task, on the same contextId, is still waiting for his first answer
        bobs = await bob.result("tasks/get", {"id": theirs["id"]})
        assert bobs["status"]["state"] == "input-required"
        assert texts(bobs["status"]["message"]) == [DOC_QUESTION]
        own = await bob.result("tasks/cancel", {"id": theirs["id"]})
        assert own["status"]["state"] == "canceled"
