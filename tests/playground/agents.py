"""The agents the Playground tests serve (``tests.playground.agents:AGENTS``).

The example agents as they are (the document-review, email and loan flows run on them), and
two more a browser test needs:

- ``email-strict``: the example's email assistant reviewing ``send_email`` with an
  ``args_schema`` (the server refuses an edit whose arguments do not fit it, and the page shows
  the server's words) and the decisions approve, edit and respond (the page offers only those);
- ``echo-question`` asks a question that repeats the user's text (as the question, as a choice's
  label and description) with a deadline, then returns the answer: hostile text reaches the page
  from the server exactly as a user typed it.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from app.assistant import email_assistant_graph
from app.main import AGENTS as EXAMPLE_AGENTS
from llamon_agent import Agent
from llamon_agent.core.deadlines import AnswerWith
from llamon_agent.core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from llamon_agent.tool_review.policy import InterruptOnConfig

SEND_EMAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}
#: no ``reject``: the page must offer exactly these (and ``respond``, which the example lacks)
SEND_EMAIL_DECISIONS = ["approve", "edit", "respond"]
ECHO_DEADLINE_SECONDS = 3600.0


class EchoState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    said: str
    answer: str | None
    result: dict[str, Any]


async def remember(state: EchoState) -> dict[str, Any]:
    said = state["messages"][-1].content if state.get("messages") else ""
    return {"said": said if isinstance(said, str) else str(said), "answer": None}


async def ask_back(state: EchoState) -> dict[str, Any] | HITLInterrupt:
    if state.get("answer") is not None:
        return {}
    said = state.get("said") or ""
    question = HITLQuestion(
        prompt=f"You said: {said}",
        options=[HITLOption(label=said, value="echo", description=said),
                 HITLOption(label="Something else", value="other")],
        expires_in=ECHO_DEADLINE_SECONDS, on_expiry=AnswerWith("other"),
    )
    return HITLInterrupt(question, thread_id=state["thread_id"], key="answer")


async def finish(state: EchoState) -> dict[str, Any]:
    said, answer = state.get("said") or "", state.get("answer")
    return {"result": {"said": said, "answer": answer},
            "messages": [AIMessage(content=f"Echo: {said} ({answer})")]}


def echo_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(EchoState)
    graph.add_node("remember", remember)
    graph.add_node("ask_back", ask_back)
    graph.add_node("finish", finish)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "ask_back")
    graph.add_edge("ask_back", "finish")
    graph.add_edge("finish", END)
    return graph


ECHO = Agent("echo-question", echo_graph(), name="Echo question",
             description="Asks back what you said (for the Playground's hostile-content test).")
STRICT_EMAIL = Agent(
    "email-strict",
    email_assistant_graph(interrupt_on={"send_email": InterruptOnConfig(
        allowed_decisions=SEND_EMAIL_DECISIONS, args_schema=SEND_EMAIL_SCHEMA)}),
    name="Email assistant (strict)",
    description="The email assistant; send_email's arguments must fit a schema.",
)
AGENTS = [*EXAMPLE_AGENTS, STRICT_EMAIL, ECHO]
