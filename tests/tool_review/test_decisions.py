"""``validate_decisions``: the seed's constants, checks, order and texts (no graph involved)."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_agent.errors import (
    InvalidParamsError,
    InvalidReviewDecisionError,
    NoPendingReviewError,
    ReviewError,
    ReviewPendingError,
)
from llamon_agent.tool_review import (
    ALLOWED_DECISIONS,
    NO_DECISION,
    REJECTED_BY_USER_MESSAGE,
    validate_decisions,
)
from tests.tool_review.helpers import EDITED_ARGS, MESSAGES, edit, payload

TWO = {
    "action_requests": [
        {"name": "send_email", "args": {"to": "a@example.com"}, "description": "d"},
        {"name": "send_email", "args": {"to": "b@example.com"}, "description": "d"},
    ],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
    ],
}
SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "pattern": "^[^@]+@example\\.com$"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}


def test_the_seed_constants() -> None:
    assert ALLOWED_DECISIONS == ["approve", "edit", "reject"]
    assert isinstance(ALLOWED_DECISIONS, list)
    assert REJECTED_BY_USER_MESSAGE == "User rejected this action. It was not executed."
    assert NO_DECISION == "No decision was given for this action. It was not executed."


def test_review_errors_are_one_tree_with_the_wire_codes() -> None:
    for cls in (NoPendingReviewError, ReviewPendingError, InvalidReviewDecisionError):
        error = cls("text")
        assert isinstance(error, ReviewError) and isinstance(error, InvalidParamsError)
        assert error.http_status == 400
        assert error.to_error() == {"code": -32602, "message": "text",
                                    "data": {"error": cls.__name__}}


def _error(decisions: Any, pending: Any = None, language: str = "id") -> tuple[type, str]:
    with pytest.raises(ReviewError) as caught:
        validate_decisions(decisions, payload() if pending is None else pending, language=language)
    return type(caught.value), caught.value.message


@pytest.mark.parametrize("language", ["id", "en"])
@pytest.mark.parametrize(
    ("pending", "decisions", "error", "key"),
    [
        # seed 000's validation table, the submit_review column
        ({}, [{"type": "approve"}], NoPendingReviewError, "no_pending"),
        ({"action_requests": [], "review_configs": []}, [], NoPendingReviewError, "no_pending"),
        (None, [], InvalidReviewDecisionError, "count_1_0"),
        (TWO, [{"type": "approve"}], InvalidReviewDecisionError, "count_2_1"),
        (None, [{"type": "approve"}, {"type": "approve"}], InvalidReviewDecisionError, "count_1_2"),
        (None, [{"type": "postpone"}], InvalidReviewDecisionError, "postpone"),
        (None, ["approve"], InvalidReviewDecisionError, "none"),
        (None, [None], InvalidReviewDecisionError, "none"),
        (None, [{"message": "no type"}], InvalidReviewDecisionError, "none"),
        (None, [{"type": "edit"}], InvalidReviewDecisionError, "edit_needs"),
        (None, [{"type": "edit", "edited_action": None}], InvalidReviewDecisionError, "edit_needs"),
        (None, [{"type": "edit", "edited_action": {"args": {}}}], InvalidReviewDecisionError, "shape"),
        (None, [{"type": "edit", "edited_action": {"name": 5, "args": {}}}],
         InvalidReviewDecisionError, "shape"),
        (None, [{"type": "edit", "edited_action": {"name": "send_email"}}],
         InvalidReviewDecisionError, "shape"),
        (None, [{"type": "edit", "edited_action": {"name": "send_email", "args": []}}],
         InvalidReviewDecisionError, "shape"),
        (None, [{"type": "edit", "edited_action": "send_email"}], InvalidReviewDecisionError, "shape"),
        # respond is not among the default decisions: seed 000's "unknown type"
        (None, [{"type": "respond", "message": "hi"}], InvalidReviewDecisionError, "respond"),
    ],
)
def test_the_validation_table(
    language: str, pending: Any, decisions: Any, error: type, key: str
) -> None:
    assert _error(decisions, pending, language) == (error, MESSAGES[language][key])


def test_decisions_that_are_not_a_list_count_as_none_received() -> None:
    assert _error({"type": "approve"}, language="en") == (
        InvalidReviewDecisionError, MESSAGES["en"]["count_1_0"]
    )
    assert _error(None, language="en")[1] == MESSAGES["en"]["count_1_0"]


def test_the_printed_type_follows_what_was_sent() -> None:
    assert _error([{"type": 7}], language="en")[1] == (
        "Decision type 7 is not recognised. Options: ['approve', 'edit', 'reject']"
    )
    assert _error([{"type": "Approve"}], language="id")[1] == (
        "Jenis keputusan 'Approve' tidak dikenal. Pilihan: ['approve', 'edit', 'reject']"
    )


def test_check_order_pending_then_count_then_each_decision_in_order() -> None:
    # nothing pending wins over every other problem
    assert _error([{"type": "postpone"}, 5], {})[0] is NoPendingReviewError
    # the count comes before any decision's type
    assert _error([{"type": "postpone"}, {"type": "edit"}])[1] == MESSAGES["id"]["count_1_2"]
    # decisions in order: the first bad decision is the one reported
    assert _error([{"type": "edit"}, {"type": "postpone"}], TWO)[1] == MESSAGES["id"]["edit_needs"]
    assert _error([{"type": "postpone"}, {"type": "edit"}], TWO)[1] == MESSAGES["id"]["postpone"]
    assert _error([{"type": "approve"}, "x"], TWO)[1] == MESSAGES["id"]["none"]
    # within one decision: its type, then its edited_action
    assert _error([{"type": "postpone", "edited_action": 5}])[1] == MESSAGES["id"]["postpone"]


def test_valid_decisions_keep_only_their_own_fields() -> None:
    decisions = [
        {"type": "approve", "message": "ignored", "edited_action": "ignored"},
        {"type": "reject", "message": "Not this one", "edited_action": {"name": 1}},
    ]
    assert validate_decisions(decisions, TWO) == [
        {"type": "approve"},
        {"type": "reject", "message": "Not this one"},
    ]
    assert validate_decisions([{"type": "reject", "message": ""}], payload()) == [{"type": "reject"}]
    assert validate_decisions([{**edit(), "message": "x"}], payload()) == [edit()]


def test_per_tool_allowed_decisions_list_that_actions_options() -> None:
    only_two = payload(allowed=["approve", "reject"])
    assert _error([edit()], only_two, "id")[1] == (
        "Jenis keputusan 'edit' tidak dikenal. Pilihan: ['approve', 'reject']"
    )
    assert _error([edit()], only_two, "en")[1] == (
        "Decision type 'edit' is not recognised. Options: ['approve', 'reject']"
    )
    assert validate_decisions([{"type": "reject"}], only_two) == [{"type": "reject"}]


def test_respond_where_allowed_needs_a_text_message() -> None:
    with_respond = payload(allowed=["approve", "respond"])
    assert validate_decisions([{"type": "respond", "message": "Use bob"}], with_respond) == [
        {"type": "respond", "message": "Use bob"}
    ]
    for bad in ({"type": "respond"}, {"type": "respond", "message": ""},
                {"type": "respond", "message": 5}):
        assert _error([bad], with_respond, "id") == (
            InvalidReviewDecisionError, MESSAGES["id"]["respond_needs"]
        )
        assert _error([bad], with_respond, "en")[1] == MESSAGES["en"]["respond_needs"]


def test_args_schema_is_enforced_for_edits_naming_the_field() -> None:
    pending = payload()
    pending["review_configs"][0]["args_schema"] = SCHEMA
    assert validate_decisions([edit()], pending) == [edit()]
    missing = {k: v for k, v in EDITED_ARGS.items() if k != "subject"}
    assert _error([edit(missing)], pending, "en")[1] == (
        "'edited_action.args' for 'send_email' does not match its schema at 'subject': "
        "'subject' is a required property"
    )
    assert _error([edit({**EDITED_ARGS, "to": "eve@evil.test"})], pending, "id")[1] == (
        "'edited_action.args' untuk 'send_email' tidak sesuai skema di 'to': "
        "'eve@evil.test' does not match '^[^@]+@example\\\\.com$'"
    )
    assert _error([edit({**EDITED_ARGS, "cc": "x"})], pending, "en")[1].startswith(
        "'edited_action.args' for 'send_email' does not match its schema at 'cc': "
    )
    # the schema constrains edits only: approve and reject do not look at it
    assert validate_decisions([{"type": "approve"}], pending) == [{"type": "approve"}]
