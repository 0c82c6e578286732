"""How long a commit holds the event loop because of SQLite's inline WAL checkpoints.

    .venv/bin/python bench/wal_stalls.py [--writes 20000] [--bytes 3000]

Writes task rows the size of a HITL turn's through ``SQLiteTaskStore.save`` on one connection,
as the server does on its event loop, timing each save: with the server's settings (SQLite's
default ``wal_autocheckpoint``: the commit that takes the WAL past 1,000 pages checkpoints it,
inline) and, as the control, with ``wal_autocheckpoint=0`` (no checkpoint at all: the WAL only
grows, which a server must not do). The difference is what inline checkpoints cost the loop.
Prints p50, p99, p99.9 and the longest save, the saves over 5 ms, and the WAL's largest size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llamon_agent.a2a.types import Task, TaskStatus  # noqa: E402
from llamon_agent.stores.base import StoredTask  # noqa: E402
from llamon_agent.stores.offload import Offload  # noqa: E402
from llamon_agent.stores.sqlite import SQLiteTaskStore, connect  # noqa: E402


def _record(number: int, text: str) -> StoredTask:
    task = Task.model_validate({
        "id": f"t{number}", "contextId": f"c{number}",
        "status": TaskStatus(state="input-required").to_wire(),
        "history": [{"kind": "message", "messageId": f"m{number}", "role": "user",
                     "parts": [{"kind": "text", "text": text}]}],
    })
    return StoredTask(task=task, agent_id="hitl")


async def _run(inline: bool, writes: int, size: int) -> dict[str, float]:
    folder = tempfile.mkdtemp(prefix="wal-stalls-")
    db = os.path.join(folder, "bench.sqlite3")
    conn = connect(db)
    offload = Offload(db, connect)
    store = SQLiteTaskStore(conn, offload=offload)
    if not inline:
        conn.execute("PRAGMA wal_autocheckpoint=0")
    text = "x" * size
    times: list[float] = []
    largest_wal = 0
    try:
        for number in range(writes):
            started = time.perf_counter()
            await store.save(_record(number, text))
            times.append(time.perf_counter() - started)
            if number % 50 == 0:
                wal = Path(db + "-wal")
                largest_wal = max(largest_wal, wal.stat().st_size if wal.exists() else 0)
    finally:
        offload.close()
        conn.close()
    times.sort()
    return {
        "p50_ms": times[len(times) // 2] * 1e3,
        "p99_ms": times[int(len(times) * 0.99)] * 1e3,
        "p99.9_ms": times[int(len(times) * 0.999)] * 1e3,
        "max_ms": times[-1] * 1e3,
        "over_5ms": sum(t > 0.005 for t in times),
        "mean_ms": statistics.fmean(times) * 1e3,
        "largest_wal_mib": largest_wal / 2**20,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--writes", type=int, default=20_000)
    p.add_argument("--bytes", type=int, default=3_000, help="text per task row")
    args = p.parse_args()
    print(f"{args.writes} saves of a {args.bytes}-byte task row on the loop's connection")
    print("| checkpoints | p50 ms | p99 ms | p99.9 ms | longest ms | saves > 5 ms | "
          "mean ms | largest WAL MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for inline in (True, False):
        r = asyncio.run(_run(inline, args.writes, args.bytes))
        name = "inline (SQLite's default, the server's)" if inline else "none (control)"
        print(f"| {name} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['p99.9_ms']:.2f} | "
              f"{r['max_ms']:.2f} | {r['over_5ms']} | {r['mean_ms']:.3f} | "
              f"{r['largest_wal_mib']:.1f} |")


if __name__ == "__main__":
    main()
