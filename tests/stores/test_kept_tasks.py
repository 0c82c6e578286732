"""Large tasks kept decoded and encoded between turns (llamon_agent/stores/kept_tasks.py).

A task's row is its whole history: before, every answer to a task of 2,000 messages decoded it
(17.5 ms of the event loop) and encoded its next version whole (7.8 ms). Now a row whose bytes
are those this process wrote or read last is not decoded again, and a version that appends to
the kept one's history is encoded from the kept bytes. What must hold: the JSON is byte for
byte ``Task.to_json()``, a row written elsewhere is read as it is, and a deleted task leaves
nothing behind.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.nodes import until_done_graph
from llamon_agent import Agent
from llamon_agent.a2a import task_json
from llamon_agent.a2a.types import Artifact, DataPart, Message, Task, TaskStatus, TextPart
from llamon_agent.stores import kept_tasks
from llamon_agent.stores.kept_tasks import MIN_BYTES, KeptTasks, StaleKeptTaskError
from tests.conftest import A2AClient, durable_db, serve, user_message

KiB = 1024


def message(text: str, role: str = "user", **fields: Any) -> Message:
    return Message(message_id=uuid.uuid4().hex, role=role,  # type: ignore[arg-type]
                   parts=[TextPart(kind="text", text=text)], **fields)


def task(history: list[Message], **fields: Any) -> Task:
    fields.setdefault("status", TaskStatus(state="input-required"))
    return Task(id="t-1", context_id="c-1", history=history, **fields)


def large_task(messages: int = 200) -> Task:
    return task([message(f"answer {n} " + "x" * 100) for n in range(messages)])


@pytest.fixture
def unverified(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's own setting: what is returned is compared here, not by the suite's checks."""
    monkeypatch.setattr(task_json, "VERIFY", False)


# ---------------------------------------------------------------------------- decoding


@pytest.mark.usefixtures("unverified")
def test_the_bytes_kept_give_the_kept_object_and_other_bytes_nothing() -> None:
    kept = KeptTasks()
    first = large_task()
    data = first.to_json()
    assert len(data) >= MIN_BYTES
    kept.remember("t-1", data, first)
    assert kept.recall("t-1", bytes(bytearray(data))) is first  # equal bytes, another object
    assert kept.recall("t-1", data[:-1] + b" ") is None
    assert kept.recall("t-2", data) is None  # kept per task
    assert kept.recall("t-1", data.decode()) is None  # only the bytes a store returns


def test_a_small_task_is_not_kept() -> None:
    kept = KeptTasks()
    small = task([message("hi")])
    kept.remember("t-1", small.to_json(), small)
    assert kept.held_bytes == 0
    assert kept.recall("t-1", small.to_json()) is None


@pytest.mark.usefixtures("unverified")
def test_bounded_in_bytes_the_least_recently_used_dropped_first() -> None:
    tasks = [large_task() for _ in range(4)]
    sizes = [len(t.to_json()) for t in tasks]
    kept = KeptTasks(max_bytes=sum(sizes[:3]) + 10)
    for n, t in enumerate(tasks[:3]):
        kept.remember(f"t-{n}", t.to_json(), t)
    assert kept.recall("t-0", tasks[0].to_json()) is tasks[0]  # now the most recently used
    kept.remember("t-3", tasks[3].to_json(), tasks[3])
    assert kept.recall("t-1", tasks[1].to_json()) is None
    assert [kept.recall(f"t-{n}", tasks[n].to_json()) for n in (0, 2, 3)] == [
        tasks[0], tasks[2], tasks[3]]
    assert kept.held_bytes == sizes[0] + sizes[2] + sizes[3]


def test_a_task_over_the_bound_is_not_kept_and_its_older_version_goes() -> None:
    older, larger = large_task(100), large_task(400)
    kept = KeptTasks(max_bytes=len(older.to_json()) + 10)
    kept.remember("t-1", older.to_json(), older)
    kept.remember("t-1", larger.to_json(), larger)
    assert kept.held_bytes == 0
    assert kept.recall("t-1", older.to_json()) is None


