"""Seed 004 flow with the example document-review agent: wire shape, normalisation, re-ask,
model classification and persistence across a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult

from tests.conftest import A2AClient, assert_valid, durable_db, parse_sse, rpc, serve

from .helpers import (
    BIRTHDAY_PARTS,
    BIRTHDAY_QUESTION,
    DOC_PARTS,
    DOC_QUESTION,
    doc_agent,
    question_text,
    result_data,
    state_of,
    status_parts,
)

#: every flow runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

CTX = "case-123"


def fullwidth(ascii_text: str) -> str:
    """The full-width form of ASCII letters (U+FF01..U+FF5E), as an IME types them."""
    return "".join(chr(ord(c) + 0xFEE0) for c in ascii_text)


async def start(client: A2AClient, context_id: str = CTX) -> dict[str, Any]:
    first = await client.send(
        "이 서류를 검증해줘", context_id=context_id, agent_id="document-review"
    )
    assert state_of(first) == "input-required"
    assert status_parts(first) == DOC_PARTS
    return first


async def stream_events(client: A2AClient, params: dict[str, Any]) -> list[dict[str, Any]]:
    """SSE events of message/stream; line endings normalised (not what this file tests)."""
    async with client.http.stream("POST", "/", json=rpc("message/stream", params)) as response:
        assert response.status_code == 200
        raw = (await response.aread()).decode()
    return parse_sse(raw.replace("\r\n", "\n"))


# ---------------------------------------------------------------- wire shape (docs/hitl.md §5: D1, D2, D13)


async def test_option_question_wire_is_exactly_the_seed_payload() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send("이 서류를 검증해줘", context_id=CTX, agent_id="document-review")
    assert_valid("Task", first)
    assert first["kind"] == "task"
    assert first["contextId"] == CTX
    assert first["status"]["state"] == "input-required"
    message = first["status"]["message"]
    assert message["role"] == "agent"
    assert message["kind"] == "message"
    assert message["taskId"] == first["id"]
    assert message["contextId"] == CTX
    assert message["parts"] == DOC_PARTS
    # HITL is a status, not an output: no artifact yet
    assert first.get("artifacts") in (None, [])
    assert message.get("metadata", {}).get("reask") is None


async def test_free_text_question_wire_is_text_plus_hitl_data() -> None:
    async with serve([doc_agent()]) as client:
        await start(client)
        second = await client.send("여권", context_id=CTX)
    assert_valid("Task", second)
    assert state_of(second) == "input-required"
    assert status_parts(second) == BIRTHDAY_PARTS
    assert second.get("artifacts") in (None, [])


async def test_stream_ends_with_final_status_update_carrying_the_question() -> None:
    async with serve([doc_agent()]) as client:
        params = {
            "message": {
                "kind": "message",
                "messageId": "msg-hitl-001",
                "contextId": CTX,
                "role": "user",
                "parts": [{"kind": "text", "text": "이 서류를 검증해줘"}],
            },
            "metadata": {"agentId": "document-review", "sessionId": CTX},
        }
        events = await stream_events(client, params)
    last = events[-1]["data"]["result"]
    assert last["kind"] == "status-update"
    assert last["final"] is True
    assert last["status"]["state"] == "input-required"
    assert last["status"]["message"]["parts"] == DOC_PARTS
    assert not any(e["data"]["result"]["kind"] == "artifact-update" for e in events)


# ---------------------------------------------------------------- normalisation (no model)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("여권", "passport"),
        ("passport", "passport"),
        (" PASSPORT ", "passport"),
        (fullwidth("passport"), "passport"),
        ("Passport\n", "passport"),
        ("주민등록증", "id_card"),
        ("ID_CARD", "id_card"),
        (" 주민등록증 ", "id_card"),
    ],
)
async def test_label_or_value_answer_is_normalised_to_the_value(answer: str, expected: str) -> None:
    async with serve([doc_agent()]) as client:
        first = await start(client)
        second = await client.send(answer, context_id=CTX)
        assert second["id"] == first["id"]
        assert question_text(second) == BIRTHDAY_QUESTION
        done = await client.send("1990-01-01", context_id=CTX)
    assert done["id"] == first["id"]
    assert_valid("Task", done)
    assert result_data(done) == {"doc_type": expected, "birthday": "1990-01-01"}


async def test_free_text_answer_passes_through_untouched() -> None:
    birthday = "  1990년 1월 1일 "
    async with serve([doc_agent()]) as client:
        await start(client)
        await client.send("여권", context_id=CTX)
        done = await client.send(birthday, context_id=CTX)
    assert result_data(done) == {"doc_type": "passport", "birthday": birthday}
    texts = [p["text"] for p in done["artifacts"][0]["parts"] if p["kind"] == "text"]
    assert texts == [f"Document review ready: passport, date of birth {birthday}."]


async def test_free_text_answer_that_looks_like_an_option_is_not_normalised() -> None:
    async with serve([doc_agent()]) as client:
        await start(client)
        await client.send("여권", context_id=CTX)
        done = await client.send(fullwidth("PASSPORT"), context_id=CTX)
    assert result_data(done) == {"doc_type": "passport", "birthday": fullwidth("PASSPORT")}


async def test_unclear_answer_reasks_once_then_falls_back_to_first_option() -> None:
    async with serve([doc_agent()]) as client:
        first = await start(client)
        reask = await client.send("모르겠어", context_id=CTX)
        assert_valid("Task", reask)
        assert reask["id"] == first["id"]
        assert state_of(reask) == "input-required"
        assert status_parts(reask) == DOC_PARTS
        assert reask["status"]["message"]["metadata"]["reask"] is True
        assert reask.get("artifacts") in (None, [])
        again = await client.send("모르겠어", context_id=CTX)
        assert again["id"] == first["id"]
        assert status_parts(again) == BIRTHDAY_PARTS
        assert again["status"]["message"].get("metadata", {}).get("reask") is None
        done = await client.send("1990-01-01", context_id=CTX)
    assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}


async def test_reask_then_clear_answer_uses_that_answer() -> None:
    async with serve([doc_agent()]) as client:
        await start(client)
        reask = await client.send("모르겠어", context_id=CTX)
        assert reask["status"]["message"]["metadata"]["reask"] is True
        second = await client.send("주민등록증", context_id=CTX)
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("2000-02-02", context_id=CTX)
    assert result_data(done) == {"doc_type": "id_card", "birthday": "2000-02-02"}


async def test_data_part_value_answer() -> None:
    async with serve([doc_agent()]) as client:
        first = await start(client)
        second = await client.send(None, context_id=CTX, data={"value": "id_card"})
        assert second["id"] == first["id"]
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send(None, context_id=CTX, data={"value": "1999-12-31"})
    assert result_data(done) == {"doc_type": "id_card", "birthday": "1999-12-31"}


async def test_data_part_label_answer_is_normalised() -> None:
    async with serve([doc_agent()]) as client:
        await start(client)
        await client.send(None, context_id=CTX, data={"value": "주민등록증"})
        done = await client.send("1990-01-01", context_id=CTX)
    assert result_data(done)["doc_type"] == "id_card"


# ---------------------------------------------------------------- classification with a model


class PromptRecorder(BaseCallbackHandler):
    """Records the prompt of every chat-model call, whichever code path the model takes."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.prompts.extend(messages)


