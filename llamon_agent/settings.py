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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["DEFAULT_DB", "DEFAULT_LEASE", "Settings"]

DEFAULT_DB = "llamon.sqlite3"
#: seconds a replica's claims outlive its last heartbeat (``LLAMON_LEASE_SECONDS``)
DEFAULT_LEASE = 30.0

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
    wins; more than one needs PostgreSQL and Redis events)."""

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
        )


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
