"""Secure by default (issue 10): without authentication ``llamon-agent serve`` stays on
loopback; any other address is refused unless ``--allow-unauthenticated``, which is logged at
every start. An app under another ASGI server warns at start. The new flags are tested here
(the command line itself, ``serve`` replaced by a recorder)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from asgi_lifespan import LifespanManager

from llamon_agent import cli, create_app
from llamon_agent.server.exposure import check_exposure, is_loopback
from llamon_agent.settings import Settings

from .helpers import ALICE_KEY, KEYS, agents

_AUTH_VARIABLES = ("LLAMON_API_KEYS", "LLAMON_JWT_JWKS_URL", "LLAMON_JWT_ISSUER",
                   "LLAMON_JWT_AUDIENCE", "LLAMON_DB")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in _AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    calls: list[tuple[Any, Any]] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: calls.append((app, options)))
    return calls


def _main(*args: str) -> None:
    cli.main(["serve", "--db", ":memory:", *args])


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost",
                                  "LOCALHOST"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "192.168.1.10", "10.0.0.1",
                                  "fe80::1", "example.com", "localhost.example.com", "",
                                  "::ffff:127.0.0.1"])
def test_every_other_address_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "myhost.lan"])
def test_a_non_loopback_host_without_authentication_is_refused(
    host: str, served: list[Any]
) -> None:
    with pytest.raises(SystemExit) as info:
        _main("--host", host)
    message = str(info.value)
    assert message.startswith(f"error: refusing to serve on {host} without authentication")
    assert "--allow-unauthenticated" in message and "--api-keys" in message
    assert served == []


def test_loopback_without_authentication_is_served(served: list[Any]) -> None:
    _main()
    [(app, options)] = served
    assert options.host == "127.0.0.1"
    assert app.state.authentication is None


def test_allow_unauthenticated_serves_and_warns(
    served: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    _main("--host", "0.0.0.0", "--allow-unauthenticated")
    [(_, options)] = served
    assert options.host == "0.0.0.0"
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "serving on 0.0.0.0 WITHOUT AUTHENTICATION (--allow-unauthenticated)" in \
        warning.getMessage()


def test_api_keys_from_a_file_protect_any_address(
    served: list[Any], tmp_path: Path
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# partners\nalice={ALICE_KEY}\nbob=k-2\n")
    _main("--host", "0.0.0.0", "--api-keys", str(keys))
    [(app, _)] = served
    assert app.state.authentication == "API keys (2 principals)"


def test_api_keys_from_the_environment_protect_any_address(
    served: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_API_KEYS", f"alice={ALICE_KEY}")
    _main("--host", "::")
    [(app, _)] = served
    assert app.state.authentication == "API keys (1 principal)"


def test_a_bad_keys_file_is_a_one_line_error_naming_the_line(
    served: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alice={ALICE_KEY}\n\nanonymous=hunter2-secret\n")
    with pytest.raises(SystemExit) as info:
        _main("--api-keys", str(keys))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"{keys}, line 3: 'anonymous' is reserved" in err
    assert "hunter2-secret" not in err and ALICE_KEY not in err
    with pytest.raises(SystemExit):
        _main("--api-keys", str(tmp_path / "missing.txt"))
    assert "cannot read the API keys file" in capsys.readouterr().err
    assert served == []


def test_a_bad_keys_variable_is_a_one_line_error(
    served: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_API_KEYS", "alice=k1,hunter2-secret")
    with pytest.raises(SystemExit) as info:
        _main()
    assert str(info.value) == "error: LLAMON_API_KEYS, entry 2: expected name=key, with '='"
    monkeypatch.setenv("LLAMON_API_KEYS", "")
    monkeypatch.setenv("LLAMON_JWT_JWKS_URL", "https://id.example.test/jwks.json")
    with pytest.raises(SystemExit) as jwt_info:
        _main()
    assert "LLAMON_JWT_ISSUER and LLAMON_JWT_AUDIENCE are required" in str(jwt_info.value)
    assert served == []


def test_an_extended_card_file_needs_authentication(
    served: list[Any], tmp_path: Path
) -> None:
    card = tmp_path / "extended.json"
    card.write_text('{"name": "x", "description": "d", "version": "1", "skills": []}')
    with pytest.raises(SystemExit) as info:
        _main("--extended-card", str(card))
    assert "extended card is for authenticated callers" in str(info.value)
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alice={ALICE_KEY}\n")
    _main("--extended-card", str(card), "--api-keys", str(keys))
    assert len(served) == 1


async def _foreign_app(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app llamon-agent did not make."""


def test_an_asgi_app_cannot_be_given_api_keys_and_is_kept_on_loopback(
    served: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "_load", lambda target: _foreign_app)
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alice={ALICE_KEY}\n")
    with pytest.raises(SystemExit, match="--api-keys and --extended-card apply to a list"):
        _main("mod:app", "--api-keys", str(keys))
    with pytest.raises(SystemExit, match="was not made by create_app"):
        _main("mod:app", "--host", "0.0.0.0")
    _main("mod:app")
    _main("mod:app", "--host", "0.0.0.0", "--allow-unauthenticated")
    assert len(served) == 2


def test_serve_help_lists_the_authentication_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag in ("--api-keys FILE", "--extended-card FILE", "--allow-unauthenticated",
                 "$LLAMON_API_KEYS", "$LLAMON_JWT_JWKS_URL"):
        assert flag in out, flag


async def _started(app: Any, caplog: pytest.LogCaptureFixture) -> list[str]:
    caplog.clear()
    async with LifespanManager(app):
        pass
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.name.startswith("llamon_agent")]


async def test_an_app_without_authentication_warns_at_start_under_any_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    plain = create_app(agents(), db=":memory:", settings=Settings())
    [warning] = await _started(plain, caplog)
    assert warning.startswith("no authentication is configured: every caller is the principal "
                              "'anonymous'")
    assert await _started(create_app(agents(), db=":memory:", settings=Settings(),
                                     api_keys=KEYS), caplog) == []
    checked = create_app(agents(), db=":memory:", settings=Settings())
    assert check_exposure(checked, "127.0.0.1", allow_unauthenticated=False) is None
    assert await _started(checked, caplog) == []  # the command line checked its address
