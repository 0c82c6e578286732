"""``serve``: run an ASGI app with uvicorn, bounded against clients that hold connections open.

What plain ``uvicorn.run`` leaves open, and what this module adds:

* **Bind before startup.** uvicorn runs the app's lifespan startup (which opens the store and
  runs recovery) before it binds, so a second server on a busy port used to rewrite the first
  server's tasks before failing. The socket is bound (and listening) first here.
* **Bounded connections** (``server/connection.py``, uvicorn's httptools protocol): a timeout
  on the whole request head and body (``request_timeout``; uvicorn has none before the first
  request), a bound on each request's head, a cap on open connections (``max_connections``)
  and ``TCP_NODELAY``; keep-alive is bounded by uvicorn's own timer (``keep_alive``).
* **Out of file descriptors**: asyncio reports every failed ``accept()`` (EMFILE, ENFILE, ...)
  to the loop's exception handler, which logs a full traceback each time; on Python 3.11 one
  loop wake-up tries up to ``backlog`` accepts, so a flood of clients wrote hundreds of MB of
  tracebacks. Here they become one warning line per ``LOG_INTERVAL`` with a count. asyncio
  itself stops accepting for a second and retries, so the server serves again once descriptors
  are free.
* A ``StorageInUseError`` at startup (another server holds the SQLite file) is one clear line,
  not a traceback.
* **Worker processes** (``serve_workers``, ``--workers N``): the parent binds the socket, then
  keeps N spawned processes serving it, each running exactly what ``serve`` runs in one
  process, on an app it builds itself. The parent is a small supervisor of its own rather than
  ``uvicorn.supervisors.Multiprocess``: uvicorn's changed its signature within the versions
  allowed here (0.35 takes the function a worker runs; 0.54 always runs a plain
  ``uvicorn.Server`` on the config it pickles, which cannot carry this module's protocol
  subclass or loop exception handler). It does what uvicorn's does: a worker that dies is
  replaced, one that fails its startup (status 3) stops the server, SIGINT/SIGTERM stop every
  worker through its lifespan's shutdown (a second signal kills them). A worker whose parent
  is gone, even by ``kill -9``, shuts down too.
* **Reload** (``serve_reloading``, ``--reload``, for development): the parent binds the socket
  and runs uvicorn's reloader (``watchfiles``, a dependency: it watches the ``*.py`` files
  under the working folder, hidden folders such as ``.venv`` and ``.git`` excluded, where
  uvicorn's fallback ``StatReload`` would poll every file of them); its child process is
  a worker as above, replaced by a new one, which imports the code again, after each change.

uvicorn's internals are used here and in ``server/connection.py`` (the protocol) and nowhere
else, each with a comment saying why and what breaks if it changes; ``pyproject.toml`` caps uvicorn below its next minor version, and
``tests/process/test_hardening.py`` exercises every one of them against a real process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import multiprocessing
import os
import resource
import signal
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import ChangeReload

from ..errors import StorageInUseError
from .connection import EveryInterval, bounded_protocol
from .logs import configure_logging, fields
from .metrics import shared_metrics

__all__ = [
    "DEFAULT_KEEP_ALIVE",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "AppFactory",
    "ServeOptions",
    "serve",
    "serve_reloading",
    "serve_workers",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: builds the app in each worker process; pickled to it, so a module-level function or a
#: ``functools.partial`` of one with picklable arguments
AppFactory = Callable[[], ASGIApp]

#: seconds a client has to send a whole request (head and body)
DEFAULT_REQUEST_TIMEOUT = 30.0
#: seconds an idle keep-alive connection stays open between requests (uvicorn's default)
DEFAULT_KEEP_ALIVE = 5
#: open HTTP connections; the process's open-file limit must leave room for them
DEFAULT_MAX_CONNECTIONS = 1000
#: descriptors the server needs besides connections (SQLite, WAL, logs, listening socket, ...)
_RESERVED_FDS = 64
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

# The server's lines go where uvicorn's go, formatted and filtered by --log-level like them.
log = logging.getLogger("uvicorn.error")
# the start-up summary the app's lifespan continues (server/startup.py)
startup_log = logging.getLogger("llamon_agent.server")


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    keep_alive: int = DEFAULT_KEEP_ALIVE
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    #: seconds open responses get at shutdown before connections are closed
    graceful_shutdown: int = 10
    #: ``text`` or ``json``, for every line of the process (``server/logs.py``)
    log_format: str = "text"
    #: uvicorn's access log; off for an app that logs its requests (``create_app``'s)
    access_log: bool = True
    #: server processes sharing the listening socket (``serve_workers``); the connection cap
    #: and the request timeout hold in each
    workers: int = 1

    def __post_init__(self) -> None:
        if (not self.request_timeout > 0 or self.keep_alive < 1 or self.max_connections < 1
                or self.workers < 1):
            raise ValueError("request_timeout, keep_alive, max_connections and workers must be "
                             "positive")


def serve(app: ASGIApp, options: ServeOptions) -> None:
    """Serve ``app`` until SIGINT/SIGTERM. Exits with status 3 (uvicorn's startup failure) when
    the port is taken, before the app starts, or when the app's startup fails."""
    configure_logging(options.log_format, options.log_level)
    config = _config(app, options)
    sock = _listen(config)
    _warn_about_fd_limit(options.max_connections)
    startup_log.info("workers: 1 process", extra=fields(event="startup"))
    server = uvicorn.Server(config)
    # Plain asyncio, also when uvloop is installed: the accept-error handling below relies on
    # asyncio's selector loop reporting failed accepts to the loop's exception handler.
    asyncio.run(_serve(server, sock))


def _config(app: ASGIApp, options: ServeOptions) -> uvicorn.Config:
    return uvicorn.Config(
        _clear_startup_errors(app),
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        # uvicorn's loggers propagate to the root logger configure_logging set up, so its
        # lines have the same format as the server's
        log_config=None,
        access_log=options.access_log,
        http=bounded_protocol(options.request_timeout, options.max_connections),
        # The request timer lives on the HTTP protocol; a connection upgraded to a WebSocket
        # would leave it behind (and be cut by it). The apps served here have no WebSockets.
        ws="none",
        timeout_keep_alive=options.keep_alive,
        timeout_graceful_shutdown=options.graceful_shutdown,
        # The card's URL and the client address never come from request headers: proxy
        # headers (X-Forwarded-*) are not trusted, not even from 127.0.0.1 (uvicorn's default).
        proxy_headers=False,
    )


def _listen(config: uvicorn.Config) -> socket.socket:
    """The socket, bound and listening before any app starts (it reads only the address)."""
    sock = config.bind_socket()  # logs and exits(3) when the address is taken
    # Listening at once makes the port taken for everyone now: two sockets bound with
    # SO_REUSEADDR that are not listening yet may share a port on Linux.
    sock.listen(config.backlog)
    # bind_socket() makes it inheritable (for uvicorn's worker processes); a subprocess an agent
    # starts must not keep the port open after the server is gone. Workers receive it
    # explicitly (multiprocessing passes it to the process it spawns).
    sock.set_inheritable(False)
    return sock


async def _serve(server: uvicorn.Server, sock: Any, parent: BaseProcess | None = None) -> None:
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_AcceptErrors())
    if parent is not None:  # a worker: its parent's end of a pipe closes when the parent ends
        loop.add_reader(parent.sentinel, _orphaned, server, loop, parent.sentinel)
    await server.serve(sockets=[sock])


