"""``llamon-agent serve``'s logging options: ``--log-format`` / ``LLAMON_LOG_FORMAT``,
``--log-level``, uvicorn's access log off for an app that logs its own requests."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_agent import cli
from llamon_agent.server.serve import ServeOptions
from llamon_agent.settings import Settings


async def plain_asgi_app(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that is not create_app's: it logs no requests of its own."""


def _served(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> ServeOptions:
    served: list[ServeOptions] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(options))
    cli.main(["serve", "--db", ":memory:", *argv])
    assert len(served) == 1
    return served[0]


def test_log_format_and_access_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMON_LOG_FORMAT", raising=False)
    options = _served(monkeypatch, [])
    assert (options.log_format, options.log_level, options.access_log) == ("text", "info", False)
    options = _served(monkeypatch, ["--log-format", "json", "--log-level", "DEBUG"])
    assert (options.log_format, options.log_level) == ("json", "debug")
    monkeypatch.setenv("LLAMON_LOG_FORMAT", "json")
    assert _served(monkeypatch, []).log_format == "json"
    assert _served(monkeypatch, ["--log-format", "text"]).log_format == "text"
    other = _served(monkeypatch, ["tests.observability.test_cli:plain_asgi_app"])
    assert other.access_log is True  # nothing else would log its requests


def test_bad_values_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "serve", lambda app, options: None)
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--log-level", "loud"])
    assert exited.value.code == 2
    assert "unknown log level 'loud'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--log-format", "xml"])
    assert exited.value.code == 2
    monkeypatch.setenv("LLAMON_LOG_FORMAT", "yaml")
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve"])
    assert exited.value.code == "error: LLAMON_LOG_FORMAT must be text or json, got 'yaml'"


def test_settings_of_operations() -> None:
    assert Settings.from_env({}).log_format == "text"
    assert Settings.from_env({}).metrics_token is None
    settings = Settings.from_env({"LLAMON_LOG_FORMAT": " JSON ", "LLAMON_METRICS_TOKEN": "m"})
    assert (settings.log_format, settings.metrics_token) == ("json", "m")
