"""Spaces (core/principal.py): whose tasks a call may reach, and how the store keys them.

The HTTP side (two principals with API keys, every method and endpoint) is
tests/security/test_isolation.py; these drive the runtime and the stores directly.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from llamon_agent.a2a.types import MessageSendParams
from llamon_agent.core.principal import (
    ANONYMOUS,
    Principal,
    context_key,
    space_of,
    split_key,
)
from llamon_agent.errors import TaskNotFoundError
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect
from tests.conftest import durable_db, on_backend, send_params

from .helpers import DOC_QUESTION, doc_agent

FIXTURE = Path(__file__).parents[1] / "stores" / "fixtures" / "llamon-v1.sqlite3"


def params(text: str, **kw: Any) -> MessageSendParams:
    return MessageSendParams.model_validate(send_params(text, **kw))


def test_keys_are_unique_per_space_and_cannot_be_forged() -> None:
    alice, bob = space_of("alice"), space_of("bob")
    internal = space_of("alice", internal=True)
    keys = {context_key(s, "case-123") for s in (ANONYMOUS, alice, bob, internal)}
    assert len(keys) == 4
    assert context_key(ANONYMOUS, "case-123") == "case-123"  # older stores keep their keys
    for space in (ANONYMOUS, alice, internal):
        assert split_key(context_key(space, "case-123")) == (space, "case-123")
    with pytest.raises(ValueError):
        Principal("al\x1fice")
    with pytest.raises(ValueError):
        Principal("")


@pytest.mark.usefixtures("backend")
async def test_two_callers_with_one_context_id_hold_two_conversations() -> None:
    alice, bob = space_of("alice"), space_of("bob")
    async with on_backend() as backend, backend.manager([doc_agent()]) as m:
        first = await m.send(params("이 서류를 검증해줘", context_id="case-123"), space=alice)
        # an authenticated caller's graph asks with state["thread_id"]: the client's own id
        assert first.status.state == "input-required", first.status
        assert first.status.message is not None
        assert first.status.message.parts[0].text == DOC_QUESTION  # type: ignore[union-attr]
        assert first.context_id == "case-123"

        theirs = await m.send(params("이 서류를 검증해줘", context_id="case-123"), space=bob)
        assert theirs.id != first.id and theirs.status.state == "input-required"

        answered = await m.send(params("여권", context_id="case-123"), space=alice)
        assert answered.id == first.id and answered.context_id == "case-123"
        assert (await m.get_task(theirs.id, space=bob)).status.state == "input-required"

        for call in (
            m.get_task(first.id, space=bob),
            m.cancel(first.id, space=bob),
            m.resubscribe(first.id, None, space=bob),
            m.send(params("여권", task_id=first.id), space=bob),
        ):
            with pytest.raises(TaskNotFoundError):
                await call
        assert await m.context_agent("case-123", space=space_of("carol")) is None


async def test_an_older_file_opens_and_its_rows_belong_to_anonymous(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    shutil.copy(FIXTURE, db)
    conn = connect(str(db))
    try:
        store = SQLiteTaskStore(conn)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(llamon_tasks)")}
        assert {"space", "updated"} <= columns
        counts = await store.count_by_state()
        waiting = counts.get("input-required", 0)
        assert waiting > 0
        assert await store.count_in_state(ANONYMOUS, "input-required") == waiting
        assert await store.count_in_state("alice", "input-required") == 0
        assert await store.oldest_in_state("input-required") is None  # no known age yet
        await store.ping()
    finally:
        conn.close()
    # opening twice adds nothing twice
    again = sqlite3.connect(db)
    try:
        SQLiteTaskStore(again)
    finally:
        again.close()


@pytest.mark.usefixtures("backend")
async def test_a_new_callers_task_is_stored_under_its_space(tmp_path: Path) -> None:
    alice = space_of("alice")
    async with on_backend(durable_db(tmp_path, "spaces.sqlite3")) as backend, \
            backend.manager([doc_agent()]) as m:
        storage = backend.storage
        task = await m.send(params("이 서류를 검증해줘", context_id="case-123"), space=alice)
        assert await storage.tasks.count_in_state(alice, "input-required") == 1
        assert await storage.tasks.count_in_state(ANONYMOUS, "input-required") == 0
        assert (await storage.tasks.oldest_in_state("input-required") or 0) > 0
        stored = await storage.tasks.latest_in_context(context_key(alice, "case-123"))
        assert stored is not None and stored.id == task.id and stored.space == alice
        assert await storage.tasks.latest_in_context("case-123") is None
