"""``GET /``: JSON for programs, HTML for browsers, every link answering; ``POST /`` is still
JSON-RPC and other methods a JSON 405."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from llamon_agent import Agent
from llamon_agent.server.landing import wants_html
from tests.conftest import serve

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
LINKS = {
    "agentCard": "/.well-known/agent-card.json",
    "hitlOpenapi": "/hitl/openapi.json",
    "healthz": "/healthz",
    "readyz": "/readyz",
    "metrics": "/metrics",
    "playground": "/playground",
}


class _State(TypedDict, total=False):
    result: Any


def _agent(agent_id: str, name: str, description: str) -> Agent:
    graph = StateGraph(_State)
    graph.add_node("done", lambda state: {"result": 1})
    graph.add_edge(START, "done")
    return Agent(agent_id, graph, name=name, description=description)


HOSTILE = _agent("tricky", "<b>Tricky</b>", 'Says "<script>alert(1)</script>" & more')
PLAIN = _agent("plain", "Plain", "A plain agent")


async def test_json_lists_the_agents_and_links() -> None:
    async with serve([PLAIN, HOSTILE]) as client:
        response = await client.http.get("/")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.headers["vary"] == "Accept"
        assert response.json() == {
            "name": "llamon-agent",
            "description": "Agents: Plain, <b>Tricky</b>",
            "protocol": "A2A v0.3, JSON-RPC 2.0 at POST /",
            "agents": [
                {"id": "plain", "name": "Plain", "description": "A plain agent"},
                {"id": "tricky", "name": "<b>Tricky</b>",
                 "description": 'Says "<script>alert(1)</script>" & more'},
            ],
            "links": LINKS,
            "metricsNeedToken": False,
        }
        for path in LINKS.values():
            linked = await client.http.get(path)
            assert linked.status_code == 200, (path, linked.text)


async def test_a_browser_gets_an_escaped_page_without_scripts() -> None:
    async with serve([PLAIN, HOSTILE], metrics_token="m") as client:
        response = await client.http.get("/", headers={"Accept": BROWSER})
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"
        page = response.text
        assert "<script>" not in page and "<b>Tricky</b>" not in page
        assert "&lt;b&gt;Tricky&lt;/b&gt;" in page
        assert "Says &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot; &amp; more" in page
        assert "<code>plain</code> <strong>Plain</strong>: A plain agent" in page
        for path in LINKS.values():
            assert f'<a href="{path}">{path}</a>' in page
        assert "Bearer</code> token" in page  # /metrics needs the token here
        head = await client.http.head("/", headers={"Accept": BROWSER})
        assert (head.status_code, head.content) == (200, b"")


async def test_post_stays_json_rpc_and_other_methods_are_405() -> None:
    async with serve([PLAIN]) as client:
        body = await client.call("tasks/get", {"id": "nope"})
        assert body["error"]["code"] == -32001
        for method in ("PUT", "DELETE", "PATCH"):
            response = await client.http.request(method, "/")
            assert response.status_code == 405
            assert response.json() == {"detail": "Method Not Allowed"}
            assert response.headers["allow"] == "GET, HEAD, POST"


@pytest.mark.parametrize(("accept", "html"), [
    (BROWSER, True),
    ("text/html", True),
    ("*/*", False),
    (None, False),
    ("application/json", False),
    ("application/json, text/html;q=0.5", False),
    ("text/html;q=0", False),
    ("text/html;q=0.9, application/json;q=0.9", True),
])
def test_who_gets_html(accept: str | None, html: bool) -> None:
    assert wants_html(accept) is html
