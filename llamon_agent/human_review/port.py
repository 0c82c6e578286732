"""``HumanReviewPort``: drafts wait here until an authenticated reviewer decides (seed 004).

Distinct from a requester answering a question: the requester's task waits in ``working`` and
only a decision made through this port (the reviewer endpoints, or the Python API) moves it on.
Nothing that arrives inside an A2A message can reach ``decide``.
"""

from __future__ import annotations

import bisect
import logging
import sqlite3
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

import orjson

from ..core.clock import now
from ..core.ports import (
    Decision,
    Listener,
    PendingSummary,
    Review,
    ReviewClosedError,
    ReviewCursor,
    ReviewNotFoundError,
    UnreadableReviewError,
)

__all__ = ["InMemoryReviewPort", "SQLiteReviewPort", "readable_page", "review_of_row"]

log = logging.getLogger(__name__)



def _closed_error(review: Review) -> ReviewClosedError:
    if review.status == "closed":
        return ReviewClosedError(review.id, f"review closed: {review.closed_reason}")
    return ReviewClosedError(review.id)


class _Notifying:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def on_decision(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def _notify(self, review: Review) -> None:
        for listener in list(self._listeners):  # a listener may remove itself
            await listener(review)


class InMemoryReviewPort(_Notifying):
    def __init__(self) -> None:
        super().__init__()
        self._reviews: dict[str, Review] = {}
        self._by_task: dict[str, str] = {}
        #: the pending reviews' (created, id), sorted: a page is a slice of it
        self._waiting: list[tuple[str, str]] = []

    async def submit(self, *, task_id: str, context_id: str, agent_id: str, draft: Any) -> Review:
        existing = self._by_task.get(task_id)
        if existing is not None and self._reviews[existing].status == "pending":
            return self._reviews[existing]
        review = Review(str(uuid.uuid4()), task_id, context_id, agent_id, draft)
        self._reviews[review.id] = review
        self._by_task[task_id] = review.id
        bisect.insort(self._waiting, (review.created, review.id))
        return review

    def _stop_waiting(self, review: Review) -> None:
        at = bisect.bisect_left(self._waiting, (review.created, review.id))
        if at < len(self._waiting) and self._waiting[at] == (review.created, review.id):
            del self._waiting[at]

    async def get(self, review_id: str) -> Review:
        try:
            return self._reviews[review_id]
        except KeyError:
            raise ReviewNotFoundError(review_id) from None

    async def pending(self, limit: int, after: ReviewCursor | None = None) -> list[Review]:
        start = 0 if after is None else bisect.bisect_right(self._waiting,
                                                             (after.created, after.id))
        return [self._reviews[key[1]] for key in self._waiting[start:start + limit]]

    async def pending_summary(self) -> PendingSummary:
        return PendingSummary(len(self._waiting),
                              self._waiting[0][0] if self._waiting else None)

    async def decide(self, review_id: str, decision: Decision) -> Review:
        review = await self.get(review_id)
        if review.status != "pending":
            raise _closed_error(review)
        self._stop_waiting(review)
        review = replace(review, status="decided", decision=decision, decided=now())
        self._reviews[review_id] = review
        await self._notify(review)
        return review

    async def close_for_task(self, task_id: str, reason: str) -> list[Review]:
        # submit keeps at most one pending review per task, the latest one
        latest = self._by_task.get(task_id)
        review = self._reviews[latest] if latest is not None else None
        if review is None or review.status != "pending":
            return []
        self._stop_waiting(review)
        review = replace(review, status="closed", closed=now(), closed_reason=reason)
        self._reviews[review.id] = review
        return [review]

    async def delete_for_tasks(self, task_ids: Sequence[str]) -> int:
        doomed = set(task_ids)
        gone = [r.id for r in self._reviews.values() if r.task_id in doomed]
        for review_id in gone:
            self._stop_waiting(self._reviews.pop(review_id))
        for task_id in doomed:
            self._by_task.pop(task_id, None)
        return len(gone)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS llamon_reviews (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    draft BLOB NOT NULL,
    status TEXT NOT NULL,
    decision BLOB,
    created TEXT NOT NULL,
    decided TEXT,
    closed TEXT,
    closed_reason TEXT,
    decided_by TEXT DEFAULT NULL
);
CREATE INDEX IF NOT EXISTS llamon_reviews_task ON llamon_reviews (task_id, status);
-- the pending reviews in the order a page lists them, and their count and oldest from the
-- index alone (the index on status alone of earlier versions made SQLite sort every pending
-- review for each page; a partial index on (created, id) would not cover the count)
DROP INDEX IF EXISTS llamon_reviews_status;
CREATE INDEX IF NOT EXISTS llamon_reviews_by_status ON llamon_reviews (status, created, id);
"""
_COLUMNS = (
    "id, task_id, context_id, agent_id, draft, status, decision, created, decided, closed,"
    " closed_reason, decided_by"
)
_IDS_PER_STATEMENT = 500
_PENDING_FIRST = (f"SELECT {_COLUMNS} FROM llamon_reviews WHERE status = 'pending'"
                  " ORDER BY created, id LIMIT ?")
_PENDING_AFTER = (f"SELECT {_COLUMNS} FROM llamon_reviews WHERE status = 'pending'"
                  " AND (created, id) > (?, ?) ORDER BY created, id LIMIT ?")
_PENDING_SUMMARY = "SELECT COUNT(*), MIN(created) FROM llamon_reviews WHERE status = 'pending'"
#: columns later versions added, for files an earlier version created (their rows keep
#: working: a decision stored before reviewers had names has ``decidedBy`` null)
_ADDED_COLUMNS = {"closed": "TEXT", "closed_reason": "TEXT", "decided_by": "TEXT DEFAULT NULL"}


def review_of_row(row: tuple[Any, ...]) -> Review:
    """The review a row of ``_COLUMNS`` holds (SQLite's and PostgreSQL's tables have the same
    columns), or ``UnreadableReviewError`` for that review."""
    try:
        decision = orjson.loads(row[6]) if row[6] else None
        return Review(
            id=row[0], task_id=row[1], context_id=row[2], agent_id=row[3],
            draft=orjson.loads(row[4]), status=row[5],
            decision=Decision(**decision, by=row[11]) if decision else None, created=row[7],
            decided=row[8], closed=row[9], closed_reason=row[10],
        )
    except (orjson.JSONDecodeError, TypeError) as exc:  # TypeError: a decision of other keys
        raise UnreadableReviewError(str(row[0]), str(exc)) from None


#: the unreadable reviews already logged by this process (each page that meets one would log
#: it again: a reviewer's view polls, the deadline sweep runs every few seconds); bounded
_LOGGED: set[str] = set()
_MAX_LOGGED = 1000


def readable(rows: Sequence[tuple[Any, ...]]) -> list[Review]:
    """The reviews of ``rows`` that decode; each that does not is logged (once a process) and
    left out."""
    out = []
    for row in rows:
        try:
            out.append(review_of_row(row))
        except UnreadableReviewError as exc:
            if exc.review_id not in _LOGGED:
                if len(_LOGGED) >= _MAX_LOGGED:
                    _LOGGED.clear()
                _LOGGED.add(exc.review_id)
                log.warning("review %s left out: stored unreadable (%s)", exc.review_id,
                            exc.reason)
    return out


async def readable_page(
    read: Callable[[int, ReviewCursor | None], Awaitable[Sequence[tuple[Any, ...]]]],
    limit: int, after: ReviewCursor | None,
) -> list[Review]:
    """Up to ``limit`` readable pending reviews after ``after``, ``read`` giving the rows of
    ``_COLUMNS`` in the pages' order: one that does not decode is left out and the page read
    on past it, so a full page means that more may follow, as the listing tells its client."""
    page: list[Review] = []
    while True:
        asked = limit - len(page)
        rows = await read(asked, after)
        page += readable(rows)
        if len(rows) < asked or len(page) == limit:
            return page
        after = ReviewCursor(rows[-1][7], rows[-1][0])


def _pending_summary(conn: sqlite3.Connection) -> tuple[int, str | None]:
    count, oldest = conn.execute(_PENDING_SUMMARY).fetchone()
    return count, oldest


def _migrate(conn: sqlite3.Connection) -> None:
    present = {row[1] for row in conn.execute("PRAGMA table_info(llamon_reviews)")}
    for name, kind in _ADDED_COLUMNS.items():
        if name not in present:
            conn.execute(f"ALTER TABLE llamon_reviews ADD COLUMN {name} {kind}")


#: runs a read on another connection to the same file, off the event loop (the storage's
#: worker thread, ``stores/offload.py``)
ReadOffLoop = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]


class SQLiteReviewPort(_Notifying):
    """Reviews in the server's SQLite file, so a waiting review survives a restart.

    Statements run inline on ``conn``; the one whose cost grows with the reviews waiting
    (``pending_summary``, every pending review's index entry, at each scrape of ``/metrics``)
    runs through ``read_off_loop`` when given, so the loop keeps serving while it counts."""

    def __init__(self, conn: sqlite3.Connection, *,
                 read_off_loop: ReadOffLoop | None = None) -> None:
        super().__init__()
        self._conn = conn
        self._read_off_loop = read_off_loop
        conn.executescript(_SCHEMA)
        _migrate(conn)
        conn.commit()

    async def submit(self, *, task_id: str, context_id: str, agent_id: str, draft: Any) -> Review:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_reviews WHERE task_id = ? AND status = 'pending'",
            (task_id,),
        ).fetchone()
        if row is not None:
            return review_of_row(row)
        review = Review(str(uuid.uuid4()), task_id, context_id, agent_id, draft)
        with self._conn:
            self._conn.execute(
                f"INSERT INTO llamon_reviews ({_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (review.id, task_id, context_id, agent_id, orjson.dumps(draft), "pending",
                 None, review.created, None, None, None, None),
            )
        return review

    async def get(self, review_id: str) -> Review:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_reviews WHERE id = ?", (review_id,)
        ).fetchone()
        if row is None:
            raise ReviewNotFoundError(review_id)
        return review_of_row(row)

    async def pending(self, limit: int, after: ReviewCursor | None = None) -> list[Review]:
        return await readable_page(self._pending_rows, limit, after)

    async def _pending_rows(self, limit: int,
                            after: ReviewCursor | None) -> list[tuple[Any, ...]]:
        # the index llamon_reviews_by_status holds these in this order
        if after is None:
            return self._conn.execute(_PENDING_FIRST, (limit,)).fetchall()
        return self._conn.execute(_PENDING_AFTER, (after.created, after.id, limit)).fetchall()

    async def pending_summary(self) -> PendingSummary:
        if self._read_off_loop is None:
            count, oldest = _pending_summary(self._conn)
        else:
            count, oldest = await self._read_off_loop(_pending_summary)
        return PendingSummary(count, oldest)

    async def decide(self, review_id: str, decision: Decision) -> Review:
        with self._conn:
            rows = self._conn.execute(
                "UPDATE llamon_reviews SET status = 'decided', decision = ?, decided = ?,"
                f" decided_by = ? WHERE id = ? AND status = 'pending' RETURNING {_COLUMNS}",
                (orjson.dumps(decision.to_json()), now(), decision.by, review_id),
            ).fetchall()
            # decoded before the commit: a review that does not decode is left as it was
            review = review_of_row(rows[0]) if rows else None
        if review is None:
            raise _closed_error(await self.get(review_id))  # get raises when it does not exist
        await self._notify(review)
        return review

    async def close_for_task(self, task_id: str, reason: str) -> list[Review]:
        with self._conn:
            rows = self._conn.execute(
                f"UPDATE llamon_reviews SET status = 'closed', closed = ?, closed_reason = ?"
                f" WHERE task_id = ? AND status = 'pending' RETURNING {_COLUMNS}",
                (now(), reason, task_id),
            ).fetchall()
        return readable(rows)  # one that does not decode is closed all the same

    async def delete_for_tasks(self, task_ids: Sequence[str]) -> int:
        ids = list(task_ids)
        deleted = 0
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            chunk = ids[start:start + _IDS_PER_STATEMENT]
            with self._conn:  # the index on (task_id, status) finds them
                deleted += self._conn.execute(
                    f"DELETE FROM llamon_reviews WHERE task_id IN ({', '.join('?' * len(chunk))})",
                    chunk,
                ).rowcount
        return deleted
