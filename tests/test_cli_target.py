"""``llamon-agent serve MODULE:ATTR``: a list of Agents or an ASGI app is served; anything else
is refused in one line naming the target and what it is, before anything starts (issue 13)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llamon_agent import cli

MODULE = '''
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from tests.runtime.helpers import doc_agent

def plain(x):
    return x

def three_but_sync(scope, receive, send):
    return None

async def four(scope, receive, send, extra):
    return None

async def asgi(scope, receive, send):
    return None

class App:
    async def __call__(self, scope, receive, send):
        return None

class SyncCall:
    def __call__(self, scope, receive, send):
        return None

class NotCallable:
    pass

class Two:
    async def __call__(self, scope, receive):
        return None

number = 3
text = "hello"
mapping = {"a": 1}
empty = []
mixed = [doc_agent(), "not an agent"]
agents = [doc_agent()]
one_agent = doc_agent()
instance = App()
sync_instance = SyncCall()
nothing = NotCallable()
two_args = Two()
starlette = Starlette(routes=[Route("/", lambda request: PlainTextResponse("hi"))])
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"target_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for variable in ("LLAMON_TARGET", "LLAMON_API_KEYS", "LLAMON_API_KEYS_FILE"):
        monkeypatch.delenv(variable, raising=False)
    yield name
    sys.modules.pop(name, None)


def _refusal(target: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(cli, "serve", lambda *a, **kw: pytest.fail("served"))
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", target, "--db", "memory://"])
    return exited.value.code


EXPECTED = "expected a list of Agents or an ASGI app (async, called with scope, receive, send)"


@pytest.mark.parametrize(("attr", "what"), [
    ("plain", "the function plain(x), not async"),
    ("three_but_sync", "the function three_but_sync(scope, receive, send), not async"),
    ("four", "the function four(scope, receive, send, extra)"),
    ("App", "the class App"),
    ("NotCallable", "the class NotCallable"),
    ("number", "an int: 3"),
    ("text", "a str: 'hello'"),
    ("mapping", "a dict: {'a': 1}"),
    ("empty", "an empty list"),
    ("mixed", "a list whose item 1 is a str: 'not an agent'"),
    ("sync_instance", "a SyncCall whose __call__(scope, receive, send) is not async"),
    ("nothing", "a NotCallable, which cannot be called"),
    ("two_args", "a Two whose __call__(scope, receive)"),
])
def test_what_is_neither_agents_nor_an_asgi_app_is_refused(
    attr: str, what: str, module: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _refusal(f"{module}:{attr}", monkeypatch)
    assert code == f"error: {module}:{attr} is {what}: {EXPECTED}"
    assert capsys.readouterr().err == ""
    assert not (Path.cwd() / "llamon.sqlite3").exists()


@pytest.mark.parametrize("attr", ["asgi", "instance", "starlette", "agents", "one_agent"])
def test_agents_and_asgi_apps_are_served(
    attr: str, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append(app))
    cli.main(["serve", f"{module}:{attr}", "--db", "memory://"])
    assert len(served) == 1


def test_a_target_that_does_not_import_or_has_no_such_name(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _refusal(f"{module}:missing", monkeypatch) == (
        f"error: {module!r} has no attribute 'missing'")
    assert str(_refusal("no_such_module_here:AGENTS", monkeypatch)).startswith(
        "error: cannot import 'no_such_module_here': ")


def test_a_target_that_is_not_module_colon_attr_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal("nocolon", monkeypatch) == 2
    assert capsys.readouterr().err.endswith(
        "error: argument MODULE:ATTR: expected MODULE:ATTR, got 'nocolon'\n")
