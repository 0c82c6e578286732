"""Durability across a hard crash: SIGKILL the server, start it again on the same SQLite file.

Every context resumes where it stopped, answered by ``contextId`` only (seed 004, docs/hitl.md §5 D8), and
``tasks/get`` returns the stored tasks unchanged.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from tests.conftest import A2AClient, assert_valid
from tests.process.agents import FIRST_QUESTION, SECOND_QUESTION
from tests.process.conftest import SLOW_TARGET, Launch, connect

DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."


def _question(task: dict[str, Any]) -> str:
    assert task["status"]["state"] == "input-required", task
    parts = task["status"]["message"]["parts"]
    assert parts[1]["kind"] == "data" and "hitl" in parts[1]["data"], parts
    return str(parts[0]["text"])


async def _get(client: A2AClient, task_id: str) -> dict[str, Any]:
    body = await client.call("tasks/get", {"id": task_id})
    assert "error" not in body, body
    assert_valid("GetTaskSuccessResponse", body)
    return dict(body["result"])


async def test_waiting_contexts_survive_sigkill(launch: Launch, tmp_path: Path) -> None:
    db = tmp_path / "restart.sqlite3"
    first = launch(db=db)
    run = uuid.uuid4().hex[:8]
    at_document, at_birthday, notes = (f"restart-{name}-{run}" for name in ("doc", "bday", "notes"))

    async with connect(first) as client:
        doc = await client.send(
            "이 서류를 검증해줘", context_id=at_document, agent_id="document-review"
        )
        assert _question(doc) == DOC_QUESTION

        bday = await client.send(
            "이 서류를 검증해줘", context_id=at_birthday, agent_id="document-review"
        )
        bday = await client.send("여권", context_id=at_birthday)
        assert _question(bday) == BIRTHDAY_QUESTION

        note = await client.send("take notes", context_id=notes, agent_id="until-done")
        note = await client.send("buy milk", context_id=notes)
        assert _question(note).startswith("Noted (1).")

        before = {t["id"]: await _get(client, t["id"]) for t in (doc, bday, note)}

    assert first.sigkill() == -signal.SIGKILL
    second = launch(db=db)

    async with connect(second) as client:
        # the stored tasks come back exactly as they were: id, context, status message, history
        for task_id, task in before.items():
            assert await _get(client, task_id) == task

        # answered by contextId only, in an order unlike the one they were started in
        done = await client.send("1990-01-01", context_id=at_birthday)
        assert done["id"] == bday["id"]
        assert done["status"]["state"] == "completed", done
        assert done["artifacts"][0]["parts"][0]["data"] == {
            "doc_type": "passport",
            "birthday": "1990-01-01",
        }

        moved = await client.send("주민등록증", context_id=at_document)
        assert moved["id"] == doc["id"]
        assert _question(moved) == BIRTHDAY_QUESTION
        finished = await client.send("2000-02-29", context_id=at_document)
        assert finished["status"]["state"] == "completed", finished
        assert finished["artifacts"][0]["parts"][0]["data"] == {
            "doc_type": "id_card",
            "birthday": "2000-02-29",
        }

        more = await client.send("call mom", context_id=notes)
        assert more["id"] == note["id"]
        assert _question(more).startswith("Noted (2).")
        closed = await client.send("done", context_id=notes)
        assert closed["status"]["state"] == "completed", closed
        assert closed["artifacts"][0]["parts"][0]["data"] == {"notes": ["buy milk", "call mom"]}

        # tasks/get after the restart: terminal, with the whole conversation in history
        for task_id, expected_turns in [(bday["id"], 5), (doc["id"], 5), (note["id"], 7)]:
            task = await _get(client, task_id)
            assert task["status"]["state"] == "completed"
            assert [m["role"] for m in task["history"]] == ["user", "agent"] * (
                expected_turns // 2
            ) + ["user"]
        history = (await _get(client, bday["id"]))["history"]
        assert [m["parts"][0]["text"] for m in history] == [
            "이 서류를 검증해줘",
            DOC_QUESTION,
            "여권",
            BIRTHDAY_QUESTION,
            "1990-01-01",
        ]


async def test_run_killed_mid_turn_asks_again_after_restart(launch: Launch, tmp_path: Path) -> None:
    """A task killed while its graph runs: after the restart it waits on the last question."""
    db = tmp_path / "midturn.sqlite3"
    log, gate = tmp_path / "side-effects.log", tmp_path / "gate"
    first = launch(SLOW_TARGET, db=db)
    context_id = f"midturn-{uuid.uuid4()}"

    async with connect(first) as client:
        task = await client.send(
            "start", context_id=context_id, data={"log": str(log), "gate": str(gate)}
        )
        assert _question(task) == FIRST_QUESTION
        started = await client.send(
            "killed answer", context_id=context_id, configuration={"blocking": False}
        )
        assert started["id"] == task["id"]
        deadline = time.monotonic() + 10
        while not (log.exists() and log.read_text(encoding="utf-8")):
            assert time.monotonic() < deadline, "the side-effect node never ran"
            await asyncio.sleep(0.02)
        assert (await _get(client, task["id"]))["status"]["state"] == "working"

    assert first.sigkill() == -signal.SIGKILL
    gate.touch()  # the re-answered run must not be held
    second = launch(SLOW_TARGET, db=db)

    async with connect(second) as client:
        recovered = await _get(client, task["id"])
        assert _question(recovered) == FIRST_QUESTION  # nothing after the question was kept
        moved = await client.send("second try", context_id=context_id)
        assert moved["id"] == task["id"]
        assert _question(moved) == SECOND_QUESTION
        done = await client.send("nothing", context_id=context_id)
        assert done["status"]["state"] == "completed"
        assert done["artifacts"][0]["parts"][0]["data"] == {
            "first": "second try",
            "second": "nothing",
        }
    assert log.read_text(encoding="utf-8").splitlines() == ["killed answer", "second try"]
