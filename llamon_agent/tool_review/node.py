"""``review_graph``: a tool-calling agent whose chosen tool calls wait for a human (seed 000).

::

    START ─► llm_call ──(no tool call)──────────────────────────► END
                │ ├───(a reviewed call)─► human_review ─┬─(some call without a result)─► tool_node ─► llm_call
                │ │                          ▲   │      └─(every call rejected/answered)─► llm_call
                │ │                          └───┘ (an edit renamed a call to another reviewed tool)
                │ └───(only calls without review)─► tool_node ─► llm_call

* ``llm_call`` asks the model, then decides which of its tool calls wait for a human under
  the run's policy (``ReviewPolicy``: the graph's own, merged with the application's run
  context, plus what the wire added) and stores that review in state, so that the resumed
  ``human_review`` answers exactly the actions that were shown, whatever the next turn says.
* ``human_review`` calls ``interrupt(pending_review)``; the resume value is
  ``{"decisions": [...]}``, one per action in order. ``approve`` keeps the call; ``edit``
  rewrites the call in the model's message (same id), so history shows what ran; ``reject``
  adds an error tool result (the message, else ``REJECTED_BY_USER_MESSAGE``); ``respond`` adds
  the human's text as the tool's result. Actions without a decision (a direct
  ``Command(resume=...)`` with too few, or an unusable one) are rejected with ``NO_DECISION``;
  extra decisions are ignored. An edit renamed to another reviewed tool is reviewed again under
  that tool's policy, so an edit never skips a review.
* ``tool_node`` is LangGraph's ``ToolNode``, sent every call of the model's message that has no
  result yet (approved, edited and never-reviewed calls alike). An unknown tool name and
  arguments that fail the tool's schema become error results from ``ToolNode`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, TypedDict, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

from ..core.bounds import Limits, check_value
from ..core.run_context import run_context
from ..errors import LimitExceededError
from . import catalog
from .decisions import NO_DECISION, REJECTED_BY_USER_MESSAGE, allowed_for, args_schema_error
from .payload import build_review_request
from .policy import InterruptOn, ReviewPolicy

__all__ = [
    "HUMAN_REVIEW",
    "LLM_CALL",
    "REVIEW_KEY",
    "TOOL_NODE",
    "ReviewState",
    "review_graph",
]

LLM_CALL = "llm_call"
HUMAN_REVIEW = "human_review"
TOOL_NODE = "tool_node"
REVIEW_KEY = "llamon_review"


class ReviewState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    #: the review being asked: {"request": pending_review, "tool_call_ids": [...]}
    llamon_review: dict[str, Any] | None


def _context_value(runtime: Runtime[Any] | None, key: str) -> Any:
    context = runtime.context if runtime is not None else None
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def _language(config: RunnableConfig, runtime: Runtime[Any] | None) -> str:
    served = run_context(config)
    return catalog.resolve(
        (served.language if served else None) or _context_value(runtime, "language")
    )


def review_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool | Callable[..., Any]],
    *,
    interrupt_on: InterruptOn | None = None,
    tools_requiring_approval: Iterable[str] | None = None,
    description_prefix: str | None = None,
    system_prompt: str | None = None,
    state_schema: type[Any] = ReviewState,
) -> StateGraph[Any, Any, Any, Any]:
    """A ``StateGraph`` (``llm_call``, ``human_review``, ``tool_node``) reviewing tool calls.

    Serve it with ``Agent(id, review_graph(...))`` or compile it with a checkpointer yourself;
    a direct run stops with ``result["__interrupt__"][0].value`` = the ``pending_review`` and
    continues with ``Command(resume={"decisions": [...]})``. A run may pass
    ``context={"interrupt_on": {...}}`` to change the policy for that run (entries replace the
    graph's; ``False`` removes one). ``state_schema`` must have ``messages`` (with
    ``add_messages``) and ``llamon_review``; subclass :class:`ReviewState`.
    """
    policy = ReviewPolicy.build(
        interrupt_on,
        tools_requiring_approval=tools_requiring_approval,
        description_prefix=description_prefix,
    )
    tool_node = ToolNode(tools)
    bound = model.bind_tools(list(tool_node.tools_by_name.values()))

    def run_policy(config: RunnableConfig, runtime: Runtime[Any] | None) -> ReviewPolicy:
        override = _context_value(runtime, "interrupt_on")
        served = run_context(config)  # the server's: the reviews the wire added
        return policy.merge(override).add(served.interrupt_on if served else None)

    async def llm_call(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]
    ) -> dict[str, Any]:
        prompt: list[BaseMessage] = _answered_for_model(list(state.get("messages") or []))
        if system_prompt:
            prompt = [SystemMessage(content=system_prompt), *prompt]
        reply = await bound.ainvoke(prompt, config)
        review = None
        if isinstance(reply, AIMessage) and reply.tool_calls:
            review = _review(
                reply.tool_calls, run_policy(config, runtime), _language(config, runtime)
            )
        return {"messages": [reply], REVIEW_KEY: review}

    def after_model(state: dict[str, Any]) -> str | list[Send]:
        if state.get(REVIEW_KEY):
            return HUMAN_REVIEW
        return _to_tools(state, list(state.get("messages") or [])) or END

    async def human_review(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[Any]
    ) -> Command[Any]:
        review = state.get(REVIEW_KEY)
        messages = list(state.get("messages") or [])
        if not review:  # nothing to ask (state written from outside): go on as after a review
            return Command(goto=_to_tools(state, messages) or LLM_CALL)
        response = interrupt(review.get("request"))
        decisions = response.get("decisions") if isinstance(response, Mapping) else None
        ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
        current = run_policy(config, runtime)
        calls, results, again = _apply(
            ai.tool_calls,
            review,
            decisions if isinstance(decisions, list) else [],
            current,
            _language(config, runtime),
        )
        rewritten = ai.model_copy(update={"tool_calls": calls})
        update: dict[str, Any] = {"messages": [rewritten, *results]}
        if again:
            update[REVIEW_KEY] = _review(again, current, _language(config, runtime))
            return Command(update=update, goto=HUMAN_REVIEW)
        update[REVIEW_KEY] = None
        after = [*[rewritten if m is ai else m for m in messages], *results]
        return Command(update=update, goto=_to_tools(state, after) or LLM_CALL)

    graph = StateGraph(state_schema)
    # nodes take (state, config, runtime): LangGraph's overloads do not spell that combination
    graph.add_node(LLM_CALL, cast(Any, llm_call))
    graph.add_node(
        HUMAN_REVIEW, cast(Any, human_review), destinations=(TOOL_NODE, LLM_CALL, HUMAN_REVIEW)
    )
    graph.add_node(TOOL_NODE, _storable_only(tool_node))
    graph.add_edge(START, LLM_CALL)
    graph.add_conditional_edges(LLM_CALL, after_model, [HUMAN_REVIEW, TOOL_NODE, END])
    graph.add_edge(TOOL_NODE, LLM_CALL)
    return graph


def _review(
    tool_calls: Sequence[ToolCall], policy: ReviewPolicy, language: str
) -> dict[str, Any] | None:
    request = build_review_request(tool_calls, policy, language)
    if request is None:
        return None
    ids = [c["id"] for c in tool_calls if policy.config_for(c["name"]) is not None]
    return {"request": request, "tool_call_ids": ids}


def _apply(
    tool_calls: Sequence[ToolCall],
    review: Mapping[str, Any],
    decisions: list[Any],
    policy: ReviewPolicy,
    language: str,
) -> tuple[list[ToolCall], list[ToolMessage], list[ToolCall]]:
    """The model's calls after the decisions, the results they got, and calls to review again."""
    request = review.get("request") or {}
    configs = request.get("review_configs") or []
    position = {call_id: i for i, call_id in enumerate(review.get("tool_call_ids") or [])}
    calls: list[ToolCall] = []
    results: list[ToolMessage] = []
    again: list[ToolCall] = []
    for call in tool_calls:
        index = position.get(call["id"])
        if index is None:  # not reviewed: runs as the model asked
            calls.append(call)
            continue
        decision = decisions[index] if index < len(decisions) else None
        config = configs[index] if index < len(configs) else {}
        outcome, result = _decide(call, decision, config, language)
        calls.append(outcome)
        if result is not None:
            results.append(result)
        elif outcome["name"] != call["name"] and policy.config_for(outcome["name"]) is not None:
            again.append(outcome)
    return calls, results, again


