"""Prometheus metrics: one registry per app, label values from fixed sets only.

Every label value is one of a set the server fixes before any client speaks: the JSON-RPC
methods of A2A v0.3 and the app's own routes (``method``), ``ok`` / the JSON-RPC error codes /
HTTP statuses (``outcome``), the task states (``state``) and the served agents (``agent``).
Anything else is counted as ``other`` (``error`` for an outcome), so no client can add a series.
docs/operations.md ("Metrics") lists the metrics.

Counts that live in storage (tasks by state, pending reviews, the oldest waiting) are read
when ``/metrics`` is scraped (``refresh``), not kept in memory: they stay right across
restarts and with several processes on one database.

A server of several worker processes (``serve --workers N``) uses prometheus-client's
multiprocess mode: ``shared_metrics`` gives the workers a fresh folder, each worker's values live
in files there, and ``/metrics`` adds up the files of every worker, whichever answers. One
process (the default, and every app a test makes) keeps a registry of its own in memory.
"""

from __future__ import annotations

import hmac
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..a2a.types import TaskState
from ..core.ports import HumanReviewPort
from ..stores.base import TaskStore
from .loop_metrics import LoopCounter, LoopHistogram

__all__ = ["OTHER", "RPC_METHODS", "Metrics", "metrics_route", "outcome_label", "shared_metrics"]

log = logging.getLogger(__name__)

OTHER: Final = "other"
#: the methods of A2A v0.3's and v1.0's JSON-RPC bindings; a request's method label is one of
#: them, a route of the app (``"GET /healthz"``), or ``other``
RPC_METHODS: Final = frozenset({
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
})
#: JSON-RPC error codes the server answers with (errors.py); another code counts as ``error``
RPC_CODES: Final = frozenset({-32700, -32600, -32601, -32602, -32603,
                              -32001, -32002, -32003, -32004, -32005, -32006, -32007,
                              -32009})
#: every ``outcome`` label value
OUTCOMES: Final = frozenset({"ok", "error"} | {str(c) for c in RPC_CODES}
                            | {str(s) for s in range(100, 600)})
STATES: Final[tuple[str, ...]] = get_args(TaskState)
WAITING_FOR_INPUT: Final = "input-required"
#: prometheus-client's switch to its multiprocess mode, read by prometheus-client at import
MULTIPROC_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"

# a blocking message/send waits for a whole turn (an LLM, a child agent); a stream lives as
# long as its task runs
_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                    120.0, 300.0)
_TURN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
                 600.0)


def outcome_label(*, status: int, rpc_code: int | None = None) -> str:
    """``ok`` for a 2xx answer without a JSON-RPC error; else the JSON-RPC error code
    (``"-32602"``), else the HTTP status (``"404"``)."""
    if rpc_code is not None:
        return str(rpc_code) if rpc_code in RPC_CODES else "error"
    if 200 <= status < 300:
        return "ok"
    return str(status) if 100 <= status < 600 else "error"


def route_labels(routes: Iterable[Route]) -> frozenset[str]:
    """``"GET /reviews/{review_id}"`` for each method of each route (HEAD counts as GET)."""
    return frozenset(
        f"{method} {route.path}"
        for route in routes for method in (route.methods or ()) if method != "HEAD"
    )


@contextmanager
def shared_metrics() -> Iterator[Callable[[int], None]]:
    """For the parent of a server's worker processes: a fresh folder for prometheus-client's
    multiprocess mode, named in this process's environment while the block runs (the workers
    are started in it, and prometheus-client reads the variable when a worker imports it), then
    removed with the workers' files. Yields what to call when a worker has exited: its gauges
    that count what is open (``livesum``) stop counting; its counters stay counted."""
    previous = os.environ.get(MULTIPROC_DIR)
    with tempfile.TemporaryDirectory(prefix="llamon-metrics-") as folder:
        os.environ[MULTIPROC_DIR] = folder
        try:
            yield lambda pid: mark_process_dead(pid, folder)
        finally:
            if previous is None:
                del os.environ[MULTIPROC_DIR]
            else:
                os.environ[MULTIPROC_DIR] = previous


