"""The official a2a-sdk 0.3.26 server around an ``AgentExecutor``, wired as its README shows."""

from __future__ import annotations

from typing import Any

from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentSkill


def card(name: str, port: int) -> AgentCard:
    skills = [
        AgentSkill(id=agent, name=agent, description=f"benchmark agent {agent}", tags=["bench"])
        for agent in ("instant", "hitl")
    ]
    return AgentCard(
        name=name,
        description="Benchmark server (agent chosen by params.metadata.agentId)",
        url=f"http://127.0.0.1:{port}/",
        version="0.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=skills,
    )


def app(name: str, port: int, executor: AgentExecutor, **starlette: Any) -> Any:
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore())
    return A2AStarletteApplication(agent_card=card(name, port), http_handler=handler).build(**starlette)
