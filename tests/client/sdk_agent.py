"""An official ``a2a-sdk==0.3.26`` server for the client tests: one question, then done.

The executor asks ``COLOR_QUESTION`` (``input-required`` through ``TaskUpdater``, with a
``{"hitl": {"question", "options"}}`` data part like llamon's) and completes on the next
message to the same task, with an artifact holding the answer's text and data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    DataPart,
    Part,
    TaskState,
    TextPart,
)
from a2a.utils import get_message_text, new_task
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from asgi_lifespan import LifespanManager

SDK_URL = "http://sdk.test/"
COLOR_QUESTION = "Which color?"
COLOR_OPTIONS = ["red", "blue"]


class AskThenComplete(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.input_required:
            data = [p.root.data for p in context.message.parts if isinstance(p.root, DataPart)]
            answer = {"text": get_message_text(context.message), "data": data}
            await updater.add_artifact([Part(root=DataPart(data=answer))], name="result")
            await updater.complete()
            return
        await updater.start_work()
        question = updater.new_agent_message([
            Part(root=TextPart(text=COLOR_QUESTION)),
            Part(root=DataPart(data={"hitl": {"question": COLOR_QUESTION,
                                              "options": COLOR_OPTIONS}})),
        ])
        await updater.requires_input(question, final=True)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def sdk_card() -> AgentCard:
    return AgentCard(
        name="SDK color agent",
        description="Asks for a color, then completes.",
        url=SDK_URL,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="color", name="Color", description="Asks a color", tags=["hitl"])],
    )


@asynccontextmanager
async def sdk_http(card_path: str = AGENT_CARD_WELL_KNOWN_PATH) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client whose every request goes to an in-process a2a-sdk server."""
    handler = DefaultRequestHandler(agent_executor=AskThenComplete(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=sdk_card(), http_handler=handler).build(
        agent_card_url=card_path
    )
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url=SDK_URL, timeout=30) as http:
            yield http