def _orphaned(server: uvicorn.Server, loop: asyncio.AbstractEventLoop, sentinel: int) -> None:
    loop.remove_reader(sentinel)
    log.warning("the parent process is gone: this worker stops")
    # uvicorn internal: `should_exit` is what its own signal handler sets; the main loop sees
    # it within a tick and shuts down as on SIGTERM. Were it renamed, an orphaned worker would
    # keep serving until it is signalled.
    server.should_exit = True


# -------------------------------------------------------------------------------- workers


def serve_workers(build: AppFactory, options: ServeOptions) -> None:
    """Serve the app ``build`` makes in ``options.workers`` processes on one listening socket,
    until SIGINT/SIGTERM; ``/metrics`` adds up every worker (``metrics.shared_metrics``).
    Exits with status 3 when the port is taken or a worker's startup fails."""
    if options.workers < 2:
        raise ValueError("serve_workers runs at least 2 workers; serve() runs one process")
    configure_logging(options.log_format, options.log_level)
    # the parent serves nothing: only the address of this config is read
    sock = _listen(uvicorn.Config(build, host=options.host, port=options.port,
                                  log_level=options.log_level, log_config=None))
    _warn_about_fd_limit(options.max_connections)
    startup_log.info("workers: %d processes share the listening socket (parent process [%d])",
                     options.workers, os.getpid(), extra=fields(event="startup"))
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing inherited

    def start() -> BaseProcess:
        worker = context.Process(target=_worker, args=(build, options, sock))
        worker.start()
        return worker

    with sock, shared_metrics() as exited:
        status = _Supervisor(start, options.workers, exited).run()
    if status:
        raise SystemExit(status)


def _worker(build: AppFactory, options: ServeOptions, sock: socket.socket) -> None:
    """One worker process: what ``serve`` runs, on the app it builds and the parent's socket."""
    configure_logging(options.log_format, options.log_level)
    sock.set_inheritable(False)  # as in serve(): not for the subprocesses of agents
    try:
        app = build()
    except SystemExit as exc:  # a setting the parent accepted fails here: stop, do not restart
        log.error("%s", exc.code)
        raise SystemExit(STARTUP_FAILURE) from None
    server = uvicorn.Server(_config(app, options))
    # Ctrl-C reaches every process of the terminal's group: after its graceful shutdown uvicorn
    # raises the SIGINT it caught again, which would print a traceback per worker
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(server, sock, multiprocessing.parent_process()))


