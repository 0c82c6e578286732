"""``llamon-agent --version`` names the installed release (issue 13)."""

from __future__ import annotations

from importlib.metadata import version

import pytest

import llamon_agent
from llamon_agent import cli


def test_version_prints_the_release_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr() == (f"llamon-agent {version('llamon-agent')}\n", "")


def test_the_package_and_its_distribution_agree_on_the_version() -> None:
    assert llamon_agent.__version__ == version("llamon-agent")
