"""Which tool calls wait for a human, and how (seed 002's ``interrupt_on``, seed 000's list).

``interrupt_on`` maps a tool name to

* ``True``: review with seed 000's ``ALLOWED_DECISIONS`` (approve, edit, reject);
* ``False``: no review (the same as not naming the tool);
* an :class:`InterruptOnConfig` (or a mapping with its fields): ``allowed_decisions`` (a
  non-empty subset of approve, edit, reject, respond), ``description`` (a text, or a function
  of the tool call returning one) and ``args_schema`` (a JSON Schema the arguments of an
  ``edit`` must satisfy; enforced before anything resumes).

``tools_requiring_approval`` (seed 000) is the shorthand for ``True`` entries; an explicit
``interrupt_on`` entry for the same tool wins. ``description_prefix`` (seed 002) builds the
description of tools without their own: the prefix, the tool name and the JSON arguments.
Without a prefix the description is seed 000's fixed ``Tool `NAME` ...`` text in the request's
language.

A run may change the policy in two ways:

* :meth:`ReviewPolicy.merge`: the application's own override (the LangGraph run context,
  ``context={"interrupt_on": {...}}``): entries replace the saved ones, ``False`` removes one.
* :meth:`ReviewPolicy.add`: an override that came from the wire (A2A metadata
  ``interruptOn``): it can only *add* reviews for tools that have none; it never removes or
  weakens one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError

from ..core.deadlines import seconds_of
from . import catalog
from .decisions import ALLOWED_DECISIONS, check_allowed

__all__ = [
    "InterruptOn",
    "InterruptOnConfig",
    "ReviewPolicy",
    "ToolCallDescription",
    "parse_wire_override",
]

ToolCallDescription = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class InterruptOnConfig:
    """How one tool's calls are reviewed. ``expires_in`` (seconds or a ``timedelta``): how long
    a review of its calls may wait before the agent's ``WaitPolicy.tool_reviews`` action (reject
    unless it says cancel) applies; a review of several calls expires at the earliest."""

    allowed_decisions: list[str] = field(default_factory=lambda: list(ALLOWED_DECISIONS))
    description: str | ToolCallDescription | None = None
    args_schema: Mapping[str, Any] | None = None
    expires_in: float | timedelta | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_decisions", check_allowed(self.allowed_decisions))
        if self.expires_in is not None:
            object.__setattr__(self, "expires_in", seconds_of(self.expires_in))
        if self.description is not None and not (
            isinstance(self.description, str) or callable(self.description)
        ):
            raise ValueError("description must be a text or a function of the tool call")
        if self.args_schema is not None:
            if not isinstance(self.args_schema, Mapping):
                raise ValueError("args_schema must be a JSON Schema object")
            try:
                validators.validator_for(self.args_schema).check_schema(self.args_schema)
            except SchemaError as exc:
                raise ValueError(f"args_schema is not a valid JSON Schema: {exc.message}") from exc


InterruptOn = Mapping[str, "bool | InterruptOnConfig | Mapping[str, Any]"]


def _config(name: str, value: Any) -> InterruptOnConfig | None:
    if value is True:
        return InterruptOnConfig()
    if value is False or value is None:
        return None
    if isinstance(value, InterruptOnConfig):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - {"allowed_decisions", "description", "args_schema", "expires_in"}
        if unknown:
            raise ValueError(f"interrupt_on[{name!r}]: unknown field(s) {sorted(unknown)}")
        try:
            return InterruptOnConfig(
                allowed_decisions=value.get("allowed_decisions", list(ALLOWED_DECISIONS)),
                description=value.get("description"),
                args_schema=value.get("args_schema"),
                expires_in=value.get("expires_in"),
            )
        except ValueError as exc:
            raise ValueError(f"interrupt_on[{name!r}]: {exc}") from None
    raise ValueError(
        f"interrupt_on[{name!r}] must be True, False or an InterruptOnConfig, got {value!r}"
    )


@dataclass(frozen=True)
class ReviewPolicy:
    """The reviewed tools (only those: a tool not listed runs without review)."""

    interrupt_on: Mapping[str, InterruptOnConfig] = field(default_factory=dict)
    description_prefix: str | None = None

    @classmethod
    def build(
        cls,
        interrupt_on: InterruptOn | None = None,
        *,
        tools_requiring_approval: Iterable[str] | None = None,
        description_prefix: str | None = None,
    ) -> ReviewPolicy:
        if isinstance(tools_requiring_approval, str):
            raise ValueError("tools_requiring_approval is a list of tool names")
        entries: dict[str, Any] = dict.fromkeys(tools_requiring_approval or (), True)
        entries.update(interrupt_on or {})
        return cls(_resolved(entries), description_prefix)

    def config_for(self, tool_name: str) -> InterruptOnConfig | None:
        return self.interrupt_on.get(tool_name)

    def merge(self, override: InterruptOn | None) -> ReviewPolicy:
        """The application's per-run override: its entries replace ours, ``False`` removes."""
        if not override:
            return self
        merged: dict[str, InterruptOnConfig] = dict(self.interrupt_on)
        for name, value in override.items():
            config = _config(name, value)
            if config is None:
                merged.pop(name, None)
            else:
                merged[name] = config
        return ReviewPolicy(merged, self.description_prefix)

    def add(self, override: InterruptOn | None) -> ReviewPolicy:
        """An override from the wire: only tools without a review get one."""
        if not override:
            return self
        added: dict[str, InterruptOnConfig] = dict(self.interrupt_on)
        for name, value in override.items():
            config = _config(name, value)
            if config is not None and name not in added:
                added[name] = config
        return ReviewPolicy(added, self.description_prefix)

    def describe(self, tool_call: Mapping[str, Any], language: str | None = None) -> str:
        """The reviewer-facing description of a reviewed call."""
        name = str(tool_call.get("name"))
        config = self.interrupt_on.get(name)
        custom = config.description if config is not None else None
        if isinstance(custom, str):
            return custom
        if custom is not None:
            return str(custom(tool_call))
        if self.description_prefix is not None:
            args = json.dumps(tool_call.get("args") or {}, ensure_ascii=False, default=str)
            return f"{self.description_prefix}\n\nTool: {name}\nArgs: {args}"
        return catalog.text("description", language, name=name)


