"""What a round trip leaves in reference cycles (issue 14, "Speed, round four").

In process (``create_app`` on a temporary SQLite file, driven through httpx's ASGI transport):
warm up, collect, then run ``--count`` round trips with ``gc.DEBUG_SAVEALL`` so that every
object a collection would free is kept in ``gc.garbage`` instead; then list that garbage per
round trip by type, and the reference cycles in it (strongly connected components, by the types
they are made of). An object in a cycle is not freed when its last user lets go of it, only by
a collection, which walks it first: what this lists is what the collector has to do per request.

    .venv/bin/python bench/gc_cycles.py [--kind hitl|instant] [--count 30]

The httpx client's own objects appear too (a ``Response`` and its stream form a cycle); they
are the load's, not the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from asgi_lifespan import LifespanManager

from bench.agents import build_agents
from bench.hitl_client import send_body
from llamon_agent import create_app


def _name(obj: Any) -> str:
    kind = type(obj).__qualname__
    if kind in ("frame",):
        return f"frame:{obj.f_code.co_name}"
    if kind in ("coroutine", "function"):
        return f"{kind}:{obj.__qualname__}"
    return kind


def cycles(garbage: list[Any]) -> Counter[str]:
    """The strongly connected components of two or more objects (or one referring to itself),
    each named by the types it is made of (Tarjan's algorithm, iterative)."""
    objects = {id(o): o for o in garbage}
    edges = {k: [id(r) for r in gc.get_referents(o) if id(r) in objects]
             for k, o in objects.items()}
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found: Counter[str] = Counter()
    counter = 0
    for root in objects:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(edges[node])):
                nxt = edges[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    kinds = Counter(_name(objects[m]) for m in component)
                    found[", ".join(f"{k} x{n}" for k, n in kinds.most_common(8))] += 1
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


async def main(kind: str, count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(build_agents(), db=str(Path(tmp) / "cycles.sqlite"))
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

                async def round_trip() -> None:
                    if kind == "instant":
                        r = await client.post("/", content=send_body("instant", "go"))
                        assert r.json()["result"]["status"]["state"] == "completed"
                        return
                    context = uuid.uuid4().hex
                    r = await client.post("/", content=send_body("hitl", "start", context_id=context))
                    assert r.json()["result"]["status"]["state"] == "input-required"
                    r = await client.post("/", content=send_body("hitl", "an answer",
                                                                 context_id=context))
                    assert r.json()["result"]["status"]["state"] == "completed"

                for _ in range(5):
                    await round_trip()
                gc.collect()
                gc.set_debug(gc.DEBUG_SAVEALL)
                try:
                    for _ in range(count):
                        await round_trip()
                    await asyncio.sleep(0.05)  # the last turn hands its claim back
                    gc.collect()
                    garbage = list(gc.garbage)
                finally:
                    gc.set_debug(0)
                    gc.garbage.clear()
    print(f"{kind}: {len(garbage) / count:.1f} objects per round trip left to the collector")
    for name, n in Counter(type(o).__qualname__ for o in garbage).most_common(20):
        print(f"  {n / count:7.1f}  {name}")
    print("reference cycles per round trip, by what they are made of:")
    for name, n in cycles(garbage).most_common(10):
        print(f"  {n / count:7.1f}  {name}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=("hitl", "instant"), default="hitl")
    p.add_argument("--count", type=int, default=30)
    args = p.parse_args()
    asyncio.run(main(args.kind, args.count))