def _decide(
    call: ToolCall, decision: Any, config: Mapping[str, Any], language: str
) -> tuple[ToolCall, ToolMessage | None]:
    """One action's decision: the call as it stands now, and its result if it will not run."""
    kind = decision.get("type") if isinstance(decision, Mapping) else None
    if kind not in allowed_for(config):
        return call, _result(call, NO_DECISION, "error")
    assert isinstance(decision, Mapping)
    message = decision.get("message")
    if kind == "approve":
        return call, None
    if kind == "reject":
        text = message if isinstance(message, str) and message else REJECTED_BY_USER_MESSAGE
        return call, _result(call, text, "error")
    if kind == "respond":
        if not isinstance(message, str) or not message:
            return call, _result(call, NO_DECISION, "error")
        return call, _result(call, message, "success")
    edited = decision.get("edited_action")
    name = edited.get("name") if isinstance(edited, Mapping) else None
    args = edited.get("args") if isinstance(edited, Mapping) else None
    if not isinstance(name, str) or not isinstance(args, Mapping):
        return call, _result(call, NO_DECISION, "error")
    replaced = ToolCall(name=name, args=dict(args), id=call["id"], type="tool_call")
    schema = config.get("args_schema")
    problem = args_schema_error(name, args, schema if isinstance(schema, Mapping) else None, language)
    if problem is not None:
        return replaced, _result(replaced, problem, "error")
    return replaced, None


