"""``llamon-agent serve --workers N`` / ``LLAMON_WORKERS``: what the CLI refuses before it opens
anything, and what it hands to ``serve_workers`` (a real server of workers:
tests/process/test_workers.py)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from llamon_agent import cli
from llamon_agent.server.serve import ServeOptions
from llamon_agent.settings import Settings

PG = "postgresql://postgres@127.0.0.1:5432/test"
EVENTS = ["--events", "redis://127.0.0.1:6379/0?prefix=llamon_t_cli:"]


@pytest.fixture
def nothing_opens(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A refusal comes before the app is built or anything served; the working folder is empty
    so that a SQLite file created by mistake would show."""
    for name in ("LLAMON_WORKERS", "LLAMON_DATABASE_URL", "LLAMON_DB", "LLAMON_EVENTS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "build_app", lambda *a, **kw: pytest.fail("the app was built"))
    monkeypatch.setattr(cli, "serve", lambda *a, **kw: pytest.fail("served"))
    monkeypatch.setattr(cli, "serve_workers", lambda *a, **kw: pytest.fail("served"), raising=False)
    return tmp_path


def _refusal(argv: list[str]) -> Any:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", *argv])
    return exited.value.code


@pytest.mark.parametrize(("argv", "message"), [
    (["--workers", "2"],  # the default database: llamon.sqlite3
     "error: 2 workers need a PostgreSQL --db: a SQLite file allows one server"),
    (["--workers", "3", "--db", "sqlite:///x.db", *EVENTS],
     "error: 3 workers need a PostgreSQL --db: a SQLite file allows one server"),
    (["--workers", "2", "--db", ":memory:", *EVENTS],
     "error: 2 workers need a PostgreSQL --db: memory storage lives in one process"),
    (["--workers", "2", "--db", "memory://"],
     "error: 2 workers need a PostgreSQL --db: memory storage lives in one process"),
    (["--workers", "2", "--db", PG],
     "error: 2 workers need --events redis://...: stream events must cross processes"),
    (["--workers", "2", "--db", PG, "--events", "local://"],
     "error: 2 workers need --events redis://...: stream events must cross processes"),
])
def test_several_workers_need_postgresql_and_redis(
    argv: list[str], message: str, nothing_opens: Path
) -> None:
    assert _refusal(argv) == message
    assert list(nothing_opens.iterdir()) == []  # no SQLite file, nothing else


def test_the_environment_asks_for_workers_and_the_flag_wins(
    nothing_opens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_WORKERS", "4")
    assert _refusal(["--db", "x.sqlite3"]) == (
        "error: 4 workers need a PostgreSQL --db: a SQLite file allows one server")
    served: list[ServeOptions] = []
    monkeypatch.setattr(cli, "build_app", lambda *a, **kw: _asgi_app)
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(options))
    cli.main(["serve", "--db", "x.sqlite3", "--workers", "1"])  # the flag wins: one process
    assert [options.workers for options in served] == [1]
    assert list(nothing_opens.iterdir()) == []  # build_app was replaced: nothing opened


def test_workers_must_be_a_positive_whole_number(
    nothing_opens: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal(["--workers", "0"]) == 2
    assert "argument --workers: must be at least 1, got 0" in capsys.readouterr().err
    monkeypatch.setenv("LLAMON_WORKERS", "two")
    assert _refusal([]) == "error: LLAMON_WORKERS: expected a whole number, got 'two'"


def test_settings_read_workers() -> None:
    assert Settings.from_env({}).workers == 1
    assert Settings.from_env({"LLAMON_WORKERS": " 3 "}).workers == 3
    with pytest.raises(ValueError, match="LLAMON_WORKERS must be at least 1, got 0"):
        Settings.from_env({"LLAMON_WORKERS": "0"})


def test_postgresql_and_redis_serve_workers_that_each_build_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
    pytest.importorskip("redis", reason="the redis extra is not installed")
    monkeypatch.delenv("LLAMON_WORKERS", raising=False)
    handed: list[tuple[Any, ServeOptions]] = []
    monkeypatch.setattr(cli, "serve", lambda *a, **kw: pytest.fail("one process served"))
    monkeypatch.setattr(cli, "serve_workers",
                        lambda build, options: handed.append((build, options)), raising=False)
    cli.main(["serve", "--db", PG, *EVENTS, "--workers", "2", "--request-timeout", "7",
              "--max-connections", "50"])
    [(build, options)] = handed
    assert (options.workers, options.request_timeout, options.max_connections) == (2, 7.0, 50)
    assert options.access_log is False  # create_app's apps log their requests themselves
    # each worker process receives the factory pickled and builds its own app (nothing opens
    # until the app's lifespan starts in the worker)
    app = pickle.loads(pickle.dumps(build))()
    assert callable(app)
    assert app is not build()  # a new app each time


async def _asgi_app(scope: Any, receive: Any, send: Any) -> None:
    """Stands for the app build_app would have made."""
