"""Our server on SQLite: ``create_app(AGENTS, db=FILE)``, as ``llamon-agent serve`` builds it.

Started through this file (not the ``llamon-agent`` command) only so that uvicorn runs with the
same settings as the other benchmark servers (no access log).
"""

from __future__ import annotations

from bench.agents import build_agents
from bench.servers._serve import parser, serve


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--db", required=True, help="SQLite file for tasks and checkpoints")
    args = p.parse_args()
    from llamon_agent import create_app

    serve(create_app(build_agents(), db=args.db), args.port)


if __name__ == "__main__":
    main()
