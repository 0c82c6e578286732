"""The long fuzz run: 10,000+ cases per endpoint against a real ``llamon-agent serve``.

    .venv/bin/python -m tests.fuzz.run_long [--cases 10000] [--seed N] [--only rpc,chat,...]

The same cases and checks as ``tests/fuzz`` (random, not derandomised), over one keep-alive
connection, but a violation does not stop the run: it is counted, the first few are printed
with their request, and the run goes on (on a new connection if the old one was lost). At the
end: the outcomes of each endpoint (result, each JSON-RPC error code, each HTTP status), every
stored task read back, the tracebacks in the server's log, and the time taken. Exits 1 when
any property was violated.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.process.conftest import EXAMPLE_TARGET, start_server

from .cases import RpcCase, decision_bodies, hostile_review_id, raw_bodies, rpc_cases
from .cases_v1 import RpcV1Case, rpc_v1_cases
from .checks import Stats
from .checks_v1 import every_task_reads_back_twice
from .drive import (
    AUTHS,
    REVIEW_TARGETS,
    TOKEN,
    Reviews,
    Served,
    decision_case,
    hitl_case,
    hitl_cases,
    hitl_operation,
    raw_case,
    rpc_case,
)
from .drive_v1 import rpc_v1_case
from .scene import Scene
from .wire import OneConnection

ENDPOINTS = ["rpc", "rpc1", "raw", "chat", "review", "decision"]


@dataclass
class Run:
    served: Served
    url: str
    violations: list[str] = field(default_factory=list)
    reconnects: int = 0

    def guarded(self, stats: Stats, send: Callable[[], None]) -> None:
        done = sum(stats.outcomes.values())
        if done and done % 1000 == 0:
            print(f"  {stats.name}: {done} cases, {len(self.violations)} violations",
                  flush=True)
        try:
            send()
        except AssertionError as exc:
            stats.outcomes["VIOLATION"] += 1
            self.violations.append(f"[{stats.name}] {exc}")
            self._reconnect_if_lost()
        except Exception:  # the fuzzer's own failure (e.g. a slot it could not fill): shown too
            stats.outcomes["FUZZER ERROR"] += 1
            self.violations.append(f"[{stats.name}] {traceback.format_exc()}")
            self._reconnect_if_lost()

    def _reconnect_if_lost(self) -> None:
        """After a violation the connection may be gone: continue on a fresh one."""
        old = self.served.wire
        assert isinstance(old, OneConnection)
        old.close()
        wire = OneConnection(self.url)
        self.served.wire = wire
        self.served.scene.wire = wire
        self.reconnects += 1


def _settings(cases: int) -> settings:
    # generation only: a violation is recorded, not shrunk, and the run goes on
    return settings(max_examples=cases, database=None, deadline=None, derandomize=False,
                    phases=[Phase.generate], suppress_health_check=list(HealthCheck))


def run_endpoint(run: Run, endpoint: str, cases: int, run_seed: int) -> Stats:
    stats = Stats(endpoint)
    served = run.served
    body: Callable[..., None]
    if endpoint == "rpc":
        stats.name = "JSON-RPC, generated from the A2A schema"

        @given(case=rpc_cases(blocking_loans=False))
        def body(case: RpcCase) -> None:
            run.guarded(stats, lambda: rpc_case(served, case, stats))
    elif endpoint == "rpc1":
        stats.name = "JSON-RPC v1.0, generated from a2a.proto"

        @given(case=rpc_v1_cases(blocking_loans=False))
        def body(case: RpcV1Case) -> None:
            run.guarded(stats, lambda: rpc_v1_case(served, case, stats))
    elif endpoint == "raw":
        stats.name = "JSON-RPC, malformed bodies"

        @given(raw=raw_bodies())
        def body(raw: bytes) -> None:
            run.guarded(stats, lambda: raw_case(served, raw, stats))
    elif endpoint in ("chat", "review"):
        path = f"/hitl/{endpoint}"
        stats.name = f"POST {path}, schemathesis"
        operation = hitl_operation(served, path)

        @given(case=hitl_cases(operation), data=st.data())
        def body(case: Any, data: st.DataObject) -> None:
            run.guarded(stats, lambda: hitl_case(served, path, case, data, stats))
    else:
        stats.name = "POST /reviews/{id}/decision"
        reviews = Reviews()

        @given(drawn=decision_bodies(), target=st.sampled_from(REVIEW_TARGETS),
               hostile_id=hostile_review_id(), auth=st.sampled_from(AUTHS))
        def body(drawn: tuple[Any, str], target: str, hostile_id: str, auth: str) -> None:
            run.guarded(stats, lambda: decision_case(served, reviews, drawn, target,
                                                     hostile_id, auth, stats))

    seed(run_seed)(_settings(cases)(body))()
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run_long",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases per endpoint")
    parser.add_argument("--raw-cases", type=int, default=2_000,
                        help="malformed JSON-RPC bodies (on top of --cases generated ones)")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--only", default=",".join(ENDPOINTS),
                        help=f"endpoints to run, of {','.join(ENDPOINTS)}")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="llamon-fuzz-"))
    db = folder / "llamon.sqlite3"
    os.environ["LLAMON_REVIEWER_TOKEN"] = TOKEN
    server = start_server(EXAMPLE_TARGET, db, folder, ["--keep-alive", "3600"])
    print(f"server {server.url}, database {db}, seed {args.seed}", flush=True)
    started = time.monotonic()
    results: list[tuple[Stats, float]] = []
    try:
        wire = OneConnection(server.url)
        run = Run(Served(wire, Scene(wire, blocking_loans=False), db), server.url)
        for endpoint in args.only.split(","):
            cases = args.raw_cases if endpoint == "raw" else args.cases
            begun = time.monotonic()
            stats = run_endpoint(run, endpoint, cases, args.seed)
            results.append((stats, time.monotonic() - begun))
            print(f"{stats.line()} [{results[-1][1]:.0f} s]", flush=True)
        stored = every_task_reads_back_twice(run.served.scene.rpc, run.served.wire, db)
        alive = server.proc.poll() is None
        wire_state = run.served.wire
        assert isinstance(wire_state, OneConnection)
    finally:
        server.stop()
    log = server.log()
    print("\n== long fuzz run ==")
    for stats, seconds in results:
        print(f"{stats.line()} [{seconds:.0f} s]")
    print(f"stored tasks read back (tasks/get, GetTask and SQLiteTaskStore.get): {stored}")
    print(f"server alive at the end: {alive}; connections opened: {len(wire_state.ports)} "
          f"(+{run.reconnects} after violations), closes the server announced: "
          f"{wire_state.announced_closes}")
    print(f"tracebacks in the server log: {log.count('Traceback')}")
    print(f"violations: {len(run.violations)}; total time {time.monotonic() - started:.0f} s")
    for violation in run.violations[:20]:
        print("\n--- violation ---\n" + violation[:3000])
    if "Traceback" in log:
        first = log.index("Traceback")
        print("\n--- first traceback in the server log ---\n" + log[max(0, first - 300):first + 4000])
    return 1 if run.violations or not alive else 0


if __name__ == "__main__":
    sys.exit(main())
