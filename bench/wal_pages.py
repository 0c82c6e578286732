"""What a HITL round trip writes to SQLite's WAL: pages per commit, by table and index.

    .venv/bin/python bench/wal_pages.py [--round-trips 30] [--warmup 5] [--index-cost 3000]

Two runs, each on a fresh SQLite file: our app served in process (``create_app`` on the
benchmark's agents, the HITL round trip of ``bench/in_process.py``) and LangGraph alone on our
checkpointer (``bench/langgraph_alone.py``: the native graph, ``durability="exit"``, the CPU
target's denominator). After ``--warmup`` round trips (each leaves one ended task: a few
thousand put the b-trees past their first pages, where an index's insertion points and its
deletions can sit on different pages, as in a file that has served a while) the WAL is
truncated (``PRAGMA wal_checkpoint(TRUNCATE)`` from a connection of this script's own, while
nothing runs), the measured round trips run one at a time, and the ``-wal`` file is read as
SQLite's file format says (https://sqlite.org/fileformat2.html#walformat): each frame is one
page image of ``page size`` bytes, and the frame that ends a transaction carries the
database's size after it. Each page number is named by SQLite's ``dbstat`` table (the b-tree
holding that page at the end of the run); page 1 is the file's header with ``sqlite_schema``,
and with ``auto_vacuum`` the pointer-map pages have no b-tree. A count, not a timing: the
machine may be busy.

Writing a page to the WAL is a copy and a checksum of its 4 KiB at commit (``synchronous=NORMAL``
syncs only at checkpoints), and each page written is copied into the database file again at the
next checkpoint: a commit's cost grows with the pages it dirties, and every index of a table
adds its own leaf pages to each write of a row (bench/README.md, "Speed, round twenty-one").

``--index-cost N`` then times what the task table's secondary indexes cost: N pairs of task-row
saves (a new task row, then the same row ended: a HITL round trip's two), each its own commit,
on ``llamon_tasks`` as our store creates it, with its indexes and without them; CPU per pair.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import struct
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_WARMUP = 5
_WAL_HEADER = struct.Struct(">IIIIIIII")  # magic, version, page size, checkpoint seq, salts, sums
_FRAME_HEADER = struct.Struct(">IIIIII")  # page, size after commit (0: none), salts, checksums
HEADER_PAGE = "page 1: the file's header and sqlite_schema"
POINTER_MAP = "pointer map (auto_vacuum)"
UNNAMED = "no b-tree at the end of the run (freed)"


class WalRestarted(RuntimeError):
    """The WAL was checkpointed and restarted while the measured round trips ran: its frames no
    longer hold all of their commits."""


@dataclass
class Wal:
    page_size: int
    checkpoint_seq: int
    #: the pages of each committed transaction, in order
    commits: list[list[int]] = field(default_factory=list)


def read_wal(path: Path) -> Wal:
    """The committed transactions of the WAL's current generation: frames whose salts are the
    header's, up to the last frame that ends a transaction (later frames are uncommitted or
    left from an earlier generation)."""
    data = path.read_bytes() if path.exists() else b""
    if len(data) < _WAL_HEADER.size:
        return Wal(page_size=0, checkpoint_seq=0)
    magic, _version, page_size, seq, salt1, salt2, _s1, _s2 = _WAL_HEADER.unpack_from(data)
    if magic not in (0x377F0682, 0x377F0683):
        raise ValueError(f"{path} is not a SQLite WAL file")
    wal = Wal(page_size=page_size, checkpoint_seq=seq)
    pending: list[int] = []
    offset = _WAL_HEADER.size
    while offset + _FRAME_HEADER.size + page_size <= len(data):
        page, size_after, frame_salt1, frame_salt2, _c1, _c2 = _FRAME_HEADER.unpack_from(data, offset)
        if (frame_salt1, frame_salt2) != (salt1, salt2):
            break
        pending.append(page)
        if size_after:
            wal.commits.append(pending)
            pending = []
        offset += _FRAME_HEADER.size + page_size
    return wal


def is_pointer_map(page: int, page_size: int) -> bool:
    """Whether ``page`` is a pointer-map page of an ``auto_vacuum`` file: page 2, then one
    every ``page_size // 5 + 1`` pages (each entry is 5 bytes; reserved bytes: none here)."""
    step = page_size // 5 + 1
    return page >= 2 and (page - 2) % step == 0


