"""Shared builders for the tool-review tests: seed texts, a scripted model, servers, REST."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent import Agent
from tests.conftest import A2AClient, serve

SEED_REQUEST = "Send an email to alice@example.com about Meeting: The meeting is at 10."
TWO_REQUEST = "Send an email to alice@example.com and bob@example.com about Meeting: Hi."
SEED_ARGS = {"to": "alice@example.com", "subject": "Meeting", "body": "The meeting is at 10."}
EDITED_ARGS = {"to": "alice@example.com", "subject": "Meeting moved", "body": "The meeting is at 11."}
THREE = ["approve", "edit", "reject"]

# seed 000, the pending_review example (verbatim)
SEED_PAYLOAD: dict[str, Any] = {
    "action_requests": [
        {
            "name": "send_email",
            "args": {
                "to": "alice@example.com",
                "subject": "Meeting",
                "body": "The meeting is at 10.",
            },
            "description": "Tool `send_email` menunggu persetujuan",
        }
    ],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]}
    ],
}

# seed 000, "Pesan error" (exact), and our English wording of the same sentences
MESSAGES: dict[str, dict[str, str]] = {
    "id": {
        "no_pending": "Tidak ada aksi yang menunggu persetujuan di percakapan ini",
        "review_pending": "Masih ada aksi yang menunggu persetujuan. Kirim keputusannya dulu.",
        "count_2_1": "Butuh 2 keputusan (satu per aksi), diterima 1",
        "count_1_2": "Butuh 1 keputusan (satu per aksi), diterima 2",
        "count_1_0": "Butuh 1 keputusan (satu per aksi), diterima 0",
        "postpone": "Jenis keputusan 'postpone' tidak dikenal. Pilihan: ['approve', 'edit', 'reject']",
        "none": "Jenis keputusan None tidak dikenal. Pilihan: ['approve', 'edit', 'reject']",
        "respond": "Jenis keputusan 'respond' tidak dikenal. Pilihan: ['approve', 'edit', 'reject']",
        "edit_needs": "Keputusan 'edit' wajib menyertakan 'edited_action'",
        "shape": "'edited_action' harus berisi 'name' (teks) dan 'args' (objek)",
        "respond_needs": "Keputusan 'respond' wajib menyertakan 'message' (teks)",
        "description": "Tool `send_email` menunggu persetujuan",
        "summary": "Menunggu persetujuan: send_email",
    },
    "en": {
        "no_pending": "There is no action awaiting approval in this conversation",
        "review_pending": "There are still actions awaiting approval. Send the decisions first.",
        "count_2_1": "Need 2 decisions (one per action), received 1",
        "count_1_2": "Need 1 decisions (one per action), received 2",
        "count_1_0": "Need 1 decisions (one per action), received 0",
        "postpone": "Decision type 'postpone' is not recognised. Options: ['approve', 'edit', 'reject']",
        "none": "Decision type None is not recognised. Options: ['approve', 'edit', 'reject']",
        "respond": "Decision type 'respond' is not recognised. Options: ['approve', 'edit', 'reject']",
        "edit_needs": "An 'edit' decision must include 'edited_action'",
        "shape": "'edited_action' must contain 'name' (text) and 'args' (object)",
        "respond_needs": "A 'respond' decision must include 'message' (text)",
        "description": "Tool `send_email` is awaiting approval",
        "summary": "Awaiting approval: send_email",
    },
}
LANGUAGES = ("id", "en")


def payload(args: Mapping[str, Any] = SEED_ARGS, language: str = "id",
            allowed: list[str] | None = None) -> dict[str, Any]:
    """A one-``send_email`` pending_review in ``language``."""
    return {
        "action_requests": [
            {"name": "send_email", "args": dict(args),
             "description": MESSAGES[language]["description"]}
        ],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": allowed or list(THREE)}
        ],
    }


def edit(args: Mapping[str, Any] = EDITED_ARGS, name: str = "send_email") -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": name, "args": dict(args)}}


def call(name: str, args: dict[str, Any], call_id: str) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


class ScriptedModel(BaseChatModel):
    """Answers with the next scripted message; remembers every prompt it was given."""

    replies: list[AIMessage]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        reply = self.replies.pop(0) if self.replies else AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@dataclass
class Rest:
    """The REST API and the A2A endpoint of one in-process server, and its outbox."""

    client: A2AClient
    outbox: Outbox

    @property
    def http(self) -> httpx.AsyncClient:
        return self.client.http

    async def chat(self, message: Any, thread_id: str | None = None, *, language: str = "id",
                   **extra: Any) -> httpx.Response:
        body = {"message": message, "thread_id": thread_id, **extra}
        return await self.http.post("/hitl/chat", json=body, headers={"Accept-Language": language})

    async def review(self, thread_id: Any, decisions: Any, *, language: str = "id") -> httpx.Response:
        body = {"thread_id": thread_id, "decisions": decisions}
        return await self.http.post("/hitl/review", json=body,
                                    headers={"Accept-Language": language})

    async def pending(self, message: str = SEED_REQUEST, *, language: str = "id") -> dict[str, Any]:
        """A thread whose actions wait: the 200 body of ``/hitl/chat``."""
        response = await self.chat(message, language=language)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["pending_review"] is not None, body
        return body


@asynccontextmanager
async def rest_server(agent: Agent | None = None, outbox: Outbox | None = None,
                      **kwargs: Any) -> AsyncIterator[Rest]:
    """The email assistant (or ``agent``) on an in-memory server, with a private outbox."""
    outbox = outbox or Outbox(":memory:")
    async with serve([agent or email_assistant(outbox)], **kwargs) as client:
        yield Rest(client, outbox)
    outbox.close()


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["type"] == "tool"]
