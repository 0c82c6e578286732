"""The few lines an app logs when it starts: what it serves, where, and how it is protected.

The ASGI server logs the address it listens on (uvicorn: ``Uvicorn running on http://...``);
these lines say the rest, from the app's lifespan, so they appear under any ASGI server.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..agent import Agent
from .logs import fields

__all__ = ["log_startup", "log_startup_warning", "startup_lines"]

log = logging.getLogger("llamon_agent.server")


def startup_lines(
    *,
    agents: Sequence[Agent],
    database: str,
    auth_mode: str,
    reviewers: bool,
    metrics_token: bool,
    public_url: str | None,
    events: str = "in process",
    pool_size: int | None = None,
) -> list[str]:
    """``auth_mode`` says how callers authenticate, as the authentication code names it
    (``"none: every caller is anonymous"``, ``"API keys (3 principals)"``, ...);
    ``pool_size``: PostgreSQL's connection pool, ``None`` for storage without one."""
    ids = ", ".join(a.id for a in agents)
    return [
        f"serving {len(agents)} agent{'s' if len(agents) != 1 else ''}: {ids}",
        f"card URL: {public_url}" if public_url else
        "card URL: the address each connection arrives on (set --public-url behind a proxy)",
        f"database: {database}",
        *([f"database pool: up to {pool_size} connections"] if pool_size is not None else []),
        f"events: {events}",
        f"authentication: {auth_mode}",
        "reviewer endpoints (/reviews): " + ("on" if reviewers else
                                             "off (no reviewer token configured)"),
        "metrics (/metrics): " + ("behind a bearer token" if metrics_token else "public"),
    ]


def log_startup(lines: Sequence[str]) -> None:
    for line in lines:
        log.info(line, extra=fields(event="startup"))


def log_startup_warning(line: str) -> None:
    """A setting the server starts without acting on: said once, at start."""
    log.warning(line, extra=fields(event="startup"))
