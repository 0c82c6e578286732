"""What listing every task costs, a ``ListTasks`` page at a time, when the tasks are large:
the CPU, the longest page, the event loop's longest stall and the most memory held.

    .venv/bin/python bench/list_pages.py [--db sqlite|postgres] [--answers 2000] [--tasks 128]
        [--page-size 100] [--repeat 3] [--name list-pages]

A2A v1.0's ``ListTasks`` answers a page of up to 100 tasks; by default a listed task shows no
history, but each one listed is read and decoded whole, and a task may hold 4 MiB
(``max_task_bytes``): about 12,000 one-character answers, which decode to about ten times
their JSON's size. ``create_app`` with the example agents on a fresh SQLite file or PostgreSQL
database (``bench/pgdb.py``); one ``until-done`` task takes ``--answers`` one-character answers
in process (``bench/long_history.py``); then its row and checkpoints are copied with new ids,
doubling (``bench/sweep_scale.py``), until the store holds at least ``--tasks`` such tasks.
A walk reads every page of ``--page-size`` of every task, following ``nextPageToken`` to the
end (through httpx's ASGI transport, as ``sweep_scale.py`` lists), as a client that lists
everything does. ``--repeat`` walks run for their CPU (``time.process_time()``: every thread,
plus PostgreSQL's backends on PostgreSQL), the mean a walk; ``--repeat`` more are timed: the
longest page's wall time and the event loop's longest stall meanwhile (``sweep_scale``'s
``LoopStalls``), medians over the walks; then one walk under ``tracemalloc``, for the most
memory Python held during it, less what it held before. Results: bench/results/NAME.md and
.json.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.in_process import database
from bench.langgraph_alone import CLK_TCK, backend_cpu
from bench.long_history import Task, stored_bytes
from bench.sweep_scale import LoopStalls, grow_postgres, grow_sqlite, list_tasks, save


@dataclass
class Listing:
    tasks_stored: int = 0
    task_bytes: int = 0
    #: pages a walk took, and tasks it listed
    pages: int = 0
    listed: int = 0
    cpu_ms: float = 0.0
    longest_page_ms: list[float] = field(default_factory=list)
    stall_ms: list[float] = field(default_factory=list)
    peak_mib: float = 0.0


async def measure(kind: str, answers: int, tasks: int, page_size: int, repeat: int) -> Listing:
    from app.main import AGENTS
    from llamon_agent import create_app

    out = Listing()
    with tempfile.TemporaryDirectory(prefix="list-pages-") as folder, \
            database(kind, folder) as (db, name):
        app = create_app(AGENTS, db=db)
        async with app.router.lifespan_context(app):
            task = Task([app], chars=1)
            await task.start()
            while task.taken < answers:
                await task.answer()
            out.task_bytes = await stored_bytes(db, task.id)
            out.tasks_stored = (grow_postgres(db, tasks) if kind == "postgres"
                                else grow_sqlite(db, tasks))
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench",
                                         timeout=300) as client:

                async def walk() -> float:
                    """Every page; the longest one's wall time in ms."""
                    token, longest, out.pages, out.listed = "", 0.0, 0, 0
                    while True:
                        started = time.perf_counter()
                        found = await list_tasks(client, {"pageSize": page_size,
                                                          "pageToken": token})
                        longest = max(longest, (time.perf_counter() - started) * 1e3)
                        out.pages += 1
                        out.listed += len(found["tasks"])
                        token = found["nextPageToken"]
                        if not token:
                            return longest

                cpu = time.process_time()
                with backend_cpu(name) as pg:
                    for _ in range(repeat):
                        await walk()
                backend = pg.backend_ticks / CLK_TCK if pg is not None else 0.0
                out.cpu_ms = (time.process_time() - cpu + backend) * 1e3 / repeat
                for _ in range(repeat):
                    async with LoopStalls() as stalls:
                        out.longest_page_ms.append(await walk())
                    out.stall_ms.append(stalls.longest)
                tracemalloc.start()
                try:
                    before = tracemalloc.get_traced_memory()[0]
                    tracemalloc.reset_peak()
                    await walk()
                    out.peak_mib = (tracemalloc.get_traced_memory()[1] - before) / 2**20
                finally:
                    tracemalloc.stop()
    return out


def report(kind: str, listing: Listing, answers: int, page_size: int, repeat: int) -> str:
    return "\n".join([
        f"{kind}: every `ListTasks` page of {page_size} (no history asked for) over "
        f"{listing.tasks_stored:,} copies of a task of {answers:,} answers; CPU: the mean of "
        f"{repeat} walks, the longest page and stall: medians of {repeat} walks", "",
        "| task row, bytes | tasks listed | pages | CPU ms a walk | longest page ms "
        "| longest loop stall ms | most memory held meanwhile, MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {listing.task_bytes:,} | {listing.listed} | {listing.pages} "
        f"| {listing.cpu_ms:.1f} | {statistics.median(listing.longest_page_ms):.1f} "
        f"| {statistics.median(listing.stall_ms):.1f} | {listing.peak_mib:.1f} |",
    ])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--answers", type=int, default=2000)
    p.add_argument("--tasks", type=int, default=128)
    p.add_argument("--page-size", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--name", default="list-pages")
    args = p.parse_args()
    if args.answers < 0 or args.tasks < 1 or not 1 <= args.page_size <= 100 or args.repeat < 1:
        p.error("--answers >= 0, --tasks >= 1, --page-size 1 to 100, --repeat >= 1")
    logging.disable(logging.WARNING)
    listing = asyncio.run(measure(args.db, args.answers, args.tasks, args.page_size,
                                  args.repeat))
    save(args.name, report(args.db, listing, args.answers, args.page_size, args.repeat),
         {**asdict(listing), "answers": args.answers, "page_size": args.page_size})


if __name__ == "__main__":
    main()
