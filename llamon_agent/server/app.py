"""``create_app``: the Starlette application serving agents over A2A v0.3."""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from datetime import timedelta
from typing import Any

import orjson
from langgraph.checkpoint.base import BaseCheckpointSaver
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..agent import Agent
from ..auth import JWTSettings, Verifier
from ..backends.coordination import Coordination, open_coordination
from ..backends.events_url import parse_events_url
from ..core.bounds import Limits
from ..core.clock import Clock, system_clock
from ..core.deadlines import Deadline, check_action
from ..core.ports import HumanReviewPort
from ..core.principal import space_of
from ..errors import A2AError, InternalError, PayloadTooLargeError, QuotaExceededError
from ..human_review.port import InMemoryReviewPort
from ..push import PushNotifications, PushPolicy
from ..runtime.sweeper import Sweeper
from ..runtime.tasks import TaskManager
from ..settings import (
    DEFAULT_DB,
    DEFAULT_DB_POOL_SIZE,
    MAX_DURATION,
    Settings,
    check_active_requests,
    check_pool_size,
)
from ..stores.base import TaskStore
from ..stores.storage import Storage, open_storage
from ..stores.url import parse_database_url
from ..tool_review.catalog import language_of
from . import jsonrpc, versions
from .access import Access
from .admission import Admission
from .body import read_body
from .card import CardSource, load_card
from .collector import tuned_collector
from .context_rest import context_routes
from .direct_rpc import DirectRpc
from .extended_card import METHOD as EXTENDED_CARD
from .guard import ErrorGuard
from .health import health_routes, serving
from .human_review_rest import review_routes
from .landing import landing_page
from .metrics import Metrics, metrics_route
from .playground import playground_routes
from .pool_metrics import pool_metrics
from .principal import principal_of
from .push_methods import local_origin
from .quotas import Quotas
from .rate_limit import RateLimit, TokenBuckets
from .request_events import RequestEvents, note_error, note_method
from .rpc_head import rpc_head
from .sse_stream import error_stream, stream_response
from .startup import log_startup, log_startup_warning, startup_lines
from .stream_quota import StreamQuota
from .task_events import TaskEvents
from .tool_review_rest import default_chat_agent, hitl_routes

__all__ = ["DEFAULT_DB", "create_app"]  # DEFAULT_DB: from settings, kept here for importers

log = logging.getLogger(__name__)

_JSON = "application/json"

_CLOSE = {"Connection": "close"}  # the rest of an unread body is never read
#: the card depends on the A2A-Version a client names: caches keep one per version
_VARY = {"Vary": "A2A-Version"}


def _json(body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, media_type=_JSON, headers=headers)


