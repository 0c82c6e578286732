"""bench/alternate.py's rounds and report: B/A of the rate and the CPU per operation in every
scenario, and for ``--scenario stream`` B/A of the median time to the first event too (no
servers started)."""

from __future__ import annotations

from argparse import Namespace

from bench.alternate import Slice, report, row
from bench.compare import ROOT, Side


def _sides() -> tuple[Side, Side]:
    return Side("A", "HEAD", "0" * 40, ROOT), Side("B", "tree", None, ROOT)


def _args(scenario: str) -> Namespace:
    return Namespace(scenario=scenario, db="postgres", users=16, rounds=4, slice=4.0,
                     env_a="", env_b="")


def test_a_stream_round_gives_the_first_event_ratio() -> None:
    got = row(1, Slice(400.0, 2.5, 2.0), Slice(500.0, 2.4, 1.6))
    assert got["rate_ratio"] == 1.25
    assert round(got["cpu_ratio"], 3) == 0.96
    assert (got["a_first"], got["b_first"], round(got["first_ratio"], 3)) == (2.0, 1.6, 0.8)
    assert "first_ratio" not in row(1, Slice(100.0, 4.0), Slice(110.0, 3.6))


def test_the_stream_report_gives_each_round_and_the_median_first_event_ratio() -> None:
    a, b = _sides()
    firsts = [(2.0, 1.6), (2.0, 1.8), (2.5, 2.0), (2.0, 1.4)]  # ratios 0.8, 0.9, 0.8, 0.7
    rows = [row(n, Slice(500.0, 2.0, fa), Slice(550.0, 1.9, fb))
            for n, (fa, fb) in enumerate(firsts, 1)]
    text = report(rows, a, b, _args("stream"))
    assert "stream (one stream at a time)" in text
    assert "| B/A first event |" in text
    assert "| 3 | 500.0 | 2.000 | 550.0 | 1.900 | 1.100 | 0.950 | 2.500 | 2.000 | 0.800 |" in text
    # ratios 0.7, 0.8, 0.8, 0.9: median 0.8; statistics.quantiles' quartiles 0.725, 0.875
    assert ("B/A median time to the first event: median 0.800, quartiles 0.725 to 0.875 "
            "(A 2.000 ms, B 1.700 ms, medians of the rounds)") in text
    assert "B/A streams/s: median 1.100" in text


def test_the_hitl_report_has_no_first_event_columns() -> None:
    a, b = _sides()
    rows = [row(n, Slice(200.0, 4.0), Slice(220.0, 3.8)) for n in (1, 2)]
    text = report(rows, a, b, _args("hitl"))
    assert "hitl (16 users)" in text
    assert "first event" not in text
    assert "| 1 | 200.0 | 4.000 | 220.0 | 3.800 | 1.100 | 0.950 |" in text
