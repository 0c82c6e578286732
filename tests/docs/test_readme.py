"""Issue 9: the README's examples are tested.

Its ```python blocks are executed as written (in a temporary directory, offline) and its curl
conversations are replayed, request body by request body, against the example app in process,
checking the response shapes the README documents. A fragment that cannot run on its own is marked
in the README with ``<!-- not-run: reason -->`` on the line above its fence.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shlex
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from tests.conftest import ROOT, A2AClient, assert_valid, parse_sse, serve
from tests.proto import assert_proto

README = ROOT / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_NOT_RUN = re.compile(r"<!--\s*not-run:[^>]*-->\s*$")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    runs: bool


@dataclass(frozen=True)
class Curl:
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None for a GET


def _blocks() -> list[Block]:
    text = README.read_text()
    blocks = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append(Block(match.group(1), match.group(2), not _NOT_RUN.search(before)))
    return blocks


def _python_blocks() -> list[Block]:
    return [b for b in _blocks() if b.lang == "python"]


def _curls(marker: str, *, without: str | None = None) -> list[Curl]:
    """The curl commands of the one bash block containing ``marker`` (and not ``without``)."""
    (block,) = [b for b in _blocks() if b.lang == "bash" and marker in b.code
                and (without is None or without not in b.code)]
    # join continuation lines, drop trailing comments, split into commands at each `curl`
    code = re.sub(r"\\\n", " ", block.code)
    code = "\n".join(re.sub(r"\s+#[^'\n]*$", "", line) for line in code.split("\n"))
    curls = []
    for command in re.split(r"(?=\bcurl\s)", code):
        if not command.startswith("curl"):
            continue
        words = shlex.split(command)
        url = next(w for w in words if w.startswith("http://"))
        headers: dict[str, str] = {}
        body: Any = None
        for flag, value in itertools.pairwise(words):
            if flag == "-H":
                name, _, val = value.partition(":")
                headers[name.strip()] = val.strip()
            elif flag == "-d":
                body = json.loads(value)
        curls.append(Curl(httpx.URL(url).path, headers, body))
    return curls


def _sub(value: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(value).replace(json.dumps(old)[1:-1], new))


async def _post(client: A2AClient, curl: Curl) -> httpx.Response:
    return await client.http.post(curl.path, json=curl.body, headers=curl.headers)


async def _rpc(client: A2AClient, curl: Curl) -> dict[str, Any]:
    response = await _post(client, curl)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    assert body["id"] == curl.body["id"]
    assert "error" not in body, body
    assert_valid("SendMessageSuccessResponse", body)
    return body["result"]


async def _rpc_v1(client: A2AClient, curl: Curl) -> dict[str, Any]:
    """An A2A v1.0 call of the README: its curl names the version, its result is a strict
    ProtoJSON ``SendMessageResponse`` holding a task; the task is returned."""
    assert curl.headers["A2A-Version"] == "1.0"
    response = await _post(client, curl)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    assert body["id"] == curl.body["id"]
    assert "error" not in body, body
    assert_proto("SendMessageResponse", body["result"])
    assert list(body["result"]) == ["task"]
    task: dict[str, Any] = body["result"]["task"]
    return task


def _run(code: str, name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run an example as a module of its own: LangGraph resolves a state's type hints through
    ``sys.modules[State.__module__]``, as it would for the reader's ``mymodule``."""
    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, name, "exec"), module.__dict__)
    return module.__dict__


def _hitl(task: dict[str, Any]) -> dict[str, Any]:
    parts = task["status"]["message"]["parts"]
    assert parts[0]["kind"] == "text"
    hitl: dict[str, Any] = parts[1]["data"]["hitl"]
    return hitl


def _hitl_v1(task: dict[str, Any]) -> dict[str, Any]:
    """The question of a v1.0 task: a text part with the question, then the ``hitl`` data part."""
    message = task["status"]["message"]
    assert message["role"] == "ROLE_AGENT"
    text, data = message["parts"]
    assert list(text) == ["text"] and list(data) == ["data"]
    hitl: dict[str, Any] = data["data"]["hitl"]
    assert text["text"] == hitl["question"]
    return hitl


# --- the Python examples ------------------------------------------------------------------


