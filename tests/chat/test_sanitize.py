"""``clean``: what the server sends is printed as text, never as terminal commands."""

from __future__ import annotations

import pytest

from llamon_agent.chat.sanitize import clean, shortened


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        ("\x1b[2J\x1b[Hcleared", "cleared"),  # CSI: clear the screen, move the cursor
        ("\x1b]0;pwned title\x07ok", "ok"),  # OSC ended by BEL: set the window title
        ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink, ST-ended
        ("\x1b[31mred\x1b[0m", "red"),
        ("a\x1bcb", "ab"),  # ESC c: reset the terminal
        ("bell\x07 back\x08space", "bell backspace"),
        ("over\rwrite", "overwrite"),  # a carriage return would hide what came before
        ("c1\x9b31mcsi", "c1csi"),  # the 8-bit CSI and its parameters
        ("\x9d0;title\x9cend", "end"),  # 8-bit OSC ... ST
        ("del\x7f", "del"),
        ("rtl \u202eevil\u202c", "rtl evil"),  # bidi overrides reorder what is shown
    ],
)
def test_control_sequences_are_removed(hostile: str, shown: str) -> None:
    assert clean(hostile) == shown


def test_newlines_tabs_and_unicode_stay() -> None:
    assert clean("어떤 서류를\n\t검증할까요? ✓") == "어떤 서류를\n\t검증할까요? ✓"


def test_an_unterminated_sequence_does_not_leak() -> None:
    assert clean("before\x1b[") == "before"
    assert clean("before\x1b]0;never ended") == "before"


def test_shortened_says_how_much_was_left_out() -> None:
    assert shortened("abc", 10) == "abc"
    assert shortened("a" * 30, 10) == "a" * 10 + " ... (20 more characters)"
