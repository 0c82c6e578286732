"""``has_control_characters`` (core/principal.py) refuses the same characters with its fast
path for printable ASCII as the per-character category check it stands in front of."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from llamon_agent.core.principal import has_control_characters

_REFUSED = ("Cc", "Cf", "Cs")


def _reference(text: str) -> bool:
    return any(unicodedata.category(ch) in _REFUSED for ch in text)


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=40),
    st.text(max_size=40),
    st.text(alphabet=st.characters(categories=["Cc", "Cf", "Cs", "Zs", "Lo"]), max_size=8),
))
def test_the_fast_path_agrees_with_the_category_check(text: str) -> None:
    assert has_control_characters(text) == _reference(text)


def test_every_ascii_character_is_judged_by_its_category() -> None:
    for code in range(0x80):
        ch = chr(code)
        assert has_control_characters(f"id{ch}x") == (unicodedata.category(ch) in _REFUSED), code
    assert has_control_characters("a\u200bb")  # a zero-width space (Cf) after ASCII
    assert not has_control_characters("어시스턴트-1")
