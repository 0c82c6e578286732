"""core/bounds.py's walks of a document and of a client value, against an oracle: the
depth-first walk they replaced (round twenty-five), changed to collect every violation instead
of raising the first. A value is refused exactly when the oracle finds a violation, and the
refusal is one of the violations found (the walk's order decides which, when there are
several); a document with a float at or past 2**63 is read again from its text."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llamon_agent.core.bounds import (
    ENVELOPE_DEPTH,
    INT64_MAX,
    INT64_MIN,
    Limits,
    check_document,
    check_value,
)
from llamon_agent.errors import A2AError

LIMITS = Limits(max_depth=6)

Violation = tuple[str, str | None]  # (error class, its data's "limit")


def _nodes(value: Any) -> list[tuple[Any, int]]:
    """Every node with its depth, as the replaced ``_walk`` gave them."""
    out, stack = [], [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            out.append((node, depth + 1))
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            out.append((node, depth + 1))
            stack.extend((child, depth + 1) for child in node)
        else:
            out.append((node, depth))
    return out


def document_violations(value: Any) -> set[Violation]:
    found: set[Violation] = set()
    for node, depth in _nodes(value):
        if depth > LIMITS.max_depth + ENVELOPE_DEPTH:
            found.add(("LimitExceededError", "max_depth"))
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and not INT64_MIN <= node <= INT64_MAX:
            found.add(("LimitExceededError", "number"))
    return found


def value_violations(value: Any) -> set[Violation]:
    found: set[Violation] = set()
    for node, depth in _nodes(value):
        if depth > LIMITS.max_depth:
            found.add(("LimitExceededError", "max_depth"))
        if node is None or isinstance(node, bool):
            continue
        if isinstance(node, str):
            if "\x00" in node:
                found.add(("InvalidParamsError", None))
        elif isinstance(node, int):
            if not INT64_MIN <= node <= INT64_MAX:
                found.add(("LimitExceededError", "number"))
        elif isinstance(node, float):
            if not math.isfinite(node):
                found.add(("LimitExceededError", "number"))
        elif isinstance(node, dict):
            if not all(isinstance(k, str) for k in node):
                found.add(("LimitExceededError", "json"))
            elif any("\x00" in k for k in node):
                found.add(("InvalidParamsError", None))
        elif not isinstance(node, list):
            found.add(("LimitExceededError", "json"))
    return found


def refusal(check: Any, *args: Any) -> Violation | None:
    try:
        check(*args)
    except A2AError as exc:
        return type(exc).__name__, exc.data.get("limit")
    return None


big_ints = st.integers(min_value=INT64_MIN - 10, max_value=INT64_MAX + 10)
scalars = st.one_of(
    st.none(), st.booleans(), big_ints, st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([2.0**63, -(2.0**63), 1e300]),
    st.text(max_size=4), st.sampled_from(["a\x00", "\x00"]),
)


def nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=3), children, max_size=3),
    )


def deepened(value: Any, levels: int, as_list: bool) -> Any:
    for _ in range(levels):
        value = [value] if as_list else {"k": value}
    return value


json_values = st.builds(
    deepened, st.recursive(scalars, nest, max_leaves=12),
    st.integers(min_value=0, max_value=2 * (LIMITS.max_depth + ENVELOPE_DEPTH)), st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_a_document_is_refused_exactly_as_the_oracle_says(value: Any) -> None:
    body = json.dumps(value)
    found = document_violations(value)
    got = refusal(check_document, value, body, LIMITS)
    if found:
        assert got in found
    else:  # a huge float is read again from the text, where it is a float still
        assert got is None


class Opaque:
    pass


odd_scalars = st.one_of(scalars, st.sampled_from([(1, 2), {1}, Opaque(), b"x"]))
odd_keys = st.one_of(st.text(max_size=3), st.sampled_from(["k\x00", 1, None, (1,)]))


def odd_nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(odd_keys, children, max_size=3),
    )


client_values = st.builds(
    deepened, st.recursive(odd_scalars, odd_nest, max_leaves=12),
    st.integers(min_value=0, max_value=2 * LIMITS.max_depth), st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(client_values)
def test_a_client_value_is_refused_exactly_as_the_oracle_says(value: Any) -> None:
    found = value_violations(value)
    got = refusal(check_value, value, LIMITS, "params.metadata")
    if found:
        assert got in found
    else:  # within the bounds by every node; only its size as JSON is left
        assert got is None or got == ("LimitExceededError", "max_data_bytes")


@pytest.mark.parametrize(("value", "limit"), [
    (deepened("x", LIMITS.max_depth + ENVELOPE_DEPTH, True), None),
    (deepened("x", LIMITS.max_depth + ENVELOPE_DEPTH + 1, False), "max_depth"),
    ({"a": [1, {"b": INT64_MAX + 1}]}, "number"),
    ({"a": [True, None, "s", 1.5, INT64_MIN]}, None),
    (INT64_MIN - 1, "number"),
])
def test_a_document_at_and_past_each_bound(value: Any, limit: str | None) -> None:
    got = refusal(check_document, value, json.dumps(value), LIMITS)
    assert got == (None if limit is None else ("LimitExceededError", limit))


def test_a_huge_integer_read_as_a_float_is_found_in_the_text() -> None:
    body = '{"n": 123456789012345678901234567890}'
    assert refusal(check_document, {"n": 1.2345678901234568e29}, body, LIMITS) == (
        "LimitExceededError", "number")
    assert refusal(check_document, {"n": 1e29}, '{"n": 1e29}', LIMITS) is None


@pytest.mark.parametrize(("value", "expected"), [
    (deepened(1, LIMITS.max_depth, False), None),
    (deepened(1, LIMITS.max_depth + 1, True), ("LimitExceededError", "max_depth")),
    ({"k": ["a", {"b\x00": 1}]}, ("InvalidParamsError", None)),
    ({"k": [{1: "a"}]}, ("LimitExceededError", "json")),
    ([float("nan")], ("LimitExceededError", "number")),
    ({"t": (1, 2)}, ("LimitExceededError", "json")),
    ("a\x00b", ("InvalidParamsError", None)),
    ({"s": "x" * 100}, None),
])
def test_a_client_value_at_and_past_each_bound(value: Any, expected: Violation | None) -> None:
    assert refusal(check_value, value, LIMITS, "params.metadata") == expected
