"""bench/workers_alternate.py's report: per round B/A of the total CPU per round trip, the
median and quartiles of those ratios, and how B's connections spread (no servers started)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from bench.workers_alternate import CHOICES, Side, report


def _slice(total: float, split: list[int] | None = None) -> dict[str, Any]:
    return {"round_trips_per_s": 1000 / total, "server_ms": total * 0.75,
            "postgres_ms": total * 0.23, "redis_ms": total * 0.02, "total_ms": total,
            "split": split or []}


def test_the_report_gives_each_round_and_the_median_of_the_ratios() -> None:
    a = Side(CHOICES["ours-pg"], server=None, database="a")  # type: ignore[arg-type]
    b = Side(CHOICES["ours-pg-2w"], server=None, database="b")  # type: ignore[arg-type]
    a.slices = [_slice(4.0), _slice(4.0), _slice(5.0), _slice(4.0)]
    b.slices = [_slice(4.4, [16]), _slice(4.0, [16]), _slice(6.5, [12, 4]), _slice(4.8)]
    text = report(a, b, Namespace(stagger=0.0, rounds=4, slice=6.0))
    assert "| 1 | 4.000 | 4.400 | 3.30, 1.01, 0.09 | 16 | 1.100 |" in text
    assert "| 3 | 5.000 | 6.500 | 4.88, 1.50, 0.13 | 12/4 | 1.300 |" in text
    assert "| 4 | 4.000 | 4.800 | 3.60, 1.10, 0.10 | ? | 1.200 |" in text
    # ratios 1.1, 1.0, 1.3, 1.2: median 1.15; statistics.quantiles' quartiles 1.025, 1.275
    assert "median **1.150**, quartiles 1.025 to 1.275" in text
    assert "`ours-pg-2w`" in text and "connecting 0 s apart" in text