def page_owners(db: Path) -> dict[int, str]:
    with sqlite3.connect(db) as conn:
        return {page: name for name, page in conn.execute("SELECT name, pageno FROM dbstat")}


def owner_of(page: int, owners: dict[int, str], page_size: int, auto_vacuum: bool) -> str:
    if page == 1:
        return HEADER_PAGE
    if page in owners:
        return owners[page]
    if auto_vacuum and is_pointer_map(page, page_size):
        return POINTER_MAP
    return UNNAMED


@dataclass
class Written:
    """The WAL's pages of ``round_trips`` measured round trips."""

    round_trips: int
    commits: int
    pages: int
    page_size: int
    by_owner: Counter[str]


def truncate_wal(db: Path) -> None:
    """Copy every page into the database file and empty the WAL."""
    with sqlite3.connect(db) as conn:
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError(f"{db}: the WAL could not be truncated (a reader or writer is busy)")


async def count_pages(db: Path, round_trip: Callable[[], Awaitable[None]],
                      round_trips: int, warmup: int) -> Written:
    """Warm up, empty the WAL, run ``round_trips`` one at a time, and read what they wrote."""
    for _ in range(warmup):
        await round_trip()
    truncate_wal(db)
    wal_path = db.with_name(db.name + "-wal")
    await round_trip()
    generation = read_wal(wal_path).checkpoint_seq  # the first write after the truncation
    for _ in range(round_trips - 1):
        await round_trip()
    wal = read_wal(wal_path)
    if wal.checkpoint_seq != generation:
        raise WalRestarted(f"{db}: the WAL restarted during the run (SQLite's automatic "
                           f"checkpoint): measure fewer than {round_trips} round trips")
    with sqlite3.connect(db) as conn:
        auto_vacuum = conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 0
    owners = page_owners(db)
    by_owner: Counter[str] = Counter(
        owner_of(page, owners, wal.page_size, auto_vacuum)
        for commit in wal.commits for page in commit
    )
    return Written(round_trips, len(wal.commits), sum(by_owner.values()), wal.page_size, by_owner)


async def served(folder: Path, round_trips: int, warmup: int = DEFAULT_WARMUP) -> Written:
    """Our app, in process, on a fresh SQLite file."""
    from bench.agents import build_agents
    from bench.in_process import round_trip
    from llamon_agent import create_app

    db = folder / "served.sqlite3"
    app = create_app(build_agents(), db=str(db))
    async with app.router.lifespan_context(app):
        return await count_pages(db, lambda: round_trip(app), round_trips, warmup)


async def langgraph_alone(folder: Path, round_trips: int,
                          warmup: int = DEFAULT_WARMUP) -> Written:
    """LangGraph alone on our checkpointer, as ``bench/langgraph_alone.py`` measures it."""
    from bench.langgraph_alone import Variant, checkpointer, compile_graph, round_trip

    variant = Variant("sqlite-llamon", "exit")
    async with checkpointer(variant.checkpointer, str(folder)) as opened:
        (db,) = folder.glob("sqlite-llamon-*.sqlite3")
        graph = compile_graph(variant, opened.saver)
        return await count_pages(
            db, lambda: round_trip(graph, variant.durability, False), round_trips, warmup
        )


def report(ours: Written, alone: Written, warmup: int = DEFAULT_WARMUP) -> str:
    names = sorted(set(ours.by_owner) | set(alone.by_owner),
                   key=lambda n: (-ours.by_owner[n] - alone.by_owner[n], n))
    lines = [
        f"WAL pages per HITL round trip ({ours.round_trips} round trips each, one at a time, "
        f"after {warmup} warm-up round trips; "
        f"{ours.page_size}-byte pages)",
        "",
        "| b-tree (table or index) | ours, per round trip | LangGraph alone, per round trip |",
        "|---|---:|---:|",
    ]
    for name in names:
        lines.append(f"| {name} | {ours.by_owner[name] / ours.round_trips:.2f} | "
                     f"{alone.by_owner[name] / alone.round_trips:.2f} |")
    for what, ours_value, alone_value in (
        ("**all pages**", ours.pages / ours.round_trips, alone.pages / alone.round_trips),
        ("commits", ours.commits / ours.round_trips, alone.commits / alone.round_trips),
        ("pages per commit", ours.pages / max(ours.commits, 1),
         alone.pages / max(alone.commits, 1)),
    ):
        lines.append(f"| {what} | {ours_value:.2f} | {alone_value:.2f} |")
    kib = ours.page_size / 1024
    lines += ["", f"KiB written to the WAL per round trip: ours "
                  f"{ours.pages / ours.round_trips * kib:.0f}, LangGraph alone "
                  f"{alone.pages / alone.round_trips * kib:.0f}"]
    return "\n".join(lines)


