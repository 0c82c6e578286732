"""The REST endpoints under generated and mutated bodies.

``POST /hitl/chat`` and ``POST /hitl/review``: schemathesis generates bodies from the served
``/hitl/openapi.json`` (valid ones, invalid ones, and valid ones with hostile leaves), some
aimed at a thread whose email waits for approval; every reply is checked by schemathesis
(``not_a_server_error``, ``response_schema_conformance``: the documented status codes and
shapes) and by the suite (JSON, never 5xx). ``POST /reviews/{id}/decision``: decision bodies
mutated the same way, with the reviewer token (or a wrong one, or none), on reviews that are
pending, decided or unknown. ``DELETE /contexts/{id}``: contexts made for it, deleted ones,
unknown, hostile and generated ids, with or without a body.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .cases import (
    KNOWN_DECISIONS,
    decision_bodies,
    hostile_review_id,
    listing_query,
)
from .checks import every_task_reads_back, new_stats
from .conftest import examples
from .drive import (
    AUTHS,
    CONTEXT_TARGETS,
    REVIEW_TARGETS,
    Contexts,
    Listing,
    Reviews,
    Served,
    context_case,
    decision_case,
    hitl_case,
    hitl_cases,
    hitl_operation,
    listing_case,
)


@pytest.mark.parametrize("path", ["/hitl/chat", "/hitl/review"])
def test_hitl(served: Served, path: str) -> None:
    stats = new_stats(f"POST {path}, schemathesis [{served.wire.name}]")
    operation = hitl_operation(served, path)

    @settings(max_examples=examples(100))
    @given(case=hitl_cases(operation), data=st.data())
    def one(case: Any, data: st.DataObject) -> None:
        hitl_case(served, path, case, data, stats)

    one()
    stats.stored = every_task_reads_back(served.scene.rpc, served.db)


def test_review_decisions(served: Served) -> None:
    stats = new_stats(f"POST /reviews/{{id}}/decision [{served.wire.name}]")
    reviews = Reviews()

    def known(test: Any) -> Any:
        for body in KNOWN_DECISIONS:
            test = example(drawn=(body, "hard"), target="pending", hostile_id="x",
                           auth="token")(test)
        return test

    @settings(max_examples=examples(80))
    @given(drawn=decision_bodies(), target=st.sampled_from(REVIEW_TARGETS),
           hostile_id=hostile_review_id(), auth=st.sampled_from(AUTHS))
    @known
    def one(drawn: tuple[Any, str], target: str, hostile_id: str, auth: str) -> None:
        decision_case(served, reviews, drawn, target, hostile_id, auth, stats)

    one()
    stats.stored = every_task_reads_back(served.scene.rpc, served.db)


def test_review_listing(served: Served) -> None:
    stats = new_stats(f"GET /reviews?pageSize=&pageToken= [{served.wire.name}]")
    listing = Listing()
    for _ in range(3):  # more than a page of 1 or 2: tokens to send back
        served.scene.parked_review()

    @settings(max_examples=examples(80))
    @given(auth=st.sampled_from(AUTHS), data=st.data())
    @example(auth="token", data=None)
    def one(auth: str, data: st.DataObject | None) -> None:
        # the example: a page of one, whose token later cases send back
        query = ([("pageSize", "1")] if data is None
                 else data.draw(listing_query(listing.tokens), label="query"))
        listing_case(served, listing, query, auth, stats)

    one()
    stats.stored = every_task_reads_back(served.scene.rpc, served.db)


def test_context_delete(served: Served) -> None:
    stats = new_stats(f"DELETE /contexts/{{id}} [{served.wire.name}]")
    contexts = Contexts()

    @settings(max_examples=examples(60))
    @given(target=st.sampled_from(CONTEXT_TARGETS), hostile_id=hostile_review_id(),
           generated=st.text(max_size=300), body=st.one_of(st.none(), st.binary(max_size=64)))
    @example(target="fresh", hostile_id="x", generated="", body=None)
    def one(target: str, hostile_id: str, generated: str, body: bytes | None) -> None:
        context_case(served, contexts, target, hostile_id, generated, body, stats)

    one()
    stats.stored = every_task_reads_back(served.scene.rpc, served.db)