def test_forget() -> None:
    kept = KeptTasks()
    t = large_task()
    kept.remember("t-1", t.to_json(), t)
    kept.forget("t-1")
    kept.forget("t-2")  # not kept: nothing to do
    assert kept.held_bytes == 0
    assert kept.recall("t-1", t.to_json()) is None


def test_the_suite_catches_a_kept_task_changed_in_place() -> None:
    assert task_json.VERIFY  # tests/conftest.py
    kept = KeptTasks()
    t = large_task()
    kept.remember("t-1", t.to_json(), t)
    assert t.history is not None
    t.history[0].parts.append(TextPart(kind="text", text="changed"))  # what the runtime never does
    with pytest.raises(StaleKeptTaskError, match="t-1"):
        kept.recall("t-1", kept._entries["t-1"][0])


# ---------------------------------------------------------------------------- encoding

texts = st.text(max_size=40)
metadata = st.none() | st.dictionaries(st.sampled_from(["a", "b", "history"]),
                                       st.integers() | texts, max_size=2)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    parts: list[Any] = [TextPart(kind="text", text=draw(texts))]
    if draw(st.booleans()):  # a key named like the task's field, in the JSON before it
        parts.append(DataPart(kind="data", data={"history": [draw(texts)], "n": 1}))
    return Message(message_id=uuid.uuid4().hex, role=draw(st.sampled_from(["user", "agent"])),
                   parts=parts, metadata=draw(metadata), task_id=draw(st.none() | texts))


def statuses() -> st.SearchStrategy[TaskStatus]:
    return st.builds(TaskStatus, state=st.sampled_from(["working", "input-required", "completed"]),
                     message=st.none() | messages(), timestamp=st.none() | texts)


def artifacts() -> st.SearchStrategy[list[Artifact] | None]:
    artifact = st.builds(Artifact, artifact_id=texts, parts=st.lists(
        st.builds(TextPart, kind=st.just("text"), text=texts), min_size=1, max_size=2))
    return st.none() | st.lists(artifact, max_size=2)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.lists(messages(), min_size=1, max_size=6),
       added=st.lists(messages(), max_size=3),
       status=statuses(), new_status=statuses(), arts=artifacts(), new_arts=artifacts(),
       meta=metadata, new_meta=metadata)
def test_a_version_that_appends_is_encoded_as_pydantic_encodes_it(
    before: list[Message], added: list[Message], status: TaskStatus, new_status: TaskStatus,
    arts: list[Artifact] | None, new_arts: list[Artifact] | None,
    meta: dict[str, Any] | None, new_meta: dict[str, Any] | None,
) -> None:
    kept = KeptTasks(min_bytes=1)
    first = task(before, status=status, artifacts=arts, metadata=meta)
    assert kept.encode(first) == first.to_json()
    then = first.model_copy(update={"history": [*before, *added], "status": new_status,
                                    "artifacts": new_arts, "metadata": new_meta})
    data = kept.encode(then)
    assert data == then.to_json()
    assert kept.recall("t-1", data) is then  # the new version is the one kept


@pytest.mark.usefixtures("unverified")
def test_a_history_that_does_not_begin_with_the_kept_messages_is_encoded_whole() -> None:
    kept = KeptTasks(min_bytes=1)
    first = large_task(3)
    assert first.history is not None
    kept.encode(first)
    old = first.history[0]
    # an equal id, other words: only the same objects' JSON may be cut from the kept bytes
    replaced = old.model_copy(update={"parts": [TextPart(kind="text", text="other words")]})
    for history in ([replaced, *first.history[1:], message("more")],  # a message replaced
                    first.history[:2],  # shorter
                    [message("new"), *first.history]):  # prepended
        then = first.model_copy(update={"history": history})
        assert kept.encode(then) == then.to_json()


