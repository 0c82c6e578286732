"""``llamon-agent chat URL [--agent ID] [--context ID] [--api-key KEY]`` (docs/chat.md).

Exit codes: 0 the user left; 1 the agent could not be reached (no card, refused, not a URL);
2 a wrong argument (argparse); 130 interrupted before the chat started.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Mapping

import httpx

from ..client import A2AClient, A2AClientError
from .agents import listed_agents
from .render import error_lines
from .sanitize import clean
from .session import ChatOptions, ChatSession
from .state import TaskMemory, state_path
from .terminal import ConsoleTerminal

__all__ = ["add_chat_command", "run_chat"]

MAX_ID_CHARS = 256
MAX_KEY_CHARS = 4096
#: the longest silence between two events of a reply (a model may think for a while)
STREAM_TIMEOUT = httpx.Timeout(300.0, connect=10.0)
REQUEST_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


def _identifier(text: str) -> str:
    if not text or len(text) > MAX_ID_CHARS or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"expected 1 to {MAX_ID_CHARS} printable characters, got {text[:40]!r}")
    return text


def _api_key(text: str) -> str:
    if not text or len(text) > MAX_KEY_CHARS or not text.isprintable() or " " in text:
        # never echo a key, even a wrong one
        raise argparse.ArgumentTypeError(f"an API key is 1 to {MAX_KEY_CHARS} printable "
                                         "characters without spaces")
    return text


def _url(text: str) -> str:
    parsed = httpx.URL(text) if "://" in text else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise argparse.ArgumentTypeError(f"expected an http(s) URL, got {text[:200]!r}")
    return text


def add_chat_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                     environ: Mapping[str, str] = os.environ) -> None:
    """The ``chat`` subcommand; options default to their environment variables."""
    cmd = commands.add_parser(
        "chat", help="talk to an A2A v0.3 agent in the terminal: answer its questions, review "
        "its tool calls (docs/chat.md)",
        description="Talk to an A2A v0.3 agent (this server or any other) in the terminal.")
    cmd.add_argument("url", type=_url, metavar="URL",
                     help="the agent's base URL (its card is read from "
                     "/.well-known/agent-card.json)")
    cmd.add_argument("--agent", type=_identifier, metavar="ID",
                     default=environ.get("LLAMON_CHAT_AGENT") or None,
                     help="the agent to talk to on a server with several "
                     "(params.metadata.agentId); without it the chat lists them "
                     "(default: $LLAMON_CHAT_AGENT)")
    cmd.add_argument("--context", type=_identifier, metavar="ID",
                     default=environ.get("LLAMON_CHAT_CONTEXT") or None,
                     help="continue this conversation (contextId), e.g. after the chat was "
                     "restarted: its waiting question is shown again (default: "
                     "$LLAMON_CHAT_CONTEXT)")
    cmd.add_argument("--api-key", type=_api_key, metavar="KEY",
                     default=environ.get("LLAMON_API_KEY") or None,
                     help="sent as Authorization: Bearer KEY (default: $LLAMON_API_KEY)")


def run_chat(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> int:
    """Runs ``chat`` for the parsed arguments; returns the exit code."""
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    terminal = ConsoleTerminal(environ)
    memory = TaskMemory(state_path(environ))
    with asyncio.Runner() as runner:
        http = httpx.AsyncClient(timeout=REQUEST_TIMEOUT)
        try:
            try:
                client = runner.run(A2AClient.connect(
                    args.url, http=http, headers=headers, agent_id=args.agent,
                    timeout=REQUEST_TIMEOUT, stream_timeout=STREAM_TIMEOUT))
                agents = () if args.agent else tuple(
                    runner.run(listed_agents(http, args.url, headers)))
            except A2AClientError as exc:
                terminal.show([f"cannot talk to the agent at {clean(args.url)}:",
                               *error_lines(exc)])
                return 1
            except KeyboardInterrupt:
                terminal.show(["", "interrupted"])
                return 130
            options = ChatOptions(server=args.url, context_id=args.context, agents=agents)
            try:
                return ChatSession(client, terminal, memory, runner.run, options).run()
            except KeyboardInterrupt:  # the session handles its own; nothing else shows a trace
                terminal.show(["", "interrupted"])
                return 130
        finally:
            runner.run(http.aclose())
