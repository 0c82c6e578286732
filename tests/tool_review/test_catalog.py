"""The catalogue: the request's language, the server's default, every text in both languages."""

from __future__ import annotations

import pytest

from llamon_agent.tool_review import catalog
from tests.tool_review.helpers import MESSAGES


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("id", "id"),
        ("id-ID", "id"),
        ("ID", "id"),
        ("id-ID,id;q=0.9,en-US;q=0.8,en;q=0.7", "id"),
        ("en-US,en;q=0.9,id;q=0.8", "en"),
        ("fr-FR, id;q=0.5", "id"),
        ("fr, en;q=0.8, id;q=0.9", "id"),
        ("id;q=0, en", "en"),
        ("indonesian", "en"),  # primary tags match exactly, not by prefix
        ("fr", "en"),
        ("*", "en"),
        ("", "en"),
        (None, "en"),
        ("id;q=abc, en;q=0.1", "en"),
    ],
)
def test_language_of_matches_the_primary_tag(header: str | None, expected: str) -> None:
    assert catalog.language_of(header) == expected


def test_server_default_comes_from_llamon_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMON_LANGUAGE", "id")
    assert catalog.default_language() == "id"
    assert catalog.language_of(None) == "id"
    assert catalog.language_of("fr") == "id"
    assert catalog.language_of("en") == "en"  # the request wins over the default
    assert catalog.resolve(None) == "id"
    monkeypatch.setenv("LLAMON_LANGUAGE", "de")  # unsupported: English
    assert catalog.default_language() == "en"
    monkeypatch.delenv("LLAMON_LANGUAGE")
    assert catalog.default_language() == "en"


def test_the_default_language_reads_its_own_variable_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """It is read on every request: another variable that is malformed (the server read it,
    or refused to start, long before) does not fail a request's language."""
    monkeypatch.setenv("LLAMON_LANGUAGE", "id")
    monkeypatch.setenv("LLAMON_PORT", "not a port")
    monkeypatch.setenv("LLAMON_SWEEP_SECONDS", "-1")
    assert catalog.default_language() == "id"
    assert catalog.language_of("fr") == "id"


@pytest.mark.parametrize("language", ["id", "en"])
def test_every_text_in_both_languages(language: str) -> None:
    expected = MESSAGES[language]
    text = catalog.text
    assert text("no_pending_review", language) == expected["no_pending"]
    assert text("review_pending", language) == expected["review_pending"]
    assert text("decision_count", language, n_actions=2, n_decisions=1) == expected["count_2_1"]
    allowed = ["approve", "edit", "reject"]
    assert text("unknown_decision", language, type="postpone", allowed=allowed) == expected["postpone"]
    assert text("unknown_decision", language, type=None, allowed=allowed) == expected["none"]
    assert text("edit_needs_action", language) == expected["edit_needs"]
    assert text("edited_action_shape", language) == expected["shape"]
    assert text("respond_needs_message", language) == expected["respond_needs"]
    assert text("description", language, name="send_email") == expected["description"]
    assert text("summary", language, names="send_email") == expected["summary"]


def test_schema_text_names_the_field_in_both_languages() -> None:
    fields = {"name": "send_email", "field": "subject", "error": "'subject' is a required property"}
    assert catalog.text("edited_args_schema", "en", **fields) == (
        "'edited_action.args' for 'send_email' does not match its schema at 'subject': "
        "'subject' is a required property"
    )
    assert catalog.text("edited_args_schema", "id", **fields) == (
        "'edited_action.args' untuk 'send_email' tidak sesuai skema di 'subject': "
        "'subject' is a required property"
    )


def test_unknown_language_falls_back_to_the_default() -> None:
    assert catalog.text("review_pending", "xx") == MESSAGES["en"]["review_pending"]
