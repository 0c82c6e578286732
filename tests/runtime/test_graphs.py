"""How user graphs behave under the HITL runtime: node run counts, graph kinds, failures,
subgraphs and parallel questions."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import BaseModel

from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from tests.conftest import assert_valid, serve

from .helpers import question_text, result_data, state_of, status_parts, status_text

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    a: str | None
    b: str | None
    c: str | None
    x: str | None
    y: str | None
    hitl_answer: Any
    log: Annotated[list[str], operator.add]
    result: dict[str, Any]


def asker(key: str, runs: list[tuple[str, dict[str, Any]]], question: str | None = None):
    """A node that asks for ``key`` once, recording every run and the answers it saw."""

    async def node(state: State) -> dict[str, Any] | HITLInterrupt:
        runs.append((key, {k: state.get(k) for k in ("a", "b", "c", "x", "y", "hitl_answer")}))
        if state.get(key) is None:
            return HITLInterrupt({"question": question or f"{key}?"}, state["thread_id"], key=key)
        return {}

    return node


def finisher(*keys: str):
    async def finish(state: State) -> dict[str, Any]:
        return {"result": {k: state.get(k) for k in keys}}

    return finish


NONE_SEEN = {"a": None, "b": None, "c": None, "x": None, "y": None, "hitl_answer": None}


def seen(**values: Any) -> dict[str, Any]:
    return {**NONE_SEEN, **values}


# ---------------------------------------------------------------- node-runs-twice rule


async def test_asking_node_runs_exactly_twice_and_neighbours_once() -> None:
    calls = {"before": 0, "after": 0}
    runs: list[tuple[str, dict[str, Any]]] = []

    async def before(state: State) -> dict[str, Any]:
        calls["before"] += 1
        return {}

    async def after(state: State) -> dict[str, Any]:
        calls["after"] += 1
        return {"result": {"a": state.get("a")}}

    g = StateGraph(State)
    g.add_node("before", before)
    g.add_node("ask_a", asker("a", runs))
    g.add_node("after", after)
    g.add_edge(START, "before")
    g.add_edge("before", "ask_a")
    g.add_edge("ask_a", "after")
    g.add_edge("after", END)
    async with serve([Agent("counter", g)]) as client:
        first = await client.send("go", context_id="ctx-count")
        assert question_text(first) == "a?"
        assert calls == {"before": 1, "after": 0}
        assert len(runs) == 1
        done = await client.send("answer-a", context_id="ctx-count")
    assert result_data(done) == {"a": "answer-a"}
    assert calls == {"before": 1, "after": 1}
    assert runs == [("a", seen()), ("a", seen(a="answer-a"))]


async def test_three_sequential_questions_each_node_runs_twice_without_replay() -> None:
    runs: list[tuple[str, dict[str, Any]]] = []
    g = StateGraph(State)
    for key in ("a", "b", "c"):
        g.add_node(f"ask_{key}", asker(key, runs))
    g.add_node("finish", finisher("a", "b", "c"))
    g.add_edge(START, "ask_a")
    g.add_edge("ask_a", "ask_b")
    g.add_edge("ask_b", "ask_c")
    g.add_edge("ask_c", "finish")
    g.add_edge("finish", END)
    async with serve([Agent("three", g)]) as client:
        first = await client.send("go", context_id="ctx-3")
        assert question_text(first) == "a?"
        second = await client.send("1", context_id="ctx-3")
        assert question_text(second) == "b?"
        third = await client.send("2", context_id="ctx-3")
        assert question_text(third) == "c?"
        done = await client.send("3", context_id="ctx-3")
    assert {first["id"], second["id"], third["id"], done["id"]} == {first["id"]}
    assert result_data(done) == {"a": "1", "b": "2", "c": "3"}
    assert runs == [
        ("a", seen()),
        ("a", seen(a="1")),
        ("b", seen(a="1")),
        ("b", seen(a="1", b="2")),
        ("c", seen(a="1", b="2")),
        ("c", seen(a="1", b="2", c="3")),
    ]


async def test_default_answer_key_is_hitl_answer() -> None:
    runs: list[Any] = []

    async def ask(state: State) -> dict[str, Any] | HITLInterrupt:
        runs.append(state.get("hitl_answer"))
        if state.get("hitl_answer") is None:
            return HITLInterrupt({"question": "anything?"}, state["thread_id"])
        return {"result": {"answer": state["hitl_answer"]}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("default-key", g)]) as client:
        await client.send("go", context_id="ctx-dk")
        done = await client.send(" as is ", context_id="ctx-dk")
    assert result_data(done) == {"answer": " as is "}
    assert runs == [None, " as is "]


# ---------------------------------------------------------------- graph kinds


def one_question_builder(runs: list[tuple[str, dict[str, Any]]]) -> StateGraph:
    g = StateGraph(State)
    g.add_node("ask_a", asker("a", runs))
    g.add_node("finish", finisher("a"))
    g.add_edge(START, "ask_a")
    g.add_edge("ask_a", "finish")
    g.add_edge("finish", END)
    return g


async def test_precompiled_graph_still_routes_hitl_returns() -> None:
    runs: list[tuple[str, dict[str, Any]]] = []
    compiled = one_question_builder(runs).compile()
    async with serve([Agent("precompiled", compiled)]) as client:
        first = await client.send("go", context_id="ctx-pc")
        assert_valid("Task", first)
        assert state_of(first) == "input-required"
        assert status_parts(first) == [
            {"kind": "text", "text": "a?"},
            {"kind": "data", "data": {"hitl": {"question": "a?"}}},
        ]
        done = await client.send("yes", context_id="ctx-pc")
    assert done["id"] == first["id"]
    assert result_data(done) == {"a": "yes"}
    assert [r[0] for r in runs] == ["a", "a"]


async def test_native_interrupt_becomes_input_required_and_resumes() -> None:
    got: list[Any] = []

    async def ask(state: State) -> dict[str, Any]:
        answer = interrupt({"question": "What is your name?"})
        got.append(answer)
        return {"result": {"name": answer}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("native", g)]) as client:
        first = await client.send("hi", context_id="ctx-native")
        assert_valid("Task", first)
        assert state_of(first) == "input-required"
        assert status_parts(first) == [
            {"kind": "text", "text": "What is your name?"},
            {"kind": "data", "data": {"hitl": {"question": "What is your name?"}}},
        ]
        done = await client.send("  Bob ", context_id="ctx-native")
    assert done["id"] == first["id"]
    assert result_data(done) == {"name": "  Bob "}
    assert got == ["  Bob "]


async def test_failing_node_fails_the_task_with_a_useful_message() -> None:
    async def boom(state: State) -> dict[str, Any]:
        raise ValueError("the ledger is unreachable")

    g = StateGraph(State)
    g.add_node("boom", boom)
    g.add_edge(START, "boom")
    g.add_edge("boom", END)
    async with serve([Agent("boom", g)]) as client:
        task = await client.send("go", context_id="ctx-boom")
        assert_valid("Task", task)
        got = await client.result("tasks/get", {"id": task["id"]})
    assert state_of(task) == "failed"
    assert state_of(got) == "failed"
    text = status_text(task)
    assert text.startswith("The agent failed:")
    assert "ValueError" in text
    assert "the ledger is unreachable" in text
    assert all(p["kind"] != "data" or "hitl" not in p["data"] for p in status_parts(task))


async def test_node_failing_after_an_answer_fails_the_task() -> None:
    async def ask(state: State) -> dict[str, Any] | HITLInterrupt:
        if state.get("a") is None:
            return HITLInterrupt({"question": "a?"}, state["thread_id"], key="a")
        raise RuntimeError(f"cannot use {state['a']}")

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("late-boom", g)]) as client:
        first = await client.send("go", context_id="ctx-late")
        assert state_of(first) == "input-required"
        done = await client.send("zzz", context_id="ctx-late")
    assert done["id"] == first["id"]
    assert state_of(done) == "failed"
    assert status_text(done).startswith("The agent failed:")
    assert "cannot use zzz" in status_text(done)


async def test_wrong_thread_id_fails_naming_thread_id() -> None:
    async def ask(state: State) -> HITLInterrupt:
        return HITLInterrupt({"question": "a?"}, "some-other-context", key="a")

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("wrong-thread", g)]) as client:
        task = await client.send("go", context_id="ctx-wt")
    assert state_of(task) == "failed"
    text = status_text(task)
    assert text.startswith("The agent failed:")
    assert "thread_id" in text
    assert "some-other-context" in text
    assert "ctx-wt" in text


async def test_subgraph_node_returning_hitl_interrupt_asks_and_resumes_inside() -> None:
    calls = {"inner_before": 0}
    runs: list[tuple[str, dict[str, Any]]] = []

    async def inner_before(state: State) -> dict[str, Any]:
        calls["inner_before"] += 1
        return {"log": ["inner_before"]}

    inner = StateGraph(State)
    inner.add_node("inner_before", inner_before)
    inner.add_node("inner_ask", asker("a", runs, "inner a?"))
    inner.add_edge(START, "inner_before")
    inner.add_edge("inner_before", "inner_ask")
    inner.add_edge("inner_ask", END)

    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_node("finish", finisher("a"))
    outer.add_edge(START, "sub")
    outer.add_edge("sub", "finish")
    outer.add_edge("finish", END)
    async with serve([Agent("outer", outer)]) as client:
        first = await client.send("go", context_id="ctx-sub")
        assert state_of(first) == "input-required", first["status"]
        assert status_parts(first) == [
            {"kind": "text", "text": "inner a?"},
            {"kind": "data", "data": {"hitl": {"question": "inner a?"}}},
        ]
        done = await client.send("from-user", context_id="ctx-sub")
    assert done["id"] == first["id"]
    assert result_data(done) == {"a": "from-user"}
    assert calls == {"inner_before": 1}  # resumed inside the subgraph, not from its start
    assert [r[0] for r in runs] == ["a", "a"]


async def test_subgraph_native_interrupt_asks_once_and_resumes_inside() -> None:
    calls = {"inner_before": 0}

    async def inner_before(state: State) -> dict[str, Any]:
        calls["inner_before"] += 1
        return {}

    async def inner_ask(state: State) -> dict[str, Any]:
        return {"a": interrupt({"question": "inner native?"})}

    inner = StateGraph(State)
    inner.add_node("inner_before", inner_before)
    inner.add_node("inner_ask", inner_ask)
    inner.add_edge(START, "inner_before")
    inner.add_edge("inner_before", "inner_ask")
    inner.add_edge("inner_ask", END)

    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_node("finish", finisher("a"))
    outer.add_edge(START, "sub")
    outer.add_edge("sub", "finish")
    outer.add_edge("finish", END)
    async with serve([Agent("outer-native", outer)]) as client:
        first = await client.send("go", context_id="ctx-subn")
        assert question_text(first) == "inner native?"
        done = await client.send("ok", context_id="ctx-subn")
    assert done["id"] == first["id"]
    assert result_data(done) == {"a": "ok"}
    assert calls == {"inner_before": 1}


def join_edges(g: StateGraph, sources: list[str], target: str, waiting: bool) -> None:
    if waiting:
        g.add_edge(sources, target)
    else:
        for source in sources:
            g.add_edge(source, target)


@pytest.mark.parametrize("waiting", [True, False], ids=["waiting-edge", "separate-edges"])
async def test_parallel_questions_are_asked_one_after_another(waiting: bool) -> None:
    runs: list[tuple[str, dict[str, Any]]] = []
    finish_runs: list[dict[str, Any]] = []

    async def finish(state: State) -> dict[str, Any]:
        finish_runs.append({"x": state.get("x"), "y": state.get("y")})
        return {"result": {"x": state.get("x"), "y": state.get("y")}}

    g = StateGraph(State)
    g.add_node("ask_x", asker("x", runs))
    g.add_node("ask_y", asker("y", runs))
    g.add_node("finish", finish)
    g.add_edge(START, "ask_x")
    g.add_edge(START, "ask_y")
    join_edges(g, ["ask_x", "ask_y"], "finish", waiting)
    g.add_edge("finish", END)
    answers = {"x?": "answer-x", "y?": "answer-y"}
    async with serve([Agent("parallel", g)]) as client:
        first = await client.send("go", context_id="ctx-par")
        q1 = question_text(first)
        assert q1 in answers
        assert status_parts(first)[1] == {"kind": "data", "data": {"hitl": {"question": q1}}}
        second = await client.send(answers[q1], context_id="ctx-par")
        assert second["id"] == first["id"]
        q2 = question_text(second)
        assert {q1, q2} == {"x?", "y?"}
        done = await client.send(answers[q2], context_id="ctx-par")
    assert done["id"] == first["id"]
    assert result_data(done) == {"x": "answer-x", "y": "answer-y"}
    assert sorted(r[0] for r in runs) == ["x", "x", "y", "y"]
    assert finish_runs == [{"x": "answer-x", "y": "answer-y"}]


@pytest.mark.parametrize("waiting", [True, False], ids=["waiting-edge", "separate-edges"])
async def test_join_after_one_asking_branch_runs_once_with_the_answer(waiting: bool) -> None:
    """Only one of two parallel branches asks: the join must wait for the answer."""
    runs: list[tuple[str, dict[str, Any]]] = []
    finish_runs: list[dict[str, Any]] = []

    async def set_y(state: State) -> dict[str, Any]:
        return {"y": "computed"}

    async def finish(state: State) -> dict[str, Any]:
        finish_runs.append({"x": state.get("x"), "y": state.get("y")})
        return {"result": {"x": state.get("x"), "y": state.get("y")}}

    g = StateGraph(State)
    g.add_node("ask_x", asker("x", runs))
    g.add_node("set_y", set_y)
    g.add_node("finish", finish)
    g.add_edge(START, "ask_x")
    g.add_edge(START, "set_y")
    join_edges(g, ["ask_x", "set_y"], "finish", waiting)
    g.add_edge("finish", END)
    async with serve([Agent("join", g)]) as client:
        first = await client.send("go", context_id="ctx-join")
        assert question_text(first) == "x?"
        assert finish_runs == []
        done = await client.send("answer-x", context_id="ctx-join")
    assert result_data(done) == {"x": "answer-x", "y": "computed"}
    assert finish_runs == [{"x": "answer-x", "y": "computed"}]


# ---------------------------------------------------------------- more graph shapes


async def test_native_interrupt_with_a_plain_string_value() -> None:
    async def ask(state: State) -> dict[str, Any]:
        return {"result": {"got": interrupt("Plain question?")}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("native-str", g)]) as client:
        first = await client.send("hi", context_id="ctx-ns")
        assert_valid("Task", first)
        assert status_parts(first) == [
            {"kind": "text", "text": "Plain question?"},
            {"kind": "data", "data": {"hitl": {"question": "Plain question?"}}},
        ]
        done = await client.send("fine", context_id="ctx-ns")
    assert result_data(done) == {"got": "fine"}


async def test_native_interrupt_with_an_option_payload_is_normalised() -> None:
    question = HITLQuestion(
        "Colour?",
        options=[HITLOption(label="빨강", value="red"), HITLOption(label="파랑", value="blue")],
    )

    async def ask(state: State) -> dict[str, Any]:
        return {"result": {"got": interrupt(question.to_payload())}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("native-opt", g)]) as client:
        first = await client.send("hi", context_id="ctx-no")
        assert status_parts(first)[1] == {"kind": "data", "data": {"hitl": question.to_payload()}}
        done = await client.send(" 파랑", context_id="ctx-no")
    assert result_data(done) == {"got": "blue"}


async def test_native_node_with_two_interrupts_answers_in_order() -> None:
    async def ask(state: State) -> dict[str, Any]:
        first = interrupt({"question": "first?"})
        second = interrupt({"question": "second?"})
        return {"result": {"first": first, "second": second}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("native-two", g)]) as client:
        q1 = await client.send("hi", context_id="ctx-n2")
        assert question_text(q1) == "first?"
        q2 = await client.send("one", context_id="ctx-n2")
        assert q2["id"] == q1["id"]
        assert question_text(q2) == "second?"
        done = await client.send("two", context_id="ctx-n2")
    assert result_data(done) == {"first": "one", "second": "two"}


async def test_sync_node_may_return_hitl_interrupt() -> None:
    runs: list[Any] = []

    def ask(state: State) -> dict[str, Any] | HITLInterrupt:
        runs.append(state.get("a"))
        if state.get("a") is None:
            return HITLInterrupt({"question": "sync?"}, state["thread_id"], key="a")
        return {"result": {"a": state["a"]}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("sync", g)]) as client:
        first = await client.send("go", context_id="ctx-sync")
        assert question_text(first) == "sync?"
        done = await client.send("yes", context_id="ctx-sync")
    assert result_data(done) == {"a": "yes"}
    assert runs == [None, "yes"]


DOC_CHOICE = HITLQuestion(
    "Which document?",
    options=[
        HITLOption(label="여권", value="passport"),
        HITLOption(label="주민등록증", value="id_card"),
    ],
)


async def test_conditional_edge_out_of_an_asking_node_waits_for_the_answer() -> None:
    routed: list[Any] = []
    visited: list[str] = []

    async def ask(state: State) -> dict[str, Any] | HITLInterrupt:
        visited.append("ask")
        if state.get("a") is None:
            return HITLInterrupt(DOC_CHOICE, state["thread_id"], key="a")
        return {}

    def route(state: State) -> str:
        routed.append(state.get("a"))
        return "on_passport" if state.get("a") == "passport" else "on_id"

    async def on_passport(state: State) -> dict[str, Any]:
        visited.append("on_passport")
        return {"result": {"path": "passport"}}

    async def on_id(state: State) -> dict[str, Any]:
        visited.append("on_id")
        return {"result": {"path": "id_card"}}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_node("on_passport", on_passport)
    g.add_node("on_id", on_id)
    g.add_edge(START, "ask")
    g.add_conditional_edges("ask", route, ["on_passport", "on_id"])
    g.add_edge("on_passport", END)
    g.add_edge("on_id", END)
    async with serve([Agent("cond", g)]) as client:
        first = await client.send("go", context_id="ctx-cond")
        assert question_text(first) == "Which document?"
        assert routed == []  # the user's router never sees the waiting state
        done = await client.send("주민등록증", context_id="ctx-cond")
    assert result_data(done) == {"path": "id_card"}
    assert routed == ["id_card"]
    assert visited == ["ask", "ask", "on_id"]


class ModelState(BaseModel):
    thread_id: str = ""
    a: str | None = None
    result: dict[str, Any] | None = None


async def test_pydantic_state_graph_with_conditional_edge() -> None:
    routed: list[Any] = []

    async def ask(state: ModelState) -> dict[str, Any] | HITLInterrupt:
        if state.a is None:
            return HITLInterrupt(DOC_CHOICE, state.thread_id, key="a")
        return {}

    def route(state: ModelState) -> str:
        routed.append(state.a)
        return "finish"

    async def finish(state: ModelState) -> dict[str, Any]:
        return {"result": {"a": state.a}}

    g = StateGraph(ModelState)
    g.add_node("ask", ask)
    g.add_node("finish", finish)
    g.add_edge(START, "ask")
    g.add_conditional_edges("ask", route, ["finish"])
    g.add_edge("finish", END)
    async with serve([Agent("pydantic", g)]) as client:
        first = await client.send("go", context_id="ctx-pyd")
        assert question_text(first) == "Which document?"
        done = await client.send("PASSPORT", context_id="ctx-pyd")
    assert result_data(done) == {"a": "passport"}
    assert routed == ["passport"]


async def test_node_asking_again_after_a_bad_answer() -> None:
    runs: list[Any] = []

    async def ask_age(state: State) -> dict[str, Any] | HITLInterrupt:
        runs.append(state.get("a"))
        answer = state.get("a")
        if answer is not None and answer.strip().isdigit():
            return {"result": {"age": int(answer)}}
        prompt = "age?" if answer is None else f"{answer!r} is not a number. age?"
        return HITLInterrupt({"question": prompt}, state["thread_id"], key="a", update={"a": None})

    g = StateGraph(State)
    g.add_node("ask_age", ask_age)
    g.add_edge(START, "ask_age")
    g.add_edge("ask_age", END)
    async with serve([Agent("age", g)]) as client:
        first = await client.send("go", context_id="ctx-age")
        assert question_text(first) == "age?"
        second = await client.send("old", context_id="ctx-age")
        assert second["id"] == first["id"]
        assert question_text(second) == "'old' is not a number. age?"
        done = await client.send("42", context_id="ctx-age")
    assert result_data(done) == {"age": 42}
    assert runs == [None, "old", "42"]


def native_parallel_graph() -> StateGraph:
    async def ask_x(state: State) -> dict[str, Any]:
        return {"x": interrupt({"question": "x?"})}

    async def ask_y(state: State) -> dict[str, Any]:
        return {"y": interrupt({"question": "y?"})}

    g = StateGraph(State)
    g.add_node("ask_x", ask_x)
    g.add_node("ask_y", ask_y)
    g.add_node("finish", finisher("x", "y"))
    g.add_edge(START, "ask_x")
    g.add_edge(START, "ask_y")
    g.add_edge(["ask_x", "ask_y"], "finish")
    g.add_edge("finish", END)
    return g


async def test_native_parallel_interrupts_answered_one_at_a_time() -> None:
    answers = {"x?": "ax", "y?": "ay"}
    async with serve([Agent("native-par", native_parallel_graph())]) as client:
        first = await client.send("go", context_id="ctx-np")
        q1 = question_text(first)
        second = await client.send(answers[q1], context_id="ctx-np")
        assert second["id"] == first["id"]
        q2 = question_text(second)
        assert {q1, q2} == {"x?", "y?"}
        done = await client.send(answers[q2], context_id="ctx-np")
    assert result_data(done) == {"x": "ax", "y": "ay"}


async def test_native_parallel_interrupts_answered_with_an_id_map() -> None:
    async with serve([Agent("native-par", native_parallel_graph())]) as client:
        first = await client.send("go", context_id="ctx-npm")
        asked_id = first["status"]["message"]["metadata"]["interruptId"]
        q1 = question_text(first)
        # answer the asked one by id first, then the other by its own announced id
        second = await client.send(
            None, context_id="ctx-npm", data={"resume": {asked_id: f"answer to {q1}"}}
        )
        other_id = second["status"]["message"]["metadata"]["interruptId"]
        assert other_id != asked_id
        q2 = question_text(second)
        done = await client.send(
            None, context_id="ctx-npm", data={"resume": {other_id: f"answer to {q2}"}}
        )
    assert result_data(done) == {"x": "answer to x?", "y": "answer to y?"}


async def test_failed_task_does_not_poison_the_context() -> None:
    async def begin(state: State) -> dict[str, Any]:
        return {"a": None}

    async def ask(state: State) -> dict[str, Any] | HITLInterrupt:
        if state.get("a") is None:
            return HITLInterrupt({"question": "a?"}, state["thread_id"], key="a")
        if state["a"] == "bad":
            raise ValueError("bad answer")
        return {"result": {"a": state["a"]}}

    g = StateGraph(State)
    g.add_node("begin", begin)
    g.add_node("ask", ask)
    g.add_edge(START, "begin")
    g.add_edge("begin", "ask")
    g.add_edge("ask", END)
    async with serve([Agent("poison", g)]) as client:
        first = await client.send("go", context_id="ctx-poison")
        failed = await client.send("bad", context_id="ctx-poison")
        assert failed["id"] == first["id"]
        assert state_of(failed) == "failed"
        fresh = await client.send("go again", context_id="ctx-poison")
        assert fresh["id"] != first["id"]
        assert question_text(fresh) == "a?"
        done = await client.send("good", context_id="ctx-poison")
    assert done["id"] == fresh["id"]
    assert result_data(done) == {"a": "good"}
