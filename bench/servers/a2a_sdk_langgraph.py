"""The official a2a-sdk 0.3.26 running the benchmark's LangGraph graphs, as a LangGraph user
would wire it: the graphs (``interrupt()`` inside the node) compiled once with
``AsyncSqliteSaver`` on a SQLite file, or with ``AsyncPostgresSaver`` when ``--db`` is a
``postgresql://`` URL (langgraph-checkpoint-postgres: one connection, as
``from_conn_string`` opens it, and ``setup()`` once at start), tasks in the SDK's
``InMemoryTaskStore``.

``execute()`` uses ``context_id`` as the LangGraph ``thread_id``: when the thread's checkpoint
has a pending interrupt it resumes with ``Command(resume=text)``, else it invokes the graph with
the message; an interrupt becomes ``input-required`` (the question as the status message), the
end of the graph ``completed`` with the ``result`` as a data artifact.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import DataPart, Part
from a2a.utils import new_agent_text_message, new_task
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from bench.agents import HITL, INSTANT, instant_graph, native_hitl_graph
from bench.servers._sdk import app
from bench.servers._serve import parser, serve


class LangGraphExecutor(AgentExecutor):
    def __init__(self, graphs: dict[str, Any], durability: str | None) -> None:
        self.graphs = graphs
        self.durability = durability

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        graph = self.graphs[context.metadata.get("agentId", INSTANT)]
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        config: dict[str, Any] = {"configurable": {"thread_id": task.context_id}}
        text = context.get_user_input()
        snapshot = await graph.aget_state(config)
        graph_input: Any
        if snapshot.interrupts:
            graph_input = Command(resume=text)
        else:
            message = HumanMessage(content=text, id=context.message.message_id)
            graph_input = {"messages": [message], "thread_id": task.context_id}
        kwargs = {"durability": self.durability} if self.durability else {}
        output = await graph.ainvoke(graph_input, config, **kwargs)
        interrupts = output.get("__interrupt__")
        if interrupts:
            value = interrupts[0].value
            question = value.get("question") if isinstance(value, dict) else str(value)
            ask = new_agent_text_message(str(question), task.context_id, task.id)
            await updater.requires_input(ask, final=True)
            return
        await updater.add_artifact([Part(root=DataPart(data=output.get("result") or {}))], name="result")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def lifespan(db: str, executor: LangGraphExecutor, synchronous: str | None = None) -> Any:
    """Open ``AsyncSqliteSaver.from_conn_string(db)`` (or ``AsyncPostgresSaver``'s, for a
    ``postgresql://`` URL) for the life of the app; compile once. ``synchronous`` (SQLite only):
    ``PRAGMA synchronous`` on the saver's connection, which is WAL by default: ``normal`` gives
    the peer our durability (a commit survives the process dying, not the machine losing power),
    where the saver's own default is ``FULL``."""

    @asynccontextmanager
    async def run(_app: Any) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            saver: Any
            if db.startswith(("postgresql://", "postgres://")):
                from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

                saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(db))
                await saver.setup()
            else:
                saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(db))
                if synchronous is not None:
                    await saver.conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
                    async with saver.conn.execute("PRAGMA synchronous") as cursor:
                        row = await cursor.fetchone()
                    # 1 is NORMAL, 2 FULL: a benchmark at the wrong durability must not run
                    assert row is not None and row[0] == {"normal": 1, "full": 2}[synchronous]
            executor.graphs[INSTANT] = instant_graph().compile(checkpointer=saver)
            executor.graphs[HITL] = native_hitl_graph().compile(checkpointer=saver)
            yield

    return run


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--db", required=True,
                   help="SQLite file, or postgresql:// URL, for the LangGraph checkpointer")
    p.add_argument("--durability", choices=["sync", "async", "exit"], default=None,
                   help="LangGraph checkpoint durability (default: LangGraph's own)")
    p.add_argument("--synchronous", choices=["normal", "full"], default=None,
                   help="SQLite: PRAGMA synchronous of the saver's connection (default: the "
                   "saver's own, FULL; normal is llamon-agent's)")
    args = p.parse_args()
    executor = LangGraphExecutor({}, args.durability)
    name = "a2a-sdk-langgraph"
    serve(app(name, args.port, executor, lifespan=lifespan(args.db, executor, args.synchronous)),
          args.port)


if __name__ == "__main__":
    main()
