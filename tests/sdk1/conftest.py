"""Fixtures of the a2a-sdk 1.x client tests: its cached environment, one driver per module, and
the example agents on a real process with the reviewer endpoints on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.conftest import EXAMPLE_TARGET, Server, start_server
from tests.sdk1.flows import REVIEWER_TOKEN
from tests.sdk1.harness import Driver
from tests.sdk1.venv import VenvError, ensure_sdk1_venv


@pytest.fixture(scope="session")
def sdk1_python() -> Path:
    """The python of ``tests/.venvs/a2a-sdk-1`` (built on first use, then cached)."""
    try:
        venv = ensure_sdk1_venv()
    except (VenvError, OSError) as exc:
        reason = f"cannot build the a2a-sdk 1.x client's environment: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    if venv.built_in is not None:
        print(f"\nbuilt tests/.venvs/a2a-sdk-1 (a2a-sdk {venv.version}) in {venv.built_in:.1f}s")
    return venv.python


@pytest.fixture(scope="module")
def driver(sdk1_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    """One driver process for the module; its stderr goes to a file the failures quote."""
    running = Driver(sdk1_python, tmp_path_factory.mktemp("sdk1-driver") / "driver.stderr")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``app.main:AGENTS`` on a SQLite file, ``LLAMON_REVIEWER_TOKEN`` set (the loan flow)."""
    folder = tmp_path_factory.mktemp("sdk1-server")
    running = start_server(EXAMPLE_TARGET, folder / "llamon.sqlite3", folder,
                           env={"LLAMON_REVIEWER_TOKEN": REVIEWER_TOKEN})
    try:
        yield running
    finally:
        running.stop()
