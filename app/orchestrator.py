"""Seed 004's loan orchestrator: agent ``loan`` with the children ``risk`` and ``finalize``.

1. A loan request goes to ``risk``. When the risk cannot be judged without a person, ``risk`` asks
   a question; the orchestrator forwards it and sets the resume point
   (``intent="대출 심사"``, ``next_action="await_approval"``).
2. The user's answer resumes the turn: it goes back to ``risk`` (which continues its own
   conversation), ``finalize`` drafts the decision, and the draft waits for a reviewer
   (the task stays ``working``).
3. A reviewer approves, edits or rejects it through ``/reviews/{id}/decision``; the task ends.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from llamon_agent.orchestrator import Emission, Orchestrator, TurnContext

COLLATERAL_QUESTION = "담보가 있습니까?"
LIMIT_MULTIPLE = 3  # loans above three times the yearly income need collateral


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and (found := re.search(r"\d[\d,]*(?:\.\d+)?", value)):
        return float(found.group().replace(",", ""))
    return None


def _request(state: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {}
    for part in state.get("a2a_data") or []:
        request.update(part)
    return request


class RiskState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    a2a_data: list[dict[str, Any]]
    request: dict[str, Any]
    collateral: str | None
    result: dict[str, Any]


async def read_request(state: RiskState) -> dict[str, Any]:
    return {"request": _request(dict(state)), "collateral": None}


async def assess(state: RiskState) -> dict[str, Any] | HITLInterrupt:
    request = state.get("request") or {}
    amount, income = _number(request.get("amount")), _number(request.get("income"))
    if amount is None or income is None or income <= 0:
        level = "unknown"
    elif amount <= income * LIMIT_MULTIPLE:
        level = "low"
    elif state.get("collateral") is None:
        question = HITLQuestion(
            prompt=COLLATERAL_QUESTION,
            options=[HITLOption(label="예", value="yes"), HITLOption(label="아니오", value="no")],
        )
        return HITLInterrupt(question, thread_id=state["thread_id"], key="collateral")
    else:
        level = "medium" if state.get("collateral") == "yes" else "high"
    result = {"risk": level, "amount": amount, "income": income,
              "collateral": state.get("collateral"), "needs_human": False}
    return {"result": result, "messages": [AIMessage(content=f"Risk: {level}.")]}


def risk_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(RiskState)
    graph.add_node("read_request", read_request)
    graph.add_node("assess", assess)
    graph.add_edge(START, "read_request")
    graph.add_edge("read_request", "assess")
    graph.add_edge("assess", END)
    return graph


class FinalizeState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    a2a_data: list[dict[str, Any]]
    result: dict[str, Any]


async def draft_decision(state: FinalizeState) -> dict[str, Any]:
    facts = _request(dict(state))
    decision = "decline" if facts.get("risk") in ("high", "unknown") else "approve"
    draft = {"decision": decision, "risk": facts.get("risk"), "amount": facts.get("amount"),
             "intent": facts.get("intent")}
    text = f"Draft: {decision} (risk {facts.get('risk')}, amount {facts.get('amount')})."
    return {"result": draft, "messages": [AIMessage(content=text)]}


def finalize_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(FinalizeState)
    graph.add_node("draft_decision", draft_decision)
    graph.add_edge(START, "draft_decision")
    graph.add_edge("draft_decision", END)
    return graph


async def run_turn(ctx: TurnContext) -> Emission:
    if (resume := ctx.get_resume()) and resume.get("next_action") == "await_approval":
        risk = await ctx.call("risk", data=ctx.data)  # the answer continues risk's conversation
        if risk.needs_human:  # still unclear: ask again, same resume point
            ctx.set_resume(**resume)
            return ctx.emit(risk)
        draft = await ctx.call("finalize", data={**risk.data, "intent": resume["intent"]})
        return ctx.emit(draft, review=True)  # 답변 받고 이어가기

    risk = await ctx.call("risk", data=ctx.data)
    if risk.data.get("needs_human"):
        ctx.set_resume(intent="대출 심사", next_action="await_approval")
        return ctx.emit(risk)  # 사람에게 질문 내보내고 턴 종료
    draft = await ctx.call("finalize", data={**risk.data, "intent": "대출 심사"})
    return ctx.emit(draft, review=True)


RISK = Agent("risk", risk_graph(), name="Loan risk",
             description="Judges a loan request's risk; asks about collateral when needed.")
FINALIZE = Agent("finalize", finalize_graph(), name="Loan decision drafter",
                 description="Drafts a loan decision from a risk assessment.")
LOAN = Orchestrator(
    "loan", run_turn, name="Loan review",
    description="Reviews a loan: risk check (may ask you), drafted decision, human reviewer.",
    skills=[{"id": "loan", "name": "Loan review", "tags": ["orchestrator", "hitl", "review"],
             "description": "Send {applicant, amount, income} as a data part; answers come "
                            "back after a reviewer approves.",
             "examples": ['{"applicant": "Kim", "amount": 90000, "income": 20000}']}],
)
