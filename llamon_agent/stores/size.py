"""How many bytes a task takes in a store: its row as every store encodes it."""

from __future__ import annotations

from . import _codec
from .base import StoredTask

__all__ = ["encoded_size", "extra_size"]


def encoded_size(record: StoredTask) -> int:
    """Bytes of the task (history, artifacts, status) and its server-side extras, encoded."""
    return len(_codec.encode_task(record)) + extra_size(record)


def extra_size(record: StoredTask) -> int:
    """Bytes of the task's server-side extras alone, encoded (a small object)."""
    return len(_codec.encode_extra(record))
