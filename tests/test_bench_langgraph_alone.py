"""bench/langgraph_alone.py: ``--concurrency N`` runs N round trips at once on the loop, each on
its own thread, and every one of them is counted (round twenty compares 1 and 16)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import langgraph_alone
from bench.langgraph_alone import Variant, measure


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_round_trips_run_as_many_at_once_as_asked(
    concurrency: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_flight = peak = done = 0
    real = langgraph_alone.round_trip

    async def counted(graph: Any, durability: str | None, routed: bool) -> None:
        nonlocal in_flight, peak, done
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await real(graph, durability, routed)
        finally:
            in_flight -= 1
            done += 1

    monkeypatch.setattr(langgraph_alone, "round_trip", counted)
    measured = await measure(Variant("memory", "exit"), 0.3, str(tmp_path), warmup=2,
                             concurrency=concurrency)
    assert peak == concurrency
    # every round trip that ended in the measured window is counted, the warm-up's are not
    assert measured.round_trips == done - 2 > 0
    assert measured.cpu_ms_per_round_trip > 0
