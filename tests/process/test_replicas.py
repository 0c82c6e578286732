"""Two real ``llamon-agent serve`` processes (replicas A and B) on one PostgreSQL schema and one
Redis prefix, with a two-second lease: every replica scenario of issue 11 on the wire
(docs/operations.md, "Replicas").

1. a question asked through A is answered through B and resumes the same graph;
2. ``tasks/resubscribe`` on B follows a run executing on A, gap-free, and replays after
   ``Last-Event-ID``;
3. 50 concurrent copies of one bound answer spread over A and B: one accepted, the others
   refused as one server refuses them (tests/process/test_bound_answers.py), one run;
4. ``tasks/cancel`` on B stops a run on A;
5. a draft parked by a run on A is decided through B's ``/reviews``;
6. ``kill -9`` of A with 1,000 tasks waiting and runs in flight: B answers the first and takes
   the second over once A's claims lapsed;
7. ``kill -9`` of A between an approved tool's side effect and the turn's checkpoint: B takes
   the run over and the email is sent once (tests/process/test_takeover_kill.py on SQLite).
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.outbox import Outbox
from tests.backends import fresh_schema
from tests.backends_redis import fresh_prefix
from tests.conftest import A2AClient, parse_sse, rpc, send_params
from tests.observability.series import parse_metrics, value
from tests.orchestrator.helpers import (
    AUTH,
    DRAFT_WITH_COLLATERAL,
    HIGH_RISK,
    QUESTION_PARTS,
    TOKEN,
    WAITING_TEXT,
    artifact_data,
    review_id_of,
)
from tests.process.agents import FIRST_QUESTION, SECOND_QUESTION, pause_files
from tests.process.conftest import Launch, Server, connect, start_server
from tests.process.test_restart import BIRTHDAY_QUESTION, DOC_QUESTION, _get, _question
from tests.process.test_takeover_kill import (
    PAUSING_TARGET,
    approve_until_paused,
    ask_for_approval,
)

pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

TARGET = "tests.process.agents:EXAMPLE_AND_SLOW_AGENTS"
SLOW = "slow-side-effect"
ASK = "이 서류를 검증해줘"
#: short, so takeovers come within seconds; not shorter, so that a replica whose event loop is
#: busy (B answers 32 requests at a time in the kill -9 test) still renews its own claims
LEASE = 2.0
#: a takeover comes within 1.5 leases of the last heartbeat; the rest is the test's slack
TAKEOVER = 15.0
ENDED = {"completed", "failed", "rejected", "canceled"}
#: seconds a replica may take to answer after its start (a loaded machine imports slowly)
STARTUP = 60.0


# ---------------------------------------------------------------------------- helpers


def replica_args(redis_prefix: str) -> list[str]:
    return ["--events", f"redis://127.0.0.1:6379/0?prefix={redis_prefix}", "--lease", str(LEASE)]


def both(start: Callable[[], Server]) -> list[Server]:
    """Two servers started together (they create the schema under one advisory lock)."""
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(start) for _ in range(2)]
    started = [f.result() for f in futures if f.exception() is None]
    for future in futures:
        if (error := future.exception()) is not None:
            for server in started:
                server.stop()
            raise error
    return started


async def replicas(
    launch: Launch, postgres_url: str, redis_prefix: str, target: str
) -> tuple[Server, Server]:
    """A and B of one test (the kill -9 tests: they end a replica)."""
    a, b = await asyncio.to_thread(both, lambda: launch(
        target, db=postgres_url, extra_args=replica_args(redis_prefix), startup_timeout=STARTUP))
    return a, b


@dataclass(frozen=True)
class Pair:
    a: Server
    b: Server
    db: str

    @property
    def servers(self) -> Sequence[Server]:
        return (self.a, self.b)


@pytest.fixture(scope="module")
def pair(postgres_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """A and B shared by the scenarios that end no replica (each uses contexts of its own):
    two server starts instead of ten. The reviewer endpoints are on (scenario 5)."""
    folder = tmp_path_factory.mktemp("replicas")
    with fresh_schema(postgres_database) as db, fresh_prefix() as prefix:
        a, b = both(lambda: start_server(TARGET, db, folder, replica_args(prefix),
                                         startup_timeout=STARTUP,
                                         env={"LLAMON_REVIEWER_TOKEN": TOKEN}))
        try:
            yield Pair(a, b, db)
        finally:
            a.stop()
            b.stop()


def context(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def bound(text: str, task: dict[str, Any], message_id: str | None = None) -> dict[str, Any]:
    """An answer bound to the task's pending question (``metadata.interruptId``)."""
    params = send_params(text, context_id=task["contextId"], message_id=message_id)
    params["message"]["metadata"] = {
        "interruptId": task["status"]["message"]["metadata"]["interruptId"]}
    return params


