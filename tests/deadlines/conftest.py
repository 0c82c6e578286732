"""Deadlines run on three backends: in memory, a SQLite file (its ``expires_at`` column and
index), and PostgreSQL with Redis as replicas run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import serving_on


@pytest.fixture(params=["memory", "sqlite", "postgres+redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with serving_on(request, request.param, str(tmp_path / "deadlines.sqlite3")):
        yield request.param
