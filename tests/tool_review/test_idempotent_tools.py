"""Tools get their ``tool_call_id`` (LangChain's ``InjectedToolCallId``, injected by the
``ToolNode`` of ``review_graph``) and it is the same when a turn is re-run from a checkpoint:
the model's message with the calls is in the checkpoint. A tool with a side effect keys it on
that id, as the example ``send_email`` does, so a re-run (another replica, after a crash
between the tool and the turn's checkpoint) sends nothing twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from app.assistant import email_assistant, email_tools
from app.outbox import Outbox, server_outbox
from llamon_agent import review_graph
from llamon_agent.core.run_context import RunContext, with_run_context
from llamon_agent.stores.storage import open_storage
from llamon_agent.tool_review.node import TOOL_NODE
from tests.tool_review.helpers import SEED_ARGS, ScriptedModel, call, rest_server

APPROVE = {"decisions": [{"type": "approve"}]}


def recording_tool(seen: list[str]) -> BaseTool:
    @tool
    async def record(note: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Record a note."""
        seen.append(tool_call_id)
        return f"recorded {note}"

    return record


def asks(*calls: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


class Thread:
    """One thread of a compiled review graph, its checkpoints in memory."""

    def __init__(self, tools: list[BaseTool], replies: list[AIMessage],
                 interrupt_on: dict[str, Any]) -> None:
        model = ScriptedModel(replies=replies)
        self.graph = review_graph(model, tools, interrupt_on=interrupt_on).compile(
            checkpointer=InMemorySaver()
        )
        self.config: Any = {"configurable": {"thread_id": "t1"}}

    async def run(self, value: Any, config: Any = None) -> dict[str, Any]:
        result: dict[str, Any] = await self.graph.ainvoke(value, config or self.config)
        return result

    async def asked(self) -> Any:
        """The config of the checkpoint where the review waits (the last one of a turn that
        stopped for it: what a replica resumes with the recorded decision)."""
        return (await self.graph.aget_state(self.config)).config

    async def before_tools(self) -> Any:
        """The config of the checkpoint whose next step is the tool node."""
        found = [s.config async for s in self.graph.aget_state_history(self.config)
                 if s.next == (TOOL_NODE,)]
        assert len(found) == 1, found
        return found[0]


def results(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.tool_call_id, m.text) for m in messages if isinstance(m, ToolMessage)]


async def test_the_tool_node_injects_the_call_id_the_model_never_sees() -> None:
    seen: list[str] = []
    record = recording_tool(seen)
    assert list(record.args) == ["note"]  # the arguments the model is shown
    thread = Thread([record], [asks(call("record", {"note": "a"}, "c1"),
                                    call("record", {"note": "b"}, "c2"))],
                    interrupt_on={"record": {"allowed_decisions": ["approve"]}})
    first = await thread.run({"messages": [HumanMessage("go")]})
    assert [a["args"] for a in first["__interrupt__"][0].value["action_requests"]] == [
        {"note": "a"}, {"note": "b"}
    ]
    assert seen == []
    done = await thread.run(Command(resume={"decisions": [{"type": "approve"}] * 2}))
    assert sorted(seen) == ["c1", "c2"]
    assert sorted(results(done["messages"])) == [("c1", "recorded a"), ("c2", "recorded b")]


async def test_a_call_without_review_gets_its_id_too() -> None:
    seen: list[str] = []
    thread = Thread([recording_tool(seen)], [asks(call("record", {"note": "a"}, "c1"))],
                    interrupt_on={})
    await thread.run({"messages": [HumanMessage("go")]})
    assert seen == ["c1"]


async def test_a_rerun_from_the_checkpoint_before_the_tool_node_sees_the_same_id() -> None:
    seen: list[str] = []
    thread = Thread([recording_tool(seen)],
                    [asks(call("record", {"note": "a"}, "c1")), AIMessage("one"),
                     AIMessage("two")],
                    interrupt_on={"record": True})
    await thread.run({"messages": [HumanMessage("go")]})
    await thread.run(Command(resume=APPROVE))
    assert seen == ["c1"]
    again = await thread.run(None, await thread.before_tools())
    assert seen == ["c1", "c1"]
    assert again["messages"][-1].text == "two"  # the rest of the turn ran again too


