"""Seed 004's JSON-RPC conversation (the README's), verbatim, against a real server.

D1...D13 are seed 004's wire rules, docs/hitl.md §5; the seeds: docs/architecture.md."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import assert_valid, parse_sse
from tests.process.conftest import Server

SEED_REQUEST_1 = """
{
  "jsonrpc": "2.0",
  "id": "hitl-001",
  "method": "message/send",
  "params": {
    "message": {
      "messageId": "msg-hitl-001",
      "contextId": "case-123",
      "role": "user",
      "parts": [
        {
          "kind": "text",
          "text": "이 서류를 검증해줘"
        }
      ]
    },
    "metadata": {
      "agentId": "document-review",
      "sessionId": "case-123"
    }
  }
}
"""

SEED_RESPONSE_1 = """
{
  "jsonrpc": "2.0",
  "id": "hitl-001",
  "result": {
    "kind": "task",
    "id": "task-abc",
    "contextId": "case-123",
    "status": {
      "state": "input-required",
      "message": {
        "kind": "message",
        "role": "agent",
        "messageId": "msg-agent-001",
        "taskId": "task-abc",
        "contextId": "case-123",
        "parts": [
          {
            "kind": "text",
            "text": "어떤 서류를 검증할까요?"
          },
          {
            "kind": "data",
            "data": {
              "hitl": {
                "schema": "llamon.hitl.question.v1",
                "question": "어떤 서류를 검증할까요?",
                "options": ["passport", "id_card"],
                "choices": [
                  {
                    "label": "여권",
                    "value": "passport",
                    "description": null
                  },
                  {
                    "label": "주민등록증",
                    "value": "id_card",
                    "description": null
                  }
                ],
                "multi_select": false,
                "free_text_allowed": true
              }
            }
          }
        ]
      }
    }
  }
}
"""

SEED_REQUEST_2 = """
{
  "jsonrpc": "2.0",
  "id": "hitl-002",
  "method": "message/send",
  "params": {
    "message": {
      "messageId": "msg-hitl-002",
      "contextId": "case-123",
      "role": "user",
      "parts": [
        {
          "kind": "text",
          "text": "여권"
        }
      ]
    },
    "metadata": {
      "agentId": "document-review",
      "sessionId": "case-123"
    }
  }
}
"""

SEED_PARTS = json.loads(SEED_RESPONSE_1)["result"]["status"]["message"]["parts"]


async def _post(http: httpx.AsyncClient, literal: str) -> dict[str, Any]:
    """POST the literal bytes, as ``curl -d @request.json -H 'Content-Type: application/json'``."""
    response = await http.post(
        "/", content=literal.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


async def test_seed_curl_conversation(example_server: Server) -> None:
    async with httpx.AsyncClient(base_url=example_server.url, trust_env=False, timeout=30) as http:
        first = await _post(http, SEED_REQUEST_1)
        assert "error" not in first, first
        assert first["jsonrpc"] == "2.0" and first["id"] == "hitl-001"
        assert_valid("SendMessageSuccessResponse", first)
        task = first["result"]
        assert task["kind"] == "task"
        assert task["contextId"] == "case-123"
        assert task["status"]["state"] == "input-required"
        message = task["status"]["message"]
        assert message["kind"] == "message" and message["role"] == "agent"
        assert message["taskId"] == task["id"] and message["contextId"] == "case-123"
        assert message["parts"] == SEED_PARTS  # D1/D2: exactly the seed's parts
        assert "artifacts" not in task or task["artifacts"] == []  # D1: not an output

        second = await _post(http, SEED_REQUEST_2)
        assert "error" not in second, second
        assert second["id"] == "hitl-002"
        assert_valid("SendMessageSuccessResponse", second)
        moved = second["result"]
        assert moved["id"] == task["id"] and moved["contextId"] == "case-123"
        assert moved["status"]["state"] == "input-required"
        assert moved["status"]["message"]["parts"] == [
            {"kind": "text", "text": "생년월일을 알려주세요."},
            {"kind": "data", "data": {"hitl": {"question": "생년월일을 알려주세요."}}},
        ]
        assert [m["messageId"] for m in moved["history"] if m["role"] == "user"] == [
            "msg-hitl-001",
            "msg-hitl-002",
        ]


async def test_seed_conversation_over_message_stream(example_server: Server) -> None:
    """D5: the same parts in the last SSE event, a final status-update; frames are LF-only."""
    request = json.loads(SEED_REQUEST_1)
    request["method"] = "message/stream"
    request["params"]["message"]["contextId"] = "case-123-stream"
    request["params"]["metadata"]["sessionId"] = "case-123-stream"
    async with (
        httpx.AsyncClient(base_url=example_server.url, trust_env=False, timeout=30) as http,
        http.stream("POST", "/", json=request) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = (await response.aread()).decode()
    events = parse_sse(raw.replace("\r\n", "\n"))  # content first; the framing is checked last
    assert events, raw
    for event in events:
        assert event["data"]["id"] == "hitl-001"
        assert_valid("SendStreamingMessageSuccessResponse", event["data"])
    last = events[-1]["data"]["result"]
    assert last["kind"] == "status-update" and last["final"] is True
    assert last["status"]["state"] == "input-required"
    assert last["status"]["message"]["parts"] == SEED_PARTS
    # docs/wire.md §8.3: "Separate lines with \\n (LF), never \\r\\n"
    assert "\r" not in raw, raw[:120]
