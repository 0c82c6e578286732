"""How retention is set: ``--retention 30d``, ``LLAMON_RETENTION``, ``create_app(retention=)``
(seconds or a ``timedelta``); durations are bounded and wrong ones named."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from app.main import AGENTS
from llamon_agent import cli, create_app
from llamon_agent.settings import Settings, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("30d", 30 * 86400.0), ("12h", 43200.0), ("90m", 5400.0), ("45s", 45.0), (" 7d ", 604800.0),
    ("1s", 1.0), ("36500d", 36500 * 86400.0),
])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "message"), [
    ("30", "expected a duration such as 30d, 12h, 90m or 45s (a whole number and one unit: "
           "s, m, h or d), got '30'"),
    ("1.5h", "expected a duration such as 30d, 12h, 90m or 45s (a whole number and one unit: "
             "s, m, h or d), got '1.5h'"),
    ("30 d", "expected a duration such as 30d, 12h, 90m or 45s (a whole number and one unit: "
             "s, m, h or d), got '30 d'"),
    ("-1d", "expected a duration such as 30d, 12h, 90m or 45s (a whole number and one unit: "
            "s, m, h or d), got '-1d'"),
    ("2w", "expected a duration such as 30d, 12h, 90m or 45s (a whole number and one unit: "
           "s, m, h or d), got '2w'"),
    ("0s", "a duration is from 1s to 36500d, got '0s'"),
    ("36501d", "a duration is from 1s to 36500d, got '36501d'"),
    ("9" * 13 + "s", "expected a duration such as 30d, 12h, 90m or 45s (a whole number and "
                     "one unit: s, m, h or d), got '9999999999999s'"),
])
def test_wrong_durations_are_named(text: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration(text)
    assert str(refused.value) == message


def test_the_environment_sets_it() -> None:
    assert Settings.from_env({}).retention is None  # off by default
    assert Settings.from_env({"LLAMON_RETENTION": "30d"}).retention == 30 * 86400.0
    assert Settings.from_env({"LLAMON_RETENTION": ""}).retention is None
    with pytest.raises(ValueError) as refused:
        Settings.from_env({"LLAMON_RETENTION": "a month"})
    assert str(refused.value) == (
        "LLAMON_RETENTION: expected a duration such as 30d, 12h, 90m or 45s (a whole number "
        "and one unit: s, m, h or d), got 'a month'")


@pytest.mark.parametrize("value", [30 * 86400, 30 * 86400.0, timedelta(days=30), 1])
def test_create_app_takes_seconds_or_a_timedelta(value: Any) -> None:
    create_app(AGENTS, db=":memory:", retention=value)


@pytest.mark.parametrize("value", [0, -5, 0.5, float("nan"), float("inf"),
                                   timedelta(days=36501), timedelta(0)])
def test_create_app_refuses_a_retention_out_of_bounds(value: Any) -> None:
    with pytest.raises(ValueError) as refused:
        create_app(AGENTS, db=":memory:", retention=value)
    assert str(refused.value) == f"retention must be from 1 second to 36500 days, got {value!r}"


def test_serve_passes_retention_to_the_app(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLAMON_RETENTION", raising=False)
    built: list[Any] = []
    real = cli.build_app

    def build(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs["retention"])
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "build_app", build)
    monkeypatch.setattr(cli, "serve", lambda *a, **kw: None)
    cli.main(["serve", "--db", ":memory:", "--retention", "30d"])
    cli.main(["serve", "--db", ":memory:"])
    monkeypatch.setenv("LLAMON_RETENTION", "12h")
    cli.main(["serve", "--db", ":memory:"])
    assert built == [30 * 86400.0, None, 43200.0]
    with pytest.raises(SystemExit) as refused:
        cli.main(["serve", "--db", ":memory:", "--retention", "forever"])
    assert refused.value.code == 2
