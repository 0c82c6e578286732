"""Our server: ``create_app(AGENTS, db=FILE|postgresql://...)``, as ``llamon-agent serve``
builds it (SQLite file, or PostgreSQL with ``bench/run.py --db postgres``), served as
``llamon-agent serve`` serves it (``server/serve.py``: its bounded h11 protocol, TCP_NODELAY,
asyncio's loop), with warnings only and no access log, as the other servers.

Started through this file (not the ``llamon-agent`` command) only for the benchmark's agents
(bench/agents.py), ``--trace-stalls`` and ``$LLAMON_BENCH_ABLATE`` (bench/ablate.py: parts of
the product taken out, to measure what each costs).
"""

from __future__ import annotations

import os

from bench.agents import build_agents
from bench.servers._serve import parser


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--db", required=True, help="SQLite file, or postgresql:// URL, for tasks and checkpoints")
    p.add_argument("--trace-stalls", action="store_true",
                   help="print garbage collections and event-loop stalls at shutdown "
                   "(bench/stalls.py)")
    args = p.parse_args()
    from bench.ablate import make_app, parts_from_env
    from llamon_agent import create_app
    from llamon_agent.server.serve import ServeOptions, serve

    app = make_app(create_app, build_agents(), args.db, parts_from_env())
    if args.trace_stalls or os.environ.get("LLAMON_BENCH_TRACE_STALLS") == "1":
        from bench.stalls import TracedApp

        app = TracedApp(app)
    serve(app, ServeOptions(port=args.port, log_level="warning", access_log=False))


if __name__ == "__main__":
    main()