def test_the_suite_catches_a_kept_message_changed_in_place() -> None:
    kept = KeptTasks(min_bytes=1)
    first = large_task(3)
    kept.encode(first)
    assert first.history is not None
    first.history[0].parts.append(TextPart(kind="text", text="changed"))
    then = first.model_copy(update={"history": [*first.history, message("more")]})
    with pytest.raises(StaleKeptTaskError, match="t-1"):
        kept.encode(then)


# ---------------------------------------------------------------------------- another replica's row


def shares_kept_messages(got: Task, kept: Task) -> bool:
    """Whether ``got`` holds ``kept``'s message objects: the new row was not decoded whole."""
    old, new = kept.history or [], got.history or []
    return len(new) >= len(old) > 0 and all(a is b for a, b in zip(old, new, strict=False))


def next_turn_elsewhere(stored: bytes, added: list[Message], **update: Any) -> bytes:
    """The next version's row as another replica writes it: it reads ``stored`` whole (it has
    nothing kept), appends ``added`` and changes ``update``'s fields."""
    there = KeptTasks(min_bytes=1)
    theirs = there.decode("t-1", stored)
    then = theirs.model_copy(update={"history": [*(theirs.history or []), *added], **update})
    row = there.encode(then)
    assert row == then.to_json()
    return row


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.lists(messages(), min_size=1, max_size=6),
       added=st.lists(messages(), max_size=3),
       status=statuses(), new_status=statuses(), arts=artifacts(), new_arts=artifacts(),
       meta=metadata, new_meta=metadata, more=messages())
def test_a_row_another_replica_appended_to_is_decoded_from_its_new_part(
    before: list[Message], added: list[Message], status: TaskStatus, new_status: TaskStatus,
    arts: list[Artifact] | None, new_arts: list[Artifact] | None,
    meta: dict[str, Any] | None, new_meta: dict[str, Any] | None, more: Message,
) -> None:
    here = KeptTasks(min_bytes=1)
    first = task(before, status=status, artifacts=arts, metadata=meta)
    row = next_turn_elsewhere(here.encode(first), added, status=new_status,
                              artifacts=new_arts, metadata=new_meta)
    got = here.decode("t-1", row)
    assert got == Task.model_validate_json(row)
    assert got.to_json() == row
    assert shares_kept_messages(got, first)
    assert here.recall("t-1", row) is got
    # its bytes are this process's encoding now: the next version is spliced from them
    later = got.model_copy(update={"history": [*(got.history or []), more]})
    assert here.encode(later) == later.to_json()


@pytest.mark.usefixtures("unverified")
def test_a_row_that_is_not_the_kept_one_appended_to_is_decoded_whole() -> None:
    first = large_task(3)
    assert first.history is not None
    stored = first.to_json()
    replaced = first.history[0].model_copy(
        update={"parts": [TextPart(kind="text", text="other words")]})
    newer = message("from a newer release").to_json()[:-1] + b',"fromANewerRelease":true}'
    rows = {
        "an earlier message changed": next_turn_elsewhere(stored, [message("more")], history=[
            replaced, *first.history[1:]]),
        "a message dropped": next_turn_elsewhere(stored, [], history=first.history[1:]),
        "a field the model drops, in a new message": stored[:-2] + b"," + newer + b"]}",
        "the kept messages' JSON written otherwise": stored.replace(b'"kind":"message",', b""),
    }
    for why, row in rows.items():
        assert row != stored, why
        here = KeptTasks(min_bytes=1)
        here.encode(first)
        got = here.decode("t-1", row)
        assert got == Task.model_validate_json(row), why
        assert not shares_kept_messages(got, first), why
        # decoded whole: its next version is encoded whole, not spliced from bytes it did not write
        later = got.model_copy(update={"history": [*(got.history or []), message("more")]})
        assert here.encode(later) == later.to_json(), why


