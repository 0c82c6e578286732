"""``Settings``: every environment variable the package reads, read in one place.

``OPTIONS`` is the table of them: for each, the ``Settings`` field it fills, its variable, how
its text is read, the command-line flag it is the default of (if any) and one sentence saying
what it does. ``Settings.from_env`` reads the variables from it; the CLI builds its options
and their ``--help`` from it; docs/operations.md ("Command line") lists it, and a test keeps
the three the same.

The CLI and ``create_app`` call ``Settings.from_env()`` once and pass the values on explicitly;
nothing in the package writes ``os.environ`` (except prometheus-client's own
``PROMETHEUS_MULTIPROC_DIR``, which a server of several workers names for its worker processes:
``server/metrics.py`` ``shared_metrics``). Explicit arguments (``--db``, ``create_app(db=)``)
win over the environment, which wins over the defaults.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_ACTIVE_REQUESTS", "DEFAULT_DB", "DEFAULT_DB_POOL_SIZE", "DEFAULT_LEASE",
           "DEFAULT_PUSH_ATTEMPTS", "DEFAULT_PUSH_TIMEOUT", "DEFAULT_SWEEP", "DEFAULT_TARGET",
           "MAX_ACTIVE_REQUESTS", "MAX_DB_POOL_SIZE", "MAX_DURATION", "OPTIONS", "Check",
           "Option", "Settings", "check_active_requests", "check_pool_size",
           "parse_active_requests", "parse_duration", "parse_flag", "parse_pool_size",
           "parse_target"]

DEFAULT_DB = "llamon.sqlite3"
#: PostgreSQL: connections in each server process's pool (``LLAMON_DB_POOL_SIZE``). 20 keeps
#: replicas x workers x 21 (the pool and the review listener) inside PostgreSQL's default
#: ``max_connections`` of 100 for two replicas of two workers; bench/README.md, "Speed, round
#: nine", measures what a larger pool gives
DEFAULT_DB_POOL_SIZE = 20
#: the most ``LLAMON_DB_POOL_SIZE`` takes: beyond it a pool only holds PostgreSQL backends
#: (each a process with its own memory) that one event loop cannot keep busy
MAX_DB_POOL_SIZE = 1000
#: JSON-RPC requests each server process serves at once while its event loop is saturated
#: (``LLAMON_MAX_ACTIVE_REQUESTS``; ``server/admission.py``): on PostgreSQL 32 connections
#: sending at once ran a third faster held to 16, 12 and 24 gained less, 8 too few to overlap
#: the database's round trips; SQLite was the same (bench/README.md, "Speed, round fourteen")
DEFAULT_ACTIVE_REQUESTS = 16
#: the most ``LLAMON_MAX_ACTIVE_REQUESTS`` takes (0 turns the limit off)
MAX_ACTIVE_REQUESTS = 100_000
#: what ``llamon-agent serve`` serves without a target: the example app
DEFAULT_TARGET = "app.main:AGENTS"
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

#: a further check of a variable's value that needs more than this module (a database URL, a
#: file to read): raises ``ValueError`` saying what is wrong; given by the caller of from_env
Check = Callable[[str], object]


@dataclass(frozen=True)
class Settings:
    """The values of ``OPTIONS``, typed; a field's default is the default of its setting.

    ``None`` means unset: off (quotas, retention, tokens), or, for the bounds whose defaults
    live with what they bound (``request_timeout``, ``keep_alive``, ``max_connections`` in
    ``server/serve.py``; the ``max_*`` edge limits in ``core/bounds.py`` ``Limits``), that
    default. Each field's variable and meaning: ``OPTIONS``, or docs/operations.md."""

    db: str = DEFAULT_DB
    db_pool_size: int = DEFAULT_DB_POOL_SIZE
    max_active_requests: int = DEFAULT_ACTIVE_REQUESTS
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
    # the command line's own (llamon-agent serve / prune)
    target: str = DEFAULT_TARGET
    host: str = "127.0.0.1"
    port: int = 8000
    card: str | None = None
    log_level: str = "info"
    reload: bool = False
    api_keys_file: str | None = None
    extended_card: str | None = None
    allow_unauthenticated: bool = False
    request_timeout: float | None = None
    keep_alive: int | None = None
    max_connections: int | None = None
    max_body_bytes: int | None = None
    max_depth: int | None = None
    max_text_chars: int | None = None
    max_parts: int | None = None
    max_data_bytes: int | None = None
    max_file_bytes: int | None = None
    max_id_chars: int | None = None
    max_task_bytes: int | None = None
    max_url_chars: int | None = None
    max_token_chars: int | None = None
    max_push_configs: int | None = None
    prune_older_than: float | None = None
    prune_dry_run: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None,
                 checks: Mapping[str, Check] | None = None) -> Settings:
        """The settings of ``environ`` (default ``os.environ``); an unset or empty variable
        leaves its default. ``checks``: further checks by field name, run on the text of a
        variable that is set. A malformed value raises ``ValueError`` naming its variable."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for option in OPTIONS:
            found = option.lookup(env)
            if found is None:
                continue
            name, text = found
            try:
                values[option.field] = option.read(text)
                check = (checks or {}).get(option.field)
                if check is not None:
                    check(text)
            except ValueError as exc:
                raise ValueError(_naming(name, str(exc))) from None
        return cls(**values)

    @classmethod
    def one_from_env(cls, field: str, environ: Mapping[str, str] | None = None) -> Any:
        """One setting of ``environ``, read alone: its value, or the field's default. A path
        run on every request reads one variable, not all of them (``from_env`` was 5% of a
        HITL round trip's CPU; bench/README.md, "Speed, round four"), and another variable
        that is malformed is not its concern."""
        option = _BY_FIELD[field]
        found = option.lookup(os.environ if environ is None else environ)
        if found is None:
            return cls.__dataclass_fields__[field].default
        name, text = found
        try:
            return option.read(text)
        except ValueError as exc:
            raise ValueError(_naming(name, str(exc))) from None


def _naming(variable: str, message: str) -> str:
    """``LLAMON_PORT must be ...`` or ``LLAMON_PORT: expected ...``: one line, read as a phrase."""
    return f"{variable} {message}" if message.startswith("must ") else f"{variable}: {message}"


# ---------------------------------------------------------------------------------- readers


def parse_flag(text: str) -> bool:
    raw = text.strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"must be 1 or 0 (true or false), got {text.strip()!r}")


def parse_whole(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text.strip()!r}") from None
    if value < 1:
        raise ValueError(f"must be at least 1, got {value}")
    return value


def check_active_requests(value: object) -> int:
    """``value`` if it is a whole number from 0 (no limit) to ``MAX_ACTIVE_REQUESTS``
    (``LLAMON_MAX_ACTIVE_REQUESTS``, ``create_app(max_active_requests=)``); else ``ValueError``."""
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 0 <= value <= MAX_ACTIVE_REQUESTS):
        raise ValueError(f"must be a whole number from 0 (no limit) to {MAX_ACTIVE_REQUESTS}, "
                         f"got {value!r}")
    return value


def parse_active_requests(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text.strip()!r}") from None
    return check_active_requests(value)


def check_pool_size(value: object) -> int:
    """``value`` if it is a whole number from 1 to ``MAX_DB_POOL_SIZE`` (``LLAMON_DB_POOL_SIZE``,
    ``create_app(db_pool_size=)``, ``open_storage(pool_size=)``); else ``ValueError``."""
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 1 <= value <= MAX_DB_POOL_SIZE):
        raise ValueError(f"must be a whole number from 1 to {MAX_DB_POOL_SIZE}, got {value!r}")
    return value


def parse_pool_size(text: str) -> int:
    return check_pool_size(parse_whole(text))


def parse_port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text.strip()!r}") from None
    if not 0 <= value <= 65535:
        raise ValueError(f"must be from 0 to 65535, got {value}")
    return value


def _above_zero(text: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected {unit or 'a number'}, got {text.strip()!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be more than 0{' ' + unit if unit else ''}, got {text.strip()}")
    return value


def parse_seconds(text: str) -> float:
    return _above_zero(text, "seconds")


def parse_positive(text: str) -> float:
    return _above_zero(text, "")


def parse_text(text: str) -> str:
    return text.strip()


def parse_lower(text: str) -> str:
    return text.strip().lower()


def parse_log_format(text: str) -> str:
    raw = text.strip().lower()
    if raw not in ("text", "json"):
        raise ValueError(f"must be text or json, got {raw!r}")
    return raw


def parse_target(text: str) -> str:
    """``MODULE:ATTR``, as uvicorn names apps."""
    module, _, attr = text.strip().partition(":")
    if not module or not attr:
        raise ValueError(f"expected MODULE:ATTR, got {text.strip()!r}")
    return text.strip()


def parse_duration(text: str) -> float:
    """Seconds of a duration written as a whole number and one unit: ``45s``, ``90m``,
    ``12h``, ``30d``; from 1 second to ``MAX_DURATION``. Anything else raises ``ValueError``
    saying what is accepted (retention, ``llamon-agent prune --older-than``)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected a duration such as 30d, 12h, 90m or 45s (a whole number "
                         f"and one unit: s, m, h or d), got {text.strip()!r}")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not 1 <= seconds <= MAX_DURATION:
        raise ValueError(f"a duration is from 1s to {MAX_DURATION // 86400}d, got {text!r}")
    return float(seconds)


# ------------------------------------------------------------------------------------ table


@dataclass(frozen=True)
class Option:
    """One setting. ``flag``: ``--port`` (an option), ``TARGET`` (the positional argument), or
    ``None`` (a variable only: secrets and what only ``create_app`` reads). ``unset``: the
    default in words, for a field whose default is ``None``. ``aliases``: older names of the
    variable, read when it is unset. ``unit``: shown after a default in ``--help``."""

    field: str
    variable: str
    read: Callable[[str], Any]
    help: str
    flag: str | None = None
    commands: tuple[str, ...] = ("serve",)
    metavar: str | None = None
    group: str | None = None
    unset: str = "off"
    unit: str = ""
    aliases: tuple[str, ...] = ()
    #: the command cannot run without it: a flag, or its variable
    required: bool = False

    @property
    def switch(self) -> bool:
        """A flag that takes no value (``--reload``); its variable reads 1/true/yes, 0/false/no."""
        return self.read is parse_flag

    def lookup(self, env: Mapping[str, str]) -> tuple[str, str] | None:
        """The variable that is set (this one, else an alias) and its text."""
        for name in (self.variable, *self.aliases):
            text = env.get(name) or ""
            if text.strip():
                return name, text
        return None


def _limit(name: str, what: str) -> Option:
    return Option(name, "LLAMON_" + name.upper(), parse_whole, what,
                  flag="--" + name.replace("_", "-"), metavar="N", group="edge limits")


def _quota(name: str, read: Callable[[str], Any], metavar: str, what: str,
           unset: str = "off") -> Option:
    return Option(name, "LLAMON_" + name.upper(), read, what, flag="--" + name.replace("_", "-"),
                  metavar=metavar, group="quotas per principal", unset=unset)


OPTIONS: tuple[Option, ...] = (
    Option("target", "LLAMON_TARGET", parse_target,
           "MODULE:ATTR naming a list of Agents, or an ASGI app, to serve", flag="MODULE:ATTR"),
    Option("host", "LLAMON_HOST", parse_text,
           "the address to listen on; another than loopback needs authentication or "
           "--allow-unauthenticated", flag="--host", metavar="ADDRESS"),
    Option("port", "LLAMON_PORT", parse_port, "the TCP port to listen on", flag="--port",
           metavar="PORT"),
    Option("db", "LLAMON_DATABASE_URL", parse_text,
           "where tasks and checkpoints live: a SQLite file (or sqlite:///PATH; one server per "
           "file), :memory:, or postgresql://USER@HOST/DATABASE (the postgres extra)",
           flag="--db", commands=("serve", "prune"), metavar="URL", aliases=("LLAMON_DB",)),
    Option("db_pool_size", "LLAMON_DB_POOL_SIZE", parse_pool_size,
           "PostgreSQL: connections in each server process's pool (1 to 1000); keep replicas x "
           "workers x (N + 1) below the database's max_connections", flag="--db-pool-size",
           metavar="N"),
    Option("max_active_requests", "LLAMON_MAX_ACTIVE_REQUESTS", parse_active_requests,
           "JSON-RPC requests (not streams) each server process serves at once while its event "
           "loop is saturated; more wait their turn, and all go in once the loop has time to "
           "spare; 0: no limit", flag="--max-active-requests", metavar="N"),
    Option("events", "LLAMON_EVENTS_URL", parse_text,
           "where stream events, resubscribe replay and cancel requests travel between "
           "replicas: redis://HOST[:PORT][/DB][?prefix=NAME] (the redis extra), or local:// to "
           "keep them in the process", flag="--events", metavar="URL", unset="in the process"),
    Option("lease", "LLAMON_LEASE_SECONDS", parse_seconds,
           "PostgreSQL: how long a replica's claims on the runs it executes outlive its last "
           "heartbeat; a dead replica's runs are taken over after it", flag="--lease",
           metavar="SECONDS", unit="s"),
    Option("workers", "LLAMON_WORKERS", parse_whole,
           "server processes sharing the listening socket, each with its own connections and "
           "pool; more than one needs a PostgreSQL --db and --events redis://...",
           flag="--workers", metavar="N"),
    Option("card", "LLAMON_CARD", parse_text,
           "an agent card JSON file to serve instead of the card built from the agents",
           flag="--card", metavar="FILE",
           unset="./agent-card.json when present, else built from the agents"),
    Option("public_url", "LLAMON_PUBLIC_URL", parse_text,
           "the endpoint URL the agent card advertises; without it, the local address the "
           "connection arrived on, never the Host header", flag="--public-url", metavar="URL",
           unset="unset"),
    Option("log_level", "LLAMON_LOG_LEVEL", parse_lower,
           "trace, debug, info, warning, error or critical, for every line of the process",
           flag="--log-level", metavar="LEVEL"),
    Option("log_format", "LLAMON_LOG_FORMAT", parse_log_format,
           "text (for a person) or json (one object a line, for a log pipeline); "
           "docs/operations.md, Logs",
           flag="--log-format"),
    Option("retention", "LLAMON_RETENTION", parse_duration,
           "delete tasks that ended longer ago than this (30d, 12h, 90m, 45s), with their "
           "checkpoints, reviews and events; docs/operations.md, Retention", flag="--retention", metavar="DURATION",
           unit="s", unset="off: kept for ever"),
    Option("push_allow_private", "LLAMON_PUSH_ALLOW_PRIVATE", parse_flag,
           "allow push notification webhooks on loopback, private and link-local addresses "
           "(tests, private networks); docs/operations.md, Push notifications",
           flag="--push-allow-private"),
    Option("reload", "LLAMON_RELOAD", parse_flag,
           "for development: restart the server when a Python file under the working folder "
           "changes (one process: not with --workers); docs/operations.md, Reload",
           flag="--reload"),
    Option("api_keys_file", "LLAMON_API_KEYS_FILE", parse_text,
           "a file of principal=key pairs, one per line ('#' comments); callers send the key "
           "as X-API-Key or Authorization: Bearer. The pairs themselves, comma-separated: "
           "$LLAMON_API_KEYS", flag="--api-keys", metavar="FILE", group="authentication",
           unset="none"),
    Option("extended_card", "LLAMON_EXTENDED_CARD", parse_text,
           "an agent card JSON file served to authenticated callers by "
           "agent/getAuthenticatedExtendedCard (needs authentication)",
           flag="--extended-card", metavar="FILE", group="authentication", unset="none"),
    Option("allow_unauthenticated", "LLAMON_ALLOW_UNAUTHENTICATED", parse_flag,
           "serve on a non-loopback --host without authentication (something in front of the "
           "server authenticates); logged at every start", flag="--allow-unauthenticated",
           group="authentication"),
    Option("request_timeout", "LLAMON_REQUEST_TIMEOUT", parse_seconds,
           "time a client has to send a whole request, head and body; then 408 and the "
           "connection is closed", flag="--request-timeout", metavar="SECONDS",
           group="connections", unit="s"),
    Option("keep_alive", "LLAMON_KEEP_ALIVE", parse_whole,
           "an idle connection is closed after this long between requests",
           flag="--keep-alive", metavar="SECONDS", group="connections", unit="s"),
    Option("max_connections", "LLAMON_MAX_CONNECTIONS", parse_whole,
           "open connections; one more is answered 503 and closed; keep it below the "
           "open-file limit, ulimit -n", flag="--max-connections", metavar="N",
           group="connections"),
    _limit("max_body_bytes", "bytes of one request body (JSON-RPC and REST)"),
    _limit("max_depth", "nesting levels of any one client value (data parts, metadata, tool "
           "arguments)"),
    _limit("max_text_chars", "characters of one text part"),
    _limit("max_parts", "parts of one message"),
    _limit("max_data_bytes", "bytes of one data part, metadata object or argument set, as "
           "JSON"),
    _limit("max_file_bytes", "characters of one file part's base64 bytes"),
    _limit("max_id_chars", "characters of an id a client chooses (messageId, contextId, "
           "taskId, ...)"),
    _limit("max_task_bytes", "bytes one task stores (its row), and of a context's graph state "
           "to start a new task in it (docs/storage.md)"),
    _limit("max_url_chars", "characters of a push notification config's webhook url"),
    _limit("max_token_chars", "characters of a push notification config's token and "
           "credentials"),
    _limit("max_push_configs", "push notification configs of one task"),
    _quota("quota_rate", parse_positive, "RPS", "requests per second on / (JSON-RPC) and "
           "/hitl/*; over it: HTTP 429 with Retry-After"),
    _quota("quota_burst", parse_whole, "N", "requests at once after a quiet time",
           unset="one second's worth of --quota-rate"),
    _quota("quota_streams", parse_whole, "N", "open message/stream and tasks/resubscribe "
           "streams; one more is -32004"),
    _quota("quota_waiting_tasks", parse_whole, "N", "tasks waiting for input; a message that "
           "would start one more is -32004, HTTP 429 on /hitl"),
    Option("prune_older_than", "LLAMON_PRUNE_OLDER_THAN", parse_duration,
           "delete tasks that ended (completed, canceled, rejected, failed) longer ago than "
           "this: a whole number and a unit, 30d, 12h, 90m or 45s", flag="--older-than",
           commands=("prune",), metavar="DURATION", unit="s", unset="none: required",
           required=True),
    Option("prune_dry_run", "LLAMON_PRUNE_DRY_RUN", parse_flag,
           "count what would be deleted; change nothing", flag="--dry-run",
           commands=("prune",)),
    # variables only: secrets, and what only create_app or the example app reads
    Option("api_keys", "LLAMON_API_KEYS", parse_text,
           "API keys: comma-separated principal=key pairs (--api-keys FILE wins)"),
    Option("jwt_jwks_url", "LLAMON_JWT_JWKS_URL", parse_text,
           "JWT bearer tokens: the JWKS URL; with LLAMON_JWT_ISSUER and LLAMON_JWT_AUDIENCE, "
           "all three or none"),
    Option("jwt_issuer", "LLAMON_JWT_ISSUER", parse_text, "JWT bearer tokens: the required iss"),
    Option("jwt_audience", "LLAMON_JWT_AUDIENCE", parse_text,
           "JWT bearer tokens: the required aud"),
    Option("reviewer_token", "LLAMON_REVIEWER_TOKEN", parse_text,
           "bearer token of the /reviews endpoints, the reviewer named reviewer"),
    Option("reviewer_tokens", "LLAMON_REVIEWER_TOKENS", parse_text,
           "named reviewers: comma-separated name=token pairs"),
    Option("metrics_token", "LLAMON_METRICS_TOKEN", parse_text,
           "the bearer token GET /metrics asks for; unset: public"),
    Option("language", "LLAMON_LANGUAGE", parse_text,
           "the default language of tool-review texts (Accept-Language still wins)"),
    Option("model", "LLAMON_MODEL", parse_text,
           "provider:model, the example app's chat model; unset: it runs offline"),
    Option("sweep_seconds", "LLAMON_SWEEP_SECONDS", parse_seconds,
           "how often each server sweeps for deadlines that passed, push deliveries to retry "
           "and ended tasks to delete", unit="s"),
    Option("push_max_attempts", "LLAMON_PUSH_MAX_ATTEMPTS", parse_whole,
           "attempts of one push delivery before it is given up"),
    Option("push_timeout", "LLAMON_PUSH_TIMEOUT_SECONDS", parse_seconds,
           "the bound of one push delivery attempt", unit="s"),
)

_BY_FIELD = {option.field: option for option in OPTIONS}

