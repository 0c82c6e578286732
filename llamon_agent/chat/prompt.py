"""A line the user typed, read against what it answers: an answer, a decision, or what is
wrong with it in words (the chat shows it and asks again). Pure: no input, no output."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client import Choice, Question
from .agents import ListedAgent
from .review import ReviewAction

__all__ = [
    "MAX_EDIT_CHARS",
    "MAX_LINE_CHARS",
    "Decision",
    "EditWanted",
    "InputError",
    "Picked",
    "Typed",
    "is_quit",
    "read_agent_choice",
    "read_answer",
    "read_decision",
    "read_edited_args",
]

MAX_LINE_CHARS = 8000
MAX_EDIT_CHARS = 64 * 1024
QUIT_COMMANDS = frozenset({"/quit", "/exit"})


@dataclass(frozen=True, slots=True)
class InputError:
    message: str


@dataclass(frozen=True, slots=True)
class Picked:
    """One choice's value (a list of values for a multi-select question)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Typed:
    """Free text."""

    text: str


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of a tool review, as sent (``{"type": ...}``)."""

    body: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EditWanted:
    """``edit`` with no arguments on the line: the arguments are to be edited."""


def is_quit(line: str) -> bool:
    return line.strip().lower() in QUIT_COMMANDS


def _too_long(line: str) -> InputError | None:
    if len(line) > MAX_LINE_CHARS:
        return InputError(f"that line is too long: at most {MAX_LINE_CHARS} characters")
    return None


def read_answer(line: str, question: Question) -> Picked | Typed | InputError:
    """A choice by its number, label or value; otherwise free text where it is allowed."""
    if (error := _too_long(line)) is not None:
        return error
    text = line.strip()
    if not text:
        return InputError("type an answer (or /quit to leave)")
    choices = question.choices
    if not choices:
        return Typed(text)
    if question.multi_select and "," in text:
        values = []
        for item in (p.strip() for p in text.split(",")):
            found = _choice(item, choices)
            if isinstance(found, InputError):
                return found
            if found is None:
                return InputError(f"{item!r} is not one of the choices: {_how(question)}")
            values.append(found.value)
        return Picked(values)
    found = _choice(text, choices)
    if isinstance(found, InputError):
        return found
    if found is not None:
        return Picked([found.value] if question.multi_select else found.value)
    if question.free_text_allowed:
        return Typed(text)
    return InputError(f"choose one of the choices: {_how(question)}")


def _how(question: Question) -> str:
    span = f"type 1 to {len(question.choices)}"
    return f"{span}, a label, or your own answer" if question.free_text_allowed else (
        f"{span} or a label")


def _choice(text: str, choices: Sequence[Choice]) -> Choice | InputError | None:
    if text.isdecimal():
        number = int(text)
        if 1 <= number <= len(choices):
            return choices[number - 1]
        return InputError(
            f"there is no choice {number}: type 1 to {len(choices)}, a label, or your own answer")
    folded = text.casefold()
    for matches in (
        lambda c: c.label == text,
        lambda c: isinstance(c.value, str) and c.value == text,
        lambda c: c.label.casefold() == folded,
        lambda c: isinstance(c.value, str) and c.value.casefold() == folded,
    ):
        for choice in choices:
            if matches(choice):
                return choice
    return None


def read_decision(line: str, action: ReviewAction) -> Decision | EditWanted | InputError:
    """``approve``, ``edit [JSON]``, ``reject [MESSAGE]``, ``respond MESSAGE``, or a decision's
    number in the list shown; only what the action allows."""
    if (error := _too_long(line)) is not None:
        return error
    word, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    allowed = action.allowed
    how = f"type {' or '.join(allowed)} (or its number)"
    if word.isdecimal():
        number = int(word)
        if not 1 <= number <= len(allowed):
            return InputError(f"there is no decision {number}: {how}")
        word = allowed[number - 1]
    word = word.lower()
    if word not in ("approve", "edit", "reject", "respond"):
        shown = word or line.strip()
        return InputError(f"{shown!r} is not a decision: {how}" if shown else f"type a decision: "
                          f"{how}")
    if word not in allowed:
        return InputError(f"{word!r} is not allowed here: {how}")
    if word == "approve":
        return Decision({"type": "approve"})
    if word == "edit":
        return read_edited_args(rest, action) if rest else EditWanted()
    if word == "reject":
        return Decision({"type": "reject", "message": rest} if rest else {"type": "reject"})
    if not rest:
        return InputError("respond needs a message: respond YOUR MESSAGE")
    return Decision({"type": "respond", "message": rest})


def read_edited_args(text: str, action: ReviewAction) -> Decision | InputError:
    """The new arguments of ``action``: one JSON object (the server checks them against the
    tool's schema; its message is shown when it refuses)."""
    if len(text) > MAX_EDIT_CHARS:
        return InputError(f"the edited arguments are too long: at most {MAX_EDIT_CHARS} "
                          "characters")
    try:
        args = json.loads(text)
    except ValueError as exc:
        return InputError(f"that is not JSON ({exc}); type the arguments as one JSON object")
    if not isinstance(args, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(args), "a number")
        return InputError(f"the arguments must be a JSON object ({{\"name\": value, ...}}), "
                          f"not {kind}")
    return Decision({"type": "edit", "edited_action": {"name": action.name, "args": args}})


def read_agent_choice(line: str, agents: Sequence[ListedAgent]) -> str | InputError:
    """An agent's id, by its number in the list shown or by the id itself."""
    if (error := _too_long(line)) is not None:
        return error
    text = line.strip()
    if text.isdecimal():
        number = int(text)
        if 1 <= number <= len(agents):
            return agents[number - 1].id
        return InputError(f"there is no agent {number}: type 1 to {len(agents)}, or an "
                          "agent's id")
    for agent in agents:
        if agent.id == text:
            return agent.id
    return InputError(f"{text!r} is not one of the agents: type 1 to {len(agents)}, or an "
                      "agent's id")
