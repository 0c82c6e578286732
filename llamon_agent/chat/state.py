"""The last task of each context the chat talked to, kept in a small JSON file.

A server that does not resume a waiting task by ``contextId`` (the official a2a-sdk's) needs
the ``taskId``; ``llamon-agent chat --context ID`` started anew finds it here. The file lives in
``$XDG_STATE_HOME/llamon-agent/chat.json`` (``~/.local/state/...`` without it), holds the
``MAX_ENTRIES`` most recent contexts, and is replaced atomically (written beside, then renamed),
so a chat killed mid-write leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "MAX_FILE_BYTES", "Remembered", "StateFileError", "TaskMemory",
           "state_path"]

MAX_ENTRIES = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_FIELD_CHARS = 2048
FORMAT = 1


class StateFileError(Exception):
    """The state file could not be read or written (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class Remembered:
    server: str
    context_id: str
    task_id: str

    def to_json(self) -> dict[str, str]:
        return {"server": self.server, "contextId": self.context_id, "taskId": self.task_id}


def state_path(environ: Mapping[str, str]) -> Path:
    """Where the file lives (XDG Base Directory: a relative ``XDG_STATE_HOME`` is ignored)."""
    base = environ.get("XDG_STATE_HOME", "")
    if not base or not os.path.isabs(base):
        base = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / "llamon-agent" / "chat.json"


class TaskMemory:
    """The remembered tasks in ``path``; every call reads the file anew (chats may share it)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def last_task(self, server: str, context_id: str) -> str | None:
        """The task last seen in ``context_id`` on ``server``; raises :class:`StateFileError`."""
        for entry in reversed(self._read()):
            if entry.server == server and entry.context_id == context_id:
                return entry.task_id
        return None

    def remember(self, server: str, context_id: str, task_id: str) -> None:
        """Record ``task_id`` as the context's latest; a file that cannot be read is replaced.
        Raises :class:`StateFileError` when the new file cannot be written."""
        try:
            entries = self._read()
        except StateFileError:
            entries = []
        kept = [e for e in entries if (e.server, e.context_id) != (server, context_id)]
        kept.append(Remembered(server, context_id, task_id))
        self._write(kept[-MAX_ENTRIES:])

    def _read(self) -> list[Remembered]:
        try:
            with self.path.open("rb") as file:
                raw = file.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StateFileError(f"cannot read the chat state file {self.path}: "
                                 f"{exc.strerror or exc}") from exc
        if len(raw) > MAX_FILE_BYTES:
            raise StateFileError(f"cannot read the chat state file {self.path}: it is larger "
                                 f"than {MAX_FILE_BYTES} bytes")
        try:
            return _entries(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as exc:
            raise StateFileError(f"cannot read the chat state file {self.path}: {exc}") from exc

    def _write(self, entries: list[Remembered]) -> None:
        body = json.dumps({"format": FORMAT, "tasks": [e.to_json() for e in entries]},
                          ensure_ascii=False, indent=1).encode("utf-8")
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, temporary = tempfile.mkstemp(prefix=".chat-", suffix=".tmp", dir=folder)
            try:
                with os.fdopen(handle, "wb") as file:  # mkstemp's file is private (0600)
                    file.write(body)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StateFileError(f"cannot write the chat state file {self.path}: "
                                 f"{exc.strerror or exc}") from exc


def _entries(document: Any) -> list[Remembered]:
    tasks = document.get("tasks") if isinstance(document, dict) else None
    if not isinstance(tasks, list):
        raise ValueError("expected an object with a list of tasks")
    entries: list[Remembered] = []
    for item in tasks[-MAX_ENTRIES:]:
        fields = [item.get(k) for k in ("server", "contextId", "taskId")] if isinstance(
            item, dict) else []
        texts = [f for f in fields if isinstance(f, str) and 0 < len(f) <= MAX_FIELD_CHARS]
        if len(texts) != 3:
            raise ValueError(f"not a remembered task: {str(item)[:100]}")
        entries.append(Remembered(texts[0], texts[1], texts[2]))
    return entries