async def main_async(round_trips: int, warmup: int) -> str:
    with tempfile.TemporaryDirectory(prefix="wal-pages-") as folder:
        ours_folder, alone_folder = Path(folder) / "ours", Path(folder) / "alone"
        ours_folder.mkdir()
        alone_folder.mkdir()
        ours = await served(ours_folder, round_trips, warmup)
        alone = await langgraph_alone(alone_folder, round_trips, warmup)
    return report(ours, alone, warmup)


def task_table(path: Path, *, indexes: bool) -> sqlite3.Connection:
    """A file holding ``llamon_tasks`` as our store creates it (``SQLiteTaskStore`` on
    ``connect``'s connection), without its secondary indexes unless ``indexes``."""
    from llamon_agent.stores.sqlite import SQLiteTaskStore, connect

    conn = connect(str(path))
    SQLiteTaskStore(conn)
    if not indexes:
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'llamon_tasks'"
            " AND sql IS NOT NULL"  # the primary key's own index has no SQL and stays
        ).fetchall():
            conn.execute(f'DROP INDEX "{name}"')
        conn.commit()
    return conn


def task_saves_cpu_us(folder: Path, pairs: int, *, indexes: bool) -> float:
    """CPU per pair of task-row saves (the round trip's two, each committed), µs."""
    from llamon_agent.stores.sqlite import _UPSERT_TASK  # the store's own statement

    conn = task_table(folder / f"saves-{uuid.uuid4().hex}.sqlite3", indexes=indexes)
    try:
        task = os.urandom(700).hex().encode()  # about the size of the benchmark's task rows

        def save(task_id: str, state: str, created: int) -> None:
            with conn:
                conn.execute(_UPSERT_TASK, (
                    task_id, f"context-{task_id}", "hitl", state, 3, None, 0, task, b"{}",
                    created, "anonymous", time.time(), None))

        def round_trips(n: int) -> None:
            for created in range(n):
                task_id = uuid.uuid4().hex
                save(task_id, "input-required", created)
                save(task_id, "completed", created)

        round_trips(300)  # warm: the b-trees past their first pages
        started = time.process_time()
        round_trips(pairs)
        return (time.process_time() - started) / pairs * 1e6
    finally:
        conn.close()


def index_cost(pairs: int, repetitions: int = 3) -> str:
    lines = [f"The task row's two saves per round trip, each committed ({pairs} pairs, "
             f"{repetitions} repetitions alternating), CPU µs per round trip:", "",
             "| repetition | without secondary indexes | with them (ours) | difference |",
             "|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="wal-pages-index-") as folder:
        for repetition in range(1, repetitions + 1):
            bare = task_saves_cpu_us(Path(folder), pairs, indexes=False)
            indexed = task_saves_cpu_us(Path(folder), pairs, indexes=True)
            lines.append(f"| {repetition} | {bare:.0f} | {indexed:.0f} | {indexed - bare:.0f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--round-trips", type=int, default=30,
                   help="measured round trips (few enough that the WAL does not reach SQLite's "
                        "automatic checkpoint of 1000 pages)")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, metavar="ROUND_TRIPS",
                   help="round trips before the measured ones (each leaves an ended task)")
    p.add_argument("--index-cost", type=int, default=0, metavar="PAIRS",
                   help="also time the task table's secondary indexes over PAIRS round trips' "
                        "task-row saves (0: not)")
    args = p.parse_args()
    if args.round_trips < 1 or args.index_cost < 0 or args.warmup < 0:
        p.error("--round-trips must be at least 1, --warmup and --index-cost at least 0")
    print(asyncio.run(main_async(args.round_trips, args.warmup)))
    if args.index_cost:
        print()
        print(index_cost(args.index_cost))


if __name__ == "__main__":
    main()
