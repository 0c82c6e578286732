"""``--events`` / ``LLAMON_EVENTS_URL``: which event transport a setting names."""

from __future__ import annotations

import pytest

from llamon_agent.backends.events_url import DEFAULT_PREFIX, EventsURL, parse_events_url


@pytest.mark.parametrize("value", [None, "", "  ", "local://"])
def test_unset_or_local_keeps_events_in_the_process(value: str | None) -> None:
    assert parse_events_url(value) == EventsURL("local")
    assert parse_events_url(value).shown == "in process"


def test_a_redis_url_keeps_everything_but_the_prefix() -> None:
    url = parse_events_url("redis://cache:6380/2?prefix=team-a:&health_check_interval=5")
    assert url == EventsURL("redis", "redis://cache:6380/2?health_check_interval=5", "team-a:")
    assert parse_events_url("rediss://cache/0") == EventsURL("redis", "rediss://cache/0",
                                                             DEFAULT_PREFIX)


def test_logs_never_show_the_password() -> None:
    url = parse_events_url("redis://user:s3cret@cache:6379/0")
    assert url.shown == "redis://user:***@cache:6379/0"
    assert "s3cret" not in url.shown


@pytest.mark.parametrize("value", [
    "http://cache:6379", "redis://", "cache:6379", "postgresql://db/x", "redis:///0",
])
def test_other_forms_are_refused_with_the_accepted_ones(value: str) -> None:
    with pytest.raises(ValueError, match=r"redis://HOST\[:PORT\]"):
        parse_events_url(value)


@pytest.mark.parametrize("prefix", ["", "a b", "x" * 65, "é"])
def test_a_prefix_must_be_short_and_plain(prefix: str) -> None:
    with pytest.raises(ValueError, match="the events prefix"):
        parse_events_url(f"redis://cache/0?prefix={prefix}")
