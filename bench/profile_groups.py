"""A py-spy profile's samples by where the time goes: LangGraph, ours, SQLite's C code, asyncio,
the HTTP server, the garbage collector, ...

    py-spy record --full-filenames -r 100 -f raw -o PROFILE --pid PID --duration 20
    .venv/bin/python bench/profile_groups.py PROFILE --cpu-ms 1.9 [--top 25]

Each sample goes to one group: the innermost frame of a known package decides (the standard
library's frames are skipped, so that ``json`` or ``uuid`` called by our code counts as ours, and
C code counts as the Python function that called it: a statement's time in SQLite as the store
method that ran it). With py-spy's ``--native`` the C frames are there too: a sample inside the
garbage collector is then "gc", one inside SQLite's library "SQLite (C)", named after the Python
function that ran the statement. But ``--native`` pauses the process far longer per sample: our
SQLite server served 161 HITL round trips/s under it at 200 Hz, against 450 under plain sampling
at 100 Hz and about 500 unprofiled, and the shares moved with it (the collector had 32% of the
native samples, where ``bench/stalls.py`` timed 6% of the CPU in collections). Read shares from
plain sampling; use ``--native`` only to see inside C code.
With ``--cpu-ms`` (the CPU per round trip measured alongside, the profile's own rate being
lowered by py-spy's pauses), each share is also given in ms per round trip. The top of "ours"
lists our innermost functions with what they call outside the known packages.

Samples of start-up (importing modules) are left out, and so are the threads' idle samples
(py-spy records only active ones unless ``--idle``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

#: (group, path fragments of its packages' files), first match wins
PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ours", ("/llamon_agent/",)),
    ("LangGraph", ("/langgraph/", "/langchain_core/", "/langsmith/")),
    ("HTTP server (uvicorn, httptools, h11)", ("/uvicorn/", "/httptools/", "/h11/")),
    ("Starlette", ("/starlette/",)),
    ("pydantic", ("/pydantic/", "/pydantic_core/")),
    ("psycopg", ("/psycopg/", "/psycopg_pool/")),
    ("redis", ("/redis/", "/hiredis/")),
    ("prometheus_client", ("/prometheus_client/",)),
    ("asyncio", ("/asyncio/", "/selectors.py")),
    ("bench harness", ("/bench/",)),
)
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
_GC = ("gc_collect", "collect_generation", "collect_main", "gc_collect_main")


@dataclass
class Groups:
    samples: int = 0
    by_group: Counter[str] = field(default_factory=Counter)
    ours: Counter[str] = field(default_factory=Counter)


def frames(stack: str) -> list[tuple[str, str]]:
    """(function, file) of each frame, outermost first."""
    out = []
    for part in stack.split(";"):
        m = _FRAME.match(part)
        out.append((m["function"], m["file"]) if m else (part, ""))
    return out


def package(file: str) -> str | None:
    for group, fragments in PACKAGES:
        if any(fragment in file for fragment in fragments):
            return group
    return None


def is_python(file: str) -> bool:
    return file.endswith(".py") or file.startswith("<")


def group_of(stack: list[tuple[str, str]]) -> tuple[str, str | None]:
    """The sample's group, and for "ours" its innermost function of ours."""
    if any(function.startswith(_GC) for function, _ in stack):
        return "gc", None
    in_sqlite = any(("sqlite3" in file or "libsqlite" in file) and not is_python(file)
                    for _, file in stack)
    for function, file in reversed(stack):
        if not is_python(file):
            continue
        found = package(file)
        if found is None:
            continue  # the standard library, or a package not named: its caller decides
        if in_sqlite:
            return f"SQLite (C), run by {function} ({found})", None
        if found == "ours":
            name = file.rsplit("/llamon_agent/", 1)[-1]
            return found, f"{function} ({name})"
        return found, None
    return ("SQLite (C)" if in_sqlite else "other (the standard library, C)"), None


def read(lines: Iterable[str]) -> Groups:
    out = Groups()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        parsed = frames(stack)
        if any("importlib" in file for _, file in parsed):
            continue  # start-up: importing
        n = int(count)
        group, ours = group_of(parsed)
        out.samples += n
        out.by_group[group] += n
        if ours is not None:
            out.ours[ours] += n
    return out


def report(groups: Groups, cpu_ms: float | None, top: int) -> str:
    def cells(n: int) -> str:
        share = n / groups.samples
        ms = f" | {share * cpu_ms * 1000:.0f}" if cpu_ms else ""
        return f"{share:.1%}{ms}"

    per = " | µs per round trip" if cpu_ms else ""
    rule = "|---|---:|" + ("---:|" if cpu_ms else "")
    out = [f"{groups.samples} samples", "", f"| group | share{per} |", rule]
    out += [f"| {g} | {cells(n)} |" for g, n in groups.by_group.most_common()]
    out += ["", f"| ours: innermost function | share{per} |", rule]
    out += [f"| {f} | {cells(n)} |" for f, n in groups.ours.most_common(top)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", help="py-spy's raw output (-f raw), with --full-filenames")
    p.add_argument("--cpu-ms", type=float, help="CPU ms per round trip, measured alongside")
    p.add_argument("--top", type=int, default=25, help="functions of ours listed")
    args = p.parse_args(argv)
    with open(args.profile, encoding="utf-8") as f:
        groups = read(f)
    if not groups.samples:
        raise SystemExit(f"{args.profile}: no samples outside start-up")
    sys.stdout.write(report(groups, args.cpu_ms, args.top))


if __name__ == "__main__":
    main()
