"""The official a2a-sdk 0.3.26 with a hand-written in-memory agent (no LangGraph).

``instant`` completes at once; ``hitl`` answers a task's first message with ``input-required``
and its second (sent with the ``taskId``) with ``completed``. Tasks live in ``InMemoryTaskStore``.
"""

from __future__ import annotations

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import DataPart, Part, TaskState
from a2a.utils import new_agent_text_message, new_task

from bench.servers._sdk import app
from bench.servers._serve import parser, serve

QUESTION = "What should I record?"


class HandwrittenExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task
        asked = task is not None and task.status.state == TaskState.input_required
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if context.metadata.get("agentId") == "hitl" and not asked:
            question = new_agent_text_message(QUESTION, task.context_id, task.id)
            await updater.requires_input(question, final=True)
            return
        data = {"answer": context.get_user_input()} if asked else {"ok": True}
        await updater.add_artifact([Part(root=DataPart(data=data))], name="result")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main() -> None:
    port = parser(__doc__).parse_args().port
    serve(app("a2a-sdk-handwritten", port, HandwrittenExecutor()), port)


if __name__ == "__main__":
    main()
