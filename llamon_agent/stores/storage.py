"""Storage: a task store and a LangGraph checkpointer opened and closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from ..core.ports import HumanReviewPort
from ..human_review.port import InMemoryReviewPort, SQLiteReviewPort
from ..settings import DEFAULT_DB_POOL_SIZE, check_pool_size
from .base import TaskStore
from .file_lock import lock_file
from .memory import InMemoryTaskStore
from .offload import Offload
from .push_base import PushStore
from .push_memory import InMemoryPushStore
from .push_sqlite import SQLitePushStore
from .sqlite import InlineSqliteSaver, SQLiteTaskStore, connect
from .url import MEMORY, parse_database_url

__all__ = ["MEMORY", "Storage", "open_storage"]


@dataclass(frozen=True)
class Storage:
    tasks: TaskStore
    checkpointer: BaseCheckpointSaver[Any]
    reviews: HumanReviewPort = field(default_factory=InMemoryReviewPort)
    #: the SQLite file (or ``:memory:``, or the PostgreSQL URL) it was opened on; ``None``
    #: for stores given in code.
    #: Runs see it as ``RunContext.db`` (an application may keep its own tables there).
    db: str | None = None
    #: PostgreSQL's connection pool (``psycopg_pool.AsyncConnectionPool``), shared with what
    #: coordinates replicas on the same database (``backends/coordination.py``); ``None`` for
    #: the other stores
    pool: Any = None
    #: push notification configs and deliveries, in the same database (``push_base.py``)
    push: PushStore = field(default_factory=InMemoryPushStore)


@asynccontextmanager
async def open_storage(db: str, *, pool_size: int = DEFAULT_DB_POOL_SIZE
                       ) -> AsyncIterator[Storage]:
    """``db`` is a database setting (``url.py``): a SQLite file path or ``sqlite:///PATH``,
    ``:memory:`` / ``memory://`` for a process-local store, or ``postgresql://...``.

    PostgreSQL (``postgres.py``, the ``postgres`` extra): the schema is migrated, then one
    connection pool of up to ``pool_size`` connections (1 to ``MAX_DB_POOL_SIZE``; the other
    storages have no pool and ignore it) serves the task store, the review port and
    LangGraph's ``AsyncPostgresSaver``; everything opened is closed on the way out, also when
    opening fails half-way. A SQLite file is locked for the storage's life (``file_lock.py``)
    before anything connects to it or creates a table: a file another server holds raises
    ``StorageInUseError`` and is left exactly as it was.
    """
    try:
        check_pool_size(pool_size)
    except ValueError as exc:
        raise ValueError(f"pool_size {exc}") from None
    url = parse_database_url(db)
    if url.kind == "memory":
        yield Storage(tasks=InMemoryTaskStore(), checkpointer=InMemorySaver(),
                      reviews=InMemoryReviewPort(), db=MEMORY, push=InMemoryPushStore())
        return
    if url.kind == "postgres":
        try:
            from .postgres import open_postgres
        except ImportError as exc:  # the extra is not installed: say which
            raise ImportError(
                f"PostgreSQL storage needs the postgres extra (pip install "
                f"'llamon-agent[postgres]'): {exc}"
            ) from exc
        from .push_postgres import PostgresPushStore

        async with open_postgres(url.target, pool_size=pool_size) as (
                pg_tasks, pg_reviews, pg_saver, pool):
            yield Storage(tasks=pg_tasks, checkpointer=pg_saver, reviews=pg_reviews,
                          db=url.target, pool=pool,
                          push=PostgresPushStore(pool, pg_tasks.unseen_push))
        return
    db = url.target
    with ExitStack() as opened:  # closed in reverse: offload, connection, then the lock
        lock = lock_file(db)
        opened.callback(lock.release)  # last: closing our descriptor drops SQLite's locks
        conn = connect(db)
        opened.callback(conn.close)
        offload = Offload(db, connect)  # large writes: a worker thread and its own connection
        opened.callback(offload.close)
        saver = InlineSqliteSaver(conn, offload=offload)
        saver.setup()
        tasks = SQLiteTaskStore(conn, offload=offload)  # first: the push store joins its table
        reviews = SQLiteReviewPort(conn, read_off_loop=offload.read)
        yield Storage(tasks=tasks, checkpointer=saver, reviews=reviews, db=db,
                      push=SQLitePushStore(conn, offload=offload))
