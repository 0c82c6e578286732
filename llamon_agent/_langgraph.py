"""Every use of LangGraph's private API, and of the undocumented tables of its public classes.

LangGraph offers no public way to do four things the HITL routing needs (see
``core/hitl_graph.py``): ask "is a resume value waiting for this task?" without consuming it,
build a lean runnable, build a conditional edge from code, and copy a ``StateGraph`` and rewire
its nodes and edges without mutating the user's builder. Each use below says why we need it and
what breaks if it changes. ``langgraph`` is capped below its next minor version in
``pyproject.toml`` for this module; ``tests/test_langgraph_internals.py`` fails naming the API
when one of these is gone or has changed shape. To raise the cap: run that test, then the whole
suite, on the new version.

Uses in this module:

1. ``langgraph._internal._constants.CONFIG_KEY_SCRATCHPAD`` and the scratchpad's ``resume``
   list: :func:`resume_waiting`.
2. ``langgraph._internal._runnable.RunnableCallable``: :func:`lean_runnable`.
3. ``langgraph.graph._branch.BranchSpec`` (fields ``path``, ``ends``, ``input_schema``):
   :class:`UserBranch`, :func:`make_branch`.
4. ``StateGraph``'s tables ``nodes`` (``StateNodeSpec`` with ``runnable``, ``input_schema``),
   ``edges``, ``branches``, ``schemas``, ``channels``, ``managed``, ``waiting_edges``,
   ``compiled`` and ``input_schema``: :class:`BuilderCopy`, :func:`node_names`,
   :func:`channel_names`, :func:`input_keys`.
5. ``CompiledStateGraph.builder`` and the compile options a ``Pregel`` keeps
   (``interrupt_before_nodes``, ``interrupt_after_nodes``, ``store``, ``name``,
   ``checkpointer``): :func:`compiled_builder`, :func:`compile_like`, :func:`checkpointer_of`.
6. ``langgraph._internal._constants.CONFIG_KEY_STREAM`` and ``CONFIG_KEY_RUNTIME``, read by
   ``Pregel.astream`` to take the stream writer of the run that called it:
   :func:`with_stream_writer`.

Dependencies kept elsewhere, on public API but on one version's behaviour:

* ``llamon_agent/stores/sqlite.py``: ``InlineSqliteSaver`` subclasses ``SqliteSaver``, serves its
  async methods inline (``aget_tuple``, ``alist``, ``aput``, ``aput_writes``,
  ``adelete_thread``, ``aget_delta_channel_history``), and writes and prunes
  langgraph-checkpoint-sqlite's ``checkpoints`` and ``writes`` tables itself (their column
  layout, ``serde.dumps_typed``, ``get_checkpoint_metadata``, ``WRITES_IDX_MAP``,
  ``SqliteSaver.cursor``). ``langgraph-checkpoint-sqlite`` is capped below its next minor
  version for it; the test above checks the table layout and that every async method whose sync
  twin ``SqliteSaver`` implements is served.
* ``llamon_agent/runtime/runner.py`` reads interrupts from the ``"__interrupt__"`` key of
  ``stream_mode="updates"`` chunks (documented; also checked by the test above).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Hashable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

# (1) WHY: ``interrupt()`` reads the resume values of the running task from the scratchpad that
# Pregel puts in ``configurable`` under this key; nothing public exposes them. BREAKS if renamed
# or moved: the import fails (loudly). If the scratchpad loses ``resume`` (a list): every node's
# second run no longer finds its answer, so a question is asked again forever.
# (6) WHY: a run's progress (``get_stream_writer()``, a node's ``writer``) is otherwise only
# delivered through ``stream_mode="custom"``, and that mode makes every run stream
# concurrently: a waiter task per step beside the node's, about 105-150 µs per run, 15-20% of
# LangGraph's own cost of a one-node run (bench/README.md, "Speed, round nineteen"). A config
# that carries a stream under ``CONFIG_KEY_STREAM`` and a runtime under ``CONFIG_KEY_RUNTIME``
# is how a subgraph finds its parent's writer; the run takes ours the same way. BREAKS if
# renamed: the import fails (loudly). If ``astream`` stops taking the writer from there, or
# starts sending the stream chunks of the modes it lists: tests/test_langgraph_internals.py
# fails (progress events would be lost, or chunks doubled).
from langgraph._internal._constants import (
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_STREAM,
)

# (2) WHY: the only runnable LangGraph's own nodes use: it inspects the function's signature once
# (passes ``config`` only if accepted) and, with ``trace=False``, adds no callback layer per call
# (bench/README.md measured ``RunnableLambda`` as a large share of a turn). BREAKS if its
# ``(func, afunc, *, name, trace, recurse)`` signature changes: the import or call fails at
# compile time of every agent.
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import StateGraph

# (3) WHY: a conditional edge built from code, with our own ``input_schema`` (the user's channels
# plus the private request channel); ``add_conditional_edges`` cannot set the schema nor replace
# an existing branch. BREAKS if the NamedTuple's fields change: conditional edges of routed
# nodes are not built (TypeError at compile), or read wrongly from the user's graph.
from langgraph.graph._branch import BranchSpec
from langgraph.pregel import Pregel
from langgraph.pregel.protocol import StreamProtocol
from langgraph.runtime import Runtime

__all__ = [
    "BranchSpec",
    "BuilderCopy",
    "UserBranch",
    "channel_names",
    "checkpointer_of",
    "compile_like",
    "compiled_builder",
    "input_keys",
    "lean_runnable",
    "make_branch",
    "node_names",
    "resume_waiting",
    "with_stream_writer",
]


def resume_waiting(config: RunnableConfig) -> list[Any] | None:
    """Resume values LangGraph holds for the running task, read without consuming them.

    LangGraph offers no public way to ask "is there an answer for me?" before calling
    ``interrupt()``; the scratchpad is where ``interrupt()`` itself looks.
    """
    scratchpad = (config.get("configurable") or {}).get(CONFIG_KEY_SCRATCHPAD)
    resume = getattr(scratchpad, "resume", None)
    return resume if isinstance(resume, list) else None


def _no_chunk(_: Any) -> None:
    """Never called: the stream below asks for no mode."""


#: takes no mode of the run's stream (``DuplexStream`` hands it only the modes it lists)
_NO_MODES = StreamProtocol(_no_chunk, set())


def with_stream_writer(
    config: dict[str, Any], writer: Callable[[Any], None]
) -> dict[str, Any]:
    """``config`` for a run whose nodes' ``get_stream_writer()`` (and ``writer`` parameter)
    write to ``writer``, including nodes of its subgraphs, without ``stream_mode="custom"``.
    ``writer`` is called where the node runs: a sync node's worker thread included."""
    configurable = {**(config.get("configurable") or {}),
                    CONFIG_KEY_STREAM: _NO_MODES, CONFIG_KEY_RUNTIME: Runtime(stream_writer=writer)}
    return {**config, "configurable": configurable}


