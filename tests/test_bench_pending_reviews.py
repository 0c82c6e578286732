"""bench/pending_reviews.py writes pending reviews straight into a real server's storage and
times ``GET /reviews``, ``GET /metrics`` and the sweep at each size; small sizes here, on SQLite
and PostgreSQL."""

from __future__ import annotations

import pytest

from bench.pending_reviews import CALLS, Size, measure, report, rows


async def test_each_size_holds_its_reviews_and_every_call_is_timed() -> None:
    sizes = await measure("sqlite", [3, 60], draft_bytes=200, repeat=2)
    assert [s.reviews for s in sizes] == [3, 60]
    # the listing answers a page: all three, then the default page of fifty
    assert [s.listed for s in sizes] == [3, 50]
    for size in sizes:
        assert all(len(size.ms[c]) == len(size.stall_ms[c]) == 2 for c in CALLS)
        assert all(ms > 0 for c in CALLS for ms in size.ms[c])
    text = report("sqlite", sizes, 2, 200)
    assert "| 3 | 3 |" in text and "| 60 | 50 |" in text


@pytest.mark.usefixtures("postgres_url")
async def test_a_postgres_database_is_filled_and_timed_the_same_way() -> None:
    sizes = await measure("postgres", [2, 5], draft_bytes=100, repeat=1)
    assert [(s.reviews, s.listed) for s in sizes] == [(2, 2), (5, 5)]


def test_the_rows_are_pending_oldest_first_with_drafts_of_the_size_asked() -> None:
    made = rows(4, start=10_000, draft_bytes=500)
    assert [r[5] for r in made] == ["pending"] * 4
    assert [r[6] for r in made] == sorted(r[6] for r in made)
    assert all(480 <= len(r[4]) <= 520 for r in made)
    assert len({r[0] for r in made}) == len({r[1] for r in made}) == 4


def test_the_report_reads_the_medians() -> None:
    size = Size(reviews=64_000, listing_bytes=67_072, listed=50)
    for n, call in enumerate(CALLS):
        size.ms[call] = [3.0 + n, 1.0 + n, 2.0 + n]
        size.stall_ms[call] = [0.5, 0.1, 0.3 + n]
    text = report("sqlite", [size], 3, 1000)
    assert "| 64,000 | 50 | 67,072 | 2.00 | 0.30 | 3.00 | 0.50 | 4.00 | 0.50 |" in text, text