class Metrics:
    """The app's registry and its metrics. ``agents`` are the values of the ``agent`` label,
    A2A's methods and ``routes`` those of ``method`` (besides ``other``).

    ``exposed`` is what ``/metrics`` serves: the app's registry, or in a worker process
    (``PROMETHEUS_MULTIPROC_DIR`` set, as prometheus-client saw it at import) the sum of every
    worker's files. A gauge read from storage at scrape time takes the value the answering
    worker has just read (``mostrecent``); open streams add up over the live workers."""

    def __init__(self, agents: Iterable[str], routes: Iterable[Route] = ()) -> None:
        self._agents = frozenset(agents)
        self._methods = RPC_METHODS
        # each update's bound ``inc`` or ``observe``, by the values it was asked with: labels()
        # costs a lock and its checks (bench/README.md, "Speed, round eighteen"), and the
        # labels' fixed sets a lookup each (round thirty-one). Kept only for values that are
        # label values themselves (``_bound``), so no client's value adds an entry.
        self._request_updates: dict[tuple[str, str], tuple[Callable[[], None],
                                                           Callable[[float], None]]] = {}
        self._state_changes: dict[tuple[str, ...], Callable[..., None]] = {}
        self._turn_ends: dict[tuple[str, ...], Callable[..., None]] = {}
        self._resumes: dict[tuple[str, ...], Callable[..., None]] = {}
        self.name_routes(routes)
        self.registry = CollectorRegistry()
        r = self.registry
        shared = os.environ.get(MULTIPROC_DIR)
        # the series every request and turn updates: without a lock in one process
        # (loop_metrics.py); in a worker, in prometheus-client's files that every worker reads
        counter: Any = Counter if shared else LoopCounter
        histogram: Any = Histogram if shared else LoopHistogram
        self.requests = counter(
            "llamon_requests", "HTTP requests answered, by method (JSON-RPC method or route) "
            "and outcome (ok, a JSON-RPC error code, or an HTTP status)",
            ["method", "outcome"], registry=r)
        self.request_seconds = histogram(
            "llamon_request_duration_seconds", "Time to answer a request (a stream: its whole "
            "life), by method", ["method"], buckets=_REQUEST_BUCKETS, registry=r)
        self.tasks = Gauge("llamon_tasks", "Stored tasks by state (read at scrape time)",
                           ["state"], registry=r, multiprocess_mode="mostrecent")
        self.input_oldest = Gauge(
            "llamon_input_required_oldest_age_seconds", "Seconds since the oldest task waiting "
            "for input (input-required) last changed; 0 when none waits", registry=r,
            multiprocess_mode="mostrecent")
        self.state_changes = counter(
            "llamon_task_state_changes", "Task state changes, by agent and new state",
            ["agent", "state"], registry=r)
        self.resumes = counter(
            "llamon_task_resumes", "Graph runs resumed by an answer, a reviewer's decision or "
            "recovery, by agent", ["agent"], registry=r)
        self.turn_seconds = histogram(
            "llamon_turn_duration_seconds", "Duration of one graph run (a turn), by agent and "
            "the state it ended in", ["agent", "state"], buckets=_TURN_BUCKETS, registry=r)
        self.stream_subscribers = Gauge(
            "llamon_stream_subscribers", "Open SSE streams (message/stream, tasks/resubscribe)",
            registry=r, multiprocess_mode="livesum")
        self.requests_waiting = Gauge(
            "llamon_requests_waiting", "JSON-RPC requests waiting for admission: the event loop "
            "was saturated and --max-active-requests were being served", registry=r,
            multiprocess_mode="livesum")
        self.requests_held = Counter(
            "llamon_requests_held", "JSON-RPC requests that waited for admission (see "
            "llamon_requests_waiting)", registry=r)
        self.reviews_pending = Gauge(
            "llamon_reviews_pending", "Human reviews waiting for a reviewer (read at scrape "
            "time)", registry=r, multiprocess_mode="mostrecent")
        self.reviews_oldest = Gauge(
            "llamon_reviews_pending_oldest_age_seconds", "Seconds since the oldest pending "
            "human review was submitted; 0 when none waits", registry=r,
            multiprocess_mode="mostrecent")
        if shared:  # a worker: the values above live in files that every worker can read
            self.exposed = CollectorRegistry()
            MultiProcessCollector(self.exposed, path=shared)
        else:
            self.exposed = r
        # memory, CPU, open files of this process (in a worker: of the one answering)
        ProcessCollector(registry=self.exposed)
        for state in (*STATES, OTHER):
            self.tasks.labels(state).set(0)

    # ----------------------------------------------------------------- fixed label values

    def name_routes(self, routes: Iterable[Route]) -> None:
        """The app's routes become ``method`` values (``"GET /healthz"``), beside A2A's."""
        self._methods = RPC_METHODS | route_labels(routes)

    def method(self, method: str | None) -> str:
        return method if method in self._methods else OTHER

    def agent(self, agent_id: str) -> str:
        return agent_id if agent_id in self._agents else OTHER

    @staticmethod
    def state(state: str) -> str:
        return state if state in STATES else OTHER

    # ----------------------------------------------------------------------- updates

    def request(self, method: str, outcome: str, seconds: float) -> None:
        updates = self._request_updates.get((method, outcome))
        if updates is None:
            label = self.method(method)
            result = outcome if outcome in OUTCOMES else "error"
            updates = (self.requests.labels(label, result).inc,
                       self.request_seconds.labels(label).observe)
            if (label, result) == (method, outcome):
                self._request_updates[(method, outcome)] = updates
        count, observe = updates
        count()
        observe(seconds)

    def state_changed(self, agent_id: str, state: str) -> None:
        inc = self._state_changes.get((agent_id, state))
        if inc is None:
            inc = self._bound(self._state_changes, self.state_changes, "inc",
                              (agent_id, state), (self.agent(agent_id), self.state(state)))
        inc()

    def turn_ended(self, agent_id: str, state: str, seconds: float) -> None:
        observe = self._turn_ends.get((agent_id, state))
        if observe is None:
            observe = self._bound(self._turn_ends, self.turn_seconds, "observe",
                                  (agent_id, state), (self.agent(agent_id), self.state(state)))
        observe(seconds)

    def resumed(self, agent_id: str) -> None:
        inc = self._resumes.get((agent_id,))
        if inc is None:
            inc = self._bound(self._resumes, self.resumes, "inc", (agent_id,),
                              (self.agent(agent_id),))
        inc()

    @staticmethod
    def _bound(kept: dict[tuple[str, ...], Callable[..., None]], series: Any, update: str,
               asked: tuple[str, ...], labels: tuple[str, ...]) -> Callable[..., None]:
        """The series' ``update`` for ``labels``, kept under ``asked`` when those are the
        label values themselves (an agent not served, an unknown state: not kept)."""
        bound: Callable[..., None] = getattr(series.labels(*labels), update)
        if asked == labels:
            kept[asked] = bound
        return bound

    def admission_wait(self, change: int) -> None:
        """A request started (+1) or stopped (-1) waiting for admission."""
        self.requests_waiting.inc(change)
        if change > 0:
            self.requests_held.inc()

    async def refresh(
        self, tasks: TaskStore, reviews: HumanReviewPort | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Read what lives in storage. A store that fails leaves ``NaN`` (unknown), not the
        last value read, and is logged; the request metrics are served all the same."""
        now = clock()
        try:
            counts = await tasks.count_by_state()
            oldest = await tasks.oldest_in_state(WAITING_FOR_INPUT)
        except Exception:
            log.warning("metrics: the task store did not answer", exc_info=True)
            for state in (*STATES, OTHER):
                self.tasks.labels(state).set(math.nan)
            self.input_oldest.set(math.nan)
        else:
            by_state = dict.fromkeys((*STATES, OTHER), 0)
            for state, count in counts.items():
                by_state[self.state(state)] += count
            for state, count in by_state.items():
                self.tasks.labels(state).set(count)
            self.input_oldest.set(_age(now, oldest))
        if reviews is None:
            self.reviews_pending.set(0)
            self.reviews_oldest.set(0)
            return
        try:
            pending = await reviews.pending_summary()
        except Exception:
            log.warning("metrics: the review port did not answer", exc_info=True)
            self.reviews_pending.set(math.nan)
            self.reviews_oldest.set(math.nan)
            return
        self.reviews_pending.set(pending.count)
        oldest = None if pending.oldest is None else _unix_time(pending.oldest)
        self.reviews_oldest.set(_age(now, oldest))


def _age(now: float, since: float | None) -> float:
    return 0.0 if since is None else max(0.0, now - since)


def _unix_time(iso: str) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return None


def _bearer_matches(request: Request, token: str) -> bool:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode(), token.encode()
    )


_UNAUTHORIZED = b'{"detail":"unauthorized"}'


def metrics_route(metrics: Metrics, token: str | None) -> Route:
    """``GET /metrics``: public, or with ``token`` only for ``Authorization: Bearer <token>``
    (401 otherwise, as authentication answers). The store and the review port are the ones
    the app's lifespan opened (``app.state.tasks``, ``app.state.reviews``)."""

    async def scrape(request: Request) -> Response:
        if token is not None and not _bearer_matches(request, token):
            return Response(_UNAUTHORIZED, status_code=401, media_type="application/json",
                            headers={"WWW-Authenticate": 'Bearer realm="llamon"'})
        state = request.app.state
        tasks: TaskStore | None = getattr(state, "tasks", None)
        if tasks is not None:  # the lifespan has opened storage
            await metrics.refresh(tasks, getattr(state, "reviews", None))
        encode, media_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(metrics.exposed), headers={"Content-Type": media_type,
                                                            "Cache-Control": "no-store"})

    return Route("/metrics", scrape, methods=["GET"])