def _resolved(entries: Mapping[str, Any]) -> dict[str, InterruptOnConfig]:
    resolved: dict[str, InterruptOnConfig] = {}
    for name, value in entries.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool names must be non-empty texts, got {name!r}")
        config = _config(name, value)
        if config is not None:
            resolved[name] = config
    return resolved


def parse_wire_override(value: Any) -> dict[str, Any]:
    """The ``interruptOn`` a client sent (A2A message or request metadata), as plain JSON.

    ``{tool: true | false | {"allowed_decisions" | "allowedDecisions", "description" (text),
    "args_schema" | "argsSchema", "expires_in" | "expiresIn" (seconds)}}``. Raises ``ValueError`` on anything else. The result is
    only ever *added* to an agent's policy (:meth:`ReviewPolicy.add`).
    """
    if not isinstance(value, Mapping):
        raise ValueError("interruptOn must be an object mapping tool names to true or a config")
    plain: dict[str, Any] = {}
    for name, entry in value.items():
        if isinstance(entry, bool):
            plain[name] = entry
            continue
        if not isinstance(entry, Mapping):
            raise ValueError(f"interruptOn[{name!r}] must be true, false or an object")
        renamed = {
            {"allowedDecisions": "allowed_decisions", "argsSchema": "args_schema",
             "expiresIn": "expires_in"}.get(k, k): v
            for k, v in entry.items()
        }
        if "description" in renamed and not isinstance(renamed["description"], str):
            raise ValueError(f"interruptOn[{name!r}].description must be a text")
        _config(name, renamed)  # raises on a bad entry
        plain[name] = renamed
    _resolved(plain)  # names
    return plain