@pytest.mark.usefixtures("unverified")
def test_the_kept_messages_inside_the_status_are_not_taken_for_the_history() -> None:
    """A ``"history"`` key before the task's own, holding the kept messages' very JSON: the
    cut there leaves a task whose history key is elsewhere, so the row is decoded whole."""
    first = large_task(3)
    assert first.history is not None
    quoted = [orjson.loads(m.to_json()) for m in first.history]
    status = TaskStatus(state="input-required", message=Message(
        message_id="q", role="agent", parts=[DataPart(kind="data", data={
            "n": 1, "history": quoted})]))
    row = next_turn_elsewhere(first.to_json(), [message("more")], status=status)
    assert row.index(b',"history":[' + first.to_json().split(b',"history":[')[1][:200]) < (
        row.index(b'"status"') + len(status.to_json()))  # the quoted messages come first
    here = KeptTasks(min_bytes=1)
    here.encode(first)
    got = here.decode("t-1", row)
    assert got == Task.model_validate_json(row)
    assert got.to_json() == row


def test_an_unreadable_row_after_the_kept_messages_raises_as_a_whole_decoding_does() -> None:
    here = KeptTasks(min_bytes=1)
    first = large_task(3)
    stored = here.encode(first)
    broken = stored[:-2] + b',{"kind":"message"}]}'  # a message without its fields
    with pytest.raises(ValueError, match="message"):
        here.decode("t-1", broken)
    assert here.recall("t-1", stored) is first  # what was kept stays


# ---------------------------------------------------------------------------- message ids


@pytest.mark.usefixtures("unverified")
def test_the_message_ids_of_a_kept_task_and_of_the_versions_that_append_to_it() -> None:
    kept = KeptTasks(min_bytes=1)
    first = large_task(3)
    assert first.history is not None
    assert kept.message_ids(first) is None  # not kept
    kept.encode(first)
    ids = kept.message_ids(first)
    assert ids == {m.message_id for m in first.history}
    assert kept.message_ids(first) is ids  # asked once
    added = message("more")
    then = first.model_copy(update={"history": [*first.history, added]})
    kept.encode(then)
    assert kept.message_ids(then) == ids | {added.message_id}
    assert kept.message_ids(first) is None  # no longer the version kept
    # a version that does not append: its ids are its own, not the kept ones' plus
    other = task([message("elsewhere")])
    kept.encode(other)
    assert kept.message_ids(other) == {other.history[0].message_id}  # type: ignore[index]


# ---------------------------------------------------------------------------- on the wire


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the task JSON decoded (``Task.model_validate_json``) while the test runs."""
    sizes: list[int] = []
    validate = Task.model_validate_json

    def counted(data: Any, *args: Any, **kwargs: Any) -> Task:
        sizes.append(len(data))
        return validate(data, *args, **kwargs)

    monkeypatch.setattr(Task, "model_validate_json", counted)
    return sizes


def notes_agent() -> Agent:
    return Agent("until-done", until_done_graph())


async def answer(client: A2AClient, found: dict[str, Any], text: str) -> dict[str, Any]:
    return await client.result("message/send", {"message": user_message(
        text, task_id=found["id"], context_id=found["contextId"])})


async def long_task(client: A2AClient, answers: int) -> dict[str, Any]:
    """An ``until-done`` task that has taken ``answers`` answers of 200 characters."""
    found = await client.send("start", agent_id="until-done")
    for n in range(answers):
        found = await answer(client, found, f"{n:03d} " + "x" * 196)
    assert found["status"]["state"] == "input-required"
    return found


def rewrite_row(db: str, task_id: str, change: Any) -> None:
    """``change(task JSON as a dict)`` written to the task's row past the server, as another
    replica would write it."""
    if db.startswith("postgresql"):
        import psycopg

        with psycopg.connect(db) as pg:
            [(raw,)] = pg.execute("SELECT task FROM llamon_tasks WHERE id = %s",
                                  (task_id,)).fetchall()
            value = orjson.loads(raw)
            change(value)
            pg.execute("UPDATE llamon_tasks SET task = %s WHERE id = %s",
                       (orjson.dumps(value), task_id))
        return
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        [(raw,)] = conn.execute("SELECT task FROM llamon_tasks WHERE id = ?",
                                (task_id,)).fetchall()
        value = orjson.loads(raw)
        change(value)
        with conn:
            conn.execute("UPDATE llamon_tasks SET task = ? WHERE id = ?",
                         (orjson.dumps(value), task_id))
    finally:
        conn.close()


@pytest.mark.usefixtures("backend")
async def test_a_message_id_from_early_in_a_long_history_is_refused_as_delivered(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The duplicate check of a long history reads the kept ids: the first answer's id, 60
    messages back, is still a duplicate, and the task stays as it was."""
    monkeypatch.setattr(kept_tasks, "KEPT", KeptTasks())  # the server's own
    async with serve([notes_agent()], db=durable_db(tmp_path)) as client:
        found = await long_task(client, 30)
        first_answer = found["history"][2]
        assert first_answer["role"] == "user" and len(found["history"]) == 61
        again = user_message("again", task_id=found["id"], context_id=found["contextId"])
        again["messageId"] = first_answer["messageId"]
        body = await client.call("message/send", {"message": again})
        assert body["error"]["data"] == {"taskId": found["id"],
                                         "messageId": first_answer["messageId"],
                                         "reason": "duplicate message"}
        assert await client.result("tasks/get", {"id": found["id"]}) == found
        fresh = await answer(client, found, "a new one")  # a new id is taken
        assert fresh["history"][-1]["parts"][0]["text"] == "a new one"


