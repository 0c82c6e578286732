"""Text from the server, made safe to print: no terminal control sequences.

Agent text, questions and tool arguments are built from other people's input; printed as they
are, an escape sequence could clear the screen, rewrite what was shown, set the window title or
plant a hyperlink. Everything the chat prints from the server goes through :func:`clean`.
"""

from __future__ import annotations

import re

__all__ = ["clean", "shortened"]

# OSC / DCS / SOS / PM / APC strings run to ST (ESC \, or 8-bit 0x9c) or BEL; unterminated ones
# run to the end of the text
_STRING = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|\Z)"
_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*(?:[@-~]|\Z)"
_OTHER_ESC = r"\x1b[ -/]*[0-~]?"
_SEQUENCES = re.compile(f"{_STRING}|{_CSI}|{_OTHER_ESC}", re.DOTALL)
# C0 and C1 controls except newline and tab, DEL, and the bidirectional overrides and isolates
# (they reorder how the rest of the line reads)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """``text`` without escape sequences and control characters (newline and tab stay)."""
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def shortened(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters)"
