"""Our benchmark server with parts of the product taken out, to measure what each part costs.

    LLAMON_BENCH_ABLATE=observability+edge+task-row .venv/bin/python -m bench.servers.llamon ...
    .venv/bin/python bench/alternate.py --same --env-b LLAMON_BENCH_ABLATE=edge+task-row \
        --scenario hitl --rounds 20

A sampling profile splits the CPU by function, and spreads what our app adds over many small
phases (bench/README.md, "Speed, round twenty"); it cannot say what the round trip would cost
without one of them, since taking work out also changes what the loop, the allocator and the
caches do. This takes the work out and measures it (issue 14's CPU target: what would have to go
to meet it). Each part is one the product needs: this is a measuring tool, never a setting of
the product. The app is ``create_app`` as ``bench/servers/llamon.py`` builds it, with:

* ``observability``: no request events (the outermost middleware: the request's metrics and log
  line) and no task observer (the task metrics and log lines);
* ``edge``: no bounds at the JSON-RPC edge past the body's size and orjson's parse (the whole
  document's depth and numbers, the params' limits: ids, texts, parts, metadata) and no check
  of the task's stored size before a turn;
* ``task-row``: no durable task row: tasks in memory (``InMemoryTaskStore``), the checkpoints
  on the same SQLite file through the same saver, committed by LangGraph's own calls as
  ``bench/langgraph_alone.py``'s ``sqlite-llamon`` does (SQLite only).

It patches this process's modules before the app is made, so it is only ever imported by the
benchmark server.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

ENV = "LLAMON_BENCH_ABLATE"
PARTS = ("observability", "edge", "task-row")


def parts_from_env(value: str | None = None) -> frozenset[str]:
    """The parts ``$LLAMON_BENCH_ABLATE`` names, separated by ``+`` (or commas, which
    ``alternate.py --env-b`` takes for its own); an unknown one is an error."""
    text = os.environ.get(ENV, "") if value is None else value
    names = frozenset(name.strip() for name in text.replace(",", "+").split("+") if name.strip())
    unknown = sorted(names - set(PARTS))
    if unknown:
        raise SystemExit(f"{ENV}: unknown part(s) {', '.join(unknown)}; "
                         f"known: {', '.join(PARTS)}")
    return names


class _PassThrough:
    """Stands for the request-events middleware: calls the app and nothing else."""

    def __init__(self, app: Any, **_: Any) -> None:
        self._app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)


async def _unchecked_task(*_: Any, **__: Any) -> None:
    return None


def _unchecked(*_: Any, **__: Any) -> None:
    return None


def make_app(build: Callable[..., Any], agents: Any, db: str, parts: frozenset[str],
             patch: Callable[[Any, str, Any], None] = setattr) -> Any:
    """``build(agents, ...)`` (``create_app``) with ``parts`` taken out; ``patch`` sets a
    module's attribute (tests pass one that undoes it)."""
    from llamon_agent.runtime import tasks
    from llamon_agent.runtime.observer import NO_OBSERVER
    from llamon_agent.server import app as server_app
    from llamon_agent.server import jsonrpc

    if "observability" in parts:
        patch(server_app, "RequestEvents", _PassThrough)
        patch(server_app, "TaskEvents", lambda _metrics: NO_OBSERVER)
    if "edge" in parts:
        patch(jsonrpc.bounds, "check_document", _unchecked)
        patch(jsonrpc, "check_params", _unchecked)
        patch(tasks, "check_task_bytes", _unchecked_task)
    if "task-row" not in parts:
        return build(agents, db=db)
    if db.startswith("postgresql://"):
        raise SystemExit(f"{ENV}: task-row is for SQLite only")
    from llamon_agent.stores.memory import InMemoryTaskStore
    from llamon_agent.stores.sqlite import InlineSqliteSaver, connect

    return build(agents, task_store=InMemoryTaskStore(), checkpointer=InlineSqliteSaver(connect(db)))
