"""bench/list_pages.py lists every copy of one long task a page at a time and measures the walk;
small counts here, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from bench.list_pages import Listing, measure, report


async def test_every_page_over_copies_of_a_task_is_listed_and_measured() -> None:
    listing = await measure("sqlite", answers=3, tasks=5, page_size=3, repeat=2)
    assert listing.tasks_stored == 8  # one task, doubled until at least 5
    assert (listing.listed, listing.pages) == (8, 3)  # 3 + 3 + 2
    assert listing.task_bytes > 0 and listing.cpu_ms > 0 and listing.peak_mib > 0
    assert len(listing.longest_page_ms) == len(listing.stall_ms) == 2


@pytest.mark.usefixtures("postgres_url")
async def test_a_postgres_database_is_listed_and_measured_the_same_way() -> None:
    listing = await measure("postgres", answers=1, tasks=2, page_size=5, repeat=1)
    assert (listing.tasks_stored, listing.listed, listing.pages) == (2, 2, 1)
    assert listing.cpu_ms > 0 and len(listing.longest_page_ms) == 1


def test_the_report_reads_the_mean_and_the_medians() -> None:
    listing = Listing(tasks_stored=128, task_bytes=1_322_637, pages=43, listed=128,
                      cpu_ms=4140.5, longest_page_ms=[90.0, 70.0, 80.0],
                      stall_ms=[40.0, 30.0, 35.0], peak_mib=41.5)
    text = report("sqlite", listing, 2000, 100, 3)
    assert "| 1,322,637 | 128 | 43 | 4140.5 | 80.0 | 35.0 | 41.5 |" in text, text
