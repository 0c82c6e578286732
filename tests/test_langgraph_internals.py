"""Every LangGraph internal the SDK relies on still exists with the shape we use.

``llamon_agent/_langgraph.py`` holds each use of LangGraph's private API (and of the internal
tables of ``StateGraph``); ``stores/sqlite.py`` writes langgraph-checkpoint-sqlite's rows itself.
Both libraries are capped below their next minor version in ``pyproject.toml``. When a cap is
raised, these tests say, by name, which internal is gone or changed, before any graph breaks in
a less obvious way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import sqlite3
import tomllib
from collections import defaultdict
from importlib.metadata import version
from itertools import pairwise
from pathlib import Path
from typing import Any, NoReturn, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.config import get_stream_writer
from langgraph.graph import StateGraph
from langgraph.types import Command, Interrupt, StreamWriter, interrupt
from packaging.requirements import Requirement
from packaging.version import Version

from llamon_agent._langgraph import (
    BuilderCopy,
    compile_like,
    compiled_builder,
    input_keys,
    lean_runnable,
    make_branch,
    resume_waiting,
    with_stream_writer,
)
from llamon_agent.core.hitl_graph import hitl_builder
from llamon_agent.stores.sqlite import InlineSqliteSaver

ROOT = Path(__file__).resolve().parent.parent


def broken(api: str, detail: str) -> NoReturn:
    pytest.fail(
        f"LangGraph internal {api} is gone or changed shape: {detail}. "
        "See llamon_agent/_langgraph.py (why we use it, what breaks) before raising the cap "
        "in pyproject.toml.",
        pytrace=False,
    )


def private(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        broken(f"{module}.{name}", repr(exc))


class State(TypedDict, total=False):
    a: int
    result: str


def _builder() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("one", lambda state: {"a": 1})
    builder.add_node("two", lambda state: {"result": "done"})
    builder.set_entry_point("one")
    builder.add_conditional_edges("one", lambda state: "two", {"two": "two"})
    builder.set_finish_point("two")
    return builder


# ---------------------------------------------------------------------------------- the cap


def test_langgraph_is_capped_below_the_next_minor_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [requirement] = [
        Requirement(r) for r in project["dependencies"] if Requirement(r).name == "langgraph"
    ]
    installed = Version(version("langgraph"))
    upper = [s for s in requirement.specifier if s.operator == "<"]
    assert upper, f"{requirement}: langgraph has no upper bound (llamon_agent/_langgraph.py)"
    assert Version(upper[0].version) <= Version(f"{installed.major}.{installed.minor + 1}")
    assert requirement.specifier.contains(installed), f"{installed} is outside {requirement}"


# ------------------------------------------------------------------ (1) the resume scratchpad


def test_scratchpad_key_exists() -> None:
    key = private("langgraph._internal._constants", "CONFIG_KEY_SCRATCHPAD")
    if not isinstance(key, str):
        broken("langgraph._internal._constants.CONFIG_KEY_SCRATCHPAD", f"not a str: {key!r}")


def test_scratchpad_holds_the_resume_values_of_the_running_task() -> None:
    seen: list[Any] = []

    def ask(state: State, config: RunnableConfig) -> State:
        seen.append(resume_waiting(config))
        return {"result": interrupt("question")}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.set_entry_point("ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"a": 0}, config)
    graph.invoke(Command(resume="answer"), config)
    if seen != [[], ["answer"]]:
        broken(
            "the scratchpad's `resume` list (configurable[CONFIG_KEY_SCRATCHPAD].resume)",
            f"a first run and its resume saw {seen!r}, expected [[], ['answer']]",
        )


# -------------------------------------------------------------------- (2) RunnableCallable


def test_runnable_callable_accepts_the_arguments_we_pass() -> None:
    cls = private("langgraph._internal._runnable", "RunnableCallable")
    params = inspect.signature(cls.__init__).parameters
    missing = {"func", "afunc", "name", "trace", "recurse"} - set(params)
    if missing:
        broken("langgraph._internal._runnable.RunnableCallable", f"no parameter {sorted(missing)}")


async def test_lean_runnable_passes_config_and_uses_the_async_function() -> None:
    def run(state: int, config: RunnableConfig) -> tuple[str, int, str]:
        return ("sync", state, config["configurable"]["k"])

    async def arun(state: int, config: RunnableConfig) -> tuple[str, int, str]:
        return ("async", state, config["configurable"]["k"])

    runnable = lean_runnable(run, arun, name="n")
    config: Any = {"configurable": {"k": "v"}}
    got = (runnable.invoke(1, config), await runnable.ainvoke(2, config), runnable.get_name())
    if got != (("sync", 1, "v"), ("async", 2, "v"), "n"):
        broken("langgraph._internal._runnable.RunnableCallable", f"invoke/ainvoke/name gave {got}")


# -------------------------------------------------------------------------- (3) BranchSpec


def test_branch_spec_has_the_fields_we_read_and_build() -> None:
    cls = private("langgraph.graph._branch", "BranchSpec")
    fields = getattr(cls, "_fields", ())
    if not {"path", "ends", "input_schema"} <= set(fields):
        broken("langgraph.graph._branch.BranchSpec", f"fields are {fields!r}")
    branch = make_branch(lambda state: "x", ends={"x": "x"}, input_schema=State)
    if not isinstance(branch, cls) or branch.input_schema is not State:
        broken("langgraph.graph._branch.BranchSpec", f"built {branch!r}")


# ----------------------------------------------------------------- (4) StateGraph's tables

#: StateGraph's instance attributes as of the capped version; BuilderCopy copies the tables
_TABLES = {
    "nodes": dict, "edges": set, "branches": defaultdict, "schemas": dict,
    "channels": dict, "managed": dict, "waiting_edges": set,
}
_OTHER = {
    "compiled", "state_schema", "input_schema", "output_schema", "context_schema",
    "_node_defaults",
}


def test_state_graph_tables_have_the_names_and_types_we_copy() -> None:
    builder = _builder()
    attributes = vars(builder)
    unknown = set(attributes) - set(_TABLES) - _OTHER
    if unknown:
        broken(
            "StateGraph's instance attributes",
            f"new {sorted(unknown)}: if a table, BuilderCopy must copy it or the user's builder "
            "is mutated",
        )
    for name, kind in _TABLES.items():
        if not isinstance(attributes.get(name), kind):
            broken(f"StateGraph.{name}", f"expected {kind.__name__}, got {attributes.get(name)!r}")
    if builder.branches.default_factory is not dict:
        broken("StateGraph.branches", "no longer a defaultdict(dict)")
    if not isinstance(builder.compiled, bool) or builder.input_schema is not State:
        broken("StateGraph.compiled / StateGraph.input_schema", repr(attributes))
    spec = builder.nodes["one"]
    names = {f.name for f in dataclasses.fields(spec)} if dataclasses.is_dataclass(spec) else set()
    if not {"runnable", "input_schema"} <= names:
        broken("StateNodeSpec (StateGraph.nodes values)", f"fields are {sorted(names)}")
    if builder.schemas.get(State) is None or set(builder.schemas[State]) != {"a", "result"}:
        broken("StateGraph.schemas", f"{builder.schemas!r}")
    if {("one", "two")} & builder.edges or ("two", "__end__") not in builder.edges:
        broken("StateGraph.edges", f"{builder.edges!r}")
    [(name, branch)] = BuilderCopy(builder).branches("one")
    if branch.ends != {"two": "two"}:
        broken("StateGraph.branches values (BranchSpec)", f"{name}: {branch!r}")
    if input_keys(builder) != {"a", "result"}:
        broken("StateGraph.schemas[input_schema]", f"input keys {input_keys(builder)}")


def _snapshot(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, Any]:
    tables = {name: value for name, value in vars(builder).items() if name in _TABLES}
    return {
        name: {k: dict(v) for k, v in value.items()} if name == "branches"
        else dict(value) if isinstance(value, dict) else set(value)
        for name, value in tables.items()
    }


def test_routing_a_builder_leaves_the_users_tables_untouched() -> None:
    builder = _builder()
    before = _snapshot(builder)
    routed = hitl_builder(builder).compile()
    after = _snapshot(builder)
    if after != before:
        changed = sorted(k for k in before if before[k] != after[k])
        broken("StateGraph tables copied by BuilderCopy", f"the user's {changed} changed")
    out = routed.invoke({"a": 0})
    if {k: v for k, v in out.items() if not k.startswith("__")} != {"a": 1, "result": "done"}:
        broken("StateGraph tables rewired by hitl_builder", "the routed graph ran differently")


# ------------------------------------------------------------ (5) a compiled graph's options


def test_compiled_graph_keeps_its_builder_and_compile_options() -> None:
    builder = _builder()
    graph = builder.compile(interrupt_before=["two"], name="g")
    if compiled_builder(graph) is not builder:
        broken("CompiledStateGraph.builder", "not the StateGraph it was compiled from")
    for name in ("interrupt_before_nodes", "interrupt_after_nodes", "store", "name",
                 "checkpointer"):
        if not hasattr(graph, name):
            broken(f"Pregel.{name}", "attribute missing")
    again = compile_like(graph, _builder(), None)
    if list(again.interrupt_before_nodes) != ["two"] or again.name != "g":
        broken("Pregel.interrupt_before_nodes / Pregel.name", f"recompiled as {again!r}")


# ------------------------------------------------------- the stream's interrupt key (runner)


def test_updates_stream_reports_interrupts_under_the_interrupt_key() -> None:
    builder = StateGraph(State)
    builder.add_node("ask", lambda state: {"result": interrupt("question")})
    builder.set_entry_point("ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    chunks = list(graph.stream({"a": 0}, {"configurable": {"thread_id": "t"}},
                               stream_mode="updates"))
    raised = [c["__interrupt__"] for c in chunks if "__interrupt__" in c]
    if not raised or not all(isinstance(i, Interrupt) and i.id for i in raised[0]):
        broken('the "__interrupt__" key of stream_mode="updates"', f"chunks {chunks!r}")


# --------------------------------------------------- the run's stream writer (runner)


class Progress(TypedDict, total=False):
    result: str


def _writing_graph(saver: Any) -> Any:
    """A node of each kind writes progress: async, sync (run in a worker thread), one that
    takes ``writer``, a subgraph as a node and a subgraph called from a node."""

    async def in_async(state: Progress) -> dict[str, Any]:
        get_stream_writer()("async")
        return {"result": "async"}

    def in_sync(state: Progress) -> dict[str, Any]:
        get_stream_writer()("sync")
        return {"result": "sync"}

    def with_writer(state: Progress, writer: StreamWriter) -> dict[str, Any]:
        writer({"param": True})
        return {"result": "param"}

    inner = StateGraph(Progress)
    inner.add_node("inner", lambda state: (get_stream_writer()("subgraph"), {"result": "sub"})[1])
    inner.set_entry_point("inner")
    subgraph = inner.compile()

    async def calls_subgraph(state: Progress) -> dict[str, Any]:
        await subgraph.ainvoke({})
        return {"result": "called"}

    builder = StateGraph(Progress)
    names = ["in_async", "in_sync", "with_writer", "subgraph", "calls_subgraph"]
    for name, node in zip(names, [in_async, in_sync, with_writer, subgraph, calls_subgraph],
                          strict=True):
        builder.add_node(name, node)
    builder.set_entry_point(names[0])
    for first, then in pairwise(names):
        builder.add_edge(first, then)
    return builder.compile(checkpointer=saver)


async def test_a_runs_writer_taken_from_its_config_receives_every_nodes_progress() -> None:
    """``with_stream_writer``: LangGraph takes the writer from the config as a subgraph takes
    its parent's; ``stream_mode="custom"`` is not needed, the run's own chunks are unchanged,
    and the saver never sees the two private keys as checkpoint metadata."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    saver = InlineSqliteSaver(conn)
    saver.setup()
    graph = _writing_graph(saver)
    written: list[Any] = []
    loop = asyncio.get_running_loop()

    def writer(chunk: Any) -> None:  # called in a sync node's thread too
        loop.call_soon_threadsafe(written.append, chunk)

    config = with_stream_writer({"configurable": {"thread_id": "with"}}, writer)
    chunks = [c async for c in graph.astream({}, config, stream_mode="updates")]
    if written != ["async", "sync", {"param": True}, "subgraph", "subgraph"]:
        broken("astream's writer from CONFIG_KEY_STREAM / CONFIG_KEY_RUNTIME", f"got {written!r}")
    plain = [c async for c in graph.astream({}, {"configurable": {"thread_id": "without"}},
                                            stream_mode="updates")]
    if chunks != plain:
        broken("DuplexStream with a stream of no modes", f"{chunks!r} against {plain!r}")
    stored = saver.get_tuple({"configurable": {"thread_id": "with"}})
    if stored is None or any(key.startswith("__pregel") for key in stored.metadata):
        broken("checkpoint metadata of a config with CONFIG_KEY_STREAM",
               repr(stored and stored.metadata))


