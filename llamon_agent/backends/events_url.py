"""Which event transport an events setting names (``--events``, ``LLAMON_EVENTS_URL``).

* unset, empty or ``local://``: events stay in the process (one server);
* ``redis://HOST[:PORT][/DB]`` or ``rediss://...`` (TLS): a Redis server carries stream events,
  resubscribe replay and cancel requests between replicas (the ``redis`` extra). An optional
  ``?prefix=NAME`` puts every key and channel under ``NAME`` (default ``llamon:``), so several
  deployments can share one Redis; it is removed from the URL before it reaches redis-py.

Any other scheme is refused with the forms above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["DEFAULT_PREFIX", "EventsURL", "parse_events_url"]

DEFAULT_PREFIX = "llamon:"
_FORMS = "redis://HOST[:PORT][/DB][?prefix=NAME], rediss://... or local://"
_PREFIX = re.compile(r"^[A-Za-z0-9_.:{}-]{1,64}$")


@dataclass(frozen=True)
class EventsURL:
    """``kind`` says where events go; ``url`` is the Redis URL without ``prefix``."""

    kind: Literal["local", "redis"]
    url: str = ""
    prefix: str = DEFAULT_PREFIX

    @property
    def shown(self) -> str:
        """The setting as logs may show it: a password is masked."""
        if self.kind == "local":
            return "in process"
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def parse_events_url(value: str | None) -> EventsURL:
    """Raises ``ValueError`` naming the accepted forms for anything else."""
    if value is None or not value.strip() or value.strip() == "local://":
        return EventsURL("local")
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in ("redis", "rediss") or not parts.hostname:
        raise ValueError(f"unsupported events URL {value!r}: use {_FORMS}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [v for k, v in query if k == "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
    if not _PREFIX.match(prefix):
        raise ValueError(
            f"the events prefix must be 1 to 64 letters, digits or _.:{{}}-, got {prefix!r}")
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return EventsURL("redis", urlunsplit(parts._replace(query=rest)), prefix)
