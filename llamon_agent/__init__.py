"""llamon-agent: LangGraph agents over A2A v0.3 that stop to ask a human and resume exactly there.

The top level holds what an agent author writes against. Everything else has one home:

* ``llamon_agent.errors``        the error tree (``A2AError`` and its JSON-RPC codes, review errors)
* ``llamon_agent.client``        the async A2A client (``A2AClient``, ``question_of``, ...)
* ``llamon_agent.stores``        task stores (``TaskStore``, ``InMemoryTaskStore``, ``SQLiteTaskStore``)
* ``llamon_agent.tool_review``   tool-call approval (``validate_decisions``, ``ALLOWED_DECISIONS``, ...)
* ``llamon_agent.human_review``  human review of drafts (``InMemoryReviewPort``, ``SQLiteReviewPort``)
* ``llamon_agent.orchestrator``  agents that call child agents (``Emission``, ``RunTurn``, ...)
* ``llamon_agent.core.hitl``     the HITL question types (seed 004's import path)
* ``llamon_agent.core.deadlines`` how long a person may take (``WaitPolicy``, ``Deadline``,
  ``AnswerWith``, ``Reject``, ``Cancel``)
"""

from .agent import Agent
from .core.bounds import Limits
from .core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from .core.run_context import RunContext, run_context
from .errors import LlamonError
from .human_review import Decision, HumanReviewPort, Review, TaskRejected, request_review
from .orchestrator import ChildResult, Orchestrator, RemoteAgent, TurnContext
from .server.app import create_app
from .stores import Storage, open_storage
from .tool_review import (
    ChatTurn,
    InterruptOnConfig,
    ReviewedChatUseCase,
    ReviewPolicy,
    ReviewState,
    review_graph,
)

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "ChatTurn",
    "ChildResult",
    "Decision",
    "HITLInterrupt",
    "HITLOption",
    "HITLQuestion",
    "HumanReviewPort",
    "InterruptOnConfig",
    "Limits",
    "LlamonError",
    "Orchestrator",
    "RemoteAgent",
    "Review",
    "ReviewPolicy",
    "ReviewState",
    "ReviewedChatUseCase",
    "RunContext",
    "Storage",
    "TaskRejected",
    "TurnContext",
    "__version__",
    "create_app",
    "open_storage",
    "request_review",
    "review_graph",
    "run_context",
]
