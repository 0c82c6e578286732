"""What pending reviews cost the server as they pile up: the reviewers' listing, the metrics
and the draft deadline sweep.

    .venv/bin/python bench/pending_reviews.py [--db sqlite|postgres] [--reviews 1000,64000]
        [--draft-bytes 1000] [--repeat 5] [--name pending-reviews]

Drafts wait for people, and people take days: a server whose reviewers fall behind holds
thousands of pending reviews. Three things read them: a reviewer's ``GET /reviews``, every scrape
of ``/metrics`` (``llamon_reviews_pending`` and the oldest one's age) and, with a draft
deadline, every sweep (which drafts expired). On SQLite all three run on the event loop, so
every request waits while they do (issue 14's tail); on PostgreSQL the rows' decoding and the
answer's encoding do.

``create_app`` on the benchmark's agents with a reviewer token and a 30-day draft deadline (its
job runs and finds nothing due), on a fresh SQLite file or PostgreSQL database
(``bench/pgdb.py``). For each size, pending reviews of ``--draft-bytes`` of JSON each are
written straight into the port's table (as the port writes them: one row per task, a
``created`` a millisecond apart), then ``GET /reviews``, ``GET /metrics`` and the sweep
(``TaskManager.sweeper.sweep_once()``) are timed ``--repeat`` times each through httpx's ASGI
transport, each with the event loop's longest stall meanwhile (``sweep_scale.timed``) and
the listing's size in bytes. Wall time (the machine may be busy: compare the sizes, not the
digits). Results: bench/results/NAME.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench.agents import build_agents  # noqa: E402
from bench.sweep_scale import medians, save, timed  # noqa: E402

TOKEN = "bench-reviewer"
DEADLINE_SECONDS = 30 * 86400
CALLS = ("list", "metrics", "sweep")
_HEADINGS = {"list": "`GET /reviews`", "metrics": "`GET /metrics`", "sweep": "the sweep"}
_COLUMNS = "id, task_id, context_id, agent_id, draft, status, created"


@dataclass
class Size:
    reviews: int
    ms: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})
    stall_ms: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})
    listing_bytes: int = 0
    listed: int = 0

    def medians(self) -> dict[str, float]:
        return medians(self.ms, self.stall_ms, CALLS)


def rows(count: int, start: int, draft_bytes: int) -> list[tuple[Any, ...]]:
    """``count`` pending reviews' rows, ``created`` a millisecond apart from ``start`` ms
    before now (the oldest first), each draft about ``draft_bytes`` of JSON."""
    draft = orjson.dumps({"decision": "approve", "risk": "medium", "amount": 90000.0,
                          "note": "x" * max(0, draft_bytes - 70)})
    first = datetime.now(UTC) - timedelta(milliseconds=start)
    out = []
    for i in range(count):
        created = (first + timedelta(milliseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        out.append((str(uuid.uuid4()), str(uuid.uuid4()), uuid.uuid4().hex, "hitl", draft,
                    "pending", created))
    return out


def add_sqlite(path: str, batch: list[tuple[Any, ...]]) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(f"INSERT INTO llamon_reviews ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         batch)


def add_postgres(url: str, batch: list[tuple[Any, ...]]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor() as cur, cur.copy(
                f"COPY llamon_reviews ({_COLUMNS}) FROM STDIN") as copy:
            for row in batch:
                copy.write_row((*row[:4], row[4].decode(), *row[5:]))
        conn.execute("ANALYZE llamon_reviews")


@contextlib.contextmanager
def storage(kind: str, folder: str) -> Iterator[tuple[str, Callable[[list[Any]], None]]]:
    """(``create_app``'s ``db``, a function adding review rows to it)."""
    if kind == "sqlite":
        path = str(Path(folder) / f"reviews-{uuid.uuid4().hex}.sqlite3")
        yield path, lambda batch: add_sqlite(path, batch)
        return
    from bench.pgdb import fresh_database

    with fresh_database("on") as db:
        yield db.url, lambda batch: add_postgres(db.url, batch)


async def time_calls(app: Any, size: Size, repeat: int) -> None:
    sweeper = app.state.manager.sweeper
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

        async def listing() -> None:
            response = await client.get("/reviews", headers={"Authorization": f"Bearer {TOKEN}"})
            if response.status_code != 200:
                raise RuntimeError(f"GET /reviews answered {response.status_code}")
            size.listing_bytes = len(response.content)
            size.listed = len(response.json()["reviews"])

        async def metrics() -> None:
            if (await client.get("/metrics")).status_code != 200:
                raise RuntimeError("GET /metrics failed")

        async def sweep() -> None:
            report = await sweeper.sweep_once()
            if report.failed:
                raise RuntimeError(f"sweep jobs failed: {report.failed}")

        calls: dict[str, Callable[[], Awaitable[None]]] = {
            "list": listing, "metrics": metrics, "sweep": sweep}
        for _ in range(repeat):
            for call in CALLS:
                ms, stall = await timed(calls[call])
                size.ms[call].append(ms)
                size.stall_ms[call].append(stall)


async def measure(kind: str, counts: list[int], draft_bytes: int, repeat: int) -> list[Size]:
    from llamon_agent import create_app
    from llamon_agent.core.deadlines import Deadline, Reject

    sizes = []
    with tempfile.TemporaryDirectory(prefix="pending-reviews-") as folder, \
            storage(kind, folder) as (db, add):
        held = 0
        for count in counts:
            app = create_app(build_agents(), db=db, reviewer_token=TOKEN,
                             draft_deadline=Deadline(DEADLINE_SECONDS, Reject()))
            async with app.router.lifespan_context(app):
                # older than any before: the listing's first page is the same rows each size
                add(rows(count - held, start=10 * count + 10_000, draft_bytes=draft_bytes))
                held = count
                size = Size(reviews=count)
                await time_calls(app, size, repeat)
                sizes.append(size)
    return sizes


def report(kind: str, sizes: list[Size], repeat: int, draft_bytes: int) -> str:
    heads = "".join(f" {_HEADINGS[c]} | its longest loop stall |" for c in CALLS)
    lines = [f"{kind}, drafts of {draft_bytes} bytes, medians of {repeat} calls (wall time, ms)",
             "", "| pending reviews | reviews listed | listing bytes |" + heads,
             "|---:|---:|---:|" + "---:|" * (2 * len(CALLS))]
    for s in sizes:
        lines.append(f"| {s.reviews:,} | {s.listed:,} | {s.listing_bytes:,} | "
                     + " | ".join(f"{m:.2f}" for m in s.medians().values()) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--reviews", default="1000,64000",
                   help="pending reviews at each size, comma-separated, increasing")
    p.add_argument("--draft-bytes", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--name", default="pending-reviews")
    args = p.parse_args()
    counts = [int(c) for c in args.reviews.split(",")]
    if counts != sorted(set(counts)) or counts[0] < 1 or args.repeat < 1:
        p.error("--reviews must be increasing positive counts, --repeat >= 1")
    logging.disable(logging.WARNING)
    sizes = asyncio.run(measure(args.db, counts, args.draft_bytes, args.repeat))
    save(args.name, report(args.db, sizes, args.repeat, args.draft_bytes),
         [{**asdict(s), "medians": s.medians()} for s in sizes])


if __name__ == "__main__":
    main()
