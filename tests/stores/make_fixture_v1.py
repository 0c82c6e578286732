"""Writes ``fixtures/llamon-v1.sqlite3``: tasks of the example agents waiting, stored by the release
before typed stored-task fields (``extra`` as a string-keyed object). Kept to show how the fixture
was made; it must be run with that release's code, not today's:

    .venv/bin/python -m tests.stores.make_fixture_v1

``test_upgrade.py`` opens a copy and answers every waiting task.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.orchestrator.helpers import HIGH_RISK, serve_app

FIXTURE = Path(__file__).parent / "fixtures" / "llamon-v1.sqlite3"
EMAIL = "Send an email to alice@example.com about Meeting: The meeting is at 10."
INTERRUPT_ON = {"search_contacts": {"allowedDecisions": ["approve"]}}


async def _make(db: Path) -> dict[str, Any]:
    from app.main import AGENTS

    made: dict[str, Any] = {}
    async with serve_app(AGENTS, db=str(db), reviewer_token="t", review_wait=0.3) as h:
        c = h.client
        doc = await c.send("이 서류를 검증해줘", context_id="v1-doc", agent_id="document-review")
        made["doc"] = doc["status"]["state"]
        bday = await c.send("이 서류를 검증해줘", context_id="v1-bday", agent_id="document-review")
        bday = await c.send("여권", context_id="v1-bday")
        made["bday"] = bday["status"]["state"]
        note = await c.send("take notes", context_id="v1-notes", agent_id="until-done")
        note = await c.send("buy milk", context_id="v1-notes")
        made["notes"] = note["status"]["state"]
        params: dict[str, Any] = {
            "message": {"kind": "message", "role": "user", "messageId": "v1-email-1",
                        "contextId": "v1-email", "parts": [{"kind": "text", "text": EMAIL}]},
            "metadata": {"agentId": "email-assistant", "interruptOn": INTERRUPT_ON},
        }
        email = await c.result("message/send", params)
        made["email"] = email["status"]["state"]
        _, review_id = await h.to_review(dict(HIGH_RISK, applicant="V1"))
        made["loan_review"] = review_id
    return made


def main() -> None:
    FIXTURE.parent.mkdir(exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{FIXTURE}{suffix}").unlink(missing_ok=True)
    print(json.dumps(asyncio.run(_make(FIXTURE)), ensure_ascii=False))
    with sqlite3.connect(FIXTURE) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    for suffix in ("-wal", "-shm"):
        Path(f"{FIXTURE}{suffix}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
