"""``llamon-agent serve [MODULE:ATTR] [--host] [--port] [--db] [--card] [limits...]``."""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .agent import Agent
from .core.bounds import Limits
from .server.app import create_app
from .server.serve import (
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    ServeOptions,
    serve,
)
from .settings import DEFAULT_DB, Settings

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
) -> Any:
    """A list of Agents becomes an app on ``db``; anything else is served as the ASGI app it is
    (``card``, ``public_url`` and ``limits`` apply to a list of Agents only)."""
    obj = _load(target)
    if isinstance(obj, Agent):
        obj = [obj]
    if isinstance(obj, (list, tuple)):
        if not obj or not all(isinstance(a, Agent) for a in obj):
            raise SystemExit(f"error: {target} must be a list of Agent objects or an ASGI app")
        card_path = card if card is not None else ("agent-card.json" if Path("agent-card.json").is_file() else None)
        return create_app(
            list(obj), db=db, card=card_path, public_url=public_url, limits=limits,
            settings=settings,
        )
    if not callable(obj):
        raise SystemExit(f"error: {target} is neither a list of Agents nor an ASGI app")
    return obj


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _public_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"expected an absolute http(s) URL, got {text!r}")
    return text


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
}


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llamon-agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve agents over A2A (JSON-RPC at /)")
    serve_cmd.add_argument("target", nargs="?", default=DEFAULT_TARGET,
                           help="MODULE:ATTR naming a list of Agents or an ASGI app "
                           "(default: %(default)s)")
    serve_cmd.add_argument("--host", default="127.0.0.1", help="(default: %(default)s)")
    serve_cmd.add_argument("--port", type=int, default=8000, help="(default: %(default)s)")
    serve_cmd.add_argument("--db", default=settings.db,
                           help="SQLite file for tasks and checkpoints, or :memory:; one server "
                           f"per file (default: $LLAMON_DB, else {DEFAULT_DB})")
    serve_cmd.add_argument("--card", default=None,
                           help="agent card JSON (default: ./agent-card.json when present)")
    public_url = settings.public_url
    serve_cmd.add_argument("--public-url", type=_public_url, metavar="URL", default=public_url,
                           help="the endpoint URL the agent card advertises; without it, the "
                           "local address the connection arrived on, never the Host header "
                           "(default: $LLAMON_PUBLIC_URL"
                           + (f" = {public_url.replace('%', '%%')})" if public_url else ", unset)"))
    serve_cmd.add_argument("--log-level", default="info", help="(default: %(default)s)")

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
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    settings = Settings.from_env()
    args = _parser(settings).parse_args(argv)
    limits = Limits(**{name: getattr(args, name) for name in _LIMIT_HELP})
    app = build_app(args.target, args.db, args.card, public_url=args.public_url, limits=limits,
                    settings=settings)
    serve(app, ServeOptions(
        host=args.host, port=args.port, log_level=args.log_level,
        request_timeout=args.request_timeout, keep_alive=args.keep_alive,
        max_connections=args.max_connections,
    ))


if __name__ == "__main__":  # pragma: no cover
    main()
