"""``llamon-agent --help``: every option says what it is, its default and the variable it reads,
in plain words (no reStructuredText from docstrings) (issue 13)."""

from __future__ import annotations

import argparse
import re

import pytest

from llamon_agent import cli
from llamon_agent.settings import Settings

#: reStructuredText that a docstring would bring into --help
_MARKUP = re.compile(r"``|:(?:func|class|meth|mod|attr|data|ref):`")
_NO_VALUE = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


def _parsers() -> dict[str, argparse.ArgumentParser]:
    top = cli._parser(Settings.from_env({}))
    [commands] = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return {"llamon-agent": top, **{f"llamon-agent {name}": sub
                                     for name, sub in commands.choices.items()}}


def test_the_commands_are_there() -> None:
    assert {"llamon-agent", "llamon-agent serve", "llamon-agent prune"} <= set(_parsers())


@pytest.mark.parametrize("name", ["llamon-agent", "llamon-agent serve", "llamon-agent prune"])
def test_every_option_has_a_sentence_its_default_and_its_variable(name: str) -> None:
    parser = _parsers()[name]
    for action in parser._actions:
        if isinstance(action, _NO_VALUE):
            assert action.help and not _MARKUP.search(action.help), action
            continue
        shown = parser._get_formatter()._expand_help(action)
        where = action.option_strings or [action.dest]
        assert not _MARKUP.search(shown), (where, shown)
        assert re.search(r"\(default: [^)]+\)$", shown), (where, shown)
        sentence = shown.split("; env $", 1)[0]
        assert len(sentence.split()) >= 3, (where, shown)  # words, not just a default
        assert re.search(r"; env \$LLAMON_[A-Z_]+ ", shown), (where, shown)


@pytest.mark.parametrize("name", ["llamon-agent", "llamon-agent serve", "llamon-agent prune"])
def test_help_has_no_markup(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = name.split()[1:]
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert not _MARKUP.search(out), out
    assert "%(" not in out


def test_every_subcommand_help_is_free_of_markup() -> None:
    for name, parser in _parsers().items():
        text = parser.format_help()
        assert not _MARKUP.search(text), (name, text)


def test_help_shows_a_default_the_environment_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLAMON_PORT", "9100")
    monkeypatch.setenv("LLAMON_REQUEST_TIMEOUT", "12.5")
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "env $LLAMON_PORT (default: $LLAMON_PORT = 9100)" in out
    assert "env $LLAMON_REQUEST_TIMEOUT (default: $LLAMON_REQUEST_TIMEOUT = 12.5 s)" in out
    assert "env $LLAMON_HOST (default: 127.0.0.1)" in out
