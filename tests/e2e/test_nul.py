"""U+0000 is refused at the edge on every backend: a task never fails later because PostgreSQL
cannot store what SQLite could (LangGraph's checkpoints keep string state values in JSONB)."""

from __future__ import annotations

import pytest

from tests.conftest import send_params, serve
from tests.runtime.helpers import doc_agent

pytestmark = pytest.mark.usefixtures("backend")


@pytest.mark.parametrize("where", ["text", "data value", "data key", "metadata"])
async def test_nul_in_a_new_message_is_refused_and_nothing_is_stored(where: str) -> None:
    async with serve([doc_agent()]) as client:
        params = send_params("start", context_id="ctx-nul")
        if where == "text":
            params["message"]["parts"] = [{"kind": "text", "text": "a\x00b"}]
        elif where == "data value":
            params["message"]["parts"] = [{"kind": "data", "data": {"v": ["x\x00"]}}]
        elif where == "data key":
            params["message"]["parts"] = [{"kind": "data", "data": {"k\x00": 1}}]
        else:
            params["message"]["metadata"] = {"note": "\x00"}
        body = await client.call("message/send", params)
        assert body["error"]["code"] == -32602
        assert body["error"]["data"]["reason"] == "NUL character"
        fresh = await client.send("start", context_id="ctx-nul")
        assert len(fresh["history"]) == 1  # the refused message left no task behind


async def test_an_answer_with_nul_is_refused_and_the_question_still_waits() -> None:
    async with serve([doc_agent()]) as client:
        task = await client.send("start")
        answered = await client.send("passport", context_id=task["contextId"])
        assert answered["status"]["state"] == "input-required"
        body = await client.call(
            "message/send", send_params("1990\x00-01-01", context_id=task["contextId"]))
        assert body["error"]["data"] == {
            "field": "params.message.parts[0].text", "reason": "NUL character"}
        still = await client.result("tasks/get", {"id": task["id"]})
        assert still["status"] == answered["status"]
        done = await client.send("1990-01-01", context_id=task["contextId"])
        assert done["status"]["state"] == "completed"
