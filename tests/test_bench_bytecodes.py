"""bench/bytecodes.py: the tracer counts each function's own bytecodes and calls, both sides
run their round trips traced, and the report compares them by package, module and function."""

from __future__ import annotations

import sys

from bench.bytecodes import Census, _Tracer, count, group_of, report


def straight(a: int) -> int:
    b = a + 1
    return b * 2


def calls_straight_twice() -> int:
    return straight(1) + straight(2) + len("abc") + len("de")


def test_the_tracer_counts_each_functions_own_bytecodes_and_calls() -> None:
    tracer = _Tracer()
    sys.settrace(tracer)
    sys.setprofile(tracer.profile)
    try:
        calls_straight_twice()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    counts = {name: n for (_file, _line, name), n in tracer.bytecodes.items()}
    calls = {name: n for (_file, _line, name), n in tracer.calls.items()}
    assert calls["straight"] == 2
    assert calls["calls_straight_twice"] == 1
    # LOAD_FAST, LOAD_CONST, BINARY_OP, STORE_FAST, LOAD_FAST, LOAD_CONST, BINARY_OP,
    # RETURN_VALUE: eight a call (the RESUME before the trace starts is not seen)
    assert counts["straight"] == 2 * 8
    assert counts["calls_straight_twice"] > 0
    inclusive = {name: n for (_file, _line, name), n in tracer.inclusive.items()}
    assert inclusive["straight"] == counts["straight"]  # calls nothing traced
    assert inclusive["calls_straight_twice"] == counts["calls_straight_twice"] + 2 * 8
    assert tracer.c_calls["len"] == 2  # the C functions called, by name


def test_both_sides_count_their_round_trips_and_the_report_compares_them() -> None:
    ours, alone = count("ours", 2), count("langgraph", 2)
    assert ours.round_trips == alone.round_trips == 2
    assert ours.total() > alone.total() > 10_000  # a round trip runs tens of thousands
    assert any("/llamon_agent/runtime/" in f[0] for f in ours.bytecodes)
    assert not any("/llamon_agent/runtime/" in f[0] for f in alone.bytecodes)
    text = report(ours, alone, top=5)
    assert f"| ours | {ours.total():,.0f} |" in text
    assert f"**{ours.total() / alone.total():.3f}** in bytecodes" in text
    assert "| llamon_agent | " in text
    assert text.count("| `llamon_agent/") >= 5
    # every round trip stores its task: SQLite statements that LangGraph alone never runs
    assert ours.c_calls["Connection.execute"] > alone.c_calls.get("Connection.execute", 0)
    assert "| `Connection.execute` | " in report(ours, alone, top=40)


def test_the_report_subtracts_per_round_trip() -> None:
    f, g = ("/x/site-packages/langgraph/a.py", 1, "run"), ("/x/llamon_agent/b.py", 3, "go")
    ours = Census("ours", 2, {f: 100, g: 40}, {f: 2, g: 4}, {"dumps": 6, "len": 2},
                  {f: 140, g: 40})
    alone = Census("langgraph", 4, {f: 160}, {f: 4}, {"len": 8}, {f: 160})
    text = report(ours, alone, top=5)
    assert "| ours | 70 | 3 |" in text and "| langgraph | 40 | 1 |" in text
    assert "| langgraph | 50 | 40 | +10 |" in text
    assert "| `llamon_agent/b.py:3` go | +20 | 2.0 |" in text
    assert "| `dumps` | 3.0 | 0.0 | +3.0 |" in text
    assert "| `langgraph/a.py:1` run | +30 | 70 | 1.0 |" in text  # with its callees
    assert "| `llamon_agent/b.py:3` go | +20 | 20 | 2.0 |" in text
    assert "| `len` | 1.0 | 2.0 | -1.0 |" in text
    assert group_of("/x/site-packages/starlette/routing.py") == "starlette"
    assert group_of("<string>") == "<string>"
