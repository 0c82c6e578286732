"""The chat's input and output: a small interface, and the real one on stdin/stdout.

Tests drive :class:`~.session.ChatSession` through their own :class:`Terminal`; the console
uses ``input()`` (with ``readline`` line editing where Python has it) and ``$EDITOR``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["ConsoleTerminal", "EditorError", "Terminal"]


class EditorError(Exception):
    """``$EDITOR`` could not be run, or its file not read (the message says why)."""


class Terminal(Protocol):
    def read_line(self, prompt: str) -> str | None:
        """A line the user typed; ``None`` at end of input (Ctrl-D). Ctrl-C raises
        ``KeyboardInterrupt``."""

    def show(self, lines: Sequence[str]) -> None:
        """Print lines (already cleaned of control sequences)."""

    def can_edit(self) -> bool:
        """An editor is configured for :meth:`edit`."""

    def edit(self, text: str, limit: int) -> str:
        """``text`` as the user left it in their editor (at most ``limit`` characters read);
        raises :class:`EditorError`."""


class ConsoleTerminal:
    """stdin and stdout; ``$VISUAL`` or ``$EDITOR`` for :meth:`edit`."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._editor = environ.get("VISUAL") or environ.get("EDITOR") or ""
        # imported for its effect (input() gets line editing and history), here rather than at
        # the top: only the chat wants it, not every process that imports the CLI
        with contextlib.suppress(ImportError):  # not every Python has it; input() works without
            importlib.import_module("readline")

    def read_line(self, prompt: str) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            return None

    def show(self, lines: Sequence[str]) -> None:
        for line in lines:
            print(line)
        sys.stdout.flush()

    def can_edit(self) -> bool:
        return bool(self._editor.strip())

    def edit(self, text: str, limit: int) -> str:
        command = shlex.split(self._editor)
        handle, name = tempfile.mkstemp(prefix="llamon-chat-", suffix=".json")
        path = Path(name)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            try:
                done = subprocess.run([*command, str(path)], check=False)
            except OSError as exc:
                raise EditorError(f"cannot run the editor {command[0]!r}: {exc}") from exc
            if done.returncode != 0:
                raise EditorError(f"the editor exited with status {done.returncode}; "
                                  "nothing was changed")
            try:
                with path.open(encoding="utf-8") as file:
                    return file.read(limit + 1)
            except (OSError, UnicodeDecodeError) as exc:
                raise EditorError(f"cannot read what the editor saved: {exc}") from exc
        finally:
            path.unlink(missing_ok=True)