def fake_model(*replies: str) -> tuple[GenericFakeChatModel, PromptRecorder]:
    recorder = PromptRecorder()
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content=r) for r in replies]), callbacks=[recorder]
    )
    return model, recorder


class BrokenModel(BaseChatModel):
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "broken"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        raise RuntimeError("model is down")


def prompt_text(prompt: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in prompt)


async def test_model_classifies_an_ambiguous_answer_with_one_call() -> None:
    model, recorder = fake_model("id_card")
    async with serve([doc_agent(llm=model)]) as client:
        first = await start(client)
        second = await client.send("신분증으로 할게요", context_id=CTX)
        assert second["id"] == first["id"]
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("1990-01-01", context_id=CTX)
    assert result_data(done) == {"doc_type": "id_card", "birthday": "1990-01-01"}
    assert len(recorder.prompts) == 1
    text = prompt_text(recorder.prompts[0])
    for needle in (DOC_QUESTION, "여권", "passport", "주민등록증", "id_card", "신분증으로 할게요"):
        assert needle in text, (needle, text)


async def test_exact_label_match_makes_no_model_call() -> None:
    model, recorder = fake_model("id_card")
    async with serve([doc_agent(llm=model)]) as client:
        await start(client)
        await client.send("여권", context_id=CTX)
        done = await client.send("몰라요 아무거나", context_id=CTX)  # free text: no model either
    assert result_data(done) == {"doc_type": "passport", "birthday": "몰라요 아무거나"}
    assert recorder.prompts == []


