"""The README's second command and ``.ci/run`` stay in step: CI runs exactly what a person
is told to run, after installing what pip cannot (Debian's chromium)."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def _readme_test_command() -> str:
    first_block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert first_block is not None
    commands = [line for line in first_block.group(1).splitlines()
                if line and not line.startswith("#")]
    assert len(commands) == 2, commands
    return commands[1]


def test_ci_runs_the_readmes_test_command_as_its_last_line() -> None:
    script = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert script[-1] == _readme_test_command()


def test_ci_installs_chromium_only_when_it_is_missing() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "command -v chromium" in script
    assert "apt-get install" in script and "chromium" in script


def test_the_readme_says_ci_installs_chromium() -> None:
    assert re.search(r"\.ci/run[^.]*chromium", (ROOT / "README.md").read_text(), re.S)
