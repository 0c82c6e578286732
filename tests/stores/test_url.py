"""The database setting: which storage each form names, and a clear refusal of the rest."""

from __future__ import annotations

import pytest

from llamon_agent.stores.url import DatabaseURL, parse_database_url


@pytest.mark.parametrize(("setting", "expected"), [
    ("llamon.sqlite3", DatabaseURL("sqlite", "llamon.sqlite3")),
    ("data/app.db", DatabaseURL("sqlite", "data/app.db")),
    ("/srv/llamon/app.db", DatabaseURL("sqlite", "/srv/llamon/app.db")),
    ("sqlite:///app.db", DatabaseURL("sqlite", "app.db")),
    ("sqlite:////srv/app.db", DatabaseURL("sqlite", "/srv/app.db")),
    ("sqlite:///:memory:", DatabaseURL("memory", ":memory:")),
    (":memory:", DatabaseURL("memory", ":memory:")),
    ("memory://", DatabaseURL("memory", ":memory:")),
    ("postgresql://postgres@127.0.0.1:5432/test",
     DatabaseURL("postgres", "postgresql://postgres@127.0.0.1:5432/test")),
    ("postgres://u:p@db/x?sslmode=require",
     DatabaseURL("postgres", "postgres://u:p@db/x?sslmode=require")),
    ("PostgreSQL://db/x", DatabaseURL("postgres", "PostgreSQL://db/x")),
])
def test_each_form_names_its_storage(setting: str, expected: DatabaseURL) -> None:
    assert parse_database_url(setting) == expected


@pytest.mark.parametrize(("setting", "message"), [
    ("mysql://db/x", "unsupported database URL scheme 'mysql': use sqlite:///PATH, a file "
     "path, :memory:, memory:// or postgresql://USER@HOST/DATABASE"),
    ("redis://127.0.0.1:6379", "unsupported database URL scheme 'redis'"),
    ("postgresql+psycopg://db/x", "unsupported database URL scheme 'postgresql+psycopg'"),
    ("sqlite://app.db", "a SQLite URL is sqlite:///PATH (three slashes), got 'sqlite://app.db'"),
    ("sqlite:///", "a SQLite URL is sqlite:///PATH"),
    ("", "the database setting is empty"),
    ("  ", "the database setting is empty"),
])
def test_anything_else_is_refused_with_the_forms(setting: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_database_url(setting)
    assert str(info.value).startswith(message)


def test_a_password_is_never_shown() -> None:
    assert parse_database_url("postgresql://app:s3cret@db:5432/x?sslmode=require").shown == (
        "postgresql://app:***@db:5432/x?sslmode=require"
    )
    assert parse_database_url("postgresql://app@db/x").shown == "postgresql://app@db/x"
    assert parse_database_url("data/app.db").shown == "data/app.db"
