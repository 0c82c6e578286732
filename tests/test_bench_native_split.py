"""bench/native_split.py reads ``perf report --sort dso`` and splits each side's CPU per round
trip by group of libraries; its report subtracts LangGraph alone from the served app."""

from __future__ import annotations

import pytest

from bench.native_split import GROUPS, OTHER, Sampled, group_of, grouped, parse_dso_report, report

# the shape of ``perf report --stdio --no-children --sort dso -g none`` (perf 6.x)
PERF_TEXT = """\
# To display the perf.data header info, please use --header/--header-only options.
#
# Total Lost Samples: 0
#
# Samples: 14K of event 'cpu-clock:ppp'
# Event count (approx.): 14618618604
#
# Overhead  Shared Object
# ........  ..............................................
#
    78.80%  libpython3.11.so.1.0
     7.01%  [kernel.kallsyms]
     4.31%  libc.so.6
     4.28%  libsqlite3.so.0.8.6
     3.64%  _pydantic_core.cpython-311-x86_64-linux-gnu.so
     0.48%  _asyncio.cpython-311-x86_64-linux-gnu.so
     0.21%  _sqlite3.cpython-311-x86_64-linux-gnu.so
     0.06%  ld-linux-x86-64.so.2
     0.01%  [vdso]


#
# (Cannot load tips.txt file, please install perf!)
#
"""

INTERPRETER, PYDANTIC, SQLITE, KERNEL, LIBC = (group for group, _ in GROUPS)


def test_reads_every_shared_object_and_skips_the_comments() -> None:
    dsos = parse_dso_report(PERF_TEXT)
    assert dsos["libpython3.11.so.1.0"] == 78.80
    assert dsos["[kernel.kallsyms]"] == 7.01
    assert dsos["[vdso]"] == 0.01
    assert len(dsos) == 9
    assert parse_dso_report("# only comments\n#\n") == {}


def test_groups_name_the_libraries() -> None:
    assert group_of("libpython3.11.so.1.0") == INTERPRETER
    assert group_of("_pydantic_core.cpython-311-x86_64-linux-gnu.so") == PYDANTIC
    assert group_of("libsqlite3.so.0.8.6") == group_of("_sqlite3.cpython-311-x86_64-linux-gnu.so") == SQLITE
    assert group_of("[kernel.kallsyms]") == KERNEL
    assert group_of("libc.so.6") == group_of("ld-linux-x86-64.so.2") == LIBC
    assert group_of("orjson.cpython-311-x86_64-linux-gnu.so") == group_of("[vdso]") == OTHER


def test_shares_are_fractions_of_the_named_samples() -> None:
    shares = grouped(parse_dso_report(PERF_TEXT))
    total = 78.80 + 7.01 + 4.31 + 4.28 + 3.64 + 0.48 + 0.21 + 0.06 + 0.01
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares[SQLITE] == pytest.approx((4.28 + 0.21) / total)
    assert shares[LIBC] == pytest.approx((4.31 + 0.06) / total)
    assert shares[OTHER] == pytest.approx((0.48 + 0.01) / total)
    with pytest.raises(ValueError, match="no samples"):
        grouped({})


def test_report_subtracts_langgraph_alone_group_by_group() -> None:
    def side(cpu_ms: float, interpreter: float, sqlite: float) -> Sampled:
        return Sampled(cpu_ms, cpu_ms * 1.1, 100,
                       {INTERPRETER: interpreter, SQLITE: sqlite, KERNEL: 1 - interpreter - sqlite})

    text = report({"served": [side(3.0, 0.8, 0.05), side(2.0, 0.8, 0.05), side(2.5, 0.8, 0.05)],
                   "langgraph": [side(1.5, 0.9, 0.05)]})
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    # medians: 2.5 ms served, 1.5 ms alone; the app adds 1,000 µs
    assert rows[INTERPRETER].endswith("| 2000 | 1350 | +650 | 65% |")
    assert rows[SQLITE].endswith("| 125 | 75 | +50 | 5% |")
    assert rows[KERNEL].endswith("| 375 | 75 | +300 | 30% |")
    assert rows[PYDANTIC].endswith("| 0 | 0 | +0 | 0% |")
    assert rows["**all**"].endswith("| 2500 | 1500 | +1000 | 100% |")
    assert "| our app served (HTTP, SQLite) | 2.500 | 2.750 |" in text
    assert "| LangGraph alone (our saver) | 1.500 | 1.650 |" in text