async def until(check: Callable[[], Awaitable[bool]], what: str,
                timeout: float = TAKEOVER) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await check():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"not within {timeout}s: {what}") from None


async def until_state(client: A2AClient, task_id: str, states: set[str],
                      timeout: float = TAKEOVER) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        seen["task"] = await _get(client, task_id)
        return seen["task"]["status"]["state"] in states

    await until(reached, f"task {task_id} in {sorted(states)} (last: {seen.get('task')})",
                timeout)
    return dict(seen["task"])


async def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def sse(server: Server, method: str, params: Any, into: list[dict[str, Any]],
              headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """An SSE response read frame by frame into ``into`` (so a test sees it while it lasts)."""
    async with (
        httpx.AsyncClient(base_url=server.url, trust_env=False, timeout=60) as http,
        http.stream("POST", "/", json=rpc(method, params), headers=headers or {}) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        buffer = ""
        async for chunk in response.aiter_text():
            buffer += chunk
            while "\n\n" in buffer:
                frame, buffer = buffer.split("\n\n", 1)
                into.extend(parse_sse(frame + "\n\n"))
    return into


def summary(events: list[dict[str, Any]]) -> list[tuple[str | None, str, str | None, Any]]:
    """``(id, kind, state, final)`` of each frame."""
    out = []
    for event in events:
        result = event["data"]["result"]
        state = result["status"]["state"] if "status" in result else None
        out.append((event["id"], result["kind"], state, result.get("final")))
    return out


def texts(task: dict[str, Any]) -> list[str]:
    return [m["parts"][0]["text"] for m in task["history"]]


# ---------------------------------------------------------------------------- 1. answer anywhere


async def test_a_question_asked_through_a_is_answered_through_b(pair: Pair) -> None:
    a, b = pair.servers
    ctx = context("anywhere")
    async with connect(a) as on_a, connect(b) as on_b:
        asked = await on_a.send(ASK, context_id=ctx, agent_id="document-review")
        assert _question(asked) == DOC_QUESTION
        assert await _get(on_b, asked["id"]) == await _get(on_a, asked["id"])

        moved = await on_b.send("여권", context_id=ctx)  # by contextId only
        assert moved["id"] == asked["id"]
        assert _question(moved) == BIRTHDAY_QUESTION

        done = await on_a.send("1990-01-01", context_id=ctx)
        assert done["id"] == asked["id"]
        assert done["status"]["state"] == "completed", done["status"]
        assert done["artifacts"][0]["parts"] == [
            {"kind": "data", "data": {"doc_type": "passport", "birthday": "1990-01-01"}},
            {"kind": "text", "text": "Document review ready: passport, date of birth 1990-01-01."},
        ]
        from_a, from_b = await _get(on_a, asked["id"]), await _get(on_b, asked["id"])
    assert from_a == from_b
    assert from_a["status"] == done["status"]
    assert texts(from_a) == [ASK, DOC_QUESTION, "여권", BIRTHDAY_QUESTION, "1990-01-01"]


# ---------------------------------------------------------------------------- 2. resubscribe


async def test_resubscribe_on_b_follows_a_run_on_a_without_a_gap(
    pair: Pair, tmp_path: Path
) -> None:
    a, b = pair.servers
    log, gate = tmp_path / "follow.log", tmp_path / "follow.gate"
    ctx = context("follow")
    async with connect(a) as on_a:
        first = await on_a.send("start", context_id=ctx, agent_id=SLOW,
                                data={"log": str(log), "gate": str(gate), "sleep": 0})
    assert _question(first) == FIRST_QUESTION

    on_a_stream: list[dict[str, Any]] = []
    streaming = asyncio.create_task(
        sse(a, "message/stream", send_params("followed", context_id=ctx), on_a_stream))
    await until(lambda: _true(log.exists() and log.read_text() != ""), "the run on A started")
    followed: list[dict[str, Any]] = []
    following = asyncio.create_task(sse(b, "tasks/resubscribe", {"id": first["id"]}, followed))
    await until(lambda: _true(len(followed) >= 2), "B's snapshot and the events so far")
    gate.touch()
    async with asyncio.timeout(TAKEOVER):
        await asyncio.gather(streaming, following)

    # A's own stream: the turn's task, working, then the second question
    assert summary(on_a_stream) == [
        ("4", "task", "working", None),
        ("5", "status-update", "working", False),
        ("6", "status-update", "input-required", True),
    ]
    assert on_a_stream[-1]["data"]["result"]["status"]["message"]["parts"][0]["text"] == (
        SECOND_QUESTION)
    # B: the snapshot, then every event of the turn after it, numbered without a gap
    assert summary(followed) == [
        (None, "task", "working", None),
        ("5", "status-update", "working", False),
        ("6", "status-update", "input-required", True),
    ]
    assert [e["data"]["result"] for e in followed] == [e["data"]["result"] for e in on_a_stream]

    # after the end, Last-Event-ID: exactly the events after it
    replay = await sse(b, "tasks/resubscribe", {"id": first["id"]}, [],
                       headers={"Last-Event-ID": "4"})
    assert [(e["id"], e["data"]["result"]) for e in replay] == [
        (e["id"], e["data"]["result"]) for e in on_a_stream[1:]]
    async with connect(a) as on_a, connect(b) as on_b:
        from_a, from_b = await _get(on_a, first["id"]), await _get(on_b, first["id"])
    assert from_a == from_b
    assert from_a["status"] == on_a_stream[-1]["data"]["result"]["status"]
    assert await lines(log) == ["followed"]


async def _true(value: bool) -> bool:
    return value


# ---------------------------------------------------------------------------- 3. 50 copies

COPIES = 50


async def test_fifty_copies_of_a_bound_answer_over_two_replicas_one_is_accepted(
    pair: Pair, tmp_path: Path
) -> None:
    a, b = pair.servers
    log = tmp_path / "race.log"
    ctx = context("race")
    async with connect(a) as on_a:
        first = await on_a.send("start", context_id=ctx, agent_id=SLOW, data={"log": str(log)})
    assert _question(first) == FIRST_QUESTION
    asked = first["status"]["message"]["metadata"]["interruptId"]
    taken = asyncio.Event()

    limits = httpx.Limits(max_connections=COPIES + 2, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=a.url, trust_env=False, timeout=30,
                                 limits=limits) as http_a, \
            httpx.AsyncClient(base_url=b.url, trust_env=False, timeout=30,
                              limits=limits) as http_b:

        async def copy(i: int) -> dict[str, Any]:
            if i >= COPIES // 2:
                await taken.wait()
            body = rpc("message/send", bound("passport", first, f"copy-{i}"), i)
            response = await (http_a if i % 2 == 0 else http_b).post("/", json=body)
            assert response.status_code == 200
            reply: dict[str, Any] = response.json()
            if "result" in reply:
                taken.set()
            return reply

        async def release(early: list[asyncio.Task[dict[str, Any]]]) -> None:
            await asyncio.gather(*early)
            taken.set()  # never leave the late copies waiting, whatever the early ones got

        copies = [asyncio.create_task(copy(i)) for i in range(COPIES)]
        releaser = asyncio.create_task(release(copies[: COPIES // 2]))
        replies = await asyncio.gather(*copies)
        await releaser

    accepted = [r["result"] for r in replies if "result" in r]
    assert len(accepted) == 1, replies
    assert _question(accepted[0]) == SECOND_QUESTION
    second = accepted[0]["status"]["message"]["metadata"]["interruptId"]
    refused = [(r["error"]["code"], r["error"]["data"]["reason"]) for r in replies if "error" in r]
    assert set(refused) <= {(-32004, "task is busy"), (-32602, "stale answer")}, replies
    late = [r for r in replies[COPIES // 2:] if "error" in r]
    assert len(late) == COPIES // 2
    assert all(r["error"]["data"] == {
        "reason": "stale answer", "taskId": first["id"], "interruptId": asked,
        "pendingInterruptId": second,
    } for r in late), late
    assert await lines(log) == ["passport"]  # the graph resumed once

    winner = next(i for i, r in enumerate(replies) if "result" in r)
    async with connect(a) as on_a, connect(b) as on_b:
        now = await _get(on_a, first["id"])
        assert await _get(on_b, first["id"]) == now
        assert _question(now) == SECOND_QUESTION
        assert [m["role"] for m in now["history"]] == ["user", "agent", "user"]
        # the accepted copy, sent again through the other replica, is the task as it stands
        other = on_b if winner % 2 == 0 else on_a
        again = await other.result("message/send", bound("passport", first, f"copy-{winner}"))
    assert again["status"] == now["status"]
    assert len(again["history"]) == 3
    assert await lines(log) == ["passport"]


# ---------------------------------------------------------------------------- 4. cancel


async def test_cancel_on_b_stops_a_run_on_a(pair: Pair, tmp_path: Path) -> None:
    a, b = pair.servers
    log, gate = tmp_path / "cancel.log", tmp_path / "cancel.gate"
    ctx = context("cancel")
    async with connect(a) as on_a:
        first = await on_a.send("start", context_id=ctx, agent_id=SLOW,
                                data={"log": str(log), "gate": str(gate), "sleep": 0})
    assert _question(first) == FIRST_QUESTION

    on_a_stream: list[dict[str, Any]] = []
    streaming = asyncio.create_task(
        sse(a, "message/stream", send_params("held", context_id=ctx), on_a_stream))
    await until(lambda: _true(log.exists() and log.read_text() != ""), "the run on A started")

    async with connect(b) as on_b:
        canceled = await on_b.result("tasks/cancel", {"id": first["id"]})
    assert canceled["id"] == first["id"]
    assert canceled["status"]["state"] == "canceled"
    async with asyncio.timeout(TAKEOVER):
        await streaming
    assert summary(on_a_stream) == [
        ("4", "task", "working", None),
        ("5", "status-update", "working", False),
        ("6", "status-update", "canceled", True),
    ]
    async with connect(a) as on_a:
        stopped = await _get(on_a, first["id"])
    assert stopped["status"]["state"] == "canceled"
    checkpoints = await _checkpoints(pair.db, ctx)  # the cancelled run's, at its exit

    gate.touch()  # the node was cancelled: nothing runs on when its gate opens
    await asyncio.sleep(0.5)
    async with connect(a) as on_a, connect(b) as on_b:
        assert await _get(on_a, first["id"]) == stopped
        assert await _get(on_b, first["id"]) == stopped
    assert await lines(log) == ["held"]
    assert await _checkpoints(pair.db, ctx) == checkpoints  # the node never finished


async def _checkpoints(postgres_url: str, thread_id: str) -> int:
    """LangGraph's checkpoints of a thread: a run that goes on to its next question writes
    one more (``durability="exit"``: one per run)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s",
                                 (thread_id,))
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


# ---------------------------------------------------------------------------- 5. human review


async def test_a_draft_parked_on_a_is_decided_through_b(pair: Pair) -> None:
    a, b = pair.servers
    async with connect(a) as on_a, connect(b) as on_b:
        first = await on_a.send(data=HIGH_RISK, agent_id="loan")
        assert first["status"]["state"] == "input-required"
        assert first["status"]["message"]["parts"] == QUESTION_PARTS
        answered = await on_a.send("예", context_id=first["contextId"],
                                   configuration={"blocking": False})
        assert answered["id"] == first["id"]
        await until(lambda: _parked(on_a, first["id"]), "the run on A parks its draft")
        parked = await _get(on_a, first["id"])
        assert await _get(on_b, first["id"]) == parked
        assert parked["status"]["state"] == "working"
        assert [p["text"] for p in parked["status"]["message"]["parts"]
                if p["kind"] == "text"] == [WAITING_TEXT]
        review_id = review_id_of(parked)

        listed = (await on_b.http.get("/reviews", headers=AUTH)).json()["reviews"]
        assert [(r["id"], r["taskId"], r["draft"]) for r in listed] == [
            (review_id, first["id"], DRAFT_WITH_COLLATERAL)]
        decided = await on_b.http.post(f"/reviews/{review_id}/decision", headers=AUTH,
                                       json={"type": "approve"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["status"] == "decided"

        done = await until_state(on_a, first["id"], ENDED)
        assert done["status"]["state"] == "completed", done["status"]
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]
        assert await _get(on_b, first["id"]) == done
        for client in (on_a, on_b):
            assert (await client.http.get("/reviews", headers=AUTH)).json()["reviews"] == []
            review = (await client.http.get(f"/reviews/{review_id}", headers=AUTH)).json()
            assert (review["status"], review["decision"]) == (
                "decided", {"type": "approve", "edited": None, "message": None})


async def _parked(client: A2AClient, task_id: str) -> bool:
    """Is the task stored as waiting for its reviewer (``working`` with the review)?"""
    status = (await _get(client, task_id))["status"]
    assert status["state"] == "working", status
    return "message" in status


# ---------------------------------------------------------------------------- 6. kill -9

WAITING = 1000
IN_FLIGHT = 3
AT_ONCE = 32


async def test_a_replica_killed_with_waiting_tasks_and_runs_in_flight(
    launch: Launch, postgres_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    a, b = await replicas(launch, postgres_url, redis_prefix, TARGET)
    run = uuid.uuid4().hex[:8]
    limits = httpx.Limits(max_connections=AT_ONCE, max_keepalive_connections=AT_ONCE)

    async def each(server: Server, work: Callable[[A2AClient, int], Awaitable[Any]]) -> list[Any]:
        """``work(client, i)`` for every waiting task, ``AT_ONCE`` at a time."""
        at_once = asyncio.Semaphore(AT_ONCE)
        async with connect(server, limits=limits) as client:
            async def one(i: int) -> Any:
                async with at_once:
                    return await work(client, i)

            return list(await asyncio.gather(*(one(i) for i in range(WAITING))))

    async def ask(client: A2AClient, i: int) -> dict[str, Any]:
        return await client.send(ASK, context_id=f"bulk-{run}-{i}", agent_id="document-review")

    async def answer(client: A2AClient, i: int) -> dict[str, Any]:
        return await client.send("여권", context_id=f"bulk-{run}-{i}")

    asked = await each(a, ask)
    assert [_question(t) for t in asked] == [DOC_QUESTION] * WAITING

    logs = [tmp_path / f"flight-{i}.log" for i in range(IN_FLIGHT)]
    gates = [tmp_path / f"flight-{i}.gate" for i in range(IN_FLIGHT)]
    async with connect(a) as on_a, connect(b) as on_b:
        flying = [await on_a.send("flying", context_id=f"flight-{run}-{i}", agent_id=SLOW,
                                  data={"log": str(logs[i]), "begin_gate": str(gates[i])},
                                  configuration={"blocking": False})
                  for i in range(IN_FLIGHT)]
        for task in flying:  # stored, and held by their gates on A
            await until_state(on_a, task["id"], {"working"})
        seen_on_b = [(await _get(on_b, t["id"]))["status"]["state"] for t in flying]

    assert a.sigkill() == -signal.SIGKILL

    # B answers the waiting tasks while it takes the runs in flight over
    answering = asyncio.create_task(each(b, answer))
    async with connect(b) as on_b:
        await until(lambda: _true(b.log().count("recovery: taking over task") == IN_FLIGHT),
                    f"B takes over the {IN_FLIGHT} runs A left\n{b.log()}")
        for task in flying:  # B runs them again: they wait on their gates, as they did on A
            await until_state(on_b, task["id"], {"working"})
        for gate in gates:
            gate.touch()
        for task in flying:
            asked_again = await until_state(on_b, task["id"], {"input-required"} | ENDED)
            assert _question(asked_again) == FIRST_QUESTION
            assert texts(asked_again) == ["flying"]

        answered = await answering
        assert [t["id"] for t in answered] == [t["id"] for t in asked]
        assert [_question(t) for t in answered] == [BIRTHDAY_QUESTION] * WAITING

        for task in flying:
            moved = await on_b.send("recorded", context_id=task["contextId"])
            assert moved["id"] == task["id"]
            assert _question(moved) == SECOND_QUESTION
            assert texts(moved) == ["flying", FIRST_QUESTION, "recorded"]
        metrics = await on_b.http.get("/metrics")
    for log in logs:
        assert await lines(log) == ["recorded"]  # one run of the side effect, after the answer
    assert metrics.status_code == 200
    series = parse_metrics(metrics.text)
    assert value(series, "llamon_tasks", state="working") == 0  # none left behind
    assert value(series, "llamon_tasks", state="input-required") == WAITING + IN_FLIGHT
    assert b.log().count("recovery: taking over task") == IN_FLIGHT  # each once
    # while A ran them, B read them from the store, which holds each task as its turn began
    # (``submitted``; A's live record said ``working``): running on both, never an end
    assert seen_on_b == ["submitted"] * IN_FLIGHT


# ---------------------------------------------------------------------------- 7. tool, then kill


async def test_a_kill_between_the_tool_and_the_checkpoint_sends_one_email_on_b(
    launch: Launch, postgres_url: str, redis_prefix: str
) -> None:
    a, b = await replicas(launch, postgres_url, redis_prefix, target=PAUSING_TARGET)
    ctx = context("kill")
    arm, paused = pause_files(ctx)
    outbox = Outbox(postgres_url)
    try:
        async with connect(a) as on_a:
            task = await ask_for_approval(on_a, ctx)
        arm.touch()
        await approve_until_paused(a, task, paused)  # A is killed while the tool sleeps
        assert outbox.count(ctx) == 1  # it ran, then A died

        async with connect(b) as on_b:  # B takes the run over once A's claim lapsed
            done = await until_state(on_b, task["id"], ENDED)
        emails = outbox.emails(ctx)
    finally:
        outbox.close()
        arm.unlink(missing_ok=True)
        paused.unlink(missing_ok=True)
    assert done["status"]["state"] == "completed", done["status"]
    assert [(e.to, e.subject, e.tool_call_id) for e in emails] == [
        ("alice@example.com", "Meeting", "call_1")]
    history = [p["text"] for m in done["history"] for p in m["parts"] if p["kind"] == "text"]
    assert not any("Email #2" in t for t in history), history
    assert b.log().count("recovery: taking over task") == 1
