"""``/metrics`` after the fuzz suite and under hostile methods and paths.

Whatever clients sent before (this package's generated JSON-RPC and REST requests run on the
same server) and whatever HTTP method, path and JSON-RPC method a client makes up here, every
label value of every series comes from the server's fixed sets (``server/metrics.py``): no
client can add a series.
"""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from llamon_agent import create_app
from tests.observability.series import Series, parse_metrics, route_methods, unfixed_labels

from .checks import new_stats
from .conftest import examples
from .drive import Served

_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
# printable ASCII a URL path can carry as it is (no query, fragment or escape)
_PATH = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="?#%"),
                max_size=40)
_KNOWN_PATHS = ["", ".well-known/agent-card.json", "hitl/chat", "reviews", "reviews/x/decision",
                "healthz", "readyz", "metrics"]


def _fixed_sets() -> tuple[set[str], set[str]]:
    from app.main import AGENTS

    return route_methods(create_app(AGENTS, db=":memory:").routes), {a.id for a in AGENTS}


def _scrape(served: Served) -> Series:
    reply = served.wire.request("GET", "/metrics")
    assert reply.status == 200, reply.content[:500]
    return parse_metrics(reply.content.decode())


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, str, bytes]:
    method = draw(st.sampled_from(_METHODS))
    path = "/" + draw(st.one_of(st.sampled_from(_KNOWN_PATHS), _PATH))
    rpc_method = draw(st.one_of(st.text(max_size=60), st.sampled_from(
        ["message/send", "tasks/get", "tasks/list", "message/stream"])))
    body = orjson.dumps({"jsonrpc": "2.0", "id": draw(st.text(max_size=20)),
                         "method": rpc_method, "params": {"id": draw(st.text(max_size=20))}})
    return method, path, body


def test_label_values_stay_in_fixed_sets(served: Served) -> None:
    stats = new_stats(f"/metrics labels, hostile methods and paths [{served.wire.name}]")
    routes, agents = _fixed_sets()
    assert unfixed_labels(_scrape(served), routes, agents) == []

    @settings(max_examples=examples(100))
    @given(request=_requests())
    def one(request: tuple[str, str, bytes]) -> None:
        method, path, body = request
        with_body = method in ("POST", "PUT", "PATCH", "DELETE")
        reply = served.wire.request(method, path, body if with_body else None)
        stats.add(f"http {reply.status}")
        assert reply.status < 500, (method, path, reply.content[:300])

    one()
    series = _scrape(served)
    assert unfixed_labels(series, routes, agents) == []
    served.scene.healthy()
