"""``core/clock.py``: the wire's timestamps (UTC, milliseconds, ``Z``)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llamon_agent.core import clock
from llamon_agent.core.clock import iso, now, parse_iso, system_clock

_WIRE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def test_now_is_the_wire_text_of_the_system_clock() -> None:
    before = iso(system_clock())
    stamped = now()
    after = iso(system_clock())
    assert _WIRE.fullmatch(stamped)
    assert before <= stamped <= after


@given(st.integers(min_value=0, max_value=253_402_300_799_999))  # up to 9999-12-31T23:59:59.999
def test_now_writes_what_iso_writes_for_the_same_millisecond(
    millis: int,
) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time_ns", lambda: millis * 1_000_000 + 999_999)
        assert now() == iso(moment)
        assert parse_iso(now()) == moment


def test_now_makes_the_text_of_each_new_second_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached second never leaks into the next one, forward or back (a clock set back)."""
    for millis in (1_700_000_000_999, 1_700_000_001_000, 1_700_000_000_500, 1_700_000_060_001):
        monkeypatch.setattr(time, "time_ns", lambda m=millis: m * 1_000_000)
        expected = iso(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis))
        assert now() == expected
    assert clock._second[0] == 1_700_000_060


def test_iso_turns_any_offset_to_utc() -> None:
    moment = datetime(2020, 5, 5, 1, 2, 3, 4567, tzinfo=timezone(timedelta(hours=5)))
    assert iso(moment) == "2020-05-04T20:02:03.004Z"
