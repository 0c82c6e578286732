"""``llamon-agent serve [MODULE:ATTR] [--host] [--port] [--db] [--card] [limits...]``;
``llamon-agent prune --older-than 30d [--dry-run] [--db URL]``."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .agent import Agent
from .auth import CredentialConfigError, parse_file
from .backends.events_url import parse_events_url
from .core.bounds import Limits
from .prune import add_prune_command, duration, run_prune
from .server.app import create_app
from .server.exposure import check_exposure
from .server.logs import LOG_FORMATS, configure_logging, log_level
from .server.quotas import Quotas
from .server.request_events import logs_requests
from .server.serve import (
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    ServeOptions,
    serve,
    serve_workers,
)
from .settings import DEFAULT_DB, Settings
from .stores.url import parse_database_url

DEFAULT_TARGET = "app.main:AGENTS"


def _load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"error: expected MODULE:ATTR, got {target!r}")
    if os.getcwd() not in sys.path:  # like uvicorn: the working folder is importable
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemExit(f"error: cannot import {module_name!r}: {exc}") from exc
    for name in attr.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            raise SystemExit(f"error: {module_name!r} has no attribute {attr!r}") from None
    return obj


def build_app(
    target: str,
    db: str,
    card: str | None,
    *,
    public_url: str | None = None,
    limits: Limits | None = None,
    settings: Settings | None = None,
    quotas: Quotas | None = None,
    api_keys: Mapping[str, str] | None = None,
    extended_card: str | None = None,
    events: str | None = None,
    lease: float | None = None,
    retention: float | None = None,
) -> Any:
    """A list of Agents becomes an app on ``db``; anything else is served as the ASGI app it is
    (``card``, ``public_url``, ``limits`` and ``quotas`` apply to a list of Agents only;
    ``api_keys`` and ``extended_card`` too, and an ASGI app given them is refused: a flag that
    turns authentication on must never be ignored)."""
    obj = _load(target)
    if isinstance(obj, Agent):
        obj = [obj]
    if isinstance(obj, (list, tuple)):
        if not obj or not all(isinstance(a, Agent) for a in obj):
            raise SystemExit(f"error: {target} must be a list of Agent objects or an ASGI app")
        card_path = card if card is not None else ("agent-card.json" if Path("agent-card.json").is_file() else None)
        try:
            return create_app(
                list(obj), db=db, card=card_path, public_url=public_url, limits=limits,
                settings=settings, quotas=quotas, api_keys=api_keys, extended_card=extended_card,
                events=events or "local://", lease=lease, retention=retention,
            )
        except (CredentialConfigError, ImportError) as exc:  # one line, never a secret
            raise SystemExit(f"error: {exc}") from None
    if not callable(obj):
        raise SystemExit(f"error: {target} is neither a list of Agents nor an ASGI app")
    if api_keys is not None or extended_card is not None:
        raise SystemExit(f"error: {target} is an ASGI app: --api-keys and --extended-card apply "
                         "to a list of Agents; pass them to create_app in your own app")
    return obj


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _more_than_zero(text: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {unit or 'a number'}, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be more than 0{' ' + unit if unit else ''}, got {text}")
    return value


def _seconds(text: str) -> float:
    return _more_than_zero(text, "seconds")


def _positive_float(text: str) -> float:
    return _more_than_zero(text, "")


def _api_keys(path: str) -> dict[str, str]:
    """``--api-keys FILE``: one ``principal=key`` per line; errors name the line, never a key."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read the API keys file {path}: {exc}") from None
    try:
        return parse_file(text, path)
    except CredentialConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _log_level(text: str) -> str:
    try:
        log_level(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.lower()


def _public_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"expected an absolute http(s) URL, got {text!r}")
    return text


def _database(text: str) -> str:
    """A database setting ``open_storage`` accepts; PostgreSQL only with its extra installed."""
    try:
        url = parse_database_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if url.kind == "postgres":
        _require_extra("psycopg_pool", "postgres", "PostgreSQL storage needs")
    return text