@pytest.mark.usefixtures("backend")
async def test_a_long_task_is_answered_without_decoding_it_and_a_row_written_elsewhere_is_read(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, decoded: list[int]
) -> None:
    kept = KeptTasks()  # the server's own: tasks of 16 KiB and more
    monkeypatch.setattr(kept_tasks, "KEPT", kept)
    db = durable_db(tmp_path)
    async with serve([notes_agent()], db=db) as client:
        found = await long_task(client, 50)
        assert kept.held_bytes >= MIN_BYTES
        decoded.clear()
        found = await answer(client, found, "one more")
        got = await client.result("tasks/get", {"id": found["id"]})
        assert decoded == []  # neither the answer's routing nor the read decoded the task
        assert got == found
        assert [m["parts"][0]["text"] for m in got["history"] if m["role"] == "user"][-2:] == [
            "049 " + "x" * 196, "one more"]

        def elsewhere(value: dict[str, Any]) -> None:
            value["history"][1]["parts"][0]["text"] = "written by another replica"
            # what the model drops or writes otherwise, as a newer release might store it
            value["history"][3]["fromANewerRelease"] = True
            del value["history"][5]["kind"]

        rewrite_row(db, found["id"], elsewhere)
        got = await client.result("tasks/get", {"id": found["id"]})
        assert got["history"][1]["parts"][0]["text"] == "written by another replica"
        assert len(decoded) == 1  # the changed row was decoded
        found = await answer(client, got, "and another")
        assert found["history"][1]["parts"][0]["text"] == "written by another replica"
        assert found["history"][-1]["parts"][0]["text"] == "and another"
        # the next version is the model's JSON, not the foreign row's bytes carried on
        assert "fromANewerRelease" not in found["history"][3]
        assert all(m["kind"] == "message" for m in found["history"])
        assert await client.result("tasks/get", {"id": found["id"]}) == found

        deleted = await client.http.delete(f"/contexts/{found['contextId']}")
        assert deleted.status_code == 200, deleted.text
        assert kept.held_bytes == 0  # a deleted task leaves nothing behind in memory either


