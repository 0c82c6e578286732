"""``llamon-agent serve [MODULE:ATTR] [--host] [--port] [--db] [--card]``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .agent import Agent
from .server.app import DEFAULT_DB, create_app

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


def build_app(target: str, db: str, card: str | None) -> Any:
    """A list of Agents becomes an app on ``db``; anything else is served as the ASGI app it is."""
    obj = _load(target)
    if isinstance(obj, Agent):
        obj = [obj]
    if isinstance(obj, (list, tuple)):
        if not obj or not all(isinstance(a, Agent) for a in obj):
            raise SystemExit(f"error: {target} must be a list of Agent objects or an ASGI app")
        card_path = card if card is not None else ("agent-card.json" if Path("agent-card.json").is_file() else None)
        return create_app(list(obj), db=db, card=card_path)
    if not callable(obj):
        raise SystemExit(f"error: {target} is neither a list of Agents nor an ASGI app")
    return obj


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="llamon-agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve agents over A2A (JSON-RPC at /)")
    serve.add_argument("target", nargs="?", default=DEFAULT_TARGET,
                       help=f"MODULE:ATTR naming a list of Agents or an ASGI app (default {DEFAULT_TARGET})")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--db", default=os.environ.get("LLAMON_DB", DEFAULT_DB),
                       help="SQLite file for tasks and checkpoints, or :memory:")
    serve.add_argument("--card", default=None,
                       help="agent card JSON (default: ./agent-card.json when present)")
    serve.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)

    import uvicorn

    os.environ["LLAMON_DB"] = args.db  # for app factories that read it
    app = build_app(args.target, args.db, args.card)
    # bounded graceful shutdown: streams and turns get the app's grace, then connections close
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=10)


if __name__ == "__main__":  # pragma: no cover
    main()