async def test_model_answering_garbage_leads_to_a_reask() -> None:
    model, recorder = fake_model("I think it is a banana")
    async with serve([doc_agent(llm=model)]) as client:
        first = await start(client)
        reask = await client.send("음 글쎄요", context_id=CTX)
        assert reask["id"] == first["id"]
        assert state_of(reask) == "input-required"
        assert status_parts(reask) == DOC_PARTS
        assert reask["status"]["message"]["metadata"]["reask"] is True
        second = await client.send("주민등록증", context_id=CTX)
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("1990-01-01", context_id=CTX)
    assert result_data(done)["doc_type"] == "id_card"
    assert len(recorder.prompts) == 1


async def test_model_garbage_twice_falls_back_to_first_option() -> None:
    model, recorder = fake_model("UNKNOWN", "UNKNOWN")
    async with serve([doc_agent(llm=model)]) as client:
        await start(client)
        reask = await client.send("음 글쎄요", context_id=CTX)
        assert reask["status"]["message"]["metadata"]["reask"] is True
        second = await client.send("잘 모르겠네요", context_id=CTX)
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("1990-01-01", context_id=CTX)
    assert result_data(done)["doc_type"] == "passport"
    assert len(recorder.prompts) == 2


async def test_model_raising_leads_to_a_reask_not_failure() -> None:
    model = BrokenModel()
    async with serve([doc_agent(llm=model)]) as client:
        first = await start(client)
        reask = await client.send("음 글쎄요", context_id=CTX)
        assert reask["id"] == first["id"]
        assert state_of(reask) == "input-required"
        assert status_parts(reask) == DOC_PARTS
        assert reask["status"]["message"]["metadata"]["reask"] is True
        got = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(got) == "input-required"
        second = await client.send("여권", context_id=CTX)
        assert status_parts(second) == BIRTHDAY_PARTS
    assert model.calls == 1


# ---------------------------------------------------------------- persistence across a restart


async def test_pending_question_survives_a_restart(tmp_path: Path) -> None:
    db = durable_db(tmp_path, "x.sqlite3")
    async with serve([doc_agent()], db=db) as client:
        first = await start(client)
    async with serve([doc_agent()], db=db) as client:
        got = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(got) == "input-required"
        assert status_parts(got) == DOC_PARTS
        second = await client.send("여권", context_id=CTX)
        assert second["id"] == first["id"]
        assert status_parts(second) == BIRTHDAY_PARTS
    async with serve([doc_agent()], db=db) as client:
        done = await client.send("1990-01-01", context_id=CTX)
    assert done["id"] == first["id"]
    assert result_data(done) == {"doc_type": "passport", "birthday": "1990-01-01"}


async def test_reask_state_survives_a_restart(tmp_path: Path) -> None:
    db = durable_db(tmp_path, "x.sqlite3")
    async with serve([doc_agent()], db=db) as client:
        await start(client)
        reask = await client.send("모르겠어", context_id=CTX)
        assert reask["status"]["message"]["metadata"]["reask"] is True
    async with serve([doc_agent()], db=db) as client:
        second = await client.send("모르겠어", context_id=CTX)  # second unclear: fallback
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("1990-01-01", context_id=CTX)
    assert result_data(done)["doc_type"] == "passport"
