"""The example server: ``llamon-agent serve`` runs ``app.main:AGENTS`` by default."""

from __future__ import annotations

from llamon_agent import Agent

from .assistant import email_assistant
from .nodes import configured_model, document_review_graph, until_done_graph
from .orchestrator import FINALIZE, LOAN, RISK

AGENTS = [
    Agent(
        "document-review",
        document_review_graph(),
        name="Document review",
        description="Verifies a document; asks which document and the date of birth.",
        skills=[
            {
                "id": "document-review",
                "name": "Document review",
                "description": "Asks which document to verify (passport or ID card) and the "
                "date of birth, then returns both as data.",
                "tags": ["hitl", "documents"],
                "examples": ["이 서류를 검증해줘"],
            }
        ],
        llm=configured_model(),
    ),
    Agent(
        "until-done",
        until_done_graph(),
        name="Until done",
        description="Collects notes, asking again until the user says 'done'.",
        skills=[
            {
                "id": "until-done",
                "name": "Note taker",
                "description": "Keeps asking for notes until the user says done; returns them.",
                "tags": ["hitl", "notes"],
                "examples": ["take notes"],
            }
        ],
    ),
    email_assistant(),
    LOAN,
    RISK,
    FINALIZE,
]
