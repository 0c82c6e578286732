"""The seed 004 document-review agent, and an agent that asks until the user is done."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent.core.hitl import HITLInterrupt, HITLOption, HITLQuestion
from llamon_agent.settings import Settings


class ReviewState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    doc_type: str | None
    birthday: str | None
    result: dict[str, Any]


async def begin_review(state: ReviewState) -> dict[str, Any]:
    """Each new task on a context is a fresh review."""
    return {"doc_type": None, "birthday": None}


async def ask_document(state: ReviewState) -> dict[str, Any] | HITLInterrupt:
    if state.get("doc_type"):
        return {}  # already answered: move on
    question = HITLQuestion(
        prompt="어떤 서류를 검증할까요?",
        options=[
            HITLOption(label="여권", value="passport"),
            HITLOption(label="주민등록증", value="id_card"),
        ],
    )
    return HITLInterrupt(payload=question.to_payload(), thread_id=state["thread_id"], key="doc_type")


async def ask_birthday(state: ReviewState) -> dict[str, Any] | HITLInterrupt:
    birthday = state.get("birthday")
    if not birthday:
        # return, do not raise: the SDK sends input-required
        return HITLInterrupt(
            payload={"question": "생년월일을 알려주세요."},
            thread_id=state["thread_id"],
            key="birthday",
        )
    return {}


async def finish_review(state: ReviewState) -> dict[str, Any]:
    doc_type, birthday = state.get("doc_type"), state.get("birthday")
    summary = f"Document review ready: {doc_type}, date of birth {birthday}."
    return {
        "result": {"doc_type": doc_type, "birthday": birthday},
        "messages": [AIMessage(content=summary)],
    }


def document_review_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(ReviewState)
    graph.add_node("begin_review", begin_review)
    graph.add_node("ask_document", ask_document)
    graph.add_node("ask_birthday", ask_birthday)
    graph.add_node("finish_review", finish_review)
    graph.add_edge(START, "begin_review")
    graph.add_edge("begin_review", "ask_document")
    graph.add_edge("ask_document", "ask_birthday")
    graph.add_edge("ask_birthday", "finish_review")
    graph.add_edge("finish_review", END)
    return graph


DONE_WORDS = frozenset({"done", "finished", "끝", "완료", "그만"})


class NotesState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    notes: list[str]
    hitl_answer: str | None
    result: dict[str, Any]


async def begin_notes(state: NotesState) -> dict[str, Any]:
    return {"notes": [], "hitl_answer": None}


def _is_done(answer: str) -> bool:
    return unicodedata.normalize("NFKC", answer).strip().casefold() in DONE_WORDS


async def collect(state: NotesState) -> dict[str, Any] | HITLInterrupt:
    answer, notes = state.get("hitl_answer"), list(state.get("notes") or [])
    if answer is not None and _is_done(str(answer)):
        text = f"Done. {len(notes)} note(s): " + "; ".join(notes) if notes else "Done. No notes."
        return {"result": {"notes": notes}, "messages": [AIMessage(content=text)]}
    if answer is not None:
        notes.append(str(answer))
        prompt = f"Noted ({len(notes)}). Anything else? Say 'done' when you are finished."
    else:
        prompt = "What should I note? Say 'done' when you are finished."
    return HITLInterrupt(
        payload={"question": prompt},
        thread_id=state["thread_id"],
        update={"notes": notes, "hitl_answer": None},
    )


def until_done_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(NotesState)
    graph.add_node("begin_notes", begin_notes)
    graph.add_node("collect", collect)
    graph.add_edge(START, "begin_notes")
    graph.add_edge("begin_notes", "collect")
    graph.add_edge("collect", END)
    return graph


def configured_model() -> Any:
    """The chat model named by ``LLAMON_MODEL`` (``provider:model``), or none (offline)."""
    name = Settings.from_env().model
    if not name:
        return None
    from langchain.chat_models import init_chat_model  # optional dependency

    return init_chat_model(name)
