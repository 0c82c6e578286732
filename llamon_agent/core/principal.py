"""Who calls, and where their tasks live.

Every task and context belongs to the *space* of the caller that created it: a principal's
name for the contexts a client addresses, a separate internal space for the contexts the server
makes for itself (an orchestrator's child conversations), which no client can address.

Storage keys (the task store's context column, the LangGraph thread id, the per-context claim)
are ``context_key(space, context_id)``: the client's own id for the principal ``anonymous``
(so stores written before authentication existed keep working, and belong to ``anonymous``),
else ``<space>\\x1f<context_id>``. Client ids and principal names never hold a control
character (the edge refuses them), so no client id can forge another space's key. The wire
always shows the client's own ``contextId``; graphs see it as ``state["thread_id"]``.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

__all__ = [
    "ANONYMOUS",
    "MAX_PRINCIPAL_CHARS",
    "Principal",
    "context_key",
    "has_control_characters",
    "principal_of_space",
    "space_of",
    "split_key",
]

ANONYMOUS = "anonymous"  # every caller when no authentication is configured
MAX_PRINCIPAL_CHARS = 256
SEPARATOR = "\x1f"  # ASCII unit separator: a control character, refused in every client id
_INTERNAL = "internal"


def has_control_characters(text: str) -> bool:
    # Printable ASCII holds no character of these categories: ids and names nearly always are,
    # and two C-level scans replace a category lookup per character (every request checks
    # several ids).
    if text.isascii() and text.isprintable():
        return False
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in text)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``name`` is printable, 1 to 256 characters; ``anonymous`` is
    reserved for the callers of a server without authentication."""

    name: str

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > MAX_PRINCIPAL_CHARS:
            raise ValueError(f"a principal name has 1 to {MAX_PRINCIPAL_CHARS} characters")
        if has_control_characters(self.name):
            raise ValueError("a principal name has no control characters")


ANONYMOUS_PRINCIPAL = Principal(ANONYMOUS)


def space_of(principal: str, *, internal: bool = False) -> str:
    """The space of ``principal``'s contexts; ``internal`` for the server's own contexts."""
    return f"{principal}{SEPARATOR}{_INTERNAL}" if internal else principal


def principal_of_space(space: str) -> str:
    return space.split(SEPARATOR, 1)[0]


def context_key(space: str, context_id: str) -> str:
    """The storage key of a context: unique per (space, client id), unforgeable by any id."""
    return context_id if space == ANONYMOUS else f"{space}{SEPARATOR}{context_id}"


def split_key(key: str) -> tuple[str, str]:
    """``(space, context_id)`` of a storage key (``context_key``'s inverse: a client id never
    holds the separator, so it is what follows the last one)."""
    space, sep, context_id = key.rpartition(SEPARATOR)
    return (space, context_id) if sep else (ANONYMOUS, key)