def create_app(
    agents: Sequence[Agent],
    *,
    db: str | None = None,
    db_pool_size: int | None = None,
    max_active_requests: int | None = None,
    task_store: TaskStore | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    card: CardSource = None,
    public_url: str | None = None,
    limits: Limits | None = None,
    shutdown_grace: float = 5.0,
    chat_agent: str | None = None,
    reviews: HumanReviewPort | None = None,
    reviewer_token: str | None = None,
    review_wait: float = 5.0,
    settings: Settings | None = None,
    quotas: Quotas | None = None,
    api_keys: Mapping[str, str] | None = None,
    jwt: JWTSettings | None = None,
    auth: Verifier | None = None,
    extended_card: CardSource = None,
    reviewer_tokens: Mapping[str, str] | None = None,
    metrics_token: str | None = None,
    events: str | None = None,
    lease: float | None = None,
    clock: Clock | None = None,
    sweep_every: float | None = None,
    gc_tuning: bool = True,
    draft_deadline: Deadline | None = None,
    retention: float | timedelta | None = None,
    push_allow_private: bool | None = None,
    push_policy: PushPolicy | None = None,
) -> Starlette:
    """Serve ``agents`` (the first is the default) on one JSON-RPC endpoint at ``/``.

    Storage: ``db`` is a SQLite file or ``sqlite:///PATH`` (default ``$LLAMON_DATABASE_URL``,
    ``$LLAMON_DB`` or ``llamon.sqlite3``), ``":memory:"``, or ``postgresql://...`` (the
    ``postgres`` extra; docs/storage.md); another form raises ``ValueError``; or pass your own
    ``task_store`` and ``checkpointer`` together. ``db_pool_size``: PostgreSQL's connections
    in this process's pool, 1 to 1000 (default ``$LLAMON_DB_POOL_SIZE``, 20); a SQLite file or
    ``:memory:`` has no pool, and a size other than 20 set for one is logged as ignored.
    ``max_active_requests``: JSON-RPC requests (not streams) served at once while the event
    loop is saturated, 0 for no limit (default ``$LLAMON_MAX_ACTIVE_REQUESTS``, 16); more wait
    their turn, and every waiting one goes in once the loop has time to spare, so agents that
    wait on other services are never held (``server/admission.py``; docs/operations.md).
    ``card`` is an agent-card JSON file or mapping (default: built from the agents);
    ``public_url`` is the endpoint URL the card advertises (default: the local address the
    connection arrived on; never the request's ``Host`` header, which any client can set).
    ``limits`` bounds everything a client sends (``Limits``: body size, nesting depth, text,
    parts, data and file sizes; defaults in docs/limits.md).
    ``shutdown_grace``: at shutdown, running turns get this long to finish (their open streams
    deliver the final event) before they are cancelled and left for recovery at the next start.

    The reviewed-chat REST API (``POST /hitl/chat``, ``POST /hitl/review``, its OpenAPI document
    at ``GET /hitl/openapi.json``) talks to ``chat_agent`` when a request names no agent
    (default: the agent ``email-assistant`` when served, else the first agent).

    Human review (``HumanReviewPort``): drafts wait in ``reviews`` (default: the storage's
    port, in the same SQLite file) and reviewers decide through ``GET /reviews``,
    ``GET /reviews/{id}`` and ``POST /reviews/{id}/decision`` with ``Authorization: Bearer
    <reviewer_token>`` (default ``$LLAMON_REVIEWER_TOKEN``; with none the endpoints are off).
    A blocking ``message/send`` whose task waits for a reviewer returns after ``review_wait``
    seconds with the task ``working``. ``draft_deadline`` (``Deadline(seconds,
    Reject(message))`` or ``Deadline(seconds, Cancel(message))``) is the review port's wait: a
    draft nobody decided that long after it was submitted is rejected (or its task canceled),
    and ``GET /reviews`` shows its ``expiresAt``.

    ``quotas`` (``Quotas``, default from ``settings``: all off) bounds what one principal may
    use: requests per second (HTTP 429 with ``Retry-After``), open streams and tasks waiting for
    input (``-32004`` naming the quota); docs/operations.md, "Quotas".

    Authentication (docs/operations.md, "Authentication") of ``POST /`` and ``/hitl/*``:
    ``api_keys`` (principal -> key; default ``$LLAMON_API_KEYS``), sent as ``X-API-Key`` or
    ``Authorization: Bearer``; ``jwt`` (``JWTSettings``; default ``$LLAMON_JWT_JWKS_URL``,
    ``$LLAMON_JWT_ISSUER``, ``$LLAMON_JWT_AUDIENCE``; needs the extra ``jwt``), the principal
    is the token's ``sub``; ``auth``, an async callable taking the request headers and
    returning a ``Principal`` or ``None``. Tried in that order; none configured: every caller is
    ``anonymous``. ``extended_card`` (a file or mapping, like ``card``) is served by
    ``agent/getAuthenticatedExtendedCard`` and needs authentication. Named reviewers:
    ``reviewer_tokens`` (name -> token; default ``$LLAMON_REVIEWER_TOKENS``) beside
    ``reviewer_token`` (the reviewer ``reviewer``); every decision records its reviewer.

    Operations (docs/operations.md, "Logs", "Metrics", "Health"): a log line per request and
    per task state change; Prometheus metrics at ``GET /metrics`` (public, or only with
    ``Authorization: Bearer <metrics_token>``; default ``$LLAMON_METRICS_TOKEN``); ``GET
    /healthz`` and ``GET /readyz``; ``GET /`` describes the server to a browser or a program.

    Replicas (docs/operations.md, "Replicas"): ``events`` is where stream events, resubscribe
    replay and cancel requests travel between servers, ``redis://...`` (default
    ``$LLAMON_EVENTS_URL``; none keeps them in the process); on PostgreSQL every server holds
    leased claims on the runs it executes, renewed by a heartbeat, and takes over the runs of
    a server whose claims lapsed ``lease`` seconds (default ``$LLAMON_LEASE_SECONDS``, 30)
    after its last heartbeat.

    Time (docs/operations.md, "Deadlines"): every ``sweep_every`` seconds (default
    ``$LLAMON_SWEEP_SECONDS``, 5) each server applies the deadlines that passed, retries push
    deliveries and deletes what retention let go, reading the time from ``clock`` (default the
    system's; tests pass their own and call ``app.state.manager.sweeper.sweep_once()``).
    ``retention`` (seconds or a ``timedelta``; default ``$LLAMON_RETENTION``; none: off)
    deletes tasks that ended (completed, canceled, rejected, failed) longer ago, with their
    checkpoints, reviews and events (docs/operations.md, "Retention"). A principal deletes one
    of its contexts with ``DELETE /contexts/{contextId}``.

    Push notifications (docs/operations.md, "Push notifications"): webhooks a client sets
    are told of the changes it acts on, as ``push_policy`` says (``PushPolicy``: attempts,
    timeout, backoff, concurrency; default from ``$LLAMON_PUSH_MAX_ATTEMPTS`` and
    ``$LLAMON_PUSH_TIMEOUT_SECONDS``); webhooks on loopback, private and link-local addresses
    only with ``push_allow_private`` (default the policy's, ``$LLAMON_PUSH_ALLOW_PRIVATE``).

    The garbage collector (``server/collector.py``, docs/operations.md "Garbage collection"):
    while the app serves, what exists once it started is frozen and the youngest generation
    collects after 20,000 allocations instead of 700, which removed the 60-140 ms full
    collections that made the server's p99 latency; ``gc_tuning=False`` leaves the process's
    collector as it is (an app that tunes it itself).

    ``settings`` supplies what the arguments leave unset (default ``Settings.from_env()``,
    read once here).
    """
    agents = list(agents)
    if not agents or not all(isinstance(a, Agent) for a in agents):
        raise TypeError("create_app takes a non-empty list of Agent objects")
    if (task_store is None) != (checkpointer is None):
        raise ValueError("pass task_store and checkpointer together, or neither")
    card_template = load_card(card, agents)
    settings = settings or Settings.from_env()  # what the arguments leave unset
    limits = limits or Limits()
    database = db or settings.db
    # a malformed setting fails here, not at the first request; logs never show a password
    url = parse_database_url(database) if task_store is None else None
    shown_database = "" if url is None else url.shown
    pool_size = db_pool_size if db_pool_size is not None else settings.db_pool_size
    try:
        check_pool_size(pool_size)
    except ValueError as exc:
        raise ValueError(f"db_pool_size {exc}") from None
    active_requests = (max_active_requests if max_active_requests is not None
                       else settings.max_active_requests)
    try:
        check_active_requests(active_requests)
    except ValueError as exc:
        raise ValueError(f"max_active_requests {exc}") from None
    pooled = url is not None and url.kind == "postgres"  # only PostgreSQL storage has a pool
    pool_ignored = url is not None and not pooled and pool_size != DEFAULT_DB_POOL_SIZE
    events_url = parse_events_url(events if events is not None else settings.events)
    lease = lease if lease is not None else settings.lease
    if not (math.isfinite(lease) and lease > 0):
        raise ValueError(f"lease must be a number of seconds above 0, got {lease!r}")
    quotas = quotas or Quotas.from_settings(settings)
    sweep_every = sweep_every if sweep_every is not None else settings.sweep_seconds
    if not (math.isfinite(sweep_every) and sweep_every > 0):
        raise ValueError(f"sweep_every must be a number of seconds above 0, got {sweep_every!r}")
    clock = clock or system_clock
    retention = _retention(retention if retention is not None else settings.retention)
    if draft_deadline is not None:
        check_action(draft_deadline.then, "review")
    push_policy = push_policy or PushPolicy.from_settings(settings)
    if push_allow_private is not None:
        push_policy = dataclasses.replace(push_policy, allow_private=push_allow_private)
    streams = StreamQuota(quotas.max_streams)
    access = Access.configure(
        settings, agents, api_keys=api_keys, jwt=jwt, auth=auth, extended_card=extended_card,
        reviewer_token=reviewer_token, reviewer_tokens=reviewer_tokens,
    )
    if chat_agent is not None and chat_agent not in {a.id for a in agents}:
        raise ValueError(f"chat_agent {chat_agent!r} is not one of the served agents")
    metrics_token = metrics_token or settings.metrics_token
    metrics = Metrics(a.id for a in agents)  # a registry of its own: tests make many apps
    task_events = TaskEvents(metrics)
    admission = Admission(active_requests or None, observe=metrics.admission_wait)

    @contextmanager
    def started(app: Starlette, tasks: TaskStore, database: str) -> Iterator[None]:
        log_startup(startup_lines(
            agents=agents, database=database,
            auth_mode=access.mode or "none: every caller is the principal anonymous",
            reviewers=bool(access.reviewers), metrics_token=metrics_token is not None,
            public_url=public_url, events=events_url.shown if task_store is None else "in process",
            pool_size=pool_size if pooled else None,
        ))
        if pool_ignored:
            log_startup_warning(f"db_pool_size {pool_size} ignored: only PostgreSQL storage "
                                "has a connection pool")
        with serving(app.state, tasks), (tuned_collector() if gc_tuning else nullcontext()):
            admission.start()
            try:
                yield
            finally:
                admission.close()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await access.start(app)
        if task_store is not None and checkpointer is not None:
            given = Storage(task_store, checkpointer, reviews or InMemoryReviewPort())
            async with _push(given) as push, _manager(given, Coordination(), push) as manager:
                app.state.manager, app.state.reviews = manager, given.reviews
                app.state.push = push
                with started(app, given.tasks, "a store given in code (task_store=...)"):
                    yield
            return
        async with (
            open_storage(database, pool_size=pool_size) as storage,
            open_coordination(storage, events_url, lease=lease,
                              reviews=reviews or storage.reviews,
                              observer=task_events) as coordination,
            _push(storage) as push,
            _manager(storage, coordination, push) as manager,
        ):
            app.state.manager, app.state.push = manager, push
            app.state.reviews = reviews or storage.reviews
            with started(app, storage.tasks, shown_database), \
                    pool_metrics(metrics.exposed, storage.pool):
                yield

    def _push(storage: Storage) -> PushNotifications:
        return PushNotifications(storage.push, storage.tasks, policy=push_policy, limits=limits,
                                 clock=clock, public_url=public_url)

    def _manager(storage: Storage, coordination: Coordination,
                 push: PushNotifications) -> TaskManager:
        return TaskManager(
            agents, storage, shutdown_grace=shutdown_grace,
            reviews=reviews or storage.reviews, review_wait=review_wait, limits=limits,
            observer=task_events, max_waiting_tasks=quotas.max_waiting_tasks,
            claims=coordination.claims, publisher=coordination.publisher,
            cancel_relay=coordination.cancel_relay,
            takeover_every=coordination.takeover_every,
            sweeper=Sweeper(every=sweep_every, clock=clock), draft_deadline=draft_deadline,
            retention=retention, push=push,
        )

    async def agent_card(request: Request) -> Response:
        url = public_url or _local_url(request)
        try:  # a version this server does not speak gets the card every client reads
            v1 = versions.requested(versions.named_in(request)) == versions.V1_0
        except A2AError:
            v1 = False
        return _json(orjson.dumps(access.card(card_template, url, v1=v1)), headers=_VARY)

    async def rpc(request: Request) -> Response:
        manager: TaskManager = request.app.state.manager
        head = rpc_head(request)
        try:  # the whole body, before any streaming response starts
            body = await read_body(request, limits.max_body_bytes, head.content_length)
        except PayloadTooLargeError as exc:
            note_error(request.scope, exc.code)
            return _json(jsonrpc.error_body(exc, None), headers=_CLOSE)
        try:
            call = jsonrpc.parse(body, limits, head.a2a_version)
        except jsonrpc.EnvelopeError as exc:
            if exc.method is not None:
                note_method(request.scope, exc.method)
            note_error(request.scope, exc.error.code)
            return _json(jsonrpc.error_body(exc.error, exc.request_id, exc.version))
        note_method(request.scope, call.named)
        if call.method == EXTENDED_CARD:  # the server's card, not the runtime's business
            try:
                card = access.extended_card(principal_of(request.scope),
                                            public_url or _local_url(request),
                                            v1=call.version == versions.V1_0)
            except A2AError as exc:
                note_error(request.scope, exc.code)
                return _json(jsonrpc.error_body(exc, call.id, call.version))
            return _json(jsonrpc.success_body(card, call.id))
        language = language_of(head.accept_language)
        if call.method in jsonrpc.STREAMING_METHODS:
            try:  # the open-streams quota: refused before anything is opened or stored
                return await streams.hold(principal_of(request.scope), lambda: stream_response(
                    manager, call, request, shutdown_grace, language))
            except QuotaExceededError as exc:
                note_error(request.scope, exc.code)
                return error_stream(jsonrpc.error_body(exc, call.id, call.version),
                                    shutdown_grace)
        space = space_of(principal_of(request.scope).name)
        try:
            async with admission.admitted():
                result = await jsonrpc.dispatch(manager, call, language=language, space=space,
                                                own=local_origin(request.scope))
        except A2AError as exc:
            note_error(request.scope, exc.code)
            return _json(jsonrpc.error_body(exc, call.id, call.version))
        except Exception:
            log.exception("internal error in %s", call.named)
            note_error(request.scope, InternalError.code)
            return _json(jsonrpc.error_body(InternalError(), call.id, call.version))
        return _json(jsonrpc.success_body(result, call.id))

    landing = landing_page(card_template, agents, metrics_token=metrics_token is not None)

    async def root(request: Request) -> Response:
        """``POST /`` is JSON-RPC; ``GET /`` (and ``HEAD``) the landing page. One route, so an
        other method is a 405 that allows both."""
        return await (rpc(request) if request.method == "POST" else landing(request))

    root_route = Route("/", root, methods=["GET", "POST"])
    routes = [
        root_route,
        Route("/.well-known/agent-card.json", agent_card, methods=["GET"]),
        Route("/.well-known/agent.json", agent_card, methods=["GET"]),
        *hitl_routes(chat_agent or default_chat_agent(agents), limits),
        *context_routes(limits),
        *review_routes(access.reviewers, limits, deadline=draft_deadline, clock=clock),
        *health_routes(),
        metrics_route(metrics, metrics_token),
        *playground_routes(),
    ]
    metrics.name_routes(routes)
    middleware = [  # the request log and metrics first: they see every answer and its time
        Middleware(RequestEvents, metrics=metrics, routes=routes),
        Middleware(ErrorGuard), *access.middleware(),
    ]
    if quotas.requests_per_second is not None:  # after authentication: it sees the principal
        buckets = TokenBuckets(quotas.requests_per_second, quotas.bucket_size)
        middleware.append(Middleware(RateLimit, buckets=buckets))
    # last, after authentication and the rate limit: every A2A call is a POST /
    middleware.append(Middleware(DirectRpc, route=root_route, endpoint=rpc))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                    exception_handlers={HTTPException: _http_error})
    app.state.authentication = access.mode  # read by the CLI (server/exposure.py) and the logs
    app.state.logs_requests = True  # the CLI turns uvicorn's access log off (request_events.py)
    app.state.admission = admission  # its limit and counts, for operators' code and tests
    return app


