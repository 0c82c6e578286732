"""``Orchestrator``: an agent whose turn is an async ``run_turn(ctx)`` (seed 004).

It is served like any agent: the SDK builds a small LangGraph graph around ``run_turn`` so that
forwarded questions, resume points and reviews ride on the same checkpointed machinery::

    START ─► begin ─► turn ─┬─► END                      result emitted
                            ├─► __hitl__ ─► turn         a child's question forwarded to the user
                            └─► review ─► END            draft waits for a reviewer (task: working)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, TypedDict

import orjson
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command

from ..agent import Agent
from ..core.deadlines import WaitPolicy
from ..core.hitl import HITLInterrupt
from ..core.run_context import context_id_of, run_context
from ..errors import LlamonError
from ..human_review.node import TaskRejected, request_review
from .children import ChildCaller, ChildFailedError, ChildResult, RemoteAgent
from .context import Emission, TurnContext

__all__ = ["Orchestrator", "RunTurn"]

RunTurn = Callable[[TurnContext], Awaitable[Emission]]


class OrchestratorState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    a2a_data: list[dict[str, Any]]
    hitl_answer: Any
    resume_point: dict[str, Any] | None
    answering: bool
    review_draft: Any
    result: Any
    child_tasks: dict[str, str]


def _caller(config: RunnableConfig) -> ChildCaller:
    served = run_context(config)
    caller = served.children if served is not None else None
    if caller is None:
        raise LlamonError("an Orchestrator runs only inside a server built by create_app")
    return caller


def _incoming(state: OrchestratorState) -> dict[str, Any]:
    """The message that started the turn, as data: its text and its data parts."""
    data: dict[str, Any] = {}
    messages = state.get("messages") or []
    if messages and messages[-1].type == "human":
        data["text"] = messages[-1].text
    for part in state.get("a2a_data") or []:
        data.update(part)
    return data


def _answer(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"text": value}


class Orchestrator(Agent):
    """``Orchestrator(id, run_turn, *, name=None, description=None, skills=None, children=())``.

    ``children`` declares remote children (``RemoteAgent``); local children are the other agents
    of the same server, called by their id with no HTTP hop.
    """

    def __init__(
        self,
        id: str,
        run_turn: RunTurn,
        *,
        name: str | None = None,
        description: str | None = None,
        skills: Sequence[Mapping[str, Any]] | None = None,
        children: Sequence[RemoteAgent] = (),
        wait_policy: WaitPolicy | None = None,
    ) -> None:
        self.run_turn = run_turn
        self.remote_children = {c.id: c for c in children}
        super().__init__(id, self._graph(), name=name, description=description, skills=skills,
                         wait_policy=wait_policy)

    def _graph(self) -> StateGraph[Any, Any, Any, Any]:
        run_turn = self.run_turn

        async def begin(state: OrchestratorState, config: RunnableConfig) -> dict[str, Any]:
            # A new task starts clean. An earlier task that was canceled, rejected or failed may
            # have left a resume point and child tasks waiting for an answer: those belonged to
            # it, so they are dropped (a completed task left neither).
            caller = _caller(config)
            for child, task_id in (state.get("child_tasks") or {}).items():
                await caller.cancel(child, task_id)
            return {"hitl_answer": None, "answering": False, "review_draft": None,
                    "result": None, "resume_point": None, "child_tasks": {}}

        async def turn(state: OrchestratorState, config: RunnableConfig) -> Any:
            answering = bool(state.get("answering"))
            data = _answer(state.get("hitl_answer")) if answering else _incoming(state)
            ctx = TurnContext(
                data=data, resume=state.get("resume_point"), caller=_caller(config),
                context_id=context_id_of(config), config=config,
            )
            emission = await run_turn(ctx)
            if not isinstance(emission, Emission):
                raise LlamonError("run_turn must return ctx.emit(...)")
            return _conclude(emission, ctx, {**(state.get("child_tasks") or {}), **ctx.child_tasks})

        async def review(state: OrchestratorState, config: RunnableConfig) -> dict[str, Any]:
            draft = state.get("review_draft")
            decision = await request_review(draft, config)
            if decision.type == "reject":
                raise TaskRejected(decision.message or "The reviewer rejected the answer.")
            final = decision.edited if decision.type == "edit" else draft
            return {
                "result": final, "review_draft": None, "resume_point": None,
                "messages": [_reply(final)],
            }

        graph = StateGraph(OrchestratorState)
        graph.add_node("begin", begin)
        graph.add_node("turn", turn)
        graph.add_node("review", review)
        graph.add_edge(START, "begin")
        graph.add_edge("begin", "turn")
        graph.add_edge("review", END)
        return graph


def _reply(value: Any) -> AIMessage:
    if isinstance(value, ChildResult):
        value = value.text or value.data
    if not isinstance(value, str):
        value = orjson.dumps(value, default=str).decode()
    return AIMessage(content=value)


def _conclude(emission: Emission, ctx: TurnContext, child_tasks: dict[str, str]) -> Any:
    value = emission.value
    if isinstance(value, ChildResult) and value.needs_human:
        # forward the child's question: the user's answer reaches run_turn again
        return HITLInterrupt(
            payload=value.question or {"question": value.text},
            thread_id=ctx.context_id,
            update={"resume_point": ctx.next_resume, "answering": True, "child_tasks": child_tasks},
        )
    if isinstance(value, ChildResult) and value.state != "completed":
        raise ChildFailedError(
            f"child {value.child!r} ended {value.state}: {value.text or 'no message'}"
        )
    result = value.data if isinstance(value, ChildResult) else value
    answered = {"answering": False, "hitl_answer": None, "child_tasks": child_tasks}
    if emission.review:  # the resume point lives until the reviewer ends the task
        update = {**answered, "resume_point": ctx.next_resume, "review_draft": result}
        return Command(goto="review", update=update)
    # the task completes: no resume point survives it
    update = {**answered, "resume_point": None, "result": result, "messages": [_reply(value)]}
    return Command(goto=END, update=update)