def _events(text: str | None) -> str | None:
    """An events setting ``parse_events_url`` accepts; Redis only with its extra installed."""
    try:
        url = parse_events_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if url.kind == "redis":
        _require_extra("redis", "redis", "Redis events need")
    return text if url.kind == "redis" else None


def _require_extra(module: str, extra: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise argparse.ArgumentTypeError(
            f"{what} the {extra} extra: pip install 'llamon-agent[{extra}]'")


#: ``Limits`` fields and what each bounds, for --help (defaults come from ``Limits()``)
_LIMIT_HELP = {
    "max_body_bytes": "bytes of one request body (JSON-RPC and REST)",
    "max_depth": "nesting levels of any one client value (data parts, metadata, tool arguments)",
    "max_text_chars": "characters of one text part",
    "max_parts": "parts of one message",
    "max_data_bytes": "bytes of one data part, metadata object or argument set, as JSON",
    "max_file_bytes": "characters of one file part's base64 bytes",
    "max_id_chars": "characters of an id a client chooses (messageId, contextId, taskId, ...)",
    "max_task_bytes": "bytes one task stores (its row), and of a context's graph state to "
    "start a new task in it (docs/storage.md)",
    "max_url_chars": "characters of a push notification config's webhook url",
    "max_token_chars": "characters of a push notification config's token and credentials",
    "max_push_configs": "push notification configs of one task",
}


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llamon-agent", description=__doc__)
    parser.add_argument("--version", action="version",
                        version=f"llamon-agent {package_version('llamon-agent')}",
                        help="print the installed release and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve agents over A2A (JSON-RPC at /)")
    serve_cmd.add_argument("target", nargs="?", default=DEFAULT_TARGET,
                           help="MODULE:ATTR naming a list of Agents or an ASGI app "
                           "(default: %(default)s)")
    serve_cmd.add_argument("--host", default="127.0.0.1", help="(default: %(default)s)")
    serve_cmd.add_argument("--port", type=int, default=8000, help="(default: %(default)s)")
    serve_cmd.add_argument("--db", default=settings.db, type=_database, metavar="URL",
                           help="where tasks and checkpoints live: a SQLite file (or "
                           "sqlite:///PATH; one server per file), :memory:, or "
                           "postgresql://USER@HOST/DATABASE (the postgres extra) (default: "
                           f"$LLAMON_DATABASE_URL, else $LLAMON_DB, else {DEFAULT_DB})")
    serve_cmd.add_argument("--events", default=settings.events, type=_events, metavar="URL",
                           help="where stream events, resubscribe replay and cancel requests "
                           "travel between replicas: redis://HOST[:PORT][/DB][?prefix=NAME] "
                           "(the redis extra), or local:// to keep them in the process "
                           "(default: $LLAMON_EVENTS_URL, else in the process)")
    serve_cmd.add_argument("--lease", type=_seconds, default=settings.lease, metavar="SECONDS",
                           help="PostgreSQL: how long a replica's claims on the runs it executes "
                           "outlive its last heartbeat; a dead replica's runs are taken over "
                           "after it (default: $LLAMON_LEASE_SECONDS, else %(default)s)")
    serve_cmd.add_argument("--workers", type=_positive_int, default=settings.workers,
                           metavar="N", help="server processes sharing the listening socket, "
                           "each with its own connections and pool; more than one needs a "
                           "PostgreSQL --db and --events redis://... (default: $LLAMON_WORKERS, "
                           "else %(default)s)")
    serve_cmd.add_argument("--card", default=None,
                           help="agent card JSON (default: ./agent-card.json when present)")
    public_url = settings.public_url
    serve_cmd.add_argument("--public-url", type=_public_url, metavar="URL", default=public_url,
                           help="the endpoint URL the agent card advertises; without it, the "
                           "local address the connection arrived on, never the Host header "
                           "(default: $LLAMON_PUBLIC_URL"
                           + (f" = {public_url.replace('%', '%%')})" if public_url else ", unset)"))
    serve_cmd.add_argument("--log-level", type=_log_level, default="info", metavar="LEVEL",
                           help="trace, debug, info, warning, error or critical, for every "
                           "line of the process (default: %(default)s)")
    serve_cmd.add_argument("--log-format", choices=LOG_FORMATS, default=settings.log_format,
                           help="text (for a person) or json (one object a line, for a log "
                           "pipeline); docs/operations.md, Logs (default: $LLAMON_LOG_FORMAT, "
                           "else text)")
    serve_cmd.add_argument("--retention", type=duration, default=settings.retention,
                           metavar="DURATION", help="delete tasks that ended longer ago than "
                           "this (30d, 12h, 90m, 45s), with their checkpoints, reviews and "
                           "events; docs/operations.md, Retention (default: $LLAMON_RETENTION, "
                           "else off: kept for ever)")
    serve_cmd.add_argument("--push-allow-private", action="store_true",
                           default=settings.push_allow_private,
                           help="allow push notification webhooks on loopback, private and "
                           "link-local addresses (tests, private networks); docs/operations.md, "
                           "Push notifications (default: $LLAMON_PUSH_ALLOW_PRIVATE, else off)")
    _auth_arguments(serve_cmd)

    connections = serve_cmd.add_argument_group("connections")
    connections.add_argument("--request-timeout", type=_seconds, metavar="SECONDS",
                             default=DEFAULT_REQUEST_TIMEOUT,
                             help="time a client has to send a whole request, head and body; "
                             "then 408 and the connection is closed (default: %(default)s s)")
    connections.add_argument("--keep-alive", type=_positive_int, metavar="SECONDS",
                             default=DEFAULT_KEEP_ALIVE,
                             help="an idle connection is closed after this long between "
                             "requests (default: %(default)s s)")
    connections.add_argument("--max-connections", type=_positive_int, metavar="N",
                             default=DEFAULT_MAX_CONNECTIONS,
                             help="open connections; one more is answered 503 and closed; keep "
                             "it below the open-file limit, ulimit -n (default: %(default)s)")

    limits = serve_cmd.add_argument_group(
        "edge limits", "bounds on what a client sends (docs/limits.md); a violation is -32602 "
        "(JSON-RPC) or 422 (REST), a body over --max-body-bytes -32600 or 413"
    )
    defaults = Limits()
    for name, text in _LIMIT_HELP.items():
        limits.add_argument("--" + name.replace("_", "-"), type=_positive_int, metavar="N",
                            default=getattr(defaults, name),
                            help=f"{text} (default: %(default)s)")

    quotas = serve_cmd.add_argument_group(
        "quotas per principal", "what one authenticated caller may use (docs/operations.md, "
        "Quotas); off unless set. Without authentication every caller is the one principal "
        "'anonymous' and shares them"
    )
    quotas.add_argument("--quota-rate", type=_positive_float, metavar="RPS",
                        default=settings.quota_rate,
                        help="requests per second on / (JSON-RPC) and /hitl/*; over it: HTTP "
                        "429 with Retry-After (default: $LLAMON_QUOTA_RATE, else off)")
    quotas.add_argument("--quota-burst", type=_positive_int, metavar="N",
                        default=settings.quota_burst,
                        help="requests at once after a quiet time (default: $LLAMON_QUOTA_BURST, "
                        "else one second's worth of --quota-rate)")
    quotas.add_argument("--quota-streams", type=_positive_int, metavar="N",
                        default=settings.quota_streams,
                        help="open message/stream and tasks/resubscribe streams; one more is "
                        "-32004 (default: $LLAMON_QUOTA_STREAMS, else off)")
    quotas.add_argument("--quota-waiting-tasks", type=_positive_int, metavar="N",
                        default=settings.quota_waiting_tasks,
                        help="tasks waiting for input; a message that would start one more is "
                        "-32004, HTTP 429 on /hitl (default: $LLAMON_QUOTA_WAITING_TASKS, else "
                        "off)")
    add_prune_command(commands, settings, _database)
    return parser


def _auth_arguments(serve_cmd: argparse.ArgumentParser) -> None:
    group = serve_cmd.add_argument_group(
        "authentication", "of POST / (JSON-RPC) and /hitl/* (docs/operations.md, "
        "Authentication); JWT bearer tokens: $LLAMON_JWT_JWKS_URL, $LLAMON_JWT_ISSUER, "
        "$LLAMON_JWT_AUDIENCE. Without any, every caller is 'anonymous' and the server binds "
        "to loopback only"
    )
    group.add_argument("--api-keys", type=_api_keys, metavar="FILE", default=None,
                       help="principal=key pairs, one per line ('#' comments); callers send "
                       "the key as X-API-Key or Authorization: Bearer (default: "
                       "$LLAMON_API_KEYS, comma-separated pairs)")
    group.add_argument("--extended-card", metavar="FILE", default=None,
                       help="agent card JSON served to authenticated callers by "
                       "agent/getAuthenticatedExtendedCard (needs authentication)")
    group.add_argument("--allow-unauthenticated", action="store_true",
                       help="serve on a non-loopback --host without authentication (something "
                       "in front of the server authenticates); logged at every start")


def main(argv: Sequence[str] | None = None) -> None:
    try:
        settings = Settings.from_env()
    except ValueError as exc:  # a malformed variable: one line, not a traceback
        raise SystemExit(f"error: {exc}") from None
    args = _parser(settings).parse_args(argv)
    if args.command == "prune":
        raise SystemExit(run_prune(args, settings))
    refused = _workers_refusal(args.workers, args.db, args.events)
    if refused is not None:  # before anything is built or opened
        raise SystemExit(f"error: {refused}")
    configure_logging(args.log_format, args.log_level)  # before anything below logs
    if args.push_allow_private:  # each worker's app reads it from the settings it is given
        settings = dataclasses.replace(settings, push_allow_private=True)
    limits = Limits(**{name: getattr(args, name) for name in _LIMIT_HELP})
    try:
        quotas = Quotas(requests_per_second=args.quota_rate, burst=args.quota_burst,
                        max_streams=args.quota_streams,
                        max_waiting_tasks=args.quota_waiting_tasks)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    # the recipe as well as the app: each worker process builds its own (an app is not
    # picklable); the parent's app checks the settings once, before any worker starts
    make_app = functools.partial(
        build_app, args.target, args.db, args.card, public_url=args.public_url, limits=limits,
        settings=settings, quotas=quotas, api_keys=args.api_keys,
        extended_card=args.extended_card, events=args.events, lease=args.lease,
        retention=args.retention)
    app = make_app()
    refusal = check_exposure(app, args.host, allow_unauthenticated=args.allow_unauthenticated)
    if refusal is not None:
        raise SystemExit(f"error: {refusal}")
    options = ServeOptions(
        host=args.host, port=args.port, log_level=args.log_level,
        request_timeout=args.request_timeout, keep_alive=args.keep_alive,
        max_connections=args.max_connections, log_format=args.log_format,
        access_log=not logs_requests(app),  # create_app's apps log each request themselves
        workers=args.workers,
    )
    if args.workers == 1:
        serve(app, options)
    else:
        serve_workers(make_app, options)


def _workers_refusal(workers: int, db: str, events: str | None) -> str | None:
    """Several worker processes need storage and events every one of them reaches."""
    if workers == 1:
        return None
    kind = parse_database_url(db).kind
    if kind == "sqlite":
        return f"{workers} workers need a PostgreSQL --db: a SQLite file allows one server"
    if kind == "memory":
        return f"{workers} workers need a PostgreSQL --db: memory storage lives in one process"
    if events is None:
        return f"{workers} workers need --events redis://...: stream events must cross processes"
    return None


if __name__ == "__main__":  # pragma: no cover
    main()