async def test_resuming_the_review_again_with_the_same_decision_sees_the_same_id() -> None:
    """What a replica does after a crash: the turn again from its last checkpoint (the
    waiting review) with the decision it recorded."""
    seen: list[str] = []
    thread = Thread([recording_tool(seen)],
                    [asks(call("record", {"note": "a"}, "c1")), AIMessage("one"),
                     AIMessage("two")],
                    interrupt_on={"record": True})
    await thread.run({"messages": [HumanMessage("go")]})
    asked = await thread.asked()
    await thread.run(Command(resume=APPROVE))
    await thread.run(Command(resume=APPROVE), asked)
    assert seen == ["c1", "c1"]


@pytest.fixture
async def outbox() -> AsyncIterator[Outbox]:
    box = Outbox(":memory:")
    yield box
    box.close()


async def test_send_email_re_run_from_either_checkpoint_sends_once(outbox: Outbox) -> None:
    thread = Thread(email_tools(outbox),
                    [asks(call("send_email", dict(SEED_ARGS), "c1")), AIMessage("one"),
                     AIMessage("two"), AIMessage("three")],
                    interrupt_on={"send_email": True})
    await thread.run({"messages": [HumanMessage("go")]})
    asked = await thread.asked()
    done = await thread.run(Command(resume=APPROVE))
    sent = [("c1", "Email #1 sent to alice@example.com with subject 'Meeting'.")]
    assert results(done["messages"]) == sent
    assert outbox.count() == 1

    again = await thread.run(None, await thread.before_tools())
    assert results(again["messages"]) == sent  # the first result, not a second email
    resumed = await thread.run(Command(resume=APPROVE), asked)
    assert results(resumed["messages"]) == sent
    assert [(r["thread_id"], r["tool_call_id"], r["to"]) for r in outbox.rows()] == [
        ("t1", "c1", "alice@example.com")
    ]


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="the postgres extra is not installed")
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "server.sqlite3")


async def test_the_email_assistant_sends_once_when_a_replica_reruns_the_turn(
    database: str,
) -> None:
    """End to end in process, on the server's database: the served email assistant waits for
    its review (the turn's last checkpoint, taken here as a replica would find it had the next
    turn died before writing its own), is approved over ``/hitl/review`` (one email), then the
    turn runs again from that checkpoint with the same decision, its outbox the server's. Still
    one email, and the tool's result is the first one."""
    context = RunContext(db=database, agent_id="email-assistant")
    async with rest_server(email_assistant(), db=database) as rest:
        thread_id = (await rest.pending())["thread_id"]
    async with open_storage(database) as storage:
        waiting = await storage.checkpointer.aget_tuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        )
    assert waiting is not None
    async with rest_server(email_assistant(), db=database) as rest:  # a restart, then approve
        done = await rest.review(thread_id, [{"type": "approve"}])
        assert done.status_code == 200, done.text
    reader = Outbox(database)
    try:
        [row] = reader.rows(thread_id)
        assert (row["to"], row["subject"]) == ("alice@example.com", "Meeting")
        assert row["tool_call_id"] == "call_1"  # the offline planner's first call of the thread

        rerun = await _rerun(waiting, context)
        assert results(rerun["messages"]) == [
            ("call_1", "Email #1 sent to alice@example.com with subject 'Meeting'.")
        ]
        assert [(r["id"], r["tool_call_id"]) for r in reader.rows()] == [(1, "call_1")]
    finally:
        reader.close()
        server_outbox({"configurable": with_run_context({}, context)}).close()


async def _rerun(waiting: CheckpointTuple, context: RunContext) -> dict[str, Any]:
    """The turn again from ``waiting`` with the approval: the graph the server runs, on a
    checkpointer holding only that checkpoint and its pending writes."""
    saver = InMemorySaver()
    thread: RunnableConfig = {"configurable": {
        "thread_id": waiting.config["configurable"]["thread_id"], "checkpoint_ns": ""
    }}
    saved = await saver.aput(thread, waiting.checkpoint, waiting.metadata,
                             waiting.checkpoint["channel_versions"])
    for task_id, channel, value in waiting.pending_writes or []:
        await saver.aput_writes(saved, [(channel, value)], task_id)
    graph = email_assistant().compile(saver)
    config: RunnableConfig = {"configurable": with_run_context(dict(thread["configurable"]),
                                                               context)}
    result: dict[str, Any] = await graph.ainvoke(Command(resume=APPROVE), config)
    return result