def lean_runnable(
    func: Callable[..., Any], afunc: Callable[..., Any] | None = None, *, name: str | None = None
) -> Runnable[Any, Any]:
    """LangGraph's own lean runnable: signature inspected once, no callback layer (the user's
    runnable inside keeps its own tracing), no recursion into returned runnables."""
    return RunnableCallable(func, afunc, name=name, trace=False, recurse=False)


@dataclasses.dataclass(frozen=True)
class UserBranch:
    """What we read of a user's conditional edge (a ``BranchSpec``)."""

    path: Runnable[Any, Any]
    ends: dict[Hashable, str] | None
    input_schema: type[Any] | None


def make_branch(
    route: Callable[..., Any],
    aroute: Callable[..., Any] | None = None,
    *,
    ends: dict[Hashable, str] | None,
    input_schema: type[Any],
) -> BranchSpec:
    """A conditional edge whose state is read through ``input_schema``."""
    return BranchSpec(path=lean_runnable(route, aroute), ends=ends, input_schema=input_schema)


# (4) WHY: HITL routing rewires a *copy* of the user's builder (wrapped nodes, static edges
# followed by the wrapped node instead, a channel added to schemas) and the user's builder is never
# mutated; ``StateGraph`` has no public copy nor any way to replace a node or remove an edge.
# BREAKS if a table is renamed or changes type (for example ``branches`` stops being a
# ``defaultdict(dict)`` of ``BranchSpec``, or a node spec loses ``runnable``/``input_schema``):
# AttributeError/TypeError at compile time of every agent, or, if a new table is added and not
# copied here, the user's builder is mutated by ``add_node`` of ``__hitl__``.
class BuilderCopy:
    """A shallow copy of a ``StateGraph`` with tables of its own, edited through these methods."""

    def __init__(self, builder: StateGraph[Any, Any, Any, Any]) -> None:
        graph = copy.copy(builder)
        graph.compiled = False
        graph.nodes = dict(builder.nodes)
        graph.edges = set(builder.edges)
        graph.branches = type(builder.branches)(
            dict, {k: dict(v) for k, v in builder.branches.items()}
        )
        graph.schemas = dict(builder.schemas)
        graph.channels = dict(builder.channels)
        graph.managed = dict(builder.managed)
        graph.waiting_edges = set(builder.waiting_edges)
        self.graph = graph

    @property
    def input_schema(self) -> type[Any]:
        return self.graph.input_schema

    def node(self, name: str) -> tuple[Any, type[Any]]:
        """The node's runnable and its input schema (the graph's state unless it has its own)."""
        spec = self.graph.nodes[name]
        return spec.runnable, spec.input_schema

    def set_node_runnable(self, name: str, runnable: Any) -> None:
        self.graph.nodes[name] = dataclasses.replace(self.graph.nodes[name], runnable=runnable)

    def add_destinations(self, name: str, destinations: list[str]) -> None:
        """Where the node may go by a ``Command`` it returns, beside what it declared: what the
        graph's drawing shows (``ends``; LangGraph routes by the command alone)."""
        spec = self.graph.nodes[name]
        ends = spec.ends or ()
        if isinstance(ends, dict):
            merged: tuple[str, ...] | dict[str, str] = {**ends, **{d: d for d in destinations
                                                                    if d not in ends}}
        else:
            merged = (*ends, *(d for d in destinations if d not in ends))
        self.graph.nodes[name] = dataclasses.replace(spec, ends=merged)

    def take_edges(self, node: str) -> list[str]:
        """Remove the node's static edges; their targets, sorted."""
        targets = sorted(end for start, end in self.graph.edges if start == node)
        self.graph.edges -= {(node, end) for end in targets}
        return targets

    def branches(self, node: str) -> list[tuple[str, UserBranch]]:
        return [
            (name, UserBranch(spec.path, spec.ends, spec.input_schema))
            for name, spec in list(self.graph.branches.get(node, {}).items())
        ]

    def set_branch(self, node: str, name: str, branch: BranchSpec) -> None:
        self.graph.branches[node][name] = branch

    def schema_channels(self, schema: type[Any]) -> dict[str, Any]:
        """The channels a schema reads (a copy)."""
        return dict(self.graph.schemas[schema])

    def set_schema_channels(self, schema: type[Any], channels: dict[str, Any]) -> None:
        self.graph.schemas[schema] = channels


