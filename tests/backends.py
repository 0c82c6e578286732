"""Fixtures for the external backends (PostgreSQL; Redis beside it), shared by every test package.

The services are shared with other work on the machine, so a test run only ever removes what it
created: one database per test session (``llamon_t_<random>``, created from a connection to the
``test`` database and dropped with ``WITH (FORCE)`` at the end) and, inside it, one schema per
test (``postgres_url``: a URL whose ``search_path`` is that schema, so the package's tables and
LangGraph's land there). A service that cannot be reached skips its tests with the reason, and
fails them under ``CI=true`` (CI has the services: their absence is a broken run, not a pass).

``LLAMON_TEST_POSTGRES_URL`` points the tests at another server (default
``postgresql://postgres@127.0.0.1:5432/test``: trust authentication, as on the CI machines).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

POSTGRES_ADMIN_URL = os.environ.get(
    "LLAMON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)

__all__ = ["POSTGRES_ADMIN_URL", "fresh_schema", "postgres_database", "postgres_url",
           "unavailable"]


def unavailable(reason: str) -> NoReturn:
    """Skip: the service is absent; under ``CI=true``, fail (the services must be there)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the backend services must run)", pytrace=False)
    pytest.skip(reason)


def _with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    option = "options=" + quote(f"-csearch_path={schema}", safe="")
    query = f"{parts.query}&{option}" if parts.query else option
    return urlunsplit(parts._replace(query=query))


def _admin() -> Any:
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg is not installed (pip install -e '.[postgres]')")
    try:
        return psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}: {exc}".strip())


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of this test session (its URL), dropped at the end."""
    admin = _admin()
    name = f"llamon_t_{uuid.uuid4().hex[:12]}"
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield _with_database(POSTGRES_ADMIN_URL, name)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@contextmanager
def fresh_schema(database_url: str) -> Iterator[str]:
    """A URL of a new, empty schema of ``database_url``, dropped at the end (``postgres_url``;
    a fixture of a wider scope gives it ``postgres_database``)."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _with_schema(database_url, schema)
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def postgres_url(postgres_database: str) -> Iterator[str]:
    """A URL of an empty schema of the session's database, for one test; dropped after it."""
    with fresh_schema(postgres_database) as url:
        yield url