# ------------------------------------------------- langgraph-checkpoint-sqlite (stores/sqlite)


def test_sqlite_saver_tables_have_the_columns_we_write() -> None:
    conn = sqlite3.connect(":memory:")
    SqliteSaver(conn).setup()
    expected = {
        "checkpoints": ["thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
                        "type", "checkpoint", "metadata"],
        "writes": ["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel",
                   "type", "value", "task_path"],
    }
    for table, columns in expected.items():
        got = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        if sorted(got) != sorted(columns):
            broken(f"langgraph-checkpoint-sqlite's `{table}` table", f"columns {got}")
    if "transaction" not in inspect.signature(SqliteSaver.cursor).parameters:
        broken("SqliteSaver.cursor(transaction=...)", str(inspect.signature(SqliteSaver.cursor)))


async def test_rows_we_write_read_back_through_sqlite_saver() -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    saver = InlineSqliteSaver(conn)
    saver.setup()
    checkpoint = empty_checkpoint()
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = await saver.aput(config, checkpoint, {"source": "input", "step": -1}, {})
    await saver.aput_writes(saved, [("a", 1)], "task-1")
    stored = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": "t"}})
    if stored is None or stored.checkpoint["id"] != checkpoint["id"]:
        broken("SqliteSaver's checkpoint row encoding", f"read back {stored!r}")
    if stored.metadata.get("source") != "input" or stored.pending_writes != [("task-1", "a", 1)]:
        broken("SqliteSaver's metadata/writes row encoding", f"read back {stored!r}")


def test_every_async_method_sqlite_saver_implements_is_served_inline() -> None:
    served = []
    for name, method in inspect.getmembers(BaseCheckpointSaver):
        if not (inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)):
            continue
        sync = getattr(SqliteSaver, name[1:], None)
        if sync is not None and sync is not getattr(BaseCheckpointSaver, name[1:], None):
            served.append(name)
            if name not in vars(InlineSqliteSaver):
                broken(
                    f"BaseCheckpointSaver.{name}",
                    f"SqliteSaver implements {name[1:]} but InlineSqliteSaver does not serve "
                    f"{name} (SqliteSaver's async methods raise or need AsyncSqliteSaver)",
                )
    assert {"aget_tuple", "alist", "aput", "aput_writes"} <= set(served)
