"""A real ``llamon-agent serve --db postgresql://...`` process, killed and started again: the
question asked before the restart is answered after it (tests/process/test_restart.py on a
SQLite file)."""

from __future__ import annotations

import uuid

import pytest

from tests.process.conftest import Launch, connect
from tests.process.test_restart import BIRTHDAY_QUESTION, DOC_QUESTION, _get, _question

pytest.importorskip("psycopg", reason="the postgres extra is not installed")


async def test_a_question_asked_before_a_sigkill_is_answered_after_it(
    launch: Launch, postgres_url: str
) -> None:
    first = launch(db=postgres_url)  # passed on as --db, as it is
    context = f"pg-restart-{uuid.uuid4().hex[:8]}"
    async with connect(first) as client:
        asked = await client.send("이 서류를 검증해줘", context_id=context,
                                  agent_id="document-review")
        assert _question(asked) == DOC_QUESTION
        before = await _get(client, asked["id"])
    assert first.sigkill() == -9

    second = launch(db=postgres_url)
    async with connect(second) as client:
        assert await _get(client, asked["id"]) == before
        answered = await client.send("여권", context_id=context)
        assert answered["id"] == asked["id"]
        assert _question(answered) == BIRTHDAY_QUESTION
        done = await client.send("1990-01-01", context_id=context)
        assert done["status"]["state"] == "completed", done["status"]
        assert done["artifacts"][0]["parts"] == [
            {"kind": "data", "data": {"doc_type": "passport", "birthday": "1990-01-01"}},
            {"kind": "text", "text": "Document review ready: passport, date of birth 1990-01-01."},
        ]
