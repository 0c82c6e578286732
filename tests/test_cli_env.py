"""Every option of ``llamon-agent serve`` and ``prune`` also read from an environment variable:
the flag wins, then the variable, then the default; a malformed variable is one line naming it;
docs/operations.md lists exactly these options and variables in one table (issue 13)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from llamon_agent import cli
from llamon_agent.core.bounds import Limits
from llamon_agent.server.serve import ServeOptions
from llamon_agent.settings import OPTIONS, Settings

DOCS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"

#: a value for every variable of an option, and what the parsed option becomes: an option
#: added to the table without a line here fails test_every_option_is_read_from_its_variable
SAMPLES: dict[str, tuple[str, Any]] = {
    "LLAMON_TARGET": ("mod:AGENTS", "mod:AGENTS"),
    "LLAMON_HOST": ("0.0.0.0", "0.0.0.0"),
    "LLAMON_PORT": (" 9001 ", 9001),
    "LLAMON_DATABASE_URL": ("memory://", "memory://"),
    "LLAMON_DB_POOL_SIZE": (" 40 ", 40),
    "LLAMON_MAX_ACTIVE_REQUESTS": (" 0 ", 0),
    "LLAMON_EVENTS_URL": ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    "LLAMON_LEASE_SECONDS": ("12.5", 12.5),
    "LLAMON_WORKERS": ("3", 3),
    "LLAMON_CARD": ("my-card.json", "my-card.json"),
    "LLAMON_PUBLIC_URL": ("https://a.example/", "https://a.example/"),
    "LLAMON_LOG_LEVEL": ("DEBUG", "debug"),
    "LLAMON_LOG_FORMAT": ("json", "json"),
    "LLAMON_RETENTION": ("2d", 2 * 86400.0),
    "LLAMON_PUSH_ALLOW_PRIVATE": ("yes", True),
    "LLAMON_RELOAD": ("true", True),
    "LLAMON_API_KEYS_FILE": ("keys.txt", {"alice": "k" * 32}),
    "LLAMON_EXTENDED_CARD": ("extended.json", "extended.json"),
    "LLAMON_ALLOW_UNAUTHENTICATED": ("1", True),
    "LLAMON_REQUEST_TIMEOUT": ("7", 7.0),
    "LLAMON_KEEP_ALIVE": ("9", 9),
    "LLAMON_MAX_CONNECTIONS": ("50", 50),
    **{f"LLAMON_{name.upper()}": ("3", 3) for name in Limits.__dataclass_fields__},
    "LLAMON_QUOTA_RATE": ("2.5", 2.5),
    "LLAMON_QUOTA_BURST": ("4", 4),
    "LLAMON_QUOTA_STREAMS": ("5", 5),
    "LLAMON_QUOTA_WAITING_TASKS": ("6", 6),
    "LLAMON_PRUNE_OLDER_THAN": ("30d", 30 * 86400.0),
    "LLAMON_PRUNE_DRY_RUN": ("yes", True),
}
#: a flag to give for each, which must win over the variable
FLAG_WINS: dict[str, tuple[list[str], Any]] = {
    "LLAMON_TARGET": (["other:APP"], "other:APP"),
    "LLAMON_HOST": (["--host", "::1"], "::1"),
    "LLAMON_PORT": (["--port", "9002"], 9002),
    "LLAMON_REQUEST_TIMEOUT": (["--request-timeout", "3"], 3.0),
    "LLAMON_MAX_BODY_BYTES": (["--max-body-bytes", "2048"], 2048),
    "LLAMON_LOG_LEVEL": (["--log-level", "warning"], "warning"),
    "LLAMON_CARD": (["--card", "flag.json"], "flag.json"),
    "LLAMON_MAX_ACTIVE_REQUESTS": (["--max-active-requests", "8"], 8),
}


def _flagged() -> list[Any]:
    return [option for option in OPTIONS if option.flag is not None]


def _command(option: Any) -> str:
    return option.commands[0]


def _parse(env: dict[str, str], command: str, argv: list[str] | None = None) -> argparse.Namespace:
    required = ["--older-than", "1d"] if command == "prune" and "LLAMON_PRUNE_OLDER_THAN" not in env else []
    return cli._parser(Settings.from_env(env)).parse_args([command, *required, *(argv or [])])


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keys.txt").write_text("alice=" + "k" * 32 + "\n")
    for name in [o.variable for o in OPTIONS] + ["LLAMON_DB"]:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_every_option_is_read_from_its_variable(in_tmp: Path) -> None:
    assert {o.variable for o in _flagged()} == set(SAMPLES)
    for option in _flagged():
        text, expected = SAMPLES[option.variable]
        for command in option.commands:
            args = _parse({option.variable: text}, command)
            assert getattr(args, option.field) == expected, (option.variable, command)
            unset = _parse({}, command)
            assert getattr(unset, option.field) != expected, (option.variable, "default")


@pytest.mark.parametrize("variable", sorted(FLAG_WINS))
def test_the_flag_wins_over_the_variable(variable: str, in_tmp: Path) -> None:
    [option] = [o for o in OPTIONS if o.variable == variable]
    argv, expected = FLAG_WINS[variable]
    args = _parse({variable: SAMPLES[variable][0]}, _command(option), argv)
    assert getattr(args, option.field) == expected


def test_the_variables_reach_the_server(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"LLAMON_PORT": "9003", "LLAMON_HOST": "127.0.0.2",
                        "LLAMON_REQUEST_TIMEOUT": "4.5", "LLAMON_KEEP_ALIVE": "3",
                        "LLAMON_MAX_CONNECTIONS": "70", "LLAMON_MAX_BODY_BYTES": "4096",
                        "LLAMON_LOG_LEVEL": "warning"}.items():
        monkeypatch.setenv(name, value)
    built: list[dict[str, Any]] = []
    served: list[ServeOptions] = []

    def build_app(target: str, db: str, card: str | None, **kw: Any) -> Any:
        built.append({"target": target, **kw})
        return _asgi_app

    monkeypatch.setattr(cli, "build_app", build_app)
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(options))
    cli.main(["serve", "--db", "memory://"])
    [options] = served
    assert (options.host, options.port, options.request_timeout, options.keep_alive,
            options.max_connections, options.log_level) == (
        "127.0.0.2", 9003, 4.5, 3, 70, "warning")
    assert built[0]["limits"] == Limits(max_body_bytes=4096)


@pytest.mark.parametrize(("variable", "text", "message"), [
    ("LLAMON_PORT", "http", "LLAMON_PORT: expected a whole number, got 'http'"),
    ("LLAMON_PORT", "70000", "LLAMON_PORT must be from 0 to 65535, got 70000"),
    ("LLAMON_REQUEST_TIMEOUT", "0", "LLAMON_REQUEST_TIMEOUT must be more than 0 seconds, got 0"),
    ("LLAMON_REQUEST_TIMEOUT", "soon", "LLAMON_REQUEST_TIMEOUT: expected seconds, got 'soon'"),
    ("LLAMON_MAX_BODY_BYTES", "1.5", "LLAMON_MAX_BODY_BYTES: expected a whole number, got '1.5'"),
    ("LLAMON_KEEP_ALIVE", "0", "LLAMON_KEEP_ALIVE must be at least 1, got 0"),
    ("LLAMON_RELOAD", "maybe", "LLAMON_RELOAD must be 1 or 0 (true or false), got 'maybe'"),
    ("LLAMON_ALLOW_UNAUTHENTICATED", "2",
     "LLAMON_ALLOW_UNAUTHENTICATED must be 1 or 0 (true or false), got '2'"),
    ("LLAMON_WORKERS", "two", "LLAMON_WORKERS: expected a whole number, got 'two'"),
    ("LLAMON_LOG_LEVEL", "loud", "LLAMON_LOG_LEVEL: unknown log level 'loud': one of trace, "
     "debug, info, warning, error, critical"),
    ("LLAMON_DATABASE_URL", "mysql://db/x", "LLAMON_DATABASE_URL: unsupported database URL "
     "scheme 'mysql'"),
    ("LLAMON_PUBLIC_URL", "ftp://x", "LLAMON_PUBLIC_URL: expected an absolute http(s) URL, "
     "got 'ftp://x'"),
    ("LLAMON_API_KEYS_FILE", "missing.txt", "LLAMON_API_KEYS_FILE: cannot read the API keys "
     "file missing.txt"),
    ("LLAMON_TARGET", "nocolon", "LLAMON_TARGET: expected MODULE:ATTR, got 'nocolon'"),
])
def test_a_malformed_variable_is_one_line_naming_it(
    variable: str, text: str, message: str, in_tmp: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, text)
    monkeypatch.setattr(cli, "serve", lambda *a, **kw: pytest.fail("served"))
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--db", "memory://"] if variable != "LLAMON_DATABASE_URL" else ["serve"])
    code = exited.value.code
    assert isinstance(code, str) and code.startswith("error: " + message), code
    assert "\n" not in code
    assert capsys.readouterr().err == ""  # no traceback, no usage


def test_a_malformed_prune_variable_is_one_line_naming_it(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_PRUNE_OLDER_THAN", "a month")
    with pytest.raises(SystemExit) as exited:
        cli.main(["prune"])
    assert exited.value.code == (
        "error: LLAMON_PRUNE_OLDER_THAN: expected a duration such as 30d, 12h, 90m or 45s (a "
        "whole number and one unit: s, m, h or d), got 'a month'")


def test_prune_takes_its_age_from_the_variable(in_tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["prune", "--db", "memory://"])  # neither flag nor variable: required
    assert exited.value.code == 2
    assert "--older-than" in capsys.readouterr().err
    monkeypatch.setenv("LLAMON_PRUNE_OLDER_THAN", "30d")
    with pytest.raises(SystemExit) as exited:
        cli.main(["prune", "--db", "memory://"])
    assert exited.value.code == 1  # it ran: memory storage has nothing to prune
    assert capsys.readouterr().err == (
        "error: memory storage ends with its process: there is nothing to prune\n")


@pytest.mark.parametrize("variable", sorted(o.variable for o in OPTIONS
                                            if o.switch))
def test_booleans_read_yes_and_no(variable: str) -> None:
    [option] = [o for o in OPTIONS if o.variable == variable]
    for text in ("1", "true", "yes", "TRUE", " Yes ", "on"):
        assert getattr(Settings.from_env({variable: text}), option.field) is True, text
    for text in ("0", "false", "no", "No", "off", ""):
        assert getattr(Settings.from_env({variable: text}), option.field) is False, text


def test_the_database_variable_keeps_its_older_alias() -> None:
    assert Settings.from_env({"LLAMON_DB": "a.db"}).db == "a.db"
    assert Settings.from_env({"LLAMON_DATABASE_URL": "b.db", "LLAMON_DB": "a.db"}).db == "b.db"
    with pytest.raises(ValueError, match=r"^LLAMON_DB: "):
        cli.settings_from_env({"LLAMON_DB": "mysql://x/y"})


# ------------------------------------------------------------------------------ the docs table


def _docs_table() -> list[list[str]]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    assert lines[0].split("|")[1:5] == [" option ", " variable ", " default ", " meaning "]
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[1:]]


def _options_of(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options_of(sub)
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            found |= set(action.option_strings) or {action.metavar or action.dest}
    return found


def _variables_of(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _variables_of(sub)
        found |= set(re.findall(r"\$(LLAMON_[A-Z_]+)", action.help or ""))
    return found


def test_the_docs_table_lists_exactly_the_options_and_variables() -> None:
    rows = _docs_table()
    parser = cli._parser(Settings.from_env({}))
    documented_options = set()
    for cell, *_ in rows:
        documented_options |= set(re.findall(r"`(--[a-z-]+|[A-Z][A-Z:]*)[` ]", cell))
    assert documented_options == _options_of(parser)
    documented = [v for row in rows for v in re.findall(r"`(LLAMON_[A-Z_]+)`", row[1])]
    variables = {o.variable for o in OPTIONS} | {a for o in OPTIONS for a in o.aliases}
    assert set(documented) == variables | _variables_of(parser)
    assert len(documented) == len(set(documented))  # one row per variable


def test_the_docs_table_shows_each_default() -> None:
    parser = cli._parser(Settings.from_env({}))
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    defaults: dict[str, Any] = {}
    for sub in commands.choices.values():
        for action in sub._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                defaults[action.option_strings[0]] = action.default
    rows = {re.findall(r"`(--[a-z-]+)", row[0])[0]: row for row in _docs_table()
            if row[0].startswith("`--")}
    for option, default in defaults.items():
        assert f"`{default}`" in rows[option][2] or str(default) in rows[option][2], (
            option, default, rows[option])


async def _asgi_app(scope: Any, receive: Any, send: Any) -> None:
    """Stands for the app build_app would have made."""


def test_a_switch_a_variable_turned_on_is_turned_off_by_its_no_form() -> None:
    settings = Settings.from_env({"LLAMON_RELOAD": "1", "LLAMON_PRUNE_DRY_RUN": "yes"})
    parser = cli._parser(settings)
    assert parser.parse_args(["serve"]).reload is True
    assert parser.parse_args(["serve", "--no-reload"]).reload is False
    assert parser.parse_args(["prune", "--older-than", "1d", "--no-dry-run"]).prune_dry_run is False


def test_chat_reads_none_of_the_servers_variables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A malformed server variable (or an API keys file that cannot be read) does not stop the
    terminal chat, a client that uses none of them."""
    monkeypatch.setenv("LLAMON_PORT", "http")
    monkeypatch.setenv("LLAMON_API_KEYS_FILE", "no-such-file")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["chat", "http://127.0.0.1:9/"])  # nothing listens on the discard port
    assert stopped.value.code == 1
    shown = capsys.readouterr()
    assert "LLAMON_PORT" not in shown.out + shown.err
    assert "cannot talk to the agent at http://127.0.0.1:9/" in shown.out + shown.err
