"""A typed line and the question it answers: an answer, a decision, or a message in words."""

from __future__ import annotations

import pytest

from llamon_agent.chat.agents import ListedAgent
from llamon_agent.chat.prompt import (
    MAX_EDIT_CHARS,
    MAX_LINE_CHARS,
    Decision,
    EditWanted,
    InputError,
    Picked,
    Typed,
    read_agent_choice,
    read_answer,
    read_decision,
    read_edited_args,
)
from llamon_agent.chat.review import review_actions
from tests.chat.questions import document_question, question, review


def test_a_number_picks_that_choice() -> None:
    assert read_answer("1", document_question()) == Picked("passport")
    assert read_answer(" 2 ", document_question()) == Picked("id_card")


def test_a_label_or_a_value_picks_that_choice() -> None:
    assert read_answer("주민등록증", document_question()) == Picked("id_card")
    assert read_answer("Passport", document_question()) == Picked("passport")


def test_other_words_are_free_text() -> None:
    assert read_answer("my driving licence", document_question()) == Typed("my driving licence")
    assert read_answer("1990-01-01", question({"question": "생년월일을 알려주세요."})) == Typed(
        "1990-01-01")


def test_an_unknown_choice_number_is_explained() -> None:
    answer = read_answer("3", document_question())
    assert answer == InputError("there is no choice 3: type 1 to 2, a label, or your own answer")


def test_free_text_refused_when_the_question_does_not_allow_it() -> None:
    answer = read_answer("maybe", document_question(free_text_allowed=False))
    assert answer == InputError("choose one of the choices: type 1 to 2 or a label")


def test_several_choices_when_the_question_allows_them() -> None:
    assert read_answer("1, 2", document_question(multi_select=True)) == Picked(
        ["passport", "id_card"])
    assert read_answer("1, 7", document_question(multi_select=True)) == InputError(
        "there is no choice 7: type 1 to 2, a label, or your own answer")


def test_empty_and_overlong_lines() -> None:
    assert read_answer("  ", document_question()) == InputError(
        "type an answer (or /quit to leave)")
    long = read_answer("x" * (MAX_LINE_CHARS + 1), document_question())
    assert long == InputError(f"that line is too long: at most {MAX_LINE_CHARS} characters")


def test_review_decisions() -> None:
    (action,) = review_actions(review())
    assert read_decision("approve", action) == Decision({"type": "approve"})
    assert read_decision("1", action) == Decision({"type": "approve"})
    assert read_decision("reject", action) == Decision({"type": "reject"})
    assert read_decision("reject  not now ", action) == Decision(
        {"type": "reject", "message": "not now"})
    assert read_decision("edit", action) == EditWanted()
    assert read_decision('edit {"to": "bob@example.com", "subject": "Hi"}', action) == Decision(
        {"type": "edit", "edited_action": {"name": "send_email",
                                            "args": {"to": "bob@example.com", "subject": "Hi"}}})


def test_a_decision_the_review_does_not_allow() -> None:
    (action,) = review_actions(review(allowed=["approve", "reject"]))
    assert read_decision("edit", action) == InputError(
        "'edit' is not allowed here: type approve or reject (or its number)")
    assert read_decision("respond later", action) == InputError(
        "'respond' is not allowed here: type approve or reject (or its number)")
    assert read_decision("3", action) == InputError(
        "there is no decision 3: type approve or reject (or its number)")
    assert read_decision("maybe", action) == InputError(
        "'maybe' is not a decision: type approve or reject (or its number)")


def test_respond_needs_a_message() -> None:
    (action,) = review_actions(review(allowed=["approve", "respond"]))
    assert read_decision("respond", action) == InputError(
        "respond needs a message: respond YOUR MESSAGE")
    assert read_decision("respond it is sent already", action) == Decision(
        {"type": "respond", "message": "it is sent already"})


def test_edited_arguments_must_be_a_json_object() -> None:
    (action,) = review_actions(review())
    assert read_edited_args("{not json", action) == InputError(
        "that is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)); type the arguments as one JSON object")
    assert read_edited_args("[1, 2]", action) == InputError(
        "the arguments must be a JSON object ({\"name\": value, ...}), not a list")
    assert read_edited_args("x" * (MAX_EDIT_CHARS + 1), action) == InputError(
        f"the edited arguments are too long: at most {MAX_EDIT_CHARS} characters")
    assert read_edited_args(' {"to": "c@x.org"} ', action) == Decision(
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "c@x.org"}}})


def test_review_actions_with_their_allowed_decisions() -> None:
    (action,) = review_actions(review({"to": "a@b.c"}))
    assert (action.name, action.description, action.args, action.allowed) == (
        "send_email", "Tool `send_email` is awaiting approval", {"to": "a@b.c"},
        ("approve", "edit", "reject"))


def test_agent_choice_by_number_or_id() -> None:
    agents = [ListedAgent("document-review", "Document review", ""),
              ListedAgent("email-assistant", "Email assistant", "")]
    assert read_agent_choice("2", agents) == "email-assistant"
    assert read_agent_choice("document-review", agents) == "document-review"
    assert read_agent_choice("9", agents) == InputError(
        "there is no agent 9: type 1 to 2, or an agent's id")


@pytest.mark.parametrize("line", ["/quit", " /quit ", "/exit"])
def test_quit_is_not_an_answer(line: str) -> None:
    from llamon_agent.chat.prompt import is_quit

    assert is_quit(line)
