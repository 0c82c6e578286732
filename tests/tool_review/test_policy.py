"""``ReviewPolicy`` and ``build_review_request``: who is reviewed, and the payload rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llamon_agent import InterruptOnConfig, ReviewPolicy
from llamon_agent.tool_review import build_review_request
from llamon_agent.tool_review.policy import parse_wire_override
from tests.tool_review.helpers import SEED_ARGS, SEED_PAYLOAD, call

THREE = ["approve", "edit", "reject"]


def _allowed(policy: ReviewPolicy) -> dict[str, list[str]]:
    return {name: c.allowed_decisions for name, c in policy.interrupt_on.items()}


def test_true_false_config_and_the_shorthand() -> None:
    policy = ReviewPolicy.build(
        {"send_email": True, "delete": False, "run_sql": {"allowed_decisions": ["approve", "reject"]},
         "ask": InterruptOnConfig(["respond"])},
        tools_requiring_approval=["search_contacts", "delete"],
    )
    # False wins over the shorthand for the same tool; absent tools are not reviewed
    assert _allowed(policy) == {
        "search_contacts": THREE, "send_email": THREE, "run_sql": ["approve", "reject"],
        "ask": ["respond"],
    }
    assert policy.config_for("delete") is None
    assert policy.config_for("unlisted") is None
    assert _allowed(ReviewPolicy.build(tools_requiring_approval=["send_email"])) == {
        "send_email": THREE
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"allowed_decisions": []}, "non-empty list"),
        ({"allowed_decisions": ["approve", "postpone"]}, "unknown decision type(s) ['postpone']"),
        ({"allowed_decisions": "approve"}, "non-empty list"),
        ({"allowed": ["approve"]}, "unknown field(s) ['allowed']"),
        ({"args_schema": {"type": "nonsense"}}, "args_schema is not a valid JSON Schema"),
        ({"description": 5}, "description must be a text or a function"),
        ("yes", "must be True, False or an InterruptOnConfig"),
    ],
)
def test_bad_entries_are_refused_when_the_policy_is_built(entry: Any, message: str) -> None:
    with pytest.raises(ValueError, match="interrupt_on\\['send_email'\\]") as caught:
        ReviewPolicy.build({"send_email": entry})
    assert message in str(caught.value)


def test_merge_is_the_applications_override_add_is_the_wires() -> None:
    base = ReviewPolicy.build({"send_email": True, "run_sql": True})
    merged = base.merge({"send_email": {"allowed_decisions": ["approve"]}, "run_sql": False,
                         "search_contacts": True})
    assert _allowed(merged) == {"send_email": ["approve"], "search_contacts": THREE}
    added = base.add({"send_email": {"allowed_decisions": ["approve"]}, "run_sql": False,
                      "search_contacts": {"allowed_decisions": ["approve", "reject"]}})
    # the wire cannot remove (run_sql) or weaken (send_email) a review, only add one
    assert _allowed(added) == {"send_email": THREE, "run_sql": THREE,
                               "search_contacts": ["approve", "reject"]}
    assert base.merge(None) is base and base.add({}) is base


def test_descriptions() -> None:
    tool_call = call("send_email", dict(SEED_ARGS), "c1")
    fixed = ReviewPolicy.build({"send_email": True})
    assert fixed.describe(tool_call, "id") == "Tool `send_email` menunggu persetujuan"
    assert fixed.describe(tool_call, "en") == "Tool `send_email` is awaiting approval"
    prefixed = ReviewPolicy.build({"send_email": True}, description_prefix="请在工具运行前审核本次调用")
    assert prefixed.describe(tool_call, "id") == (
        "请在工具运行前审核本次调用\n\nTool: send_email\nArgs: " + json.dumps(SEED_ARGS)
    )
    text = ReviewPolicy.build({"send_email": {"description": "执行前请审核这条 SQL。"}},
                              description_prefix="ignored")
    assert text.describe(tool_call) == "执行前请审核这条 SQL。"
    dynamic = ReviewPolicy.build(
        {"send_email": InterruptOnConfig(description=lambda c: f"Mail to {c['args']['to']}?")}
    )
    assert dynamic.describe(tool_call) == "Mail to alice@example.com?"


def test_the_seed_payload_exactly() -> None:
    policy = ReviewPolicy.build(tools_requiring_approval=["send_email"])
    request = build_review_request([call("send_email", dict(SEED_ARGS), "c1")], policy, "id")
    assert request == SEED_PAYLOAD
    assert json.loads(json.dumps(request)) == request


def test_only_reviewed_calls_in_model_order_one_per_call() -> None:
    policy = ReviewPolicy.build({"send_email": True,
                                 "run_sql": {"allowed_decisions": ["approve", "reject"]}})
    calls = [
        call("search_contacts", {"query": "Alice"}, "c1"),
        call("run_sql", {"sql": "select 1"}, "c2"),
        call("send_email", {"to": "b@example.com"}, "c3"),
        call("search_contacts", {"query": "Bob"}, "c4"),
        call("send_email", {"to": "a@example.com"}, "c5"),
    ]
    request = build_review_request(calls, policy, "en")
    assert request is not None
    assert [(a["name"], a["args"]) for a in request["action_requests"]] == [
        ("run_sql", {"sql": "select 1"}),
        ("send_email", {"to": "b@example.com"}),
        ("send_email", {"to": "a@example.com"}),
    ]
    assert [c["action_name"] for c in request["review_configs"]] == [
        a["name"] for a in request["action_requests"]
    ]
    assert [c["allowed_decisions"] for c in request["review_configs"]] == [
        ["approve", "reject"], THREE, THREE
    ]
    assert build_review_request([calls[0]], policy) is None


def test_payload_is_plain_json_and_carries_args_schema_when_given() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque"

    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    policy = ReviewPolicy.build({"send_email": {"args_schema": schema}})
    request = build_review_request([call("send_email", {"to": Opaque(), "n": {1: 2}}, "c1")],
                                   policy, "en")
    assert request == {
        "action_requests": [{"name": "send_email", "args": {"to": "opaque", "n": {"1": 2}},
                             "description": "Tool `send_email` is awaiting approval"}],
        "review_configs": [{"action_name": "send_email", "allowed_decisions": THREE,
                            "args_schema": schema}],
    }
    assert json.loads(json.dumps(request)) == request


def test_wire_overrides_are_parsed_strictly() -> None:
    assert parse_wire_override({"search_contacts": True, "x": False}) == {
        "search_contacts": True, "x": False
    }
    assert parse_wire_override({"s": {"allowedDecisions": ["approve"], "argsSchema": {}}}) == {
        "s": {"allowed_decisions": ["approve"], "args_schema": {}}
    }
    bad: Any
    for bad in ([], "send_email", {"s": "yes"}, {"s": {"allowedDecisions": []}},
                {"s": {"description": 5}}, {"": True}, {"s": {"when": "always"}}):
        with pytest.raises(ValueError):
            parse_wire_override(bad)
