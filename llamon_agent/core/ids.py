"""Random identifiers: the task, context, message and artifact ids the server draws."""

from __future__ import annotations

import os

__all__ = ["random_id"]


def random_id() -> str:
    """An RFC 4122 version 4 UUID as text, what ``str(uuid.uuid4())`` gives, made without
    the ``UUID`` object: 1.1 µs against 2.5, and a HITL round trip draws about eight
    (bench/README.md, "Speed, round twenty-five")."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # the version, 4
    raw[8] = raw[8] & 0x3F | 0x80  # the variant, RFC 4122's
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
