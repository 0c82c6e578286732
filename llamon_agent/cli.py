"""``llamon-agent serve [MODULE:ATTR] [--host] [--port] [--db] [--card] [limits...]``;
``llamon-agent prune --older-than 30d [--dry-run] [--db URL]``;
``llamon-agent chat URL [--agent ID] [--context ID] [--api-key KEY]``."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import reprlib
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .agent import Agent
from .auth import CredentialConfigError, parse_file
from .backends.events_url import parse_events_url
from .chat.command import add_chat_command, run_chat
from .core.bounds import Limits
from .prune import add_prune_command, run_prune
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
    serve_reloading,
    serve_workers,
)
from .settings import DEFAULT_TARGET, OPTIONS, Option, Settings
from .stores.url import parse_database_url

__all__ = ["DEFAULT_TARGET", "build_app", "main", "settings_from_env"]


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
    db_pool_size: int | None = None,
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
        refusal = _not_agents(obj)
        if refusal is not None:
            raise SystemExit(f"error: {target} is {refusal}: {_SERVABLE}")
        card_path = card if card is not None else ("agent-card.json" if Path("agent-card.json").is_file() else None)
        try:
            return create_app(
                list(obj), db=db, db_pool_size=db_pool_size, card=card_path,
                public_url=public_url, limits=limits, settings=settings, quotas=quotas,
                api_keys=api_keys, extended_card=extended_card, events=events or "local://",
                lease=lease, retention=retention,
            )
        except (CredentialConfigError, ImportError) as exc:  # one line, never a secret
            raise SystemExit(f"error: {exc}") from None
    refusal = _not_asgi(obj)
    if refusal is not None:
        raise SystemExit(f"error: {target} is {refusal}: {_SERVABLE}")
    if api_keys is not None or extended_card is not None:
        raise SystemExit(f"error: {target} is an ASGI app: --api-keys and --extended-card apply "
                         "to a list of Agents; pass them to create_app in your own app")
    return obj


_SERVABLE = ("expected a list of Agents or an ASGI app (async, called with scope, receive, "
             "send)")


def _not_agents(items: list[Any] | tuple[Any, ...]) -> str | None:
    """What is wrong with a list that should hold Agents, or ``None``."""
    kind = type(items).__name__
    if not items:
        return f"an empty {kind}"
    for index, item in enumerate(items):
        if not isinstance(item, Agent):
            return f"a {kind} whose item {index} is {_a_value(item)}"
    return None


def _not_asgi(obj: Any) -> str | None:
    """What keeps ``obj`` from being an ASGI app (an async callable taking scope, receive and
    send), or ``None``; uvicorn would only fail at the first request."""
    if inspect.isclass(obj):
        return f"the class {obj.__qualname__}"
    if inspect.isfunction(obj) or inspect.ismethod(obj) or isinstance(obj, functools.partial):
        name = getattr(obj, "__qualname__", type(obj).__name__)
        described = f"the function {name}{_signature(obj)}"
        if not inspect.iscoroutinefunction(obj):
            return described + ", not async"
        return None if _takes_three(obj) else described
    if not callable(obj):
        if type(obj).__module__ == "builtins":  # a number, a string, a dict: show it
            return _a_value(obj)
        return f"{_article(type(obj).__name__)}, which cannot be called"
    described = f"{_article(type(obj).__name__)} whose __call__{_signature(obj.__call__)}"
    if not inspect.iscoroutinefunction(obj.__call__):
        return described + " is not async"
    return None if _takes_three(obj.__call__) else described


def _signature(function: Any) -> str:
    try:
        return str(inspect.signature(function))
    except (TypeError, ValueError):  # a builtin without one
        return "(...)"


def _takes_three(function: Any) -> bool:
    try:
        inspect.signature(function).bind(None, None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read: let uvicorn call it
        return True
    return True


def _article(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _a_value(obj: Any) -> str:
    """``an int: 3``: the type and a short repr (the value may be long)."""
    return f"{_article(type(obj).__name__)}: {reprlib.repr(obj)}"


def _api_keys(path: str) -> dict[str, str]:
    """``--api-keys FILE``: one ``principal=key`` per line; errors name the line, never a key."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the API keys file {path}: {exc}") from None
    try:
        return parse_file(text, path)
    except CredentialConfigError as exc:
        raise ValueError(str(exc)) from None