def node_names(builder: StateGraph[Any, Any, Any, Any]) -> list[str]:
    return list(builder.nodes)


def channel_names(builder: StateGraph[Any, Any, Any, Any]) -> frozenset[str]:
    return frozenset(builder.channels)


def input_keys(builder: StateGraph[Any, Any, Any, Any]) -> frozenset[str]:
    """The keys of the graph's input schema: only these are passed as input."""
    return frozenset(builder.schemas.get(builder.input_schema, builder.channels))


# (5) WHY: a compiled graph given to ``Agent`` (or used as a subgraph node) is recompiled from its
# builder with HITL routing, keeping the options it was compiled with; ``compile()`` does not
# return them in any public form. BREAKS if ``CompiledStateGraph.builder`` is renamed: compiled
# graphs are served unrouted (a node returning ``HITLInterrupt`` fails); if the option
# attributes are renamed: AttributeError when an agent is built from a compiled graph.
def compiled_builder(graph: Any) -> StateGraph[Any, Any, Any, Any] | None:
    """The ``StateGraph`` a compiled graph was built from, if it is one."""
    builder = getattr(graph, "builder", None)
    return builder if isinstance(graph, Pregel) and isinstance(builder, StateGraph) else None


def checkpointer_of(graph: Pregel[Any, Any, Any, Any]) -> Any:
    return graph.checkpointer


def compile_like(
    graph: Pregel[Any, Any, Any, Any], builder: StateGraph[Any, Any, Any, Any], checkpointer: Any
) -> Pregel[Any, Any, Any, Any]:
    """Compile ``builder`` with the options ``graph`` was compiled with."""
    return builder.compile(
        checkpointer=checkpointer,
        interrupt_before=_nodes(graph.interrupt_before_nodes),
        interrupt_after=_nodes(graph.interrupt_after_nodes),
        store=graph.store,
        name=graph.name,
    )


def _nodes(selection: Any) -> Any:
    """A compiled graph's interrupt_before/after, in the form ``compile()`` takes."""
    if selection == "*":
        return "*"
    return list(selection) or None