def _storable_only(tool_node: ToolNode) -> Callable[..., Any]:
    """``ToolNode`` behind a check: a call whose arguments are not storable JSON within the
    edge limits does not run (its result is an error the model sees, as for arguments that do
    not fit the tool), so no side effect happens that the checkpoint could not then save."""

    async def tool_node_guarded(payload: Any, config: RunnableConfig) -> Any:
        call = payload.get("tool_call") if isinstance(payload, Mapping) else None
        if isinstance(call, Mapping):
            try:
                context = run_context(config)
                limits = (context.limits if context is not None else None) or Limits()
                check_value(call.get("args"), limits, "args")
            except LimitExceededError as exc:
                return {"messages": [_result(cast(ToolCall, call), f"Error: {exc.message}",
                                             "error")]}
        return await tool_node.ainvoke(payload, config)

    return tool_node_guarded


def _result(call: ToolCall, content: str, status: str) -> ToolMessage:
    return ToolMessage(content=content, tool_call_id=call["id"], name=call["name"], status=status)


def _answered(messages: Sequence[BaseMessage]) -> set[str]:
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def _to_tools(state: Mapping[str, Any], messages: list[BaseMessage]) -> list[Send]:
    """One ``Send`` per call of the latest model message that has no result yet."""
    ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if ai is None:
        return []
    answered = _answered(messages)
    context = {**state, "messages": messages}
    return [
        Send(TOOL_NODE, {"__type": "tool_call_with_context", "tool_call": call, "state": context})
        for call in ai.tool_calls
        if call["id"] not in answered
    ]


def _answered_for_model(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The conversation as the model sees it: a call left without a result (its review was
    canceled) gets a ``NO_DECISION`` result, since providers need one result per call."""
    answered = _answered(messages)
    prompt: list[BaseMessage] = []
    for message in messages:
        prompt.append(message)
        if isinstance(message, AIMessage) and message is not messages[-1]:
            prompt.extend(
                _result(call, NO_DECISION, "error")
                for call in message.tool_calls
                if call["id"] not in answered
            )
    return prompt
