"""Issue 10, quotas per principal: the request rate (HTTP 429 with ``Retry-After``, at the HTTP
layer), open streams (``-32004`` naming the quota); off by default; nothing stored when refused.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from app.main import AGENTS
from llamon_agent import cli
from llamon_agent.core.principal import Principal, context_key, space_of
from llamon_agent.errors import QuotaExceededError
from llamon_agent.server.principal import PRINCIPAL_SCOPE_KEY
from llamon_agent.server.quotas import Quotas
from llamon_agent.server.rate_limit import RateLimit, TokenBuckets, rate_limited_path
from llamon_agent.server.stream_quota import StreamQuota
from llamon_agent.settings import Settings
from tests.conftest import assert_valid, rpc, send_params, serve
from tests.orchestrator.helpers import serve_app
from tests.security.helpers import Gate, two_principals

RATE_LIMITED = {"detail": "rate limit"}
SLOW = 0.01  # requests per second: no token comes back while a test runs


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# ---------------------------------------------------------------- the token buckets


def test_a_bucket_grants_its_burst_then_says_how_long_to_wait() -> None:
    clock = Clock()
    buckets = TokenBuckets(2.0, 3, clock=clock)
    assert [buckets.take("alice") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("alice") == pytest.approx(0.5)
    clock.now += 0.25
    assert buckets.take("alice") == pytest.approx(0.25)  # a refused request takes nothing
    clock.now += 0.25
    assert buckets.take("alice") == 0.0
    clock.now += 100  # refills to the burst, never beyond
    assert [buckets.take("alice") for _ in range(4)][-1] > 0


def test_each_principal_has_its_own_bucket() -> None:
    buckets = TokenBuckets(1.0, 1, clock=Clock())
    assert buckets.take("alice") == 0.0
    assert buckets.take("alice") > 0
    assert buckets.take("bob") == 0.0


def test_memory_is_bounded_least_recently_used_first_out() -> None:
    clock = Clock()
    buckets = TokenBuckets(1.0, 1, max_principals=2, clock=clock)
    buckets.take("a")
    buckets.take("b")
    buckets.take("a")  # "a" is now the most recently used
    buckets.take("c")
    assert len(buckets) == 2
    assert buckets.take("a") > 0  # still remembered: still empty
    assert buckets.take("b") == 0.0  # forgotten: a full bucket again
    for n in range(1000):
        buckets.take(f"p{n}")
    assert len(buckets) == 2


def test_a_clock_that_goes_back_refills_nothing() -> None:
    clock = Clock()
    buckets = TokenBuckets(1.0, 1, clock=clock)
    buckets.take("a")
    clock.now -= 50
    assert buckets.take("a") > 0


@pytest.mark.parametrize(("method", "path", "limited"), [
    ("POST", "/", True), ("GET", "/", False), ("POST", "/hitl/chat", True),
    ("POST", "/hitl/review", True), ("GET", "/hitl/openapi.json", False),
    ("GET", "/.well-known/agent-card.json", False), ("GET", "/healthz", False),
    ("GET", "/reviews", False),
])
def test_the_rate_limited_paths_are_the_authenticated_ones(
    method: str, path: str, limited: bool
) -> None:
    assert rate_limited_path(method, path) is limited


async def test_the_middleware_reads_the_principal_authentication_left() -> None:
    """Pure ASGI: the principal comes from the scope; over the rate the app is never called."""
    called: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        called.append(scope[PRINCIPAL_SCOPE_KEY].name)
        await Response(b"{}", media_type="application/json")(scope, receive, send)

    middleware = RateLimit(app, TokenBuckets(SLOW, 1, clock=Clock()))

    async def call(name: str) -> list[Message]:
        sent: list[Message] = []

        async def send(message: Message) -> None:
            sent.append(message)

        async def receive() -> Message:
            raise AssertionError("the body is never read")

        scope = {"type": "http", "method": "POST", "path": "/",
                 PRINCIPAL_SCOPE_KEY: Principal(name)}
        await middleware(scope, receive, send)
        return sent

    assert (await call("alice"))[0]["status"] == 200
    refused = await call("alice")
    assert refused[0]["status"] == 429
    assert dict(refused[0]["headers"])[b"retry-after"] == str(math.ceil(1 / SLOW)).encode()
    assert refused[1]["body"] == b'{"detail":"rate limit"}'
    assert (await call("bob"))[0]["status"] == 200
    assert called == ["alice", "bob"]


# ---------------------------------------------------------------- the request rate over HTTP


@pytest.mark.usefixtures("backend")
async def test_quotas_are_off_by_default() -> None:
    assert Quotas() == Quotas.from_settings(Settings.from_env({}))
    async with serve(AGENTS) as client:
        for n in range(30):
            body = await client.call("tasks/get", {"id": f"t-{n}"})
            assert body["error"]["code"] == -32001


@pytest.mark.usefixtures("backend")
async def test_over_the_rate_is_429_with_retry_after_and_nothing_is_stored() -> None:
    quotas = Quotas(requests_per_second=SLOW, burst=2)
    async with serve_app(AGENTS, quotas=quotas) as harness:
        client = harness.client
        for _ in range(2):
            assert (await client.call("tasks/get", {"id": "t"}))["error"]["code"] == -32001
        response = await client.http.post(
            "/", json=rpc("message/send", send_params("이 서류를 검증해줘", context_id="rl-1")))
        assert response.status_code == 429
        assert response.json() == RATE_LIMITED
        # whole seconds until the next token: 100 at 0.01 per second (99 on a slow machine)
        assert response.headers["retry-after"] in ("99", "100")
        assert response.headers["content-type"] == "application/json"
        chat = await client.http.post("/hitl/chat", json={"message": "hi", "thread_id": "rl-2"})
        assert (chat.status_code, chat.json()) == (429, RATE_LIMITED)
        # the public endpoints are not counted
        card = await client.http.get("/.well-known/agent-card.json")
        assert card.status_code == 200
        assert (await client.http.get("/hitl/openapi.json")).status_code == 200
        assert await harness.manager._store.latest_in_context("rl-1") is None
        assert await harness.manager._store.latest_in_context("rl-2") is None


@pytest.mark.usefixtures("backend")
async def test_each_principal_has_its_own_request_rate() -> None:
    async with two_principals(AGENTS, quotas=Quotas(requests_per_second=SLOW, burst=1)) as pair:
        assert (await pair.alice.call("tasks/get", {"id": "t"}))["error"]["code"] == -32001
        refused = await pair.alice.http.post("/", json=rpc("tasks/get", {"id": "t"}))
        assert (refused.status_code, refused.json()) == (429, RATE_LIMITED)
        assert (await pair.bob.call("tasks/get", {"id": "t"}))["error"]["code"] == -32001
        # authentication comes first: a wrong key is 401, not counted and not limited
        for _ in range(3):
            wrong = await pair.bob.http.post("/", json=rpc("tasks/get", {"id": "t"}),
                                             headers={"X-API-Key": "nope"})
            assert wrong.status_code == 401


# ---------------------------------------------------------------- open streams


class _Sent(Response):
    def __init__(self) -> None:
        super().__init__(b"ok")
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        await super().__call__(scope, receive, send)


async def _send_response(response: Response) -> None:
    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        return None

    await response({"type": "http", "method": "POST", "path": "/"}, receive, send)


async def test_a_stream_counts_until_its_response_has_ended() -> None:
    quota = StreamQuota(1)
    alice, bob = Principal("alice"), Principal("bob")
    inner = _Sent()
    held = await quota.hold(alice, lambda: asyncio.sleep(0, inner))
    assert quota.open_streams(alice) == 1

    opened: list[str] = []

    async def opening() -> Response:
        opened.append("yes")
        return _Sent()

    with pytest.raises(QuotaExceededError) as refused:
        await quota.hold(alice, opening)
    assert opened == []  # refused before anything is opened
    assert refused.value.to_error() == {
        "code": -32004,
        "message": "Quota exceeded: 1 streams already open; close one",
        "data": {"reason": "quota exceeded: open streams", "quota": "max_streams", "max": 1},
    }
    assert refused.value.http_status == 429
    bobs = await quota.hold(bob, opening)  # another principal's streams are not counted
    assert quota.open_streams(bob) == 1

    await _send_response(held)
    assert inner.calls == 1
    assert quota.open_streams(alice) == 0
    await _send_response(bobs)
    assert quota.open_streams(bob) == 0
    assert quota._open == {}  # nothing kept for principals without a stream


async def test_a_stream_that_fails_to_open_or_to_send_is_not_counted() -> None:
    quota = StreamQuota(1)
    alice = Principal("alice")

    async def failing() -> Response:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await quota.hold(alice, failing)
    assert quota.open_streams(alice) == 0

    class Broken(Response):
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            raise ConnectionError("the client left")

    held = await quota.hold(alice, lambda: asyncio.sleep(0, Broken(b"")))
    with pytest.raises(ConnectionError):
        await _send_response(held)
    assert quota.open_streams(alice) == 0


async def test_no_stream_quota_counts_nothing() -> None:
    quota = StreamQuota(None)
    for _ in range(5):
        await quota.hold(Principal("alice"), lambda: asyncio.sleep(0, _Sent()))
    assert quota._open == {}


@pytest.mark.usefixtures("backend")
async def test_one_stream_over_the_quota_is_one_error_event_and_nothing_is_stored() -> None:
    gate = Gate()
    quotas = Quotas(max_streams=1)
    async with two_principals([gate.agent()], quotas=quotas) as pair:
        first = asyncio.create_task(
            pair.alice.stream("message/stream", send_params("wait", context_id="s-1")))
        await asyncio.wait_for(gate.entered.wait(), 10)
        try:
            for method, params in (
                ("message/stream", send_params("quick", context_id="s-2")),
                ("tasks/resubscribe", {"id": "anything"}),
            ):
                events = await pair.alice.stream(method, params, "over")
                assert len(events) == 1, events
                body = events[0]["data"]
                assert_valid("JSONRPCErrorResponse", body)
                assert body == {"jsonrpc": "2.0", "id": "over", "error": {
                    "code": -32004,
                    "message": "Quota exceeded: 1 streams already open; close one",
                    "data": {"reason": "quota exceeded: open streams", "quota": "max_streams",
                             "max": 1},
                }}
            assert await pair.manager._store.latest_in_context("s-2") is None
            # the other methods, and bob's streams, are not limited by alice's
            assert (await pair.alice.send("quick", context_id="s-3"))["status"]["state"] == (
                "completed")
            bob = await pair.bob.stream("message/stream", send_params("quick", context_id="s-1"))
            assert bob[-1]["data"]["result"]["status"]["state"] == "completed"
        finally:
            gate.release.set()
        events = await asyncio.wait_for(first, 10)
        assert events[-1]["data"]["result"]["status"]["state"] == "completed"
        # the first stream ended: alice may open another
        again = await pair.alice.stream("message/stream", send_params("quick", context_id="s-4"))
        assert again[-1]["data"]["result"]["status"]["state"] == "completed"


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize("bad", [
    {"requests_per_second": 0}, {"requests_per_second": -1.0},
    {"requests_per_second": float("inf")}, {"requests_per_second": float("nan")},
    {"burst": 2}, {"requests_per_second": 1, "burst": 0}, {"max_streams": 0},
    {"max_waiting_tasks": -3}, {"max_streams": True},
])
def test_quotas_refuse_values_that_mean_nothing(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Quotas(**bad)


def test_the_burst_defaults_to_one_seconds_worth() -> None:
    assert Quotas(requests_per_second=0.2).bucket_size == 1
    assert Quotas(requests_per_second=7.5).bucket_size == 8
    assert Quotas(requests_per_second=7.5, burst=20).bucket_size == 20


def test_quotas_come_from_the_environment() -> None:
    env = {"LLAMON_QUOTA_RATE": "2.5", "LLAMON_QUOTA_BURST": "10", "LLAMON_QUOTA_STREAMS": "4",
           "LLAMON_QUOTA_WAITING_TASKS": " 20 "}
    assert Quotas.from_settings(Settings.from_env(env)) == Quotas(
        requests_per_second=2.5, burst=10, max_streams=4, max_waiting_tasks=20)
    assert Settings.from_env({"LLAMON_QUOTA_RATE": ""}).quota_rate is None


@pytest.mark.parametrize(("name", "value"), [
    ("LLAMON_QUOTA_RATE", "fast"), ("LLAMON_QUOTA_RATE", "0"), ("LLAMON_QUOTA_RATE", "nan"),
    ("LLAMON_QUOTA_BURST", "1.5"), ("LLAMON_QUOTA_STREAMS", "-1"),
    ("LLAMON_QUOTA_WAITING_TASKS", "many"),
])
def test_a_malformed_quota_variable_names_itself(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})


def _served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    monkeypatch.chdir(tmp_path)
    for name in ("LLAMON_QUOTA_RATE", "LLAMON_QUOTA_BURST", "LLAMON_QUOTA_STREAMS",
                 "LLAMON_QUOTA_WAITING_TASKS", "LLAMON_DB"):
        monkeypatch.delenv(name, raising=False)
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(cli, "create_app", lambda agents, **kw: made.append(kw) or object())
    monkeypatch.setattr(cli, "serve", lambda app, options: None)
    return made


def test_the_cli_flags_set_the_quotas(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    made = _served(monkeypatch, tmp_path)
    cli.main(["serve", "--db", ":memory:", "--quota-rate", "5", "--quota-burst", "9",
              "--quota-streams", "3", "--quota-waiting-tasks", "7"])
    assert made[0]["quotas"] == Quotas(requests_per_second=5.0, burst=9, max_streams=3,
                                       max_waiting_tasks=7)


def test_the_cli_defaults_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made = _served(monkeypatch, tmp_path)
    cli.main(["serve", "--db", ":memory:"])
    assert made[0]["quotas"] == Quotas()
    monkeypatch.setenv("LLAMON_QUOTA_STREAMS", "2")
    cli.main(["serve", "--db", ":memory:", "--quota-rate", "1"])
    assert made[1]["quotas"] == Quotas(requests_per_second=1.0, max_streams=2)


@pytest.mark.parametrize(("argv", "env", "says"), [
    (["--quota-burst", "4"], {}, "burst needs requests_per_second"),
    ([], {"LLAMON_QUOTA_RATE": "soon"}, "LLAMON_QUOTA_RATE"),
])
def test_the_cli_refuses_a_bad_quota_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], env: dict[str, str],
    says: str,
) -> None:
    made = _served(monkeypatch, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--db", ":memory:", *argv])
    assert str(exited.value).startswith("error: ") and says in str(exited.value)
    assert made == []


def test_the_cli_refuses_a_non_positive_rate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _served(monkeypatch, tmp_path)
    with pytest.raises(SystemExit):
        cli.main(["serve", "--quota-rate", "0"])
    assert "--quota-rate: must be more than 0" in capsys.readouterr().err


@pytest.mark.usefixtures("backend")
async def test_an_http_client_sees_no_retry_after_below_the_rate() -> None:
    async with serve(AGENTS, quotas=Quotas(requests_per_second=1000)) as client:
        response: httpx.Response = await client.http.post("/", json=rpc("tasks/get", {"id": "t"}))
        assert response.status_code == 200
        assert "retry-after" not in response.headers


# ---------------------------------------------------------------- tasks waiting for input


@pytest.mark.usefixtures("backend")
async def test_the_waiting_tasks_quota_is_per_principal_and_stores_nothing() -> None:
    async with two_principals(AGENTS, quotas=Quotas(max_waiting_tasks=1)) as pair:
        waiting = await pair.alice.send("이 서류를 검증해줘", context_id="w-1")
        assert waiting["status"]["state"] == "input-required"

        body = await pair.alice.call("message/send", send_params("이 서류를 검증해줘",
                                                                 context_id="w-2"))
        assert_valid("JSONRPCErrorResponse", body)
        assert body["error"]["code"] == -32004
        assert body["error"]["data"] == {
            "reason": "quota exceeded: tasks waiting for input", "quota": "max_waiting_tasks",
            "max": 1,
        }
        events = await pair.alice.stream("message/stream", send_params("이 서류를 검증해줘",
                                                                       context_id="w-3"))
        assert [e["data"]["error"]["data"]["quota"] for e in events] == ["max_waiting_tasks"]
        chat = await pair.alice.http.post("/hitl/chat", json={"message": "hi", "thread_id": "w-4"})
        assert chat.status_code == 429, chat.text  # REST: 429, like the request rate
        for context_id in ("w-2", "w-3", "w-4"):
            assert await pair.manager._store.latest_in_context(
                context_key(space_of("alice"), context_id)) is None

        # bob has his own quota; alice's answer to her waiting task is always taken
        assert (await pair.bob.send("이 서류를 검증해줘", context_id="w-2"))["status"]["state"] == (
            "input-required")
        answered = await pair.alice.send("여권", context_id="w-1")
        assert answered["id"] == waiting["id"]
