"""``llamon-agent prune --older-than 30d [--dry-run] [--db URL]``: retention by hand.

Deletes what a server's ``--retention`` sweep deletes (``runtime/retention.py``): tasks that
ended (completed, canceled, rejected, failed) longer ago than ``--older-than``, with their
checkpoints (of contexts left with no other task), reviews and events. ``--dry-run`` counts
and changes nothing. It prints one line saying what it deleted, or would delete.

Beside a running server:

* **SQLite**: a server holds an exclusive lock on its file (``stores/file_lock.py``), and
  context claims live in that server's memory, so nothing outside it could keep a turn from
  starting in a context being pruned: ``prune`` refuses a file in use (exit code 3) and
  changes nothing. Stop the server, or let it prune itself (``--retention``).
* **PostgreSQL**: safe while servers run: it takes each context's claim in the database
  (``backends/pg_claims.py``), as a server's sweep does, and leaves a context busy now for
  later (the count is printed).

Events: with Redis events a server deletes the streams of the tasks it deletes; ``prune``
opens no Redis connection, and a stream expires by itself ten minutes after its task's turn
ended (``RedisPublisher(finished_ttl=)``).

Exit codes: 0 done (also when nothing was old enough); 1 the database could not be opened or
the prune failed; 2 a wrong argument (argparse); 3 the SQLite file is in use by a server.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from .core.clock import Clock, iso, system_clock
from .errors import StorageInUseError
from .runtime.claims import ContextClaims, LocalClaims
from .runtime.erasure import Erasure, TasksDeleted
from .runtime.retention import Pruned, Retention
from .settings import DEFAULT_LEASE, Settings, parse_duration
from .stores.base import Prunable
from .stores.storage import Storage, open_storage
from .stores.url import parse_database_url

__all__ = ["EXIT_IN_USE", "PruneReport", "add_prune_command", "duration", "prune", "run_prune"]

#: the exit code of a SQLite file another process (a server) holds
EXIT_IN_USE = 3


def duration(text: str) -> float:
    """An argparse type: ``30d``, ``12h``, ``90m``, ``45s`` as seconds (``parse_duration``)."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclass(frozen=True)
class PruneReport:
    """What a prune deleted (``pruned``) or would delete (``preview``, ``--dry-run``): tasks
    that ended before ``cutoff``."""

    cutoff: datetime
    older_than: float
    preview: Prunable | None = None
    pruned: Pruned | None = None

    def line(self) -> str:
        age = _shown_age(self.older_than)
        before = f"ended before {iso(self.cutoff)} (older than {age})"
        if self.preview is not None:
            p = self.preview
            text = (f"would delete {p.tasks} tasks in {p.contexts} contexts, {before}; "
                    f"{p.emptied} of these contexts would be left empty and lose their "
                    f"checkpoints")
            if p.undated:
                text += (f"; {p.undated} ended tasks of unknown age would be dated now "
                         f"(deleted {age} later)")
            return text + "; nothing was changed (--dry-run)"
        assert self.pruned is not None
        d = self.pruned
        text = (f"deleted {d.tasks} tasks in {d.contexts} contexts, {before}; {d.emptied} of "
                f"these contexts were left empty and lost their checkpoints")
        if d.dated:
            text += f"; {d.dated} ended tasks of unknown age were dated now (deleted {age} later)"
        if d.busy:
            text += f"; {d.busy} contexts were busy (a turn running) and were left for later"
        return text


async def prune(
    db: str, older_than: float, *, dry_run: bool = False, clock: Clock = system_clock,
    lease: float = DEFAULT_LEASE, also_delete: Sequence[TasksDeleted] = (),
) -> PruneReport:
    """Prune ``db`` (a SQLite file or a PostgreSQL URL). ``also_delete``: hooks given the ids of
    deleted tasks (push notification data). Raises ``StorageInUseError`` for a SQLite file a
    server holds, ``ValueError`` for memory storage (nothing outlives its process)."""
    if parse_database_url(db).kind == "memory":
        raise ValueError("memory storage ends with its process: there is nothing to prune")
    async with open_storage(db) as storage, _claims(storage, lease) as claims:
        erasure = Erasure(storage.checkpointer, storage.reviews, None)
        erasure.also_delete(storage.push.delete_tasks)  # their push configs and deliveries
        for hook in also_delete:
            erasure.also_delete(hook)
        retention = Retention(storage.tasks, claims, erasure, older_than, max_batches=None)
        now = clock()
        cutoff = datetime.fromtimestamp(retention.cutoff(now), tz=now.tzinfo)
        if dry_run:
            return PruneReport(cutoff, older_than, preview=await retention.preview(now))
        return PruneReport(cutoff, older_than, pruned=await retention.prune(now))


@asynccontextmanager
async def _claims(storage: Storage, lease: float) -> AsyncIterator[ContextClaims]:
    """PostgreSQL: the claims every server takes; SQLite: this process's (the file lock keeps
    every server out while it runs)."""
    if storage.pool is None:
        yield LocalClaims()
        return
    from .backends.pg_claims import PostgresClaims  # the postgres extra, installed with it

    async with PostgresClaims(storage.pool, lease=lease) as claims:
        yield claims


def add_prune_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                      add_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``prune`` subcommand; ``add_options`` adds its options (the CLI's table of options,
    ``settings.OPTIONS``: ``--older-than``, ``--dry-run``, ``--db``)."""
    cmd = commands.add_parser(
        "prune", help="delete tasks that ended longer ago than --older-than, with their "
        "checkpoints, reviews and events (docs/operations.md, Retention)",
        description="Delete the tasks that ended longer ago than --older-than, with their "
        "checkpoints, reviews and events, as a server's --retention does. A SQLite file a "
        "server holds is refused (exit code 3); PostgreSQL is pruned while servers run.")
    add_options(cmd)


def run_prune(args: argparse.Namespace, settings: Settings, *,
              clock: Clock = system_clock) -> int:
    """Runs ``prune`` for the parsed arguments, prints its line; returns the exit code."""
    try:
        report = asyncio.run(prune(args.db, args.prune_older_than, dry_run=args.prune_dry_run,
                                   clock=clock, lease=settings.lease))
    except StorageInUseError as exc:
        print(f"error: {exc}; prune changed nothing (a server prunes its own file with "
              "--retention)", file=sys.stderr)
        return EXIT_IN_USE
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # unreachable, refused, failed half-way: one line, no traceback
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(report.line())
    return 0


def _shown_age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return str(timedelta(seconds=seconds)) if seconds % 1 else f"{int(seconds)}s"
