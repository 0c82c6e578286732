"""``review_graph`` invoked directly: each decision's effect (seed 000's tables), by outbox rows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from app.assistant import email_tools
from app.outbox import Outbox
from llamon_agent import review_graph
from llamon_agent.core.run_context import RunContext, with_run_context
from llamon_agent.tool_review import NO_DECISION, REJECTED_BY_USER_MESSAGE
from tests.tool_review.helpers import (
    EDITED_ARGS,
    SEED_ARGS,
    SEED_PAYLOAD,
    ScriptedModel,
    call,
    edit,
)

BOB = {"to": "bob@example.com", "subject": "Meeting", "body": "Hi."}


@pytest.fixture
async def outbox() -> AsyncIterator[Outbox]:
    box = Outbox(":memory:")
    yield box
    box.close()


class Run:
    """One thread of a compiled review graph with a scripted model."""

    def __init__(self, outbox: Outbox, replies: list[AIMessage], **policy: Any) -> None:
        self.model = ScriptedModel(replies=replies)
        policy.setdefault("interrupt_on", {"send_email": True})
        self.graph = review_graph(self.model, email_tools(outbox), **policy).compile(
            checkpointer=InMemorySaver()
        )
        self.config: Any = {"configurable": {"thread_id": "t1"}}

    async def start(self, text: str = "go", **kw: Any) -> dict[str, Any]:
        return await self.graph.ainvoke({"messages": [HumanMessage(text)]}, self.config, **kw)

    async def resume(self, value: Any, **kw: Any) -> dict[str, Any]:
        return await self.graph.ainvoke(Command(resume=value), self.config, **kw)

    async def decide(self, *decisions: Any, **kw: Any) -> dict[str, Any]:
        return await self.resume({"decisions": list(decisions)}, **kw)


def pending(result: dict[str, Any]) -> Any:
    interrupts = result.get("__interrupt__") or []
    assert len(interrupts) <= 1
    return interrupts[0].value if interrupts else None


def tool_results(messages: list[BaseMessage]) -> list[tuple[str, str, str]]:
    return [(m.tool_call_id, m.status, m.text) for m in messages if isinstance(m, ToolMessage)]


def asks(*calls: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


def send(args: dict[str, Any] = SEED_ARGS, call_id: str = "c1") -> Any:
    return call("send_email", dict(args), call_id)


def search(query: str = "Alice", call_id: str = "s1") -> Any:
    return call("search_contacts", {"query": query}, call_id)


DONE = AIMessage(content="done")


async def test_direct_invocation_shows_the_seed_payload(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send())])
    result = await run.start(context={"language": "id"})
    assert pending(result) == SEED_PAYLOAD  # result["__interrupt__"][0].value
    english = Run(outbox, [asks(send())], interrupt_on={"send_email": True})
    value = pending(await english.start())
    assert value["action_requests"][0]["description"] == "Tool `send_email` is awaiting approval"
    assert outbox.count() == 0


async def test_approve_runs_the_proposed_call(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send()), DONE])
    await run.start()
    result = await run.decide({"type": "approve", "message": "ignored: not an approve field"})
    assert pending(result) is None
    assert [(r["to"], r["subject"], r["body"]) for r in outbox.rows()] == [
        ("alice@example.com", "Meeting", "The meeting is at 10.")
    ]
    assert tool_results(result["messages"]) == [
        ("c1", "success", "Email #1 sent to alice@example.com with subject 'Meeting'.")
    ]
    assert result["messages"][-1].text == "done"


async def test_edit_runs_the_edited_call_and_rewrites_history_keeping_the_id(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send(), search()), DONE])
    first = await run.start()
    original_id = first["messages"][-1].id
    result = await run.decide(edit())
    assert [(r["to"], r["subject"], r["body"]) for r in outbox.rows()] == [
        ("alice@example.com", "Meeting moved", "The meeting is at 11.")
    ]
    ai = [m for m in result["messages"] if isinstance(m, AIMessage)]
    assert ai[0].id == original_id  # replaced in place, not appended
    assert [(c["id"], c["name"], c["args"]) for c in ai[0].tool_calls] == [
        ("c1", "send_email", EDITED_ARGS), ("s1", "search_contacts", {"query": "Alice"})
    ]
    # the model's next prompt sees the call that ran
    replayed = run.model.prompts[1][1]
    assert isinstance(replayed, AIMessage) and replayed.tool_calls[0]["args"] == EDITED_ARGS
    assert [r[:2] for r in tool_results(result["messages"])] == [("c1", "success"), ("s1", "success")]


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"type": "reject", "message": "Wrong recipient. Ask the user for the correct address."},
         "Wrong recipient. Ask the user for the correct address."),
        ({"type": "reject"}, REJECTED_BY_USER_MESSAGE),
        ({"type": "reject", "message": ""}, REJECTED_BY_USER_MESSAGE),
    ],
)
async def test_reject_gives_an_error_result_and_all_rejected_goes_back_to_the_model(
    outbox: Outbox, decision: dict[str, Any], expected: str
) -> None:
    run = Run(outbox, [asks(send()), DONE])
    await run.start()
    result = await run.decide(decision)
    assert outbox.count() == 0
    assert tool_results(result["messages"]) == [("c1", "error", expected)]
    # straight back to llm_call: its second prompt ends with the rejection, nothing else ran
    assert len(run.model.prompts) == 2
    assert isinstance(run.model.prompts[1][-1], ToolMessage)
    assert [type(m).__name__ for m in result["messages"]] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"
    ]


async def test_respond_returns_the_humans_text_as_the_result(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send()), DONE],
              interrupt_on={"send_email": {"allowed_decisions": ["approve", "respond"]}})
    value = pending(await run.start())
    assert value["review_configs"][0]["allowed_decisions"] == ["approve", "respond"]
    result = await run.decide({"type": "respond", "message": "Alice is on leave; do not mail."})
    assert outbox.count() == 0
    assert tool_results(result["messages"]) == [
        ("c1", "success", "Alice is on leave; do not mail.")
    ]
    assert len(run.model.prompts) == 2  # nothing left to run: back to the model


async def test_unknown_edited_name_is_an_error_result_listing_the_tools(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send()), DONE])
    await run.start()
    result = await run.decide(edit(name="send_mail"))
    assert outbox.count() == 0
    assert pending(result) is None
    assert tool_results(result["messages"]) == [
        ("c1", "error",
         "Error: send_mail is not a valid tool, try one of [search_contacts, send_email].")
    ]


async def test_args_failing_the_tools_schema_are_an_error_result_naming_the_field(
    outbox: Outbox,
) -> None:
    run = Run(outbox, [asks(send()), DONE])
    await run.start()
    args = {"to": "alice@example.com", "body": "No subject."}
    result = await run.decide(edit(args))
    assert outbox.count() == 0
    assert pending(result) is None  # the action no longer waits for a decision
    assert tool_results(result["messages"]) == [
        ("c1", "error",
         "Error invoking tool 'send_email' with kwargs {'to': 'alice@example.com', "
         "'body': 'No subject.'} with error:\n subject: Field required\n"
         " Please fix the error and try again.")
    ]


async def test_calls_without_review_run_even_when_the_others_are_rejected(outbox: Outbox) -> None:
    run = Run(outbox, [asks(search("Alice", "s1"), send(BOB, "c1"), search("Bob", "s2")), DONE])
    value = pending(await run.start())
    assert [a["name"] for a in value["action_requests"]] == ["send_email"]  # only the gated one
    result = await run.decide({"type": "reject", "message": "Not this one"})
    assert outbox.count() == 0
    # every call of the message has exactly one result, in the model's order of calls
    results = tool_results(result["messages"])
    assert sorted(r[0] for r in results) == ["c1", "s1", "s2"]
    assert ("c1", "error", "Not this one") in results
    assert ("s1", "success", "Alice Wong <alice@example.com>") in results
    assert ("s2", "success", "Bob Tan <bob@example.com>") in results


async def test_mixed_decisions_each_call_gets_exactly_one_result(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send(SEED_ARGS, "c1"), send(BOB, "c2")), DONE])
    value = pending(await run.start())
    assert [a["args"]["to"] for a in value["action_requests"]] == [
        "alice@example.com", "bob@example.com"
    ]
    # seed 000's two-action body
    result = await run.decide({"type": "reject", "message": "Not this one"}, {"type": "approve"})
    assert [r["to"] for r in outbox.rows()] == ["bob@example.com"]
    assert sorted(r[:2] for r in tool_results(result["messages"])) == [
        ("c1", "error"), ("c2", "success")
    ]


async def test_another_approval_after_resuming_stops_again_with_a_new_payload(
    outbox: Outbox,
) -> None:
    run = Run(outbox, [asks(send()), asks(send(BOB, "c2")), DONE])
    await run.start()
    second = await run.decide({"type": "approve"})
    value = pending(second)
    assert value is not None
    assert [a["args"] for a in value["action_requests"]] == [BOB]
    assert outbox.count() == 1
    await run.decide({"type": "approve"})
    assert [r["to"] for r in outbox.rows()] == ["alice@example.com", "bob@example.com"]


async def test_fewer_decisions_reject_the_rest_with_no_decision_and_extras_are_ignored(
    outbox: Outbox,
) -> None:
    run = Run(outbox, [asks(send(SEED_ARGS, "c1"), send(BOB, "c2")), DONE])
    await run.start()
    result = await run.decide({"type": "approve"})
    assert [r["to"] for r in outbox.rows()] == ["alice@example.com"]
    assert ("c2", "error", NO_DECISION) in tool_results(result["messages"])

    extra = Run(outbox, [asks(send(BOB, "c9")), DONE])
    await extra.start()
    result = await extra.decide({"type": "reject"}, {"type": "approve"}, {"type": "approve"})
    assert [r["to"] for r in outbox.rows()] == ["alice@example.com"]  # nothing more sent
    assert tool_results(result["messages"]) == [("c9", "error", REJECTED_BY_USER_MESSAGE)]


@pytest.mark.parametrize(
    "resume",
    [
        {"decisions": ["approve"]},
        {"decisions": [{"type": "postpone"}]},
        {"decisions": [{"type": "respond", "message": "not allowed here"}]},
        {"decisions": [{"type": "edit"}]},
        {"decisions": "approve"},
        "approve",
    ],
)
async def test_unusable_decisions_on_a_direct_resume_never_run_the_tool(
    outbox: Outbox, resume: Any
) -> None:
    run = Run(outbox, [asks(send()), DONE])
    await run.start()
    result = await run.resume(resume)
    assert outbox.count() == 0
    assert tool_results(result["messages"]) == [("c1", "error", NO_DECISION)]


async def test_an_edit_renamed_to_another_reviewed_tool_is_reviewed_again(outbox: Outbox) -> None:
    run = Run(outbox, [asks(search("Alice", "c1")), DONE], interrupt_on={
        "search_contacts": True,
        "send_email": {"allowed_decisions": ["approve", "reject"]},
    })
    first = pending(await run.start())
    assert [a["name"] for a in first["action_requests"]] == ["search_contacts"]
    second = await run.decide(edit(SEED_ARGS, name="send_email"))
    assert outbox.count() == 0  # the edit did not skip send_email's own review
    assert pending(second) == {
        "action_requests": [{"name": "send_email", "args": SEED_ARGS,
                             "description": "Tool `send_email` is awaiting approval"}],
        "review_configs": [{"action_name": "send_email",
                            "allowed_decisions": ["approve", "reject"]}],
    }
    done = await run.decide({"type": "approve"})
    assert [r["to"] for r in outbox.rows()] == ["alice@example.com"]
    assert tool_results(done["messages"]) == [
        ("c1", "success", "Email #1 sent to alice@example.com with subject 'Meeting'.")
    ]


async def test_args_schema_guards_a_direct_resume_too(outbox: Outbox) -> None:
    schema = {"type": "object", "required": ["to", "subject", "body"],
              "properties": {"to": {"const": "alice@example.com"}}}
    run = Run(outbox, [asks(send()), DONE],
              interrupt_on={"send_email": {"args_schema": schema}})
    value = pending(await run.start())
    assert value["review_configs"][0]["args_schema"] == schema
    result = await run.decide(edit({**EDITED_ARGS, "to": "eve@example.com"}))
    assert outbox.count() == 0
    assert tool_results(result["messages"]) == [
        ("c1", "error", "'edited_action.args' for 'send_email' does not match its schema at "
                        "'to': 'alice@example.com' was expected")
    ]


async def test_the_run_context_overrides_the_policy_for_that_run(outbox: Outbox) -> None:
    # the application's override: remove send_email's review, add search_contacts'
    run = Run(outbox, [asks(send(), search()), DONE])
    context = {"interrupt_on": {"send_email": False, "search_contacts": True}}
    value = pending(await run.start(context=context))
    assert [a["name"] for a in value["action_requests"]] == ["search_contacts"]
    await run.decide({"type": "approve"}, context=context)
    assert outbox.count() == 1  # send_email ran without review in this run

    again = Run(outbox, [asks(send()), DONE])  # the graph's own policy is untouched
    assert pending(await again.start()) is not None


async def test_settings_from_the_wire_only_add_reviews(outbox: Outbox) -> None:
    run = Run(outbox, [asks(send(), search()), DONE])
    run.config["configurable"] = with_run_context(run.config["configurable"], RunContext(
        language="id", interrupt_on={"send_email": False, "search_contacts": True},
    ))
    value = pending(await run.start())
    assert [a["name"] for a in value["action_requests"]] == ["send_email", "search_contacts"]
    assert value["action_requests"][1]["description"] == "Tool `search_contacts` menunggu persetujuan"