def _retention(value: float | timedelta | None) -> float | None:
    """Seconds, from 1 to ``MAX_DURATION`` (100 years), or ``None`` (off)."""
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not (math.isfinite(seconds) and 1 <= seconds <= MAX_DURATION):
        raise ValueError(f"retention must be from 1 second to {MAX_DURATION // 86400} days, "
                         f"got {value!r}")
    return seconds


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 / 405 (an unknown path or method) as JSON, like every other answer."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if "Allow" in headers:  # Starlette joins a set: the same order on every answer
        headers["Allow"] = ", ".join(sorted(m.strip() for m in headers["Allow"].split(",")))
    return Response(orjson.dumps({"detail": exc.detail}), status_code=exc.status_code,
                    media_type=_JSON, headers=headers)


def _local_url(request: Request) -> str:
    """The URL of the address the connection arrived on (ASGI ``server``), not the ``Host``
    header: a card must not advertise an endpoint a client made up."""
    scheme = "https" if request.url.scheme in ("https", "wss") else "http"
    server = request.scope.get("server")
    host, port = (server[0], server[1]) if server else ("localhost", None)
    if not host or host.startswith("/"):  # a Unix socket: no address to advertise
        host, port = "localhost", None
    if ":" in host:
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}/" if port in (None, default) else f"{scheme}://{host}:{port}/"
