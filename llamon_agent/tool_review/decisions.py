"""Decisions on pending tool calls: the seed's constants and ``validate_decisions``.

A decision list answers a ``pending_review`` payload, one decision per action, in order
(seed 000). ``validate_decisions`` checks it *before* anything resumes, in the seed's order,
stopping at the first error:

1. an action is pending (``NoPendingReviewError``);
2. the number of decisions equals the number of actions;
3. each decision in order: its type (an object whose ``type`` is one of the action's
   ``allowed_decisions``), then its ``edited_action`` (present for ``edit``; a string ``name``
   and an object ``args``; ``args`` valid against the action's ``args_schema`` when the policy
   gives one), and for ``respond`` a text ``message``.

Every failure in 2-3 is an ``InvalidReviewDecisionError``. A failed validation changes nothing,
so the same actions stay pending and a correct list can follow. (``ReviewPendingError``, a new
message while actions wait, is raised by the runtime for a text answer to a review.) The three
exceptions live in the one error tree (``llamon_agent.errors``) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from jsonschema import validators
from jsonschema.exceptions import ValidationError, best_match

from ..core.bounds import Limits, check_value
from ..errors import InvalidReviewDecisionError, NoPendingReviewError, ReviewPendingError
from . import catalog

__all__ = [
    "ALLOWED_DECISIONS",
    "DECISION_TYPES",
    "NO_DECISION",
    "REJECTED_BY_USER_MESSAGE",
    "InvalidReviewDecisionError",
    "NoPendingReviewError",
    "ReviewPendingError",
    "allowed_for",
    "args_schema_error",
    "check_allowed",
    "validate_decisions",
]

#: seed 000: the decisions of an action unless its policy says otherwise (a list, as printed)
ALLOWED_DECISIONS: Final[list[str]] = ["approve", "edit", "reject"]
#: every decision type there is; ``respond`` only where a tool's ``allowed_decisions`` has it
DECISION_TYPES: Final = ("approve", "edit", "reject", "respond")
#: what the model reads for a ``reject`` without a (non-empty) message
REJECTED_BY_USER_MESSAGE: Final = "User rejected this action. It was not executed."
#: what the model reads for an action left without a decision on a direct resume
NO_DECISION: Final = "No decision was given for this action. It was not executed."


def validate_decisions(
    decisions: Any, pending_review: Mapping[str, Any] | None, *, language: str | None = None,
    limits: Limits | None = None,
) -> list[dict[str, Any]]:
    """Check ``decisions`` against ``pending_review``; return them as plain decisions.

    The result keeps only each decision's own fields (``approve``: none; ``edit``:
    ``edited_action``; ``reject``: a non-empty ``message``; ``respond``: ``message``), so
    fields that do not belong to a type are ignored, as the seed says. Edited arguments must
    be storable JSON within ``limits`` (``LimitExceededError`` otherwise): a tool never runs
    with arguments whose result the checkpoint could not save.
    """
    actions = _actions(pending_review)
    if not actions:
        raise NoPendingReviewError(catalog.text("no_pending_review", language))
    received = len(decisions) if isinstance(decisions, (list, tuple)) else 0
    if received != len(actions) or not isinstance(decisions, (list, tuple)):
        raise InvalidReviewDecisionError(
            catalog.text("decision_count", language, n_actions=len(actions), n_decisions=received)
        )
    configs = _configs(pending_review)
    checked = [
        _checked(decision, action, configs[i] if i < len(configs) else {}, language)
        for i, (decision, action) in enumerate(zip(decisions, actions, strict=True))
    ]
    for i, decision in enumerate(checked):
        edited = decision.get("edited_action")
        if isinstance(edited, Mapping):
            check_value(edited.get("args"), limits or Limits(), f"decisions[{i}].edited_action.args")
    return checked


def args_schema_error(
    name: str, args: Mapping[str, Any], schema: Mapping[str, Any] | None,
    language: str | None = None,
) -> str | None:
    """The catalogue text for ``args`` failing ``schema``, naming the field; ``None`` if valid."""
    if not schema:
        return None
    validator_class = validators.validator_for(schema)
    error = best_match(validator_class(schema).iter_errors(dict(args)))
    if error is None:
        return None
    return catalog.text(
        "edited_args_schema", language, name=name, field=_field(error), error=error.message
    )


def allowed_for(config: Mapping[str, Any]) -> list[str]:
    """An action's allowed decisions as its review config states them (default: the seed's)."""
    allowed = config.get("allowed_decisions")
    if isinstance(allowed, list) and allowed and all(isinstance(d, str) for d in allowed):
        return list(allowed)
    return list(ALLOWED_DECISIONS)


def _actions(pending_review: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not isinstance(pending_review, Mapping):
        return []
    actions = pending_review.get("action_requests")
    if not isinstance(actions, list):
        return []
    return [a if isinstance(a, Mapping) else {} for a in actions]


def _configs(pending_review: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    configs = pending_review.get("review_configs") if isinstance(pending_review, Mapping) else None
    if not isinstance(configs, list):
        return []
    return [c if isinstance(c, Mapping) else {} for c in configs]


def _checked(
    decision: Any, action: Mapping[str, Any], config: Mapping[str, Any], language: str | None
) -> dict[str, Any]:
    allowed = allowed_for(config)
    kind = decision.get("type") if isinstance(decision, Mapping) else None
    if not isinstance(decision, Mapping) or not isinstance(kind, str) or kind not in allowed:
        raise InvalidReviewDecisionError(
            catalog.text("unknown_decision", language, type=kind, allowed=allowed)
        )
    if kind == "approve":
        return {"type": "approve"}
    if kind == "edit":
        return {"type": "edit", "edited_action": _edited_action(decision, config, language)}
    message = decision.get("message")
    if kind == "respond":
        if not isinstance(message, str) or not message:
            raise InvalidReviewDecisionError(catalog.text("respond_needs_message", language))
        return {"type": "respond", "message": message}
    if isinstance(message, str) and message:
        return {"type": "reject", "message": message}
    return {"type": "reject"}


def _edited_action(
    decision: Mapping[str, Any], config: Mapping[str, Any], language: str | None
) -> dict[str, Any]:
    edited = decision.get("edited_action")
    if edited is None:
        raise InvalidReviewDecisionError(catalog.text("edit_needs_action", language))
    name = edited.get("name") if isinstance(edited, Mapping) else None
    args = edited.get("args") if isinstance(edited, Mapping) else None
    if not isinstance(name, str) or not isinstance(args, Mapping):
        raise InvalidReviewDecisionError(catalog.text("edited_action_shape", language))
    schema = config.get("args_schema")
    problem = args_schema_error(name, args, schema if isinstance(schema, Mapping) else None, language)
    if problem is not None:
        raise InvalidReviewDecisionError(problem)
    return {"name": name, "args": dict(args)}


def _field(error: ValidationError) -> str:
    """The offending field as a dotted path (the missing property for ``required``)."""
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = [p for p in error.validator_value if p not in error.instance]
        if missing:
            path.append(str(missing[0]))
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        extra = sorted(p for p in error.instance if p not in known)
        if extra:
            path.append(extra[0])
    return ".".join(path) or "args"


def check_allowed(allowed: Sequence[str]) -> list[str]:
    """A policy's ``allowed_decisions``: a non-empty list of known types, without repeats."""
    if isinstance(allowed, str) or not isinstance(allowed, Sequence) or not allowed:
        raise ValueError("allowed_decisions must be a non-empty list of decision types")
    unknown = [d for d in allowed if d not in DECISION_TYPES]
    if unknown:
        raise ValueError(
            f"unknown decision type(s) {unknown!r}; choose from {list(DECISION_TYPES)!r}"
        )
    return list(dict.fromkeys(allowed))
