"""Settings: the environment is read in one place, and nothing writes it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from llamon_agent import cli
from llamon_agent.settings import DEFAULT_DB, OPTIONS, Settings


def test_settings_come_from_the_environment_given() -> None:
    assert Settings.from_env({}) == Settings(db=DEFAULT_DB)
    env = {
        "LLAMON_DB": "x.sqlite3", "LLAMON_REVIEWER_TOKEN": "t", "LLAMON_LANGUAGE": "id",
        "LLAMON_PUBLIC_URL": "https://a.example/", "LLAMON_MODEL": "p:m",
    }
    assert Settings.from_env(env) == Settings(
        db="x.sqlite3", reviewer_token="t", language="id",
        public_url="https://a.example/", model="p:m",
    )


def test_serve_does_not_write_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_DB", "unused")  # so that the environment is restored after
    monkeypatch.delenv("LLAMON_DB")
    monkeypatch.chdir(tmp_path)
    served: list[Any] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(app))
    cli.main(["serve", "--db", str(tmp_path / "server.sqlite3")])
    assert len(served) == 1
    assert "LLAMON_DB" not in os.environ


def test_the_database_url_wins_over_its_alias() -> None:
    """Issue 11: ``LLAMON_DATABASE_URL``, else ``LLAMON_DB`` (kept as an alias), else the file."""
    url = "postgresql://postgres@127.0.0.1:5432/test"
    assert Settings.from_env({"LLAMON_DATABASE_URL": url, "LLAMON_DB": "x.sqlite3"}).db == url
    assert Settings.from_env({"LLAMON_DATABASE_URL": "", "LLAMON_DB": "x.sqlite3"}).db == (
        "x.sqlite3"
    )
    assert Settings.from_env({"LLAMON_DB": "memory://"}).db == "memory://"
    assert Settings.from_env({}).db == DEFAULT_DB


@pytest.mark.parametrize(("flag", "env", "expected"), [
    (["--db", "sqlite:///flag.db"], {"LLAMON_DATABASE_URL": "memory://", "LLAMON_DB": "a.db"},
     "sqlite:///flag.db"),
    ([], {"LLAMON_DATABASE_URL": "memory://", "LLAMON_DB": "a.db"}, "memory://"),
    ([], {"LLAMON_DB": "a.db"}, "a.db"),
    ([], {}, DEFAULT_DB),
])
def test_serve_takes_the_flag_then_the_url_then_the_alias(
    flag: list[str], env: dict[str, str], expected: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("LLAMON_DATABASE_URL", "LLAMON_DB"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    built: list[str] = []
    monkeypatch.setattr(cli, "build_app", lambda target, db, card, **kw: built.append(db))
    monkeypatch.setattr(cli, "check_exposure", lambda *a, **kw: None)
    monkeypatch.setattr(cli, "serve", lambda app, options: None)
    cli.main(["serve", *flag])
    assert built == [expected]


@pytest.mark.parametrize("args", [["--db", "mysql://db/x"], ["--db", "sqlite://x.db"]])
def test_serve_refuses_a_database_it_cannot_open(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "serve", lambda app, options: pytest.fail("served"))
    with pytest.raises(SystemExit) as info:
        cli.main(["serve", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --db" in err
    assert ("unsupported database URL scheme 'mysql'" in err) or ("three slashes" in err)


def test_create_app_refuses_a_database_it_cannot_open() -> None:
    from llamon_agent import create_app
    from tests.runtime.helpers import doc_agent

    with pytest.raises(ValueError, match="unsupported database URL scheme 'mysql'"):
        create_app([doc_agent()], db="mysql://db/x")


def test_every_setting_has_exactly_one_row_of_the_table() -> None:
    """A field without a row would never be read; the table is what --help and the docs show."""
    fields = sorted(Settings.__dataclass_fields__)
    assert sorted(option.field for option in OPTIONS) == fields
    variables = [name for option in OPTIONS for name in (option.variable, *option.aliases)]
    assert len(variables) == len(set(variables))
    assert all(name.startswith("LLAMON_") for name in variables)


def test_every_edge_limit_has_its_row() -> None:
    from llamon_agent.core.bounds import Limits

    rows = {option.field: option for option in OPTIONS}
    for name in Limits.__dataclass_fields__:
        assert rows[name].flag == "--" + name.replace("_", "-")
        assert rows[name].variable == "LLAMON_" + name.upper()
