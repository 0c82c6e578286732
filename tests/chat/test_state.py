"""The remembered task of each context: bounded, atomic, and never fatal when unreadable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llamon_agent.chat.state import MAX_ENTRIES, StateFileError, TaskMemory, state_path

SERVER = "http://127.0.0.1:8000"


def test_remembers_the_last_task_of_each_context(tmp_path: Path) -> None:
    memory = TaskMemory(tmp_path / "chat.json")
    assert memory.last_task(SERVER, "ctx-1") is None
    memory.remember(SERVER, "ctx-1", "task-1")
    memory.remember(SERVER, "ctx-2", "task-2")
    memory.remember(SERVER, "ctx-1", "task-3")
    again = TaskMemory(tmp_path / "chat.json")  # a restarted chat reads the file
    assert again.last_task(SERVER, "ctx-1") == "task-3"
    assert again.last_task(SERVER, "ctx-2") == "task-2"
    assert again.last_task("http://elsewhere", "ctx-1") is None


def test_bounded_to_the_most_recent_entries(tmp_path: Path) -> None:
    memory = TaskMemory(tmp_path / "chat.json")
    for i in range(MAX_ENTRIES + 5):
        memory.remember(SERVER, f"ctx-{i}", f"task-{i}")
    stored = json.loads((tmp_path / "chat.json").read_text())
    assert len(stored["tasks"]) == MAX_ENTRIES
    assert memory.last_task(SERVER, "ctx-0") is None
    assert memory.last_task(SERVER, f"ctx-{MAX_ENTRIES + 4}") == f"task-{MAX_ENTRIES + 4}"


def test_written_atomically_leaving_no_temporary_files(tmp_path: Path) -> None:
    memory = TaskMemory(tmp_path / "state" / "chat.json")
    memory.remember(SERVER, "ctx", "task")
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["chat.json"]


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b'{"tasks": 5}', b"[]",
                                     b'{"tasks": [{"server": 1}]}'])
def test_an_unreadable_file_is_an_error_in_words(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(content)
    memory = TaskMemory(path)
    with pytest.raises(StateFileError, match="cannot read the chat state file"):
        memory.last_task(SERVER, "ctx")
    memory.remember(SERVER, "ctx", "task")  # replaced by a good file, the chat goes on
    assert memory.last_task(SERVER, "ctx") == "task"


def test_an_oversized_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(b" " * (2 * 1024 * 1024))
    with pytest.raises(StateFileError, match="larger than"):
        TaskMemory(path).last_task(SERVER, "ctx")


def test_a_write_that_fails_is_an_error_in_words(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StateFileError, match="cannot write the chat state file"):
        TaskMemory(blocker / "chat.json").remember(SERVER, "ctx", "task")


def test_where_the_file_lives(tmp_path: Path) -> None:
    state, home = tmp_path / "state", tmp_path / "home"
    assert state_path({"XDG_STATE_HOME": str(state), "HOME": str(home)}) == (
        state / "llamon-agent" / "chat.json")
    in_home = home / ".local" / "state" / "llamon-agent" / "chat.json"
    assert state_path({"HOME": str(home)}) == in_home
    # the XDG spec ignores a relative path
    assert state_path({"XDG_STATE_HOME": "relative", "HOME": str(home)}) == in_home


def test_file_is_private(tmp_path: Path) -> None:
    memory = TaskMemory(tmp_path / "chat.json")
    memory.remember(SERVER, "ctx", "task")
    assert os.stat(tmp_path / "chat.json").st_mode & 0o077 == 0
