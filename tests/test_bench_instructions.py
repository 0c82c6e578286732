"""bench/instructions.py: its children run the round trips each side counts (here without
valgrind, whose 50-fold slowdown is for the benchmark), callgrind's total is read as it prints
it, and the report's figure is the difference of two runs over the difference of their counts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.instructions import Count, collected, report, valgrind_argv

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("side", ["ours", "langgraph"])
def test_each_side_runs_its_round_trips_as_a_child(side: str) -> None:
    done = subprocess.run(
        [sys.executable, "bench/instructions.py", "--child", side, "--warmup", "1",
         "--measured", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "LLAMON_BENCH_ABLATE": "edge"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == f"{side}: 3 round trips\n"


def test_an_unknown_ablated_part_is_refused_before_valgrind_starts() -> None:
    done = subprocess.run(
        [sys.executable, "bench/instructions.py", "--ablate", "metrics"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode != 0
    assert "unknown part(s) metrics" in done.stderr


def test_callgrinds_total_is_read_from_its_log() -> None:
    log = "==123== Callgrind, a call-graph generating cache profiler\n==123== \n" \
          "==123== Events    : Ir\n==123== Collected : 1234567890\n==123== \n" \
          "==123== I   refs:      1,234,567,890\n"
    assert collected(log) == 1234567890
    with pytest.raises(RuntimeError, match="expected one 'Collected :' line"):
        collected("==1== valgrind: failed to start tool 'callgrind'\n")


def test_the_figure_is_the_difference_over_the_difference() -> None:
    ours = Count("ours", "edge", 20, 120, 9_000_000_000, 9_500_000_000)
    alone = Count("langgraph", "", 20, 120, 6_000_000_000, 6_400_000_000)
    assert ours.per_round_trip == 5_000_000
    assert alone.per_round_trip == 4_000_000
    text = report([ours, alone])
    assert "| ours | edge | 5,000,000 |" in text
    assert "| langgraph | - | 4,000,000 |" in text
    assert "ours / LangGraph alone: **1.250**" in text


def test_valgrind_runs_the_child_of_this_script() -> None:
    argv = valgrind_argv("ours", 30, 120)
    assert argv[:3] == ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    assert argv[3] == sys.executable
    assert argv[4].endswith("bench/instructions.py")
    assert argv[5:] == ["--child", "ours", "--warmup", "30", "--measured", "120"]
