"""The SQL statements one HITL round trip sends to PostgreSQL, counted and named.

    .venv/bin/python bench/pg_statements.py [--round-trips 20] [--show] [--by-context]
        [--scenario hitl|instant|stream]

Serves ``bench.agents:AGENTS`` in process on a fresh PostgreSQL database (``bench/pgdb.py``),
does a few warm-up round trips (send -> input-required -> answer -> completed, as
``bench/hitl_client.py``), then counts every statement psycopg executes during
``--round-trips`` more: per round trip, by kind (the statement's first words and table), and
the transactions they ran in, and how many connections the pool handed out for them (each a
``getconn``/``putconn`` pair and at least one wait for PostgreSQL's answer). A count, not a
timing: the machine may be busy.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

import httpx  # noqa: E402
import orjson  # noqa: E402
import psycopg  # noqa: E402
from asgi_lifespan import LifespanManager  # noqa: E402

from bench.hitl_client import send_body  # noqa: E402
from bench.pgdb import fresh_database  # noqa: E402

_WORDS = re.compile(r"\s+")
_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE|TABLE)\s+([\w.\"]+)", re.I)


class Counted:
    def __init__(self) -> None:
        self.on = False
        self.kinds: Counter[str] = Counter()
        self.total = 0
        self.checkouts = 0

    def note(self, query: Any) -> None:
        if not self.on:
            return
        text = query if isinstance(query, str) else getattr(query, "as_string", lambda _: str(query))(None)
        text = _WORDS.sub(" ", str(text)).strip()
        verb = " ".join(text.split(" ")[:1]).upper()
        table = _TABLE.search(text)
        self.kinds[f"{verb} {table.group(1) if table else ''}".strip()] += 1
        self.total += 1


def _patch(counted: Counted) -> None:
    """Count at psycopg's lowest async entry points: a cursor's execute and executemany,
    the pipeline's too, whoever calls them (our stores, LangGraph's saver, the claims); and
    every connection the pool hands out."""
    import psycopg_pool

    getconn = psycopg_pool.AsyncConnectionPool.getconn

    async def counted_getconn(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted.checkouts += counted.on
        return await getconn(self, *args, **kwargs)

    psycopg_pool.AsyncConnectionPool.getconn = counted_getconn  # type: ignore[method-assign]
    for cls in (psycopg.AsyncCursor, psycopg.AsyncServerCursor):
        for name in ("execute", "executemany"):
            original = getattr(cls, name)

            def wrapped(self: Any, query: Any, *args: Any, __original: Any = original,
                        **kwargs: Any) -> Any:
                counted.note(query)
                return __original(self, query, *args, **kwargs)

            setattr(cls, name, wrapped)
    # BEGIN, COMMIT and ROLLBACK of ``conn.transaction()`` bypass the cursor: psycopg sends
    # them through this private method (psycopg 3.x; a bench script may rely on it)
    command = psycopg.AsyncConnection._exec_command

    def exec_command(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        counted.note(query.decode() if isinstance(query, bytes) else query)
        return (yield from command(self, query, *args, **kwargs))

    psycopg.AsyncConnection._exec_command = exec_command  # type: ignore[method-assign]


async def _round_trip(http: httpx.AsyncClient, by_context: bool = False) -> None:
    context_id = uuid.uuid4().hex
    asked = orjson.loads((await http.post("/", content=send_body(
        "hitl", "start", context_id=context_id))).content)["result"]
    assert asked["status"]["state"] == "input-required", asked
    task_id = None if by_context else asked["id"]
    done = orjson.loads((await http.post("/", content=send_body(
        "hitl", "an answer", context_id=context_id, task_id=task_id))).content)["result"]
    assert done["status"]["state"] == "completed", done


async def _instant(http: httpx.AsyncClient, by_context: bool = False) -> None:
    """A message/send without contextId to the instant agent, as bench/wrk/send.lua."""
    done = orjson.loads((await http.post("/", content=send_body("instant", "go"))).content)
    assert done["result"]["status"]["state"] == "completed", done


async def _stream(http: httpx.AsyncClient, by_context: bool = False) -> None:
    """A message/stream without contextId to the instant agent, as the idle stream probe."""
    body = send_body("instant", "start", method="message/stream")
    async with http.stream("POST", "/", content=body) as response:
        text = (await response.aread()).decode()
    assert '"completed"' in text, text


SCENARIOS = {"hitl": _round_trip, "instant": _instant, "stream": _stream}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="every kind, not only the totals")
    parser.add_argument("--by-context", action="store_true",
                        help="answer with the contextId alone, as run.py's HITL load does for "
                        "our server (default: with the taskId too, as the official client)")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="hitl",
                        help="a HITL round trip (default), an instant message/send or an "
                        "instant message/stream, both without contextId; counted per unit")
    args = parser.parse_args()
    unit = SCENARIOS[args.scenario]
    counted = Counted()
    _patch(counted)
    from bench.agents import AGENTS
    from llamon_agent import create_app

    with fresh_database("off") as database:
        app = create_app(AGENTS, db=database.url, gc_tuning=False)
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
                for _ in range(5):
                    await unit(http, args.by_context)
                counted.on = True
                for _ in range(args.round_trips):
                    await unit(http, args.by_context)
                counted.on = False
    per = counted.total / args.round_trips
    what = "HITL round trip" if args.scenario == "hitl" else f"{args.scenario} request"
    print(f"statements per {what}: {per:.2f} ({counted.total} in {args.round_trips})")
    print(f"pool checkouts per {what}: {counted.checkouts / args.round_trips:.2f}")
    for kind, count in counted.kinds.most_common():
        if args.show or count >= args.round_trips:
            print(f"  {count / args.round_trips:5.2f}  {kind}")


if __name__ == "__main__":
    asyncio.run(main())
