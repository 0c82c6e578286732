"""The example app (``app.main:AGENTS``) under a real ``llamon-agent serve``: ``/metrics``,
``/healthz``, ``/readyz`` and its log lines, JSON and text."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import rpc, send_params
from tests.process.conftest import EXAMPLE_TARGET, Launch, Server
from tests.process.conftest import launch as launch  # the fixture

from .series import parse_metrics, value

ASK = "이 서류를 검증해줘"


def _converse(server: Server) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.get("/readyz").json() == {"status": "ok"}
        assert http.get("/").json()["links"]["metrics"] == "/metrics"
        sent = http.post("/", json=rpc("message/send", send_params(
            ASK, context_id="p-1", agent_id="document-review")))
        task = sent.json()["result"]
        assert task["status"]["state"] == "input-required"
        scraped = http.get("/metrics")
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain")
        series = parse_metrics(scraped.text)
        assert value(series, "llamon_requests_total", method="message/send", outcome="ok") == 1
        assert value(series, "llamon_requests_total", method="GET /healthz", outcome="ok") == 1
        assert value(series, "llamon_tasks", state="input-required") == 1
        assert value(series, "llamon_turn_duration_seconds_count", agent="document-review",
                     state="input-required") == 1
        assert value(series, "process_open_fds") > 0
    return task


def test_json_logs_metrics_and_health_of_the_example_app(launch: Launch) -> None:
    server = launch(EXAMPLE_TARGET, extra_args=["--log-level", "info", "--log-format", "json"])
    task = _converse(server)
    server.stop()
    lines = [json.loads(line) for line in server.log().splitlines()]  # every line is JSON
    messages = [line["message"] for line in lines]
    assert ("serving 6 agents: document-review, until-done, email-assistant, loan, risk, "
            "finalize") in messages
    assert "authentication: none: every caller is the principal anonymous" in messages
    assert any(m.startswith("Uvicorn running on http://127.0.0.1:") for m in messages)
    sent = [line for line in lines
            if line.get("event") == "request" and line["method"] == "message/send"]
    assert len(sent) == 1
    assert {k: sent[0][k] for k in ("logger", "outcome", "status", "principal", "path")} == {
        "logger": "llamon_agent.requests", "outcome": "ok", "status": 200,
        "principal": "anonymous", "path": "/",
    }
    states = [(line["task"], line["context"], line["agent"], line["state"])
              for line in lines if line.get("event") == "task"]
    assert states == [(task["id"], "p-1", "document-review", state)
                      for state in ("submitted", "working", "input-required")]
    assert not any("HTTP/1.1" in m for m in messages)  # uvicorn's access log is off
    assert ASK not in server.log()


def test_text_logs_by_default(launch: Launch) -> None:
    server = launch(EXAMPLE_TARGET, extra_args=["--log-level", "info"])
    _converse(server)
    server.stop()
    log = server.log()
    assert " INFO llamon_agent.server: database: " in log
    assert (" INFO llamon_agent.requests: request method=message/send outcome=ok status=200 "
            in log)
    assert " INFO llamon_agent.tasks: task state task=" in log
    assert 'method="GET /healthz"' in log
    assert not log.lstrip().startswith("{")
