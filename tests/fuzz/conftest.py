"""The fuzz suite's Hypothesis profiles, example budgets and servers.

Profiles: under ``CI=true`` the ``ci`` profile (derandomised: the same examples on every run;
no example database), elsewhere ``dev`` (random, remembering failures in ``.hypothesis/``);
``HYPOTHESIS_PROFILE`` picks one explicitly. The budgets below keep the whole suite near a
minute; ``LLAMON_FUZZ_SCALE=10`` runs ten times as many examples (the long run with 10,000+
cases per endpoint is ``python -m tests.fuzz.run_long``).

Every test runs three times, through the ``served`` fixture: against the ASGI app in process,
against a real ``llamon-agent serve`` process over one keep-alive connection, and against the
ASGI app on PostgreSQL with Redis events (``asgi-pg``, as replicas run; a fresh schema and key
prefix for the package).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, settings

from tests.backends import fresh_schema
from tests.backends_redis import REDIS_URL, fresh_prefix
from tests.orchestrator.helpers import serve_app
from tests.process.conftest import EXAMPLE_TARGET, start_server

from .checks import REPORT
from .drive import TOKEN, Served
from .scene import Scene
from .wire import InProcess, OneConnection, one_connection

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
          HealthCheck.filter_too_much]
settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          print_blob=True, suppress_health_check=_QUIET)
settings.register_profile("dev", deadline=None, print_blob=True, suppress_health_check=_QUIET)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev")
)

_SCALE = float(os.environ.get("LLAMON_FUZZ_SCALE", "1"))


def examples(count: int) -> int:
    """A test's example budget (per server kind), scaled by ``LLAMON_FUZZ_SCALE``."""
    return max(1, round(count * _SCALE))


@pytest.fixture(scope="package", params=["asgi", "uvicorn", "asgi-pg"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Served]:
    if request.param == "asgi-pg":
        yield from _in_process_on_postgres(request)
        return
    folder = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    db = folder / "llamon.sqlite3"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LLAMON_REVIEWER_TOKEN", TOKEN)
        # push configs to loopback are accepted, so set, get, list and delete succeed too
        env.setenv("LLAMON_PUSH_ALLOW_PRIVATE", "1")
        env.setenv("LLAMON_DB", str(db))  # the example app's outbox lives in the server's file
        if request.param == "asgi":
            yield from _in_process(db)
        else:
            yield from _real_server(db, folder)


def _in_process(db: Path) -> Iterator[Served]:
    from app.main import AGENTS

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(
        serve_app(AGENTS, db=str(db), reviewer_token=TOKEN, review_wait=0.05)
    ) as harness:
        wire = InProcess(portal, harness.http)
        yield Served(wire, Scene(wire, blocking_loans=True), db)


def _in_process_on_postgres(request: pytest.FixtureRequest) -> Iterator[Served]:
    from app.main import AGENTS

    database = str(request.getfixturevalue("postgres_database"))
    with fresh_schema(database) as url, fresh_prefix() as prefix, \
            pytest.MonkeyPatch.context() as env, start_blocking_portal() as portal:
        env.setenv("LLAMON_REVIEWER_TOKEN", TOKEN)
        env.setenv("LLAMON_PUSH_ALLOW_PRIVATE", "1")
        env.setenv("LLAMON_DB", url)  # the example app's outbox: the server's database
        with portal.wrap_async_context_manager(serve_app(
            AGENTS, db=url, events=f"{REDIS_URL}?prefix={prefix}", reviewer_token=TOKEN,
            review_wait=0.05,
        )) as harness:
            wire = InProcess(portal, harness.http)
            wire.name = "asgi-pg"  # the fuzz outcomes name the server kind
            yield Served(wire, Scene(wire, blocking_loans=True), url)


def _real_server(db: Path, folder: Path) -> Iterator[Served]:
    # the default keep-alive (5 s) would close the connection between two slow examples
    server = start_server(EXAMPLE_TARGET, db, folder, ["--keep-alive", "3600"])
    try:
        with one_connection(server.url) as wire:
            # a blocking loan answer waits for the reviewer (5 s here): loans are non-blocking
            yield Served(wire, Scene(wire, blocking_loans=False), db)
            assert server.proc.poll() is None, "the server process died:\n" + server.log()
            _check_connection(wire)
    finally:
        server.stop()


def _check_connection(wire: OneConnection) -> None:
    opened = len(wire.ports)
    assert opened <= wire.announced_closes + 1, (
        f"{opened} connections for {wire.announced_closes} announced closes"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not REPORT:
        return
    terminalreporter.section("fuzz outcomes")
    for stats in REPORT:
        terminalreporter.write_line(stats.line())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent == Path(__file__).parent:
            # Hypothesis warns when the global ``random`` state changes while it generates an
            # example; here the in-process server's event loop (another thread) uses it
            item.add_marker(pytest.mark.filterwarnings(
                "ignore:Do not use the `random` module inside strategies"))
