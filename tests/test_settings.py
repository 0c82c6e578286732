"""Settings: the environment is read in one place, and nothing writes it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from llamon_agent import cli
from llamon_agent.settings import DEFAULT_DB, Settings


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
