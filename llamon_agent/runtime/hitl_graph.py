"""Compile a user's LangGraph so that nodes may *return* :class:`HITLInterrupt`.

Design (langgraph-hitl.md section 3.3): the user's node is wrapped; when it returns an
``HITLInterrupt`` the wrapper writes the request into a private channel and every edge out of
that node is diverted to one generated node, ``__hitl__``, the only place ``interrupt()`` is
called. On resume only that tiny node re-runs; it writes the answer into the requested state key
and jumps back to the asking node. The user's node therefore runs exactly twice per question.

The user's builder is never mutated: a shallow copy gets new node, edge and branch tables.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Hashable
from inspect import isclass
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, StateGraph
from langgraph.graph._branch import BranchSpec
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from ..core.hitl import HITLInterrupt

HITL_NODE = "__hitl__"
REQUEST_KEY = "__hitl_request__"
ROUTER_BRANCH = "__hitl_route__"
CLEAR = "*"


def _merge_requests(
    current: dict[str, Any] | None, update: dict[str, Any] | None
) -> dict[str, Any]:
    """Reducer: requests are keyed by the asking node; ``None`` values remove an entry and
    ``CLEAR`` (sent with every new input) drops requests a canceled turn left behind."""
    update = update or {}
    merged = {} if CLEAR in update else dict(current or {})
    for origin, request in update.items():
        if origin == CLEAR:
            continue
        if request is None:
            merged.pop(origin, None)
        else:
            merged[origin] = request
    return merged


class _HitlChannels(TypedDict, total=False):
    __hitl_request__: Annotated[dict[str, Any], _merge_requests]


class HITLRoutingError(RuntimeError):
    """A node returned an HITLInterrupt that cannot be delivered."""


def _check_thread(request: HITLInterrupt, config: RunnableConfig) -> None:
    running = (config.get("configurable") or {}).get("thread_id")
    if running is not None and request.thread_id != running:
        raise HITLRoutingError(
            f"HITLInterrupt.thread_id {request.thread_id!r} does not match the running "
            f"context {running!r}; pass state['thread_id']"
        )


def _wrap_node(name: str, runnable: Any) -> RunnableLambda:
    def to_update(out: Any, config: RunnableConfig) -> Any:
        if isinstance(out, HITLInterrupt):
            _check_thread(out, config)
            request = {"payload": out.payload, "key": out.key}
            return {**out.update, REQUEST_KEY: {name: request}}
        return out

    async def arun(state: Any, config: RunnableConfig) -> Any:
        return to_update(await runnable.ainvoke(state, config), config)

    def run(state: Any, config: RunnableConfig) -> Any:
        return to_update(runnable.invoke(state, config), config)

    return RunnableLambda(run, afunc=arun, name=name)


def _hitl_node(state: dict[str, Any]) -> Command[Any]:
    """Ask every pending request in turn; on resume, hand each answer back to its node."""
    requests: dict[str, Any] = state.get(REQUEST_KEY) or {}
    answers: dict[str, Any] = {}
    origins: list[str] = []
    for origin, request in requests.items():
        answers[request["key"]] = interrupt(request["payload"])
        origins.append(origin)
    return Command(
        goto=origins,
        update={**answers, REQUEST_KEY: dict.fromkeys(origins)},
    )


def _asked(state: Any, node: str) -> bool:
    requests = state.get(REQUEST_KEY) if isinstance(state, dict) else None
    return bool(requests and node in requests)


def _router(node: str, targets: list[str]) -> BranchSpec:
    """Replaces a node's static edges: to ``__hitl__`` when it asked, else where it went before."""

    def route(state: dict[str, Any]) -> Hashable | list[Hashable]:
        if _asked(state, node):
            return HITL_NODE
        return list(targets) if targets else END

    ends: dict[Hashable, str] = {t: t for t in [*targets, HITL_NODE, END]}
    return BranchSpec(path=RunnableLambda(route), ends=ends, input_schema=_HitlChannels)


def _guard_branch(
    node: str, branch: BranchSpec, raw_schema: type[Any], user_schema: type[Any]
) -> BranchSpec:
    """A user's conditional edge that must not fire while its node waits for an answer."""
    coerce = isclass(user_schema) and (
        issubclass(user_schema, BaseModel) or dataclasses.is_dataclass(user_schema)
    )

    def user_state(state: dict[str, Any]) -> Any:
        plain = {k: v for k, v in state.items() if k != REQUEST_KEY}
        return user_schema(**plain) if coerce else plain

    async def aroute(state: dict[str, Any], config: RunnableConfig) -> Any:
        if _asked(state, node):
            return HITL_NODE
        return await branch.path.ainvoke(user_state(state), config)

    def route(state: dict[str, Any], config: RunnableConfig) -> Any:
        if _asked(state, node):
            return HITL_NODE
        return branch.path.invoke(user_state(state), config)

    ends = None if branch.ends is None else {**branch.ends, HITL_NODE: HITL_NODE}
    return BranchSpec(path=RunnableLambda(route, afunc=aroute), ends=ends, input_schema=raw_schema)


def hitl_builder(builder: StateGraph[Any, Any, Any, Any]) -> StateGraph[Any, Any, Any, Any]:
    """A copy of ``builder`` whose nodes may return ``HITLInterrupt``."""
    if HITL_NODE in builder.nodes:
        raise ValueError(f"node name {HITL_NODE!r} is reserved by llamon_agent")
    graph = copy.copy(builder)
    graph.compiled = False
    graph.nodes = dict(builder.nodes)
    graph.edges = set(builder.edges)
    graph.branches = type(builder.branches)(dict, {k: dict(v) for k, v in builder.branches.items()})
    graph.schemas = dict(builder.schemas)
    graph.channels = dict(builder.channels)
    graph.managed = dict(builder.managed)
    graph.waiting_edges = set(builder.waiting_edges)
    graph.add_node(HITL_NODE, _hitl_node, input_schema=_HitlChannels)  # type: ignore[misc]  # registers the channel

    request_channel = graph.schemas[_HitlChannels][REQUEST_KEY]
    # new input must be able to clear stale requests, so the input schema carries the channel
    graph.schemas[graph.input_schema] = {
        **graph.schemas[graph.input_schema], REQUEST_KEY: request_channel
    }
    user_nodes = [n for n in builder.nodes]
    for node in user_nodes:
        spec = graph.nodes[node]
        graph.nodes[node] = dataclasses.replace(spec, runnable=_wrap_node(node, spec.runnable))
        targets = sorted(end for start, end in builder.edges if start == node)
        graph.edges -= {(node, end) for end in targets}
        for name, branch in list(graph.branches.get(node, {}).items()):
            user_schema = branch.input_schema or spec.input_schema
            raw_schema = _raw_schema(graph, user_schema, request_channel)
            graph.branches[node][name] = _guard_branch(node, branch, raw_schema, user_schema)
        graph.branches[node][ROUTER_BRANCH] = _router(node, targets)
    return graph


def _raw_schema(graph: StateGraph[Any, Any, Any, Any], user_schema: type[Any], channel: Any) -> type[Any]:
    """A schema key whose reader yields the user's channels plus the request, as a plain dict."""
    raw = type(f"_Raw_{getattr(user_schema, '__name__', 'State')}", (), {})
    graph.schemas[raw] = {**graph.schemas[user_schema], REQUEST_KEY: channel}
    return raw


def state_keys(builder: StateGraph[Any, Any, Any, Any]) -> frozenset[str]:
    """The keys of the graph's input schema: only these are passed as input."""
    return frozenset(builder.schemas.get(builder.input_schema, builder.channels))


