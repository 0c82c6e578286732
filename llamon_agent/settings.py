"""``Settings``: every environment variable the package reads, read in one place.

The CLI and ``create_app`` call ``Settings.from_env()`` once and pass the values on explicitly;
nothing in the package writes ``os.environ`` (except prometheus-client's own
``PROMETHEUS_MULTIPROC_DIR``, which a server of several workers names for its worker processes:
``server/metrics.py`` ``shared_metrics``). Explicit arguments (``--db``, ``create_app(db=)``)
win over the environment.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["DEFAULT_DB", "DEFAULT_LEASE", "DEFAULT_PUSH_ATTEMPTS", "DEFAULT_PUSH_TIMEOUT",
           "DEFAULT_SWEEP", "MAX_DURATION", "Settings",
           "parse_duration"]

DEFAULT_DB = "llamon.sqlite3"
#: seconds a replica's claims outlive its last heartbeat (``LLAMON_LEASE_SECONDS``)
DEFAULT_LEASE = 30.0
#: seconds between two sweeps for due deadlines, push retries and retention
DEFAULT_SWEEP = 5.0
#: attempts of a push delivery before it is given up, and seconds one may take
DEFAULT_PUSH_ATTEMPTS = 8
DEFAULT_PUSH_TIMEOUT = 10.0

#: the longest duration ``parse_duration`` takes: 100 years (36500d)
MAX_DURATION = 36500 * 86400
_DURATION = re.compile(r"([0-9]{1,12})([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

_Number = TypeVar("_Number", int, float)


@dataclass(frozen=True)
class Settings:
    """``db`` (``LLAMON_DATABASE_URL``, else its alias ``LLAMON_DB``): the storage,
    ``sqlite:///PATH`` or a file path, ``:memory:`` / ``memory://``, or ``postgresql://...``
    (``stores/url.py`` parses it; ``--db`` wins over both); ``reviewer_token``
    (``LLAMON_REVIEWER_TOKEN``): the bearer token of the reviewer endpoints, none turns them
    off; ``language`` (``LLAMON_LANGUAGE``): the default language of reviewer-facing texts;
    ``public_url`` (``LLAMON_PUBLIC_URL``): the endpoint the agent card advertises; ``model``
    (``LLAMON_MODEL``, ``provider:model``): the example app's chat model, none runs offline.

    Quotas per principal (``server/quotas.py``; unset: off): ``quota_rate``
    (``LLAMON_QUOTA_RATE``, requests per second), ``quota_burst`` (``LLAMON_QUOTA_BURST``),
    ``quota_streams`` (``LLAMON_QUOTA_STREAMS``, open streams), ``quota_waiting_tasks``
    (``LLAMON_QUOTA_WAITING_TASKS``, tasks waiting for input). A value that is not a positive
    number raises ``ValueError`` naming the variable.

    Authentication (``llamon_agent/auth``, docs/operations.md "Authentication"; parsed and
    checked where they are used): ``api_keys`` (``LLAMON_API_KEYS``, comma-separated
    ``principal=key`` pairs); ``jwt_jwks_url``, ``jwt_issuer``, ``jwt_audience``
    (``LLAMON_JWT_JWKS_URL``, ``LLAMON_JWT_ISSUER``, ``LLAMON_JWT_AUDIENCE``: JWT bearer
    tokens, all three or none); ``reviewer_tokens`` (``LLAMON_REVIEWER_TOKENS``, comma-separated
    ``name=token`` pairs of named reviewers, beside ``reviewer_token``).

    Operations (docs/operations.md "Logs", "Metrics"): ``log_format`` (``LLAMON_LOG_FORMAT``,
    ``text`` or ``json``; another value raises ``ValueError``); ``metrics_token``
    (``LLAMON_METRICS_TOKEN``): the bearer token ``/metrics`` asks for, none leaves it public.

    Replicas (docs/operations.md "Replicas"): ``events`` (``LLAMON_EVENTS_URL``): where stream
    events travel between replicas, ``redis://...`` (the ``redis`` extra), none keeps them in
    the process; ``lease`` (``LLAMON_LEASE_SECONDS``, default 30): how long a replica's claim on
    the runs it executes outlives its last heartbeat (PostgreSQL only); ``workers``
    (``LLAMON_WORKERS``, default 1): server processes sharing the listening socket (``--workers``
    wins; more than one needs PostgreSQL and Redis events).

    Time (docs/operations.md "Deadlines"): ``sweep_seconds`` (``LLAMON_SWEEP_SECONDS``, default
    5): how often every server looks for deadlines that passed, push deliveries to retry and
    ended tasks old enough to delete; ``retention`` (``LLAMON_RETENTION``, a duration such as
    ``30d``; unset: off): how long an ended task is kept after its last update.

    Push notifications (docs/operations.md "Push notifications"): ``push_allow_private``
    (``LLAMON_PUSH_ALLOW_PRIVATE``, ``1``/``true``/``yes``): webhooks on loopback, private and
    link-local addresses are allowed (tests, private networks; off by default);
    ``push_max_attempts`` (``LLAMON_PUSH_MAX_ATTEMPTS``, default 8): attempts of a delivery
    before it is given up; ``push_timeout`` (``LLAMON_PUSH_TIMEOUT_SECONDS``, default 10): the
    bound of one attempt."""

    db: str = DEFAULT_DB
    reviewer_token: str | None = None
    language: str | None = None
    public_url: str | None = None
    model: str | None = None
    quota_rate: float | None = None
    quota_burst: int | None = None
    quota_streams: int | None = None
    quota_waiting_tasks: int | None = None
    api_keys: str | None = None
    jwt_jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    reviewer_tokens: str | None = None
    log_format: str = "text"
    metrics_token: str | None = None
    events: str | None = None
    lease: float = DEFAULT_LEASE
    workers: int = 1
    sweep_seconds: float = DEFAULT_SWEEP
    retention: float | None = None
    push_allow_private: bool = False
    push_max_attempts: int = DEFAULT_PUSH_ATTEMPTS
    push_timeout: float = DEFAULT_PUSH_TIMEOUT

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        return cls(
            db=env.get("LLAMON_DATABASE_URL") or env.get("LLAMON_DB") or DEFAULT_DB,
            reviewer_token=env.get("LLAMON_REVIEWER_TOKEN") or None,
            language=env.get("LLAMON_LANGUAGE") or None,
            public_url=env.get("LLAMON_PUBLIC_URL") or None,
            model=env.get("LLAMON_MODEL") or None,
            quota_rate=_positive(env, "LLAMON_QUOTA_RATE", float),
            quota_burst=_positive(env, "LLAMON_QUOTA_BURST", int),
            quota_streams=_positive(env, "LLAMON_QUOTA_STREAMS", int),
            quota_waiting_tasks=_positive(env, "LLAMON_QUOTA_WAITING_TASKS", int),
            api_keys=env.get("LLAMON_API_KEYS") or None,
            jwt_jwks_url=env.get("LLAMON_JWT_JWKS_URL") or None,
            jwt_issuer=env.get("LLAMON_JWT_ISSUER") or None,
            jwt_audience=env.get("LLAMON_JWT_AUDIENCE") or None,
            reviewer_tokens=env.get("LLAMON_REVIEWER_TOKENS") or None,
            log_format=_log_format(env),
            metrics_token=env.get("LLAMON_METRICS_TOKEN") or None,
            events=env.get("LLAMON_EVENTS_URL") or None,
            lease=_positive(env, "LLAMON_LEASE_SECONDS", float) or DEFAULT_LEASE,
            workers=_positive(env, "LLAMON_WORKERS", int) or 1,
            sweep_seconds=_positive(env, "LLAMON_SWEEP_SECONDS", float) or DEFAULT_SWEEP,
            retention=_duration(env, "LLAMON_RETENTION"),
            push_allow_private=_flag(env, "LLAMON_PUSH_ALLOW_PRIVATE"),
            push_max_attempts=(_positive(env, "LLAMON_PUSH_MAX_ATTEMPTS", int)
                               or DEFAULT_PUSH_ATTEMPTS),
            push_timeout=(_positive(env, "LLAMON_PUSH_TIMEOUT_SECONDS", float)
                          or DEFAULT_PUSH_TIMEOUT),
        )


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 1 or 0 (true or false), got {raw!r}")


def _log_format(env: Mapping[str, str]) -> str:
    raw = (env.get("LLAMON_LOG_FORMAT") or "text").strip().lower()
    if raw not in ("text", "json"):
        raise ValueError(f"LLAMON_LOG_FORMAT must be text or json, got {raw!r}")
    return raw


def _positive(env: Mapping[str, str], name: str, kind: type[_Number]) -> _Number | None:
    """A positive number from ``env[name]``; unset or empty is ``None`` (off)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name} must be a {kind.__name__} above 0, got {raw!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a {kind.__name__} above 0, got {raw!r}")
    return value


def parse_duration(text: str) -> float:
    """Seconds of a duration written as a whole number and one unit: ``45s``, ``90m``,
    ``12h``, ``30d``; from 1 second to ``MAX_DURATION``. Anything else raises ``ValueError``
    saying what is accepted (retention, ``llamon-agent prune --older-than``)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected a duration such as 30d, 12h, 90m or 45s (a whole number "
                         f"and one unit: s, m, h or d), got {text!r}")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not 1 <= seconds <= MAX_DURATION:
        raise ValueError(f"a duration is from 1s to {MAX_DURATION // 86400}d, got {text!r}")
    return float(seconds)


def _duration(env: Mapping[str, str], name: str) -> float | None:
    """A duration from ``env[name]``; unset or empty is ``None`` (off)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
