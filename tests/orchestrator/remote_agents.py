"""Served by a second ``llamon-agent serve`` process in ``test_remote.py``.

``AGENTS``: the loan example's ``risk`` child alone. ``LOAN_AGENTS``: a loan orchestrator whose
``risk`` child is remote, at ``$LLAMON_TEST_RISK_URL`` (read when the attribute is first used),
with ``finalize`` local.
"""

from __future__ import annotations

import os
from typing import Any

from app.orchestrator import FINALIZE, RISK, run_turn
from llamon_agent import Agent
from llamon_agent.orchestrator import Orchestrator, RemoteAgent

RISK_URL_ENV = "LLAMON_TEST_RISK_URL"

AGENTS = [RISK]


def loan_agents(risk_url: str) -> list[Agent]:
    """The loan orchestrator with ``risk`` at ``risk_url`` and ``finalize`` local."""
    loan = Orchestrator(
        "loan",
        run_turn,
        name="Loan review (remote risk)",
        children=[RemoteAgent("risk", risk_url)],
    )
    return [loan, FINALIZE]


def __getattr__(name: str) -> Any:
    if name == "LOAN_AGENTS":
        return loan_agents(os.environ[RISK_URL_ENV])
    raise AttributeError(name)