async def test_two_replicas_answering_a_long_task_in_turn_decode_only_what_the_other_added(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, decoded: list[int]
) -> None:
    """Two replicas on one PostgreSQL database, each with the kept tasks of its own process
    (swapped in for each of its requests), answer one long task in turn: each reads a row the
    other wrote. Before, each answer decoded the whole task there."""
    replicas = [KeptTasks(), KeptTasks()]  # the server's own: tasks of 16 KiB and more
    async with serve([notes_agent()], db=postgres_url) as first, \
            serve([notes_agent()], db=postgres_url) as second:
        clients = (first, second)

        def on(replica: int) -> A2AClient:
            monkeypatch.setattr(kept_tasks, "KEPT", replicas[replica])
            return clients[replica]

        found = await on(0).send("start", agent_id="until-done")
        for n in range(60):
            found = await answer(on(n % 2), found, f"{n:03d} " + "x" * 196)
        assert all(kept.held_bytes >= MIN_BYTES for kept in replicas)
        decoded.clear()
        for n in range(4):
            found = await answer(on(n % 2), found, f"turn {n}")
            assert decoded and max(decoded) < 2 * KiB, decoded  # the other's new part alone
            decoded.clear()
        assert [m["parts"][0]["text"] for m in found["history"] if m["role"] == "user"][-5:] == [
            "059 " + "x" * 196, "turn 0", "turn 1", "turn 2", "turn 3"]
        assert len(found["history"]) == 1 + 2 * 64
        for replica in (0, 1):
            assert await on(replica).result("tasks/get", {"id": found["id"]}) == found
        # the first replica decodes the second's last turn, the second has its own row
        assert len(decoded) == 1 and decoded[0] < 2 * KiB, decoded


@pytest.mark.usefixtures("unverified")
def test_a_status_full_of_history_keys_is_looked_through_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each ``"history"`` key before the task's own is compared with the kept messages' bytes:
    a status holding thousands of them, each followed by most of those bytes, would cost that
    many scans of them. A few are looked at; past them, the row is decoded whole."""
    first = large_task(3)
    assert first.history is not None
    quoted = [orjson.loads(m.to_json()) for m in first.history]
    keys = {f"k{n}": {"n": n, "history": quoted[:2]} for n in range(200)}
    status = TaskStatus(state="input-required", message=Message(
        message_id="q", role="agent", parts=[DataPart(kind="data", data=keys)]))
    row = next_turn_elsewhere(first.to_json(), [message("more")], status=status)
    for looked_at, shared in ((kept_tasks._HISTORY_KEYS_LOOKED_AT, False), (201, True)):
        monkeypatch.setattr(kept_tasks, "_HISTORY_KEYS_LOOKED_AT", looked_at)
        here = KeptTasks(min_bytes=1)
        here.encode(first)
        got = here.decode("t-1", row)
        assert got == Task.model_validate_json(row)
        # past the keys looked at, the task's own (the 201st) is not reached
        assert shares_kept_messages(got, first) is shared


@pytest.mark.usefixtures("backend")
async def test_a_listing_decodes_only_the_messages_it_shows_of_a_long_task(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, decoded: list[int]
) -> None:
    """``ListTasks`` shows no history unless ``historyLength`` asks for some: a long task it
    lists, and has not kept, is not decoded whole (``_codec.decode``, ``history``)."""
    monkeypatch.setattr(kept_tasks, "KEPT", KeptTasks())
    async with serve([notes_agent()], db=durable_db(tmp_path)) as client:
        found = await long_task(client, 50)
        monkeypatch.setattr(kept_tasks, "KEPT", KeptTasks())  # as after a start

        async def listing(**params: Any) -> dict[str, Any]:
            response = await client.http.post("/", headers={"A2A-Version": "1.0"}, json={
                "jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                "params": {"contextId": found["contextId"], **params}})
            [task] = response.json()["result"]["tasks"]
            return dict(task)

        decoded.clear()
        assert "history" not in await listing()
        last_two = await listing(historyLength=2)
        assert [m["messageId"] for m in last_two["history"]] == [
            m["messageId"] for m in found["history"][-2:]]
        assert decoded and max(decoded) < 2 * KiB, decoded  # 101 messages, 30 KB stored
        assert kept_tasks.KEPT.held_bytes == 0
        every = await listing(historyLength=1000)
        assert len(every["history"]) == len(found["history"]) == 101
