"""The log lines: their two formats, a line per request and per task state change over HTTP,
the start-up summary, and what never appears in them (credentials, message contents)."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest

from llamon_agent import Agent
from llamon_agent.server.logs import (
    JSONFormatter,
    TextFormatter,
    configure_logging,
    fields,
    log_level,
)
from tests.conftest import serve

from .conftest import LogLines

KEY = "alice-key-7f3a9c1e5b"
SECRET_TEXT = "my passport no. M1234567"


def _record(msg: str = "request", *, exc: bool = False, **values: Any) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            import sys

            info = sys.exc_info()
    record = logging.LogRecord("llamon_agent.requests", logging.INFO, __file__, 1, msg, (), info)
    record.__dict__.update(fields(**values))
    record.created = 1767225600.5  # 2026-01-01T00:00:00.500Z
    return record


def test_json_lines_put_fields_beside_the_standard_keys() -> None:
    line = JSONFormatter().format(_record(method="tasks/get", status=200, message="not mine"))
    assert json.loads(line) == {
        "time": "2026-01-01T00:00:00.500Z", "level": "info", "logger": "llamon_agent.requests",
        "message": "request", "method": "tasks/get", "status": 200,
    }
    assert "\n" not in line
    failed = json.loads(JSONFormatter().format(_record(exc=True)))
    assert failed["exception"].startswith("Traceback")
    assert failed["exception"].endswith("RuntimeError: boom")


def test_text_lines_quote_what_could_forge_a_field() -> None:
    line = TextFormatter().format(_record(
        method="message/send", context="a b", task='x" state=completed', path="/\nINFO fake",
        status=200, client=None,
    ))
    assert line == (
        '2026-01-01T00:00:00.500Z INFO llamon_agent.requests: request method=message/send '
        'context="a b" task="x\\" state=completed" path="/\\nINFO fake" status=200 client=null'
    )


def test_configure_logging_respects_a_configured_process() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("xml", "info")
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("json", "loud")
    assert log_level("TRACE") == 5 and log_level("warning") == logging.WARNING
    # pytest has handlers on the root logger: a host's logging is left alone
    assert configure_logging("json", "info", io.StringIO()) is False


async def test_a_line_per_request_and_per_task_state(
    log_lines: LogLines, example_agents: list[Agent]
) -> None:
    async with serve(example_agents, api_keys={"alice": KEY}) as client:
        client.http.headers["X-API-Key"] = KEY
        task = await client.send(SECRET_TEXT, context_id="ctx-7", agent_id="document-review")
        await client.call("tasks/get", {"id": "missing"})
        assert (await client.http.get("/healthz?token=s3cret")).status_code == 200
        refused = await client.http.post("/", json={}, headers={"X-API-Key": "wrong-key"})
        assert refused.status_code == 401

    requests = log_lines.events("request")
    for line in requests:
        assert isinstance(line.pop("time"), str) and line.pop("duration_ms") >= 0
    common = {"level": "info", "logger": "llamon_agent.requests", "message": "request",
              "event": "request", "client": "127.0.0.1"}
    assert requests == [
        {**common, "method": "message/send", "outcome": "ok", "status": 200,
         "principal": "alice", "path": "/"},
        {**common, "method": "tasks/get", "outcome": "-32001", "status": 200,
         "principal": "alice", "path": "/"},
        {**common, "method": "GET /healthz", "outcome": "ok", "status": 200,
         "principal": "anonymous", "path": "/healthz"},
        {**common, "method": "other", "outcome": "401", "status": 401,
         "principal": "anonymous", "path": "/"},
    ]
    tasks = [{k: line[k] for k in ("logger", "message", "task", "context", "agent",
                                   "principal", "state")}
             for line in log_lines.events("task")]
    assert tasks == [
        {"logger": "llamon_agent.tasks", "message": "task state", "task": task["id"],
         "context": "ctx-7", "agent": "document-review", "principal": "alice", "state": state}
        for state in ("submitted", "working", "input-required")
    ]
    text = log_lines.text
    for secret in (KEY, "wrong-key", SECRET_TEXT, "M1234567", "s3cret", "어떤 서류"):
        assert secret not in text


async def test_the_start_up_summary(log_lines: LogLines, example_agents: list[Agent]) -> None:
    async with serve(example_agents, api_keys={"alice": KEY}, reviewer_token="r",
                     metrics_token="m", public_url="https://agents.example/"):
        pass
    lines = [line["message"] for line in log_lines.events("startup")]
    assert lines[4].startswith("authentication: API keys")  # as authentication names its mode
    assert lines[:4] + lines[5:] == [
        "serving 6 agents: document-review, until-done, email-assistant, loan, risk, finalize",
        "card URL: https://agents.example/",
        "database: :memory:",
        "events: in process",
        "reviewer endpoints (/reviews): on",
        "metrics (/metrics): behind a bearer token",
    ]
    assert KEY not in log_lines.text