def serve_reloading(build: AppFactory, options: ServeOptions) -> None:
    """For development: serve the app ``build`` makes in a child process, replaced by a new
    one (which imports the code again) whenever a Python file under the working folder changes,
    until SIGINT/SIGTERM. The child serves as a worker of ``serve_workers`` does: the same
    protocol, request timeout, connection cap and log lines."""
    if options.workers != 1:
        raise ValueError("serve_reloading runs one server process")
    configure_logging(options.log_format, options.log_level)
    # uvicorn's reloader reads its settings (folders, delay) from a Config whose app is an
    # import string; this string is never imported: each child builds its app with `build`
    config = uvicorn.Config("llamon_agent.server.serve:serve_reloading", reload=True,
                            host=options.host, port=options.port, log_level=options.log_level,
                            log_config=None)
    sock = _listen(config)
    _warn_about_fd_limit(options.max_connections)
    startup_log.info("reload: a new server process after each change of a Python file under %s",
                     os.getcwd(), extra=fields(event="startup"))
    # uvicorn internal: the reloader calls target(sockets=[...]) in each child it spawns
    # (uvicorn/_subprocess.py); were that to change, the child would fail at its start
    ChangeReload(config, target=functools.partial(_reloaded, build, options),
                 sockets=[sock]).run()


def _reloaded(build: AppFactory, options: ServeOptions, sockets: list[socket.socket]) -> None:
    """The reloader's child: a worker on the parent's socket."""
    _worker(build, options, sockets[0])


class _Supervisor:
    """Keeps ``count`` workers running until SIGINT/SIGTERM; returns the exit status."""

    def __init__(self, start: Callable[[], BaseProcess], count: int,
                 exited: Callable[[int], None]) -> None:
        self._start, self._count, self._exited = start, count, exited
        self._workers: list[BaseProcess] = []
        self._signals = 0

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._supervise()
        finally:
            self._stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1

    def _supervise(self) -> int:
        self._workers = [self._start() for _ in range(self._count)]
        while not self._signals:
            wait([w.sentinel for w in self._workers], timeout=0.5)  # a signal: within 0.5 s
            for index, worker in enumerate(self._workers):
                if worker.exitcode is None:
                    continue
                self._reap(worker)
                if worker.exitcode == STARTUP_FAILURE:  # would fail the same way again
                    log.error("worker process [%d] failed to start; stopping", worker.pid)
                    return STARTUP_FAILURE
                log.warning("worker process [%d] exited (status %s); starting another",
                            worker.pid, worker.exitcode)
                self._workers[index] = self._start()
        log.info("stopping %d worker processes", len(self._workers))
        return 0

    def _stop(self) -> None:
        signals = self._signals
        for worker in self._workers:
            if worker.exitcode is None:
                worker.terminate()  # SIGTERM: uvicorn's graceful shutdown, the lifespan's end
        while running := [w for w in self._workers if w.exitcode is None]:
            if self._signals > signals:  # asked (again) while stopping: do not wait for them
                for worker in running:
                    worker.kill()
            wait([w.sentinel for w in running], timeout=0.5)
        for worker in self._workers:
            self._reap(worker)

    def _reap(self, worker: BaseProcess) -> None:
        worker.join()
        if worker.pid is not None:
            self._exited(worker.pid)


# ------------------------------------------------------------------------- startup errors


def _clear_startup_errors(app: ASGIApp) -> ASGIApp:
    """A ``StorageInUseError`` during the lifespan startup becomes one line in the log.

    Starlette reports a failed startup with the whole traceback as its message; the operator
    needs the sentence naming the file. Anything else keeps its traceback."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        held: list[Message] = []

        async def hold_failure(message: Message) -> None:
            if message["type"] == "lifespan.startup.failed":
                held.append(message)
                return
            await send(message)

        try:
            await app(scope, receive, hold_failure)
        except StorageInUseError as exc:
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        except BaseException:
            for message in held:
                await send(message)
            raise
        for message in held:
            await send(message)

    return guarded


# ------------------------------------------------------------------------------- log lines


class _AcceptErrors:
    """The loop's exception handler: failed accepts for lack of resources become a line per
    interval; every other report goes to asyncio's default handler unchanged."""

    def __init__(self) -> None:
        self._report = EveryInterval(
            logging.WARNING,
            "cannot accept connections: %s (%d failed accepts since the last such line); "
            "retrying every second, open connections are still served",
        )

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if (
            isinstance(exc, OSError)
            and exc.errno in _OUT_OF_RESOURCES
            and "accept" in str(context.get("message", ""))
        ):
            self._report(exc)
            return
        loop.default_exception_handler(context)


def _warn_about_fd_limit(max_connections: int) -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and max_connections + _RESERVED_FDS > soft:
        log.warning(
            "the connection cap (%d) plus about %d files the server needs is above the "
            "open-file limit (%d): past it accepting fails until connections close; raise the "
            "limit (ulimit -n) or lower --max-connections",
            max_connections, _RESERVED_FDS, soft,
        )
