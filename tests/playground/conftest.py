"""Fixtures of the Playground's browser tests: Debian's system Chromium driven by Playwright,
real ``llamon-agent serve`` processes, and a screenshot of every screen.

No browser is ever downloaded: the tests use the system's ``chromium`` (``LLAMON_CHROMIUM``
names another executable). Without one they skip, saying how to install it, except under
``CI=true``, where a missing browser fails the run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.process.conftest import REPO_ROOT, Server, serving

TARGET = "tests.playground.agents:AGENTS"
REVIEWER_TOKEN = "reviewer-token-for-the-playground-tests"
API_KEY = "alice-key-for-the-playground-tests"
SHOTS = REPO_ROOT / ".artifacts" / "playground"
TIMEOUT_MS = 15_000
# what the page's watcher records: CSP violations (any would mean the page or data broke policy)
WATCH_SCRIPT = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


def _chromium() -> str | None:
    named = os.environ.get("LLAMON_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = _chromium()
    if found is None:
        reason = "no Chromium executable: apt-get install chromium (or set LLAMON_CHROMIUM)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")  # closed before other modules' asyncio tests run
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)  # a loaded machine: waits end by the page, not 5 s

    args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox refuses root
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, args=args,
                                              headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def example_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The example agents (plus the tests' two, ``agents.py``) with a reviewer token."""
    with serving(TARGET, tmp_path_factory.mktemp("playground"),
                 env={"LLAMON_REVIEWER_TOKEN": REVIEWER_TOKEN}) as server:
        yield server


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The same agents, with API keys required (``--api-keys FILE``)."""
    with serving(TARGET, tmp_path_factory.mktemp("playground-keys"),
                 api_keys={"alice": API_KEY}) as server:
        yield server


@pytest.fixture(scope="module")
def reviews_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The example agents with a reviewer token, for a test that parks more drafts than a
    page of the reviewer view holds."""
    with serving(TARGET, tmp_path_factory.mktemp("playground-reviews"),
                 env={"LLAMON_REVIEWER_TOKEN": REVIEWER_TOKEN}) as server:
        yield server


@dataclass
class Watch:
    """What the browser reported while a test ran: console errors, script errors, requests."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@dataclass
class Screens:
    """Saves ``NN-<step>.png`` of the page into ``.artifacts/playground/<test>/``."""

    page: Any
    folder: Path
    count: int = 0

    def __call__(self, step: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{step}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@dataclass
class Session:
    page: Any
    watch: Watch
    shot: Screens
    base_url: str

    def open(self) -> None:
        self.page.goto(self.base_url + "/playground")
        # a locator, not wait_for_function: Playwright polls a string predicate with eval(),
        # which the page's CSP refuses whenever the options are not there at the first look
        from playwright.sync_api import expect

        expect(self.page.locator("#agent option").first).to_be_attached()

    def csp_violations(self) -> list[str]:
        violations = self.page.evaluate("window.__cspViolations")
        return [str(v) for v in violations]


def open_session(browser: Any, request: pytest.FixtureRequest, server: Server) -> Iterator[Session]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(WATCH_SCRIPT)
    page = context.new_page()
    watch = Watch()
    page.on("console", lambda m: watch.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    page.on("request", lambda r: watch.requests.append(r.url))
    folder = SHOTS / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        yield Session(page, watch, Screens(page, folder), server.url)
    finally:
        context.close()


@pytest.fixture
def session(browser: Any, example_server: Server,
            request: pytest.FixtureRequest) -> Iterator[Session]:
    yield from open_session(browser, request, example_server)


@pytest.fixture
def reviews_session(browser: Any, reviews_server: Server,
                    request: pytest.FixtureRequest) -> Iterator[Session]:
    yield from open_session(browser, request, reviews_server)


@pytest.fixture
def keyed_session(browser: Any, keyed_server: Server,
                  request: pytest.FixtureRequest) -> Iterator[Session]:
    yield from open_session(browser, request, keyed_server)
