"""The Playground's static files: served at ``/playground`` under a strict CSP, public, shipped
in the package, and built without any HTML sink that could turn data into markup."""

from __future__ import annotations

import hashlib
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from app.main import AGENTS
from tests.conftest import serve

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
FILES = {
    "/playground": ("index.html", "text/html; charset=utf-8"),
    "/playground/playground.js": ("playground.js", "text/javascript; charset=utf-8"),
    "/playground/playground.css": ("playground.css", "text/css; charset=utf-8"),
}
REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = REPO_ROOT / "llamon_agent" / "server" / "playground"


def _packaged(name: str) -> bytes:
    return (resources.files("llamon_agent.server") / "playground" / name).read_bytes()


@pytest.mark.parametrize("path", sorted(FILES))
async def test_each_file_is_served_with_its_type_and_a_strict_policy(path: str) -> None:
    name, media_type = FILES[path]
    async with serve(AGENTS) as client:
        response = await client.http.get(path)
        assert response.status_code == 200
        assert response.content == _packaged(name) == (SOURCE / name).read_bytes()
        assert response.headers["content-type"] == media_type
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["referrer-policy"] == "no-referrer"
        etag = f'"{hashlib.sha256(response.content).hexdigest()[:32]}"'
        assert response.headers["etag"] == etag
        again = await client.http.get(path, headers={"If-None-Match": etag})
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["etag"] == etag
        assert again.headers["content-security-policy"] == CSP
        head = await client.http.head(path)
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-security-policy"] == CSP


async def test_an_unknown_file_under_the_page_is_a_404_and_post_a_405() -> None:
    async with serve(AGENTS) as client:
        missing = await client.http.get("/playground/other.js")
        assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
        posted = await client.http.post("/playground")
        assert posted.status_code == 405


async def test_the_page_is_public_when_keys_are_required_and_rpc_is_not() -> None:
    async with serve(AGENTS, api_keys={"alice": "k-alice"}) as client:
        for path in FILES:
            assert (await client.http.get(path)).status_code == 200, path
        refused = await client.http.post("/", json={"jsonrpc": "2.0", "id": 1,
                                                   "method": "tasks/get", "params": {"id": "x"}})
        assert refused.status_code == 401


async def test_the_landing_page_links_the_playground() -> None:
    async with serve(AGENTS) as client:
        assert (await client.http.get("/")).json()["links"]["playground"] == "/playground"
        page = (await client.http.get("/", headers={"Accept": "text/html"})).text
        assert '<a href="/playground">/playground</a>' in page


async def test_requests_to_the_page_are_counted_under_their_route() -> None:
    async with serve(AGENTS) as client:
        await client.http.get("/playground/playground.js")
        metrics = (await client.http.get("/metrics")).text
        assert re.search(r'method="GET /playground/playground.js",outcome="ok"} 1\.0', metrics)


def test_the_page_script_has_no_html_sink_and_no_eval() -> None:
    script = (SOURCE / "playground.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function", "setTimeout(\"", "localStorage", "sessionStorage"):
        assert sink not in script, sink
    page = (SOURCE / "index.html").read_text()
    assert " style=" not in page and "<style" not in page
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/playground/playground.js" defer>']
    assert not re.search(r"\son[a-z]+=", page), "inline event handler in index.html"
    assert "http://" not in page and "https://" not in page, "the page loads nothing from outside"


def test_the_package_data_names_every_file() -> None:
    """A non-editable install gets the page: pyproject's package data covers each file, and
    ``importlib.resources`` (what the route reads) finds it."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["llamon_agent.server"]
    shipped = {p.relative_to(SOURCE.parent).as_posix() for pattern in patterns
               for p in SOURCE.parent.glob(pattern)}
    assert shipped == {f"playground/{name}" for name, _ in FILES.values()}
    for name, _ in FILES.values():
        assert _packaged(name) == (SOURCE / name).read_bytes()
