"""``/healthz`` (the process serves) and ``/readyz`` (it can do its work).

``/readyz`` is 200 once the lifespan has opened storage and the task manager has started
(recovery included: ``TaskManager.__aenter__`` awaits it) and while the store answers
``TaskStore.ping()``; otherwise 503 with a JSON ``reason``. A load balancer sends work to a
ready server; an orchestrator restarts one that is not healthy.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from starlette.datastructures import State
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..stores.base import TaskStore

__all__ = ["health_routes", "serving"]

log = logging.getLogger(__name__)


@contextmanager
def serving(state: State, tasks: TaskStore) -> Iterator[None]:
    """Inside the lifespan, after the task manager started: the app is ready until it stops."""
    state.tasks = tasks
    state.ready = True
    try:
        yield
    finally:
        state.ready = False


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers={"Cache-Control": "no-store"})


async def healthz(request: Request) -> Response:
    return _json({"status": "ok"})


async def readyz(request: Request) -> Response:
    state = request.app.state
    tasks: TaskStore | None = getattr(state, "tasks", None)
    if tasks is None or not getattr(state, "ready", False):
        reason = "stopping" if tasks is not None else "starting: storage and recovery not done"
        return _json({"status": "unavailable", "reason": reason}, 503)
    try:
        await tasks.ping()
    except Exception:
        log.warning("readyz: the task store did not answer", exc_info=True)
        return _json({"status": "unavailable", "reason": "storage unreachable"}, 503)
    return _json({"status": "ok"})


def health_routes() -> list[Route]:
    return [Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"])]
