"""The email assistant (agent ``email-assistant``): ``send_email`` waits for a human.

``search_contacts`` runs without review; ``send_email`` needs approval (approve, edit or
reject) and writes to the outbox (a table in the server's database) only when it really runs,
once per tool call: it takes its ``tool_call_id`` (``InjectedToolCallId``) as the outbox's key.
The model is ``$LLAMON_MODEL`` (``provider:model``, through LangChain's ``init_chat_model``),
else the offline :class:`~app.planner.EmailPlanner`, so the demo works with no key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import StateGraph

from llamon_agent import Agent, review_graph

from .nodes import configured_model
from .outbox import Outbox, server_outbox
from .planner import EmailPlanner

__all__ = ["CONTACTS", "INTERRUPT_ON", "email_assistant", "email_assistant_graph", "email_tools"]

CONTACTS = {
    "Alice Wong": "alice@example.com",
    "Bob Tan": "bob@example.com",
    "Citra Dewi": "citra@example.co.id",
}
INTERRUPT_ON: dict[str, Any] = {"send_email": True}
SYSTEM_PROMPT = (
    "You send emails for the user. Look up names with search_contacts before sending. "
    "Every send_email call is reviewed by a human first. After tools ran, say what was sent."
)


def email_tools(outbox: Outbox | None = None) -> list[BaseTool]:
    """``outbox``: where ``send_email`` writes (default: the one in the server's database)."""

    @tool
    def search_contacts(query: str) -> str:
        """Find contacts whose name contains the query; returns 'Name <address>' lines."""
        wanted = query.strip().casefold()
        found = [f"{n} <{a}>" for n, a in CONTACTS.items() if wanted and wanted in n.casefold()]
        return "\n".join(found) if found else f"No contact matches {query!r}."

    @tool
    async def send_email(
        to: str,
        subject: str,
        body: str,
        config: RunnableConfig,
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> str:
        """Send an email to one address. A human approves it first."""
        # keyed on the call's id: a turn re-run from its checkpoint (same model message, same
        # ids) gets the first email back instead of sending it again
        thread_id = (config.get("configurable") or {}).get("thread_id")
        sent = await (outbox or server_outbox(config)).send_once(
            tool_call_id, to, subject, body, thread_id
        )
        return f"Email #{sent.number} sent to {sent.to} with subject {sent.subject!r}."

    return [search_contacts, send_email]


def email_assistant_graph(
    outbox: Outbox | None = None,
    model: BaseChatModel | None = None,
    *,
    interrupt_on: Mapping[str, Any] | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    return review_graph(
        model or configured_model() or EmailPlanner(),
        email_tools(outbox),
        interrupt_on=INTERRUPT_ON if interrupt_on is None else interrupt_on,
        system_prompt=SYSTEM_PROMPT,
    )


def email_assistant(
    outbox: Outbox | None = None,
    model: BaseChatModel | None = None,
    *,
    interrupt_on: Mapping[str, Any] | None = None,
) -> Agent:
    return Agent(
        "email-assistant",
        email_assistant_graph(outbox, model, interrupt_on=interrupt_on),
        name="Email assistant",
        description="Sends emails; every send_email waits for a human's approval.",
        skills=[
            {
                "id": "email-assistant",
                "name": "Email assistant",
                "description": "Sends emails after a human approves, edits or rejects each "
                "send_email call (LangChain HITL format: action_requests / review_configs; "
                "answer with a data part {\"decisions\": [...]}).",
                "tags": ["hitl", "tool-approval", "email"],
                "examples": [
                    "Send an email to alice@example.com about Meeting: The meeting is at 10."
                ],
            }
        ],
    )
