"""LangGraph inspects the checkpointer's ``aput_writes`` at the start of every run (does it take
``task_path``?). Our savers keep the signature of each write method they define, worked out
once (``stores/saver_signatures.py``), and it is the method's own: LangGraph's answer is the
one it gets from the code."""

from __future__ import annotations

import inspect
import sqlite3
from typing import Any

import pytest
from langgraph.pregel._checkpoint import put_writes_accepts_task_path

from llamon_agent.stores.saver_signatures import signatures_worked_out_once
from llamon_agent.stores.sqlite import InlineSqliteSaver

pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from llamon_agent.stores.pg_saver import InlinePostgresSaver


def _from_code(function: Any) -> list[tuple[str, Any]]:
    """Parameter names and defaults read from the function's code, not from ``inspect``."""
    code = function.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    defaults = dict(zip(names[code.co_argcount - len(function.__defaults__ or ()):
                              code.co_argcount], function.__defaults__ or (), strict=True))
    return [(name, defaults.get(name, inspect.Parameter.empty)) for name in names]


@pytest.mark.parametrize(("saver", "methods"), [
    (InlineSqliteSaver, ("put_writes", "aput_writes")),
    (InlinePostgresSaver, ("aput_writes",)),
])
def test_each_write_method_keeps_its_own_signature(saver: type, methods: tuple[str, ...]) -> None:
    for name in methods:
        function = saver.__dict__[name]
        assert "__signature__" in function.__dict__, f"{saver.__name__}.{name}"
        kept = function.__signature__
        assert [(p.name, p.default) for p in kept.parameters.values()] == _from_code(function)


def test_langgraph_reads_task_path_from_the_kept_signature() -> None:
    saver = InlineSqliteSaver(sqlite3.connect(":memory:"))
    assert put_writes_accepts_task_path(saver.aput_writes) is True
    assert put_writes_accepts_task_path(saver.put_writes) is True
    assert list(inspect.signature(saver.aput_writes).parameters) == [
        "config", "writes", "task_id", "task_path"]


def test_a_saver_without_task_path_is_answered_as_before() -> None:
    @signatures_worked_out_once
    class Older:
        async def aput_writes(self, config: Any, writes: Any, task_id: str) -> None: ...

    assert put_writes_accepts_task_path(Older().aput_writes) is False
    assert "__signature__" in Older.__dict__["aput_writes"].__dict__
