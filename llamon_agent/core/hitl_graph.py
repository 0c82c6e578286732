"""Compile a user's LangGraph so that nodes may *return* :class:`HITLInterrupt`.

Every user node is wrapped (subgraph nodes are recompiled the same way, recursively):

* **First ask.** The node returns ``HITLInterrupt``; the wrapper calls ``interrupt()`` right
  there, so the super-step stops exactly as with a native interrupt (parallel branches and joins
  wait for the answer). The interrupt value is the payload plus the private ``KEY_FIELD``.
* **The answer.** The runtime resumes with an envelope ``{ANSWER_FIELD: {"key", "value"}}``. The
  re-entered wrapper sees it waiting for this task *before* running the node, takes it, and runs
  the node once with the answer in ``state[key]`` (and writes it to state). So the node runs
  exactly twice per question: ask, then consume.
* **Asking again from the consuming run, or asking with ``update=``.** A second ``interrupt()`` in
  the same task would replay every earlier answer (langgraph#7780), and an interrupt discards the
  node's writes. So these asks are *routed*: the request goes to a private channel, the node
  goes to one generated node ``__hitl__`` (docs/hitl.md §3.3) instead of along its edges, which
  asks and then jumps back with the answer in state. Still one run per answer, and the update
  is kept.

A wrapped node's static edges are taken out of the graph and followed by the wrapper, with a
``Command(goto=...)``: to ``__hitl__`` when the node asked, else to where the edges went. A
conditional edge would decide the same from the state, but LangGraph reads a conditional edge's
state by copying every channel of the graph after each run of its node (bench/README.md,
"Speed, round thirty-one"); the node's own output says whether it asked.

The user's builder is never mutated: a shallow copy gets new node, edge and branch tables
(``llamon_agent/_langgraph.py`` holds every use of LangGraph's private API and tables).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from inspect import isclass
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.channels.base import BaseChannel
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from .._langgraph import (
    BranchSpec,
    BuilderCopy,
    UserBranch,
    checkpointer_of,
    compile_like,
    compiled_builder,
    lean_runnable,
    make_branch,
    node_names,
    resume_waiting,
)
from .hitl import DEADLINE_FIELD, HITLInterrupt
from .run_context import context_id_of

HITL_NODE = "__hitl__"
REQUEST_KEY = "__hitl_request__"
CLEAR = "*"
KEY_FIELD = "__llamon_key__"
ANSWER_FIELD = "__llamon_answer__"


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


class RequestChannel(BaseChannel[dict[str, Any], dict[str, Any], dict[str, Any]]):
    """The request channel: what ``Annotated[dict[str, Any], _merge_requests]`` makes
    (LangGraph's ``BinaryOperatorAggregate``), the same values and checkpoints, made cheaper
    to copy. LangGraph copies every channel of a run from its checkpoint, and reads the state
    for the routing branch after every node run; ``BinaryOperatorAggregate`` inspects its
    type at each copy (about 400 bytecodes a HITL round trip, bench/README.md "Speed, round
    thirty"). A custom channel is LangGraph's public API (``Annotated[type, channel]``).
    Values are never changed in place: the reducer returns a new dict."""

    __slots__ = ("operator", "value")

    def __init__(self, operator: Callable[[Any, Any], dict[str, Any]],
                 value: dict[str, Any] | None = None) -> None:
        super().__init__(dict)
        self.operator = operator
        self.value: dict[str, Any] = {} if value is None else value

    def __eq__(self, other: object) -> bool:  # as LangGraph's: the same reducer
        return isinstance(other, RequestChannel) and other.operator is self.operator

    __hash__ = None  # type: ignore[assignment]  # as LangGraph's: equal by reducer, unhashable

    @property
    def ValueType(self) -> type[dict[str, Any]]:
        return dict

    @property
    def UpdateType(self) -> type[dict[str, Any]]:
        return dict

    def _twin(self, value: dict[str, Any]) -> RequestChannel:
        twin = RequestChannel(self.operator, value)
        twin.key = self.key
        return twin

    def copy(self) -> RequestChannel:
        return self._twin(self.value)

    def from_checkpoint(self, checkpoint: Any) -> RequestChannel:
        # a thread without the channel's value gives LangGraph's MISSING: start empty
        return self._twin(checkpoint if isinstance(checkpoint, dict) else {})

    def update(self, values: Sequence[dict[str, Any]]) -> bool:
        if not values:
            return False
        for value in values:
            self.value = self.operator(self.value, value)
        return True

    def get(self) -> dict[str, Any]:
        return self.value

    def is_available(self) -> bool:
        return True

    def checkpoint(self) -> dict[str, Any]:
        return self.value


class _HitlChannels(TypedDict, total=False):
    __hitl_request__: Annotated[dict[str, Any], RequestChannel(_merge_requests)]


class HITLRoutingError(RuntimeError):
    """A node returned an HITLInterrupt that cannot be delivered."""


def _check_thread(request: HITLInterrupt, config: RunnableConfig) -> None:
    running = context_id_of(config) if (config.get("configurable") or {}).get("thread_id") else None
    if running is not None and request.thread_id != running:
        raise HITLRoutingError(
            f"HITLInterrupt.thread_id {request.thread_id!r} does not match the running "
            f"context {running!r}; pass state['thread_id']"
        )


def _take_answer(config: RunnableConfig) -> tuple[str, Any] | None:
    """The answer to this node's first ask, if the runtime resumed it with one."""
    waiting = resume_waiting(config)
    if not waiting or not _is_envelope(waiting[0]):
        return None  # a fresh run, or a native interrupt() of the user's own to replay
    envelope = interrupt(None)[ANSWER_FIELD]  # returns the waiting value (index 0)
    return str(envelope["key"]), envelope["value"]


def _is_envelope(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get(ANSWER_FIELD), dict)


def _with_answer(state: Any, key: str, value: Any) -> Any:
    if isinstance(state, dict):
        return {**state, key: value}
    if isinstance(state, BaseModel) and key in type(state).model_fields:
        return state.model_copy(update={key: value})
    is_instance = dataclasses.is_dataclass(state) and not isinstance(state, type)
    if is_instance and key in {f.name for f in dataclasses.fields(state)}:
        return dataclasses.replace(state, **{key: value})
    return state


def _keep_answer(out: Any, key: str, value: Any) -> Any:
    """The consuming run's output, plus the answer so that it stays in state."""
    if out is None:
        return {key: value}
    if isinstance(out, dict):
        return {key: value, **out}
    if isinstance(out, Command) and (out.update is None or isinstance(out.update, dict)):
        return dataclasses.replace(out, update={key: value, **(out.update or {})})
    return out


def _onward(targets: Sequence[str]) -> Callable[[Any], Any]:
    """What a node's static edges did, for its output when it did not ask: go on to
    ``targets`` (none: the node ends its branch of the graph)."""
    if not targets:
        return lambda out: out
    goto: str | list[str] = targets[0] if len(targets) == 1 else list(targets)

    def onward(out: Any) -> Any:
        if isinstance(out, dict):
            return Command(update=out, goto=goto)
        # anything else as LangGraph takes it from a node (its error included), beside the
        # edges: a node may return a list of outputs, each a Command or an update
        outputs = list(out) if isinstance(out, (list, tuple)) else [out]
        return [*outputs, Command(goto=goto)]

    return onward


def _wrap_node(name: str, runnable: Any, targets: Sequence[str]) -> Runnable[Any, Any]:
    onward = _onward(targets)

    def handle(out: Any, config: RunnableConfig, *, first: bool) -> Any:
        if not isinstance(out, HITLInterrupt):
            return onward(out)
        _check_thread(out, config)
        if first and not out.update and resume_waiting(config) is not None:
            interrupt({**out.payload, KEY_FIELD: out.key})  # raises: the super-step stops here
        request = {"payload": out.payload, "key": out.key}
        return Command(update={**out.update, REQUEST_KEY: {name: request}}, goto=HITL_NODE)

    async def arun(state: Any, config: RunnableConfig) -> Any:
        answer = _take_answer(config)
        if answer is None:
            return handle(await runnable.ainvoke(state, config), config, first=True)
        key, value = answer
        out = await runnable.ainvoke(_with_answer(state, key, value), config)
        return handle(_keep_answer(out, key, value), config, first=False)

    def run(state: Any, config: RunnableConfig) -> Any:
        answer = _take_answer(config)
        if answer is None:
            return handle(runnable.invoke(state, config), config, first=True)
        key, value = answer
        out = runnable.invoke(_with_answer(state, key, value), config)
        return handle(_keep_answer(out, key, value), config, first=False)

    return lean_runnable(run, arun, name=name)


_PRIVATE_FIELDS = frozenset({KEY_FIELD, DEADLINE_FIELD})


def public_payload(value: Any) -> Any:
    """An interrupt value as the wire shows it (without the private answer key and deadline)."""
    if isinstance(value, dict) and not _PRIVATE_FIELDS.isdisjoint(value):
        return {k: v for k, v in value.items() if k not in _PRIVATE_FIELDS}
    return value


def resume_value(interrupt_value: Any, answer: Any) -> Any:
    """What to resume an interrupt with: an envelope for a node's own first ask."""
    if isinstance(interrupt_value, dict) and KEY_FIELD in interrupt_value:
        return {ANSWER_FIELD: {"key": interrupt_value[KEY_FIELD], "value": answer}}
    return answer


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


def _guard_branch(
    node: str, branch: UserBranch, raw_schema: type[Any], user_schema: type[Any]
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
    return make_branch(route, aroute, ends=ends, input_schema=raw_schema)


def hitl_builder(builder: StateGraph[Any, Any, Any, Any]) -> StateGraph[Any, Any, Any, Any]:
    """A copy of ``builder`` whose nodes may return ``HITLInterrupt``."""
    user_nodes = node_names(builder)
    if HITL_NODE in user_nodes:
        raise ValueError(f"node name {HITL_NODE!r} is reserved by llamon_agent")
    tables = BuilderCopy(builder)
    graph = tables.graph
    graph.add_node(HITL_NODE, _hitl_node, input_schema=_HitlChannels)  # type: ignore[misc]  # registers the channel

    request_channel = tables.schema_channels(_HitlChannels)[REQUEST_KEY]
    # new input must be able to clear stale requests, so the input schema carries the channel
    tables.set_schema_channels(
        tables.input_schema,
        {**tables.schema_channels(tables.input_schema), REQUEST_KEY: request_channel},
    )
    for node in user_nodes:
        runnable, node_schema = tables.node(node)
        if compiled_builder(runnable) is not None:
            # a subgraph asks through its own ``__hitl__``, never this graph's: its edges stay
            tables.set_node_runnable(node, route_compiled(runnable, checkpointer_of(runnable)))
        else:
            targets = tables.take_edges(node)  # followed by the wrapper (``_onward``)
            tables.set_node_runnable(node, _wrap_node(node, runnable, targets))
            tables.add_destinations(node, [*targets, HITL_NODE])
        for name, branch in tables.branches(node):
            user_schema = branch.input_schema or node_schema
            raw_schema = _raw_schema(tables, user_schema, request_channel)
            tables.set_branch(node, name, _guard_branch(node, branch, raw_schema, user_schema))
    return graph


def _raw_schema(tables: BuilderCopy, user_schema: type[Any], channel: Any) -> type[Any]:
    """A schema key whose reader yields the user's channels plus the request, as a plain dict."""
    raw = type(f"_Raw_{getattr(user_schema, '__name__', 'State')}", (), {})
    tables.set_schema_channels(raw, {**tables.schema_channels(user_schema), REQUEST_KEY: channel})
    return raw


def route_compiled(graph: Pregel[Any, Any, Any, Any], checkpointer: Any) -> Pregel[Any, Any, Any, Any]:
    """Recompile a compiled ``StateGraph`` from its builder with HITL routing."""
    builder = compiled_builder(graph)
    if builder is None:
        raise TypeError("route_compiled needs a compiled StateGraph")
    return compile_like(graph, hitl_builder(builder), checkpointer)


