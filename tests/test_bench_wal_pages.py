"""bench/wal_pages.py reads SQLite's WAL as its file format says (frames of the current
generation, grouped into committed transactions) and counts what a HITL round trip writes:
one commit per turn's end for our app, every page named by the b-tree that holds it."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import pytest

from bench.wal_pages import (
    is_pointer_map,
    langgraph_alone,
    read_wal,
    report,
    served,
)

PAGE = 512
SALTS = (11, 22)


def _wal(frames: list[tuple[int, int, tuple[int, int]]], seq: int = 3) -> bytes:
    """A WAL file: its header, then (page, size after commit, salts) frames of PAGE bytes."""
    out = struct.pack(">IIIIIIII", 0x377F0682, 3007000, PAGE, seq, *SALTS, 0, 0)
    for page, size_after, salts in frames:
        out += struct.pack(">IIIIII", page, size_after, *salts, 0, 0) + bytes(PAGE)
    return out


def test_frames_group_into_commits_and_stop_at_another_generation(tmp_path: Path) -> None:
    path = tmp_path / "db-wal"
    path.write_bytes(_wal([
        (5, 0, SALTS), (7, 40, SALTS),  # one transaction: two pages
        (1, 41, SALTS),                  # one transaction: the header page alone
        (9, 0, SALTS),                   # written, never committed
        (3, 42, (1, 2)),                 # an earlier generation's frame: not this one's
    ]))
    wal = read_wal(path)
    assert (wal.page_size, wal.checkpoint_seq) == (PAGE, 3)
    assert wal.commits == [[5, 7], [1]]


def test_a_missing_or_empty_wal_has_no_commits_and_another_file_is_refused(
    tmp_path: Path,
) -> None:
    assert read_wal(tmp_path / "none-wal").commits == []
    (tmp_path / "empty-wal").write_bytes(b"")
    assert read_wal(tmp_path / "empty-wal").commits == []
    (tmp_path / "other-wal").write_bytes(bytes(64))
    with pytest.raises(ValueError, match="not a SQLite WAL"):
        read_wal(tmp_path / "other-wal")


def test_a_real_wal_reads_one_commit_per_transaction(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    for n in range(3):
        conn.execute("INSERT INTO t VALUES (?)", (n,))
        conn.commit()
    wal = read_wal(tmp_path / "t.sqlite3-wal")
    conn.close()
    assert wal.page_size == 4096
    assert len(wal.commits) == 4  # the table, then one per insert
    assert all(commit for commit in wal.commits)


def test_pointer_map_pages_sit_where_auto_vacuum_puts_them() -> None:
    assert is_pointer_map(2, 4096)
    assert is_pointer_map(2 + 4096 // 5 + 1, 4096)
    assert not is_pointer_map(1, 4096)
    assert not is_pointer_map(3, 4096)


async def test_our_round_trip_commits_once_per_turn_and_writes_the_task_rows(
    tmp_path: Path,
) -> None:
    (tmp_path / "ours").mkdir()
    (tmp_path / "alone").mkdir()
    ours = await served(tmp_path / "ours", 4)
    alone = await langgraph_alone(tmp_path / "alone", 4)
    assert ours.commits == 2 * 4  # the question's turn and the answer's: one commit each
    assert ours.by_owner["llamon_tasks"] > 0
    assert "llamon_tasks" not in alone.by_owner
    assert ours.by_owner["checkpoints"] > 0 and alone.by_owner["checkpoints"] > 0
    assert sum(ours.by_owner.values()) == ours.pages
    table = report(ours, alone, warmup=5)
    assert "(4 round trips each, one at a time, after 5 warm-up round trips;" in table
    assert "| llamon_tasks |" in table
    assert "| commits | 2.00 |" in table


def test_the_task_table_is_the_stores_with_or_without_its_secondary_indexes(
    tmp_path: Path,
) -> None:
    from bench.wal_pages import task_table

    def indexes(conn: sqlite3.Connection) -> set[str]:
        rows = conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'"
                            " AND tbl_name = 'llamon_tasks'").fetchall()
        conn.close()
        return {name for (name,) in rows}

    assert indexes(task_table(tmp_path / "with.sqlite3", indexes=True)) >= {
        "llamon_tasks_context", "llamon_tasks_listing", "llamon_tasks_updated",
        "llamon_tasks_expiry", "llamon_tasks_recent", "sqlite_autoindex_llamon_tasks_1",
    }
    assert indexes(task_table(tmp_path / "without.sqlite3", indexes=False)) == {
        "sqlite_autoindex_llamon_tasks_1"
    }


def test_the_index_cost_times_the_task_rows_as_the_store_writes_them() -> None:
    from bench.wal_pages import index_cost

    table = index_cost(20, repetitions=2)
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[0] for row in rows] == ["| 1", "| 2"]