def test_the_readme_has_python_examples_and_only_marked_fragments_are_skipped() -> None:
    blocks = _python_blocks()
    assert len(blocks) >= 2
    assert sum(not b.runs for b in blocks) <= 2


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_every_python_example_runs_as_written(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = _python_blocks()[index]
    if not block.runs:
        pytest.skip("marked not-run in the README")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLAMON_DB", raising=False)
    _run(block.code, f"README.md python block {index}", monkeypatch)


async def test_writing_an_agent_completes_with_its_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copied verbatim, the example used to complete with no artifact: its node returned
    ``result`` into a state without a ``result`` key and LangGraph dropped it."""
    (block,) = [b for b in _python_blocks() if "create_app([Agent(" in b.code]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLAMON_DB", raising=False)
    namespace = _run(block.code, "README.md Writing an agent", monkeypatch)
    async with LifespanManager(namespace["app"]) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            client = A2AClient(http)
            asked = await client.send("이 서류를 검증해줘", context_id="readme-1")
            assert asked["status"]["state"] == "input-required"
            assert _hitl(asked)["question"] == "어떤 서류를 검증할까요?"
            done = await client.send("여권", context_id="readme-1")
    assert done["status"]["state"] == "completed"
    (artifact,) = done["artifacts"]
    assert artifact["parts"] == [{"kind": "data", "data": {"doc_type": "passport"}}]
    assert (tmp_path / "llamon.sqlite3").exists()  # the documented default file


# --- the curl conversations ------------------------------------------------------------------


async def test_the_seeds_conversation_asks_twice_and_completes_with_the_result() -> None:
    from app.main import AGENTS

    curls = [*_curls('"id": "hitl-001"'), *_curls('"id": "hitl-002"', without="INTERRUPT_ID"),
             *_curls('"id": "hitl-003"')]
    assert [c.body["id"] for c in curls] == ["hitl-001", "hitl-002", "hitl-003"]
    async with serve(AGENTS) as client:
        asked = await _rpc(client, curls[0])
        assert asked["kind"] == "task" and asked["contextId"] == "case-123"
        assert asked["status"]["state"] == "input-required"
        hitl = _hitl(asked)
        assert hitl["schema"] == "llamon.hitl.question.v1"
        assert hitl["question"] == "어떤 서류를 검증할까요?"
        assert hitl["options"] == ["passport", "id_card"]
        assert [c["label"] for c in hitl["choices"]] == ["여권", "주민등록증"]
        assert asked["status"]["message"]["metadata"]["interruptId"]

        birthday = await _rpc(client, curls[1])
        assert birthday["id"] == asked["id"]
        assert birthday["status"]["state"] == "input-required"
        assert _hitl(birthday)["question"] == "생년월일을 알려주세요."

        done = await _rpc(client, curls[2])
    assert done["id"] == asked["id"] and done["status"]["state"] == "completed"
    (artifact,) = done["artifacts"]
    assert artifact["name"] == "result"
    data = [p["data"] for p in artifact["parts"] if p["kind"] == "data"]
    assert data == [{"doc_type": "passport", "birthday": "1990-01-01"}]
    assert any(p["kind"] == "text" for p in artifact["parts"])


async def test_the_seeds_conversation_in_v1_0_asks_twice_and_completes_with_the_result() -> None:
    from app.main import AGENTS

    curls = [*_curls('"id": "v1-001"'), *_curls('"id": "v1-002"')]
    assert [c.body["id"] for c in curls] == ["v1-001", "v1-002", "v1-003"]
    assert {c.body["method"] for c in curls} == {"SendMessage"}
    async with serve(AGENTS) as client:
        asked = await _rpc_v1(client, curls[0])
        assert asked["contextId"] == "case-789"
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        hitl = _hitl_v1(asked)
        assert hitl["schema"] == "llamon.hitl.question.v1"
        assert hitl["question"] == "어떤 서류를 검증할까요?"
        assert hitl["options"] == ["passport", "id_card"]
        assert [c["label"] for c in hitl["choices"]] == ["여권", "주민등록증"]
        assert asked["status"]["message"]["metadata"]["interruptId"]

        birthday = await _rpc_v1(client, curls[1])
        assert birthday["id"] == asked["id"]
        assert birthday["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert _hitl_v1(birthday)["question"] == "생년월일을 알려주세요."

        done = await _rpc_v1(client, curls[2])
    assert done["id"] == asked["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = done["artifacts"]
    assert artifact["name"] == "result"
    assert [p["data"] for p in artifact["parts"] if "data" in p] == [
        {"doc_type": "passport", "birthday": "1990-01-01"}]
    assert any("text" in p for p in artifact["parts"])


async def test_both_versions_ask_the_same_question() -> None:
    """docs/versions.md: the same question text and ``hitl`` data part in v0.3 and v1.0; and
    a question asked in one version is answered in the other (the README says it may be)."""
    from app.main import AGENTS

    (ask_v03,) = _curls('"id": "hitl-001"')
    answer_v03 = _curls('"id": "hitl-002"', without="INTERRUPT_ID")[0]
    (ask_v1,) = _curls('"id": "v1-001"')
    answer_v1 = _curls('"id": "v1-002"')[0]
    async with serve(AGENTS) as client:
        asked_v03 = await _rpc(client, ask_v03)
        asked_v1 = await _rpc_v1(client, ask_v1)
        answered_v1 = await _rpc_v1(client, Curl(
            answer_v1.path, answer_v1.headers, _sub(answer_v1.body, "case-789", "case-123")))
        answered_v03 = await _rpc(client, Curl(
            answer_v03.path, answer_v03.headers, _sub(answer_v03.body, "case-123", "case-789")))
    assert _hitl_v1(asked_v1) == _hitl(asked_v03)
    assert asked_v1["status"]["message"]["parts"][0]["text"] == \
        asked_v03["status"]["message"]["parts"][0]["text"]
    assert answered_v1["id"] == asked_v03["id"] and answered_v03["id"] == asked_v1["id"]
    assert _hitl_v1(answered_v1)["question"] == "생년월일을 알려주세요."
    assert _hitl(answered_v03)["question"] == "생년월일을 알려주세요."


async def test_the_streamed_conversation_ends_with_the_question_as_the_final_event() -> None:
    from app.main import AGENTS

    (curl,) = _curls('"method": "message/stream"')
    assert curl.headers["Accept"] == "text/event-stream"
    async with serve(AGENTS) as client, client.http.stream(
        "POST", curl.path, json=curl.body, headers=curl.headers
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = parse_sse((await response.aread()).decode())
    results = [e["data"]["result"] for e in events]
    assert results[0]["kind"] == "task"
    last = results[-1]
    assert last["kind"] == "status-update" and last["final"] is True
    assert last["status"]["state"] == "input-required" and last["contextId"] == "case-456"
    assert [r.get("final") for r in results].count(True) == 1


async def test_an_answer_bound_to_its_interrupt_id_may_be_sent_again() -> None:
    from app.main import AGENTS

    (ask,) = _curls('"id": "hitl-001"')
    (bound,) = _curls("INTERRUPT_ID")
    async with serve(AGENTS) as client:
        asked = await _rpc(client, ask)
        interrupt_id = asked["status"]["message"]["metadata"]["interruptId"]
        answer = Curl(bound.path, bound.headers, _sub(bound.body, "INTERRUPT_ID", interrupt_id))
        first = await _rpc(client, answer)
        again = await _rpc(client, answer)  # a retry: the task as it stands, nothing runs again
    assert first["status"]["state"] == "input-required"
    assert _hitl(first)["question"] == "생년월일을 알려주세요."
    assert again["id"] == first["id"] and again["status"] == first["status"]


async def test_the_tool_review_rest_conversation() -> None:
    from app.main import AGENTS

    chat, too_many, edit = _curls("/hitl/chat")
    async with serve(AGENTS) as client:
        response = await _post(client, chat)
        assert response.status_code == 200
        turn = response.json()
        assert turn["thread_id"] == "mail-1" and turn["reply"] is None
        review = turn["pending_review"]
        assert [a["name"] for a in review["action_requests"]] == ["send_email"]
        assert review["action_requests"][0]["description"].startswith("Tool `send_email` menunggu")
        assert review["review_configs"] == [
            {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]}]
        assert turn["interrupt_id"]

        response = await _post(client, too_many)
        assert response.status_code == 400
        assert response.json() == {"detail": "Butuh 1 keputusan (satu per aksi), diterima 2"}

        response = await _post(client, edit)
        assert response.status_code == 200
    turn = response.json()
    assert turn["reply"] == "Sent an email to alice@example.com with subject 'Meeting moved'."
    assert turn["pending_review"] is None and turn["interrupt_id"] is None


async def test_the_tool_review_a2a_conversation() -> None:
    from app.main import AGENTS

    ask, reject = _curls('"id": "m1"')
    async with serve(AGENTS) as client:
        asked = await _rpc(client, ask)
        assert asked["status"]["state"] == "input-required"
        hitl = _hitl(asked)
        assert hitl["schema"] == "llamon.hitl.review.v1"
        assert hitl["action_requests"] and hitl["review_configs"]
        after = await _rpc(client, reject)
    assert after["id"] == asked["id"]
    assert after["status"]["state"] in {"completed", "input-required"}


async def test_the_human_review_conversation() -> None:
    from app.main import AGENTS

    ask, answer, listing, decide, get = _curls("LLAMON_REVIEWER_TOKEN=s3cret")
    async with serve(AGENTS, reviewer_token="s3cret", review_wait=0.05) as client:
        asked = await _rpc(client, ask)
        assert asked["status"]["state"] == "input-required"
        assert asked["status"]["message"]["parts"][0]["text"] == "담보가 있습니까?"
        working = await _rpc(client, answer)
        assert working["status"]["state"] == "working"

        response = await client.http.get(listing.path, headers=listing.headers)
        assert response.status_code == 200
        reviews = response.json()
        review_id = reviews[0]["id"] if isinstance(reviews, list) else reviews["reviews"][0]["id"]
        response = await client.http.post(decide.path.replace("REVIEW_ID", review_id),
                                          json=decide.body, headers=decide.headers)
        assert response.status_code == 200
        # the decision resumes the task in the background: ask until it has ended
        get = Curl(get.path, get.headers, _sub(get.body, "TASK_ID", working["id"]))
        for _ in range(500):
            task = (await _post(client, get)).json()["result"]
            if task["status"]["state"] != "working":
                break
            await asyncio.sleep(0.01)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"]