def _log_level(text: str) -> str:
    log_level(text.strip())  # raises ValueError naming the levels
    return text.strip().lower()


def _public_url(text: str) -> str:
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected an absolute http(s) URL, got {text.strip()!r}")
    return text.strip()


def _database(text: str) -> str:
    """A database setting ``open_storage`` accepts; PostgreSQL only with its extra installed."""
    url = parse_database_url(text.strip())
    if url.kind == "postgres":
        _require_extra("psycopg_pool", "postgres", "PostgreSQL storage needs")
    return text.strip()


def _events(text: str) -> str | None:
    """An events setting ``parse_events_url`` accepts; Redis only with its extra installed."""
    url = parse_events_url(text.strip())
    if url.kind == "redis":
        _require_extra("redis", "redis", "Redis events need")
    return text.strip() if url.kind == "redis" else None


def _require_extra(module: str, extra: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{what} the {extra} extra: pip install 'llamon-agent[{extra}]'")


#: what the command line checks beyond reading a value (settings.py cannot: these need the
#: stores, the events backends, the logs, a file); each returns what the option holds, and
#: a variable that fails one stops the command naming the variable
_CHECKS: dict[str, Callable[[str], Any]] = {
    "db": _database,
    "events": _events,
    "log_level": _log_level,
    "public_url": _public_url,
    "api_keys_file": _api_keys,
}
#: defaults that live with what they bound, for settings left unset (``None``)
_BOUNDS: dict[str, Any] = {
    "request_timeout": DEFAULT_REQUEST_TIMEOUT,
    "keep_alive": DEFAULT_KEEP_ALIVE,
    "max_connections": DEFAULT_MAX_CONNECTIONS,
    **dataclasses.asdict(Limits()),
}
_LIMIT_FIELDS = tuple(field.name for field in dataclasses.fields(Limits))
_GROUPS = {
    "connections": "how long and how many connections a client may hold",
    "edge limits": "bounds on what a client sends (docs/limits.md); a violation is -32602 "
    "(JSON-RPC) or 422 (REST), a body over --max-body-bytes -32600 or 413",
    "quotas per principal": "what one authenticated caller may use (docs/operations.md, "
    "Quotas); off unless set. Without authentication every caller is the one principal "
    "'anonymous' and shares them",
    "authentication": "of POST / (JSON-RPC) and /hitl/* (docs/operations.md, Authentication); "
    "JWT bearer tokens: $LLAMON_JWT_JWKS_URL, $LLAMON_JWT_ISSUER, $LLAMON_JWT_AUDIENCE. "
    "Without any, every caller is 'anonymous' and the server binds to loopback only",
}
_DESCRIPTION = ("Serve LangGraph agents over A2A (JSON-RPC 2.0) with human-in-the-loop "
                "questions and tool reviews, talk to an agent in the terminal, or prune the "
                "tasks that ended. Every option also reads an environment variable, named in "
                "its help; a flag wins over its variable (docs/operations.md, Command line).")


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings, with the command line's checks; raises ``ValueError`` naming a variable."""
    return Settings.from_env(environ, checks=_CHECKS)


def _argument(read: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: what ``read`` says is wrong becomes argparse's one-line error."""

    def convert(text: str) -> Any:
        try:
            return read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


#: the settings of an empty environment: a value that differs came from a variable
_BUILT_IN = Settings()


def _default(option: Option, settings: Settings) -> Any:
    value = getattr(settings, option.field)
    return _BOUNDS.get(option.field) if value is None else value


def _help(option: Option, settings: Settings) -> str:
    """The option's sentence, its variable and the default in force: the variable's value
    when it is set, else the built-in default (in words when there is none)."""
    names = " or ".join("$" + name for name in (option.variable, *option.aliases))
    unit = " " + option.unit if option.unit else ""
    value = getattr(settings, option.field)
    default = _default(option, settings)
    if value != getattr(_BUILT_IN, option.field):
        shown = f"{names} = {value}{unit}"
    elif default is None:
        shown = option.unset
    elif isinstance(default, bool):
        shown = "on" if default else "off"
    else:
        shown = f"{default}{unit}"
    return f"{option.help}; env {names} (default: {shown})".replace("%", "%%")


class _Switch(argparse.BooleanOptionalAction):
    """``--FLAG`` / ``--no-FLAG``, without the ``(default: ...)`` argparse would add again."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = help


def _add_options(command: argparse.ArgumentParser, name: str, settings: Settings) -> None:
    """The options of ``llamon-agent NAME``, from the table ``settings.OPTIONS``."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in OPTIONS:
        if option.flag is None or name not in option.commands:
            continue
        where: Any = command
        if option.group is not None:
            if option.group not in groups:
                groups[option.group] = command.add_argument_group(option.group,
                                                                  _GROUPS[option.group])
            where = groups[option.group]
        default = _default(option, settings)
        described = _help(option, settings)
        if option.switch:
            # --no-FLAG too: a variable that turns a switch on can be overruled for one run
            where.add_argument(option.flag, dest=option.field, default=default,
                               action=_Switch, help=described)
        elif not option.flag.startswith("--"):
            where.add_argument(option.field, metavar=option.flag, nargs="?", default=default,
                               type=_argument(_CHECKS.get(option.field, option.read)),
                               help=described)
        else:
            where.add_argument(
                option.flag, dest=option.field, metavar=option.metavar, default=default,
                type=_argument(_CHECKS.get(option.field, option.read)),
                choices=LOG_FORMATS if option.field == "log_format" else None,
                required=option.required and default is None,
                help=described)


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llamon-agent", description=_DESCRIPTION)
    parser.add_argument("--version", action="version",
                        version=f"llamon-agent {package_version('llamon-agent')}",
                        help="print the installed release and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     help="what to run; llamon-agent COMMAND --help for its "
                                     "options")
    serve_cmd = commands.add_parser(
        "serve", help="serve agents over A2A (JSON-RPC at /)",
        description="Serve a list of Agents (or an ASGI app) over A2A: JSON-RPC 2.0 at POST /, "
        "the agent card at /.well-known/agent-card.json, human-in-the-loop at /hitl.")
    _add_options(serve_cmd, "serve", settings)
    add_prune_command(commands, lambda cmd: _add_options(cmd, "prune", settings))
    add_chat_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["chat"]:  # a client: the server's variables (and files) are not its
        chat_args = _parser(Settings()).parse_args(given)
        raise SystemExit(run_chat(chat_args))
    try:
        settings = settings_from_env()
    except ValueError as exc:  # a malformed variable: one line, not a traceback
        raise SystemExit(f"error: {exc}") from None
    args = _parser(settings).parse_args(given)
    if args.command == "prune":
        raise SystemExit(run_prune(args, settings))
    refused = (_reload_refusal(args.reload, args.workers)
               or _workers_refusal(args.workers, args.db, args.events))
    if refused is not None:  # before anything is built or opened
        raise SystemExit(f"error: {refused}")
    configure_logging(args.log_format, args.log_level)  # before anything below logs
    if args.push_allow_private:  # each worker's app reads it from the settings it is given
        settings = dataclasses.replace(settings, push_allow_private=True)
    settings = dataclasses.replace(settings, max_active_requests=args.max_active_requests)
    limits = Limits(**{name: getattr(args, name) for name in _LIMIT_FIELDS})
    try:
        quotas = Quotas(requests_per_second=args.quota_rate, burst=args.quota_burst,
                        max_streams=args.quota_streams,
                        max_waiting_tasks=args.quota_waiting_tasks)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    # the recipe as well as the app: each worker process builds its own (an app is not
    # picklable); the parent's app checks the settings once, before any worker starts
    make_app = functools.partial(
        build_app, args.target, args.db, args.card, db_pool_size=args.db_pool_size,
        public_url=args.public_url, limits=limits,
        settings=settings, quotas=quotas, api_keys=args.api_keys_file,
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
    if args.reload:  # a child process builds its own app after each change
        serve_reloading(make_app, options)
    elif args.workers == 1:
        serve(app, options)
    else:
        serve_workers(make_app, options)


def _reload_refusal(reload: bool, workers: int) -> str | None:
    if reload and workers > 1:
        return f"--reload runs one server process: it cannot be used with --workers {workers}"
    return None


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
