"""Bounds on everything a client sends: sizes, counts, nesting, and numbers the store can hold.

Every value from outside passes through here once, at the edge (the JSON-RPC endpoint, the
REST bodies, tool arguments before a tool runs), so that nothing is stored that cannot be read
back. Why each bound exists:

* **depth**: pydantic's JSON parser reads at most ~250 levels back and msgpack has its own
  recursion limit; a value nested deeper than that is accepted by a lax server, stored, and then
  poisons every later read of the task (docs/limits.md). The default (32) is far below both.
* **integers outside signed 64-bit, NaN, Infinity**: LangGraph's msgpack serialiser cannot hold
  them, and JSON parsers silently turn huge integers into floats (``10**29`` -> ``1e+29``), so
  they are detected while parsing (:func:`loads`), not in the parsed values.
* **sizes and counts**: every stored checkpoint carries the whole graph state, so one large
  answer is paid for at every later step of the task.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import (
    InvalidParamsError,
    JSONParseError,
    LimitExceededError,
    PayloadTooLargeError,
)
from .principal import has_control_characters

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "Limits",
    "check_document",
    "check_id",
    "check_text",
    "check_value",
    "loads",
    "parse_json",
]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Limits:
    """The edge limits; every one is configurable through ``create_app(limits=...)`` and the
    CLI (``llamon-agent serve --max-depth ...``). The defaults are documented in
    ``docs/limits.md``."""

    #: bytes of one request body (JSON-RPC and REST); refused before the rest is read
    max_body_bytes: int = 1 * MiB
    #: nesting of any one client value (a data part, metadata, edited tool arguments)
    max_depth: int = 32
    #: characters of one text part (or of a REST ``message``)
    max_text_chars: int = 64 * KiB
    #: parts of one message
    max_parts: int = 32
    #: bytes of one data part, metadata object or edited argument set, encoded as JSON
    max_data_bytes: int = 64 * KiB
    #: characters of one file part's base64 ``bytes``
    max_file_bytes: int = 512 * KiB
    #: characters of an id a client chooses (messageId, contextId, taskId, interruptId)
    max_id_chars: int = 256
    #: bytes of one stored task (history, artifacts, status, as the store encodes them): a
    #: message that would make its task larger is refused; what it bounds is in docs/storage.md
    max_task_bytes: int = 4 * MiB
    #: characters of a push notification config's webhook ``url``
    max_url_chars: int = 2 * KiB
    #: characters of a push notification config's ``token`` and ``authentication.credentials``
    max_token_chars: int = 1 * KiB
    #: push notification configs of one task (``tasks/pushNotificationConfig/set``)
    max_push_configs: int = 10

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, got {value!r}")


def parse_json(body: bytes | str, limits: Limits) -> Any:
    """A client's JSON document, size and syntax checked (orjson: strict UTF-8, no NaN or
    Infinity, no lone surrogates). Numbers and nesting are checked by :func:`check_document`,
    so that a caller can read the request id first. Raises ``PayloadTooLargeError``,
    ``JSONParseError`` or (beyond orjson's own nesting limit) ``LimitExceededError``."""
    if len(body) > limits.max_body_bytes:
        raise PayloadTooLargeError(data={"limit": "max_body_bytes", "max": limits.max_body_bytes})
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc):
            raise _too_deep(None, limits) from None
        raise JSONParseError() from None


#: nesting an envelope may add around the client values it carries (the JSON-RPC request,
#: params, message, parts, a part): the document as a whole may be this much deeper
ENVELOPE_DEPTH = 8


def check_document(value: Any, body: bytes | str, limits: Limits) -> None:
    """The whole parsed document: every number storable exactly, nesting within the limit
    plus :data:`ENVELOPE_DEPTH` (each client value is then held to the limit itself by
    :func:`check_value`).

    orjson turns integers beyond 64 bits into floats, so a document with any float at or
    beyond 2**63 in magnitude is parsed again with the standard library, whose integer hook
    sees the digits as they were sent.

    Every request's document passes here: the containers are walked a level at a time and
    the strings, most of a document, cost one type test each (bench/README.md, "Speed, round
    twenty-five")."""
    deepest = limits.max_depth + ENVELOPE_DEPTH
    huge_float = _huge_document_number(value)
    level = _containers_of(value)
    depth = 0
    while level:
        depth += 1
        if depth > deepest:
            raise _too_deep(None, limits)
        below: list[Any] = []
        for node in level:
            for child in node.values() if isinstance(node, dict) else node:
                kind = type(child)
                if kind is str or kind is bool or child is None:
                    continue
                if kind is dict or kind is list or isinstance(child, (dict, list)):
                    below.append(child)
                elif _huge_document_number(child):
                    huge_float = True
        level = below
    if huge_float:
        json.loads(body, parse_int=_checked_int)


def _containers_of(value: Any) -> list[Any]:
    """The first level of a walk: the value itself when it is an object or an array."""
    return [value] if isinstance(value, (dict, list)) else []


def _huge_document_number(node: Any) -> bool:
    """Whether ``node`` is a float to read again from the text (an integer beyond 64 bits
    parsed as one); raises for an integer beyond 64 bits."""
    if isinstance(node, bool):
        return False
    if isinstance(node, int):
        if not INT64_MIN <= node <= INT64_MAX:
            raise _bad_integer(None)
        return False
    return isinstance(node, float) and abs(node) >= 2.0**63


def _too_deep(field: str | None, limits: Limits) -> LimitExceededError:
    where = field or "the JSON document"
    return LimitExceededError(
        f"{where} is nested deeper than {limits.max_depth} levels",
        limit="max_depth", field=field, maximum=limits.max_depth,
    )


def _bad_integer(field: str | None) -> LimitExceededError:
    where = field or "the JSON document"
    return LimitExceededError(
        f"{where} holds an integer outside signed 64-bit, which the store cannot hold exactly",
        limit="number", field=field,
    )


def _checked_int(text: str) -> int:
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise _bad_integer(None)
    return value


def loads(body: bytes | str, limits: Limits) -> Any:
    """:func:`parse_json` then :func:`check_document`: for bodies with no envelope to read."""
    value = parse_json(body, limits)
    check_document(value, body, limits)
    return value


def check_value(value: Any, limits: Limits, field: str) -> None:
    """A client value that will be stored (a data part, metadata, tool arguments): within the
    depth and size limits, every number storable, every key a string, nothing but JSON types.
    Raises ``LimitExceededError`` naming ``field`` and the limit. Walked as
    :func:`check_document` walks a document, a level at a time."""
    if not isinstance(value, (dict, list)):
        _check_scalar(value, field)
    level = _containers_of(value)
    depth = 0
    while level:
        depth += 1
        if depth > limits.max_depth:
            raise _too_deep(field, limits)
        below: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                _check_keys(node, field)
                children: Iterable[Any] = node.values()
            else:
                children = node
            for child in children:
                kind = type(child)
                if kind is str:
                    if "\x00" in child:
                        raise _nul(field)
                elif kind is dict or kind is list or isinstance(child, (dict, list)):
                    below.append(child)
                elif child is not None and kind is not bool:
                    _check_scalar(child, field)
        level = below
    size = len(orjson.dumps(value))
    if size > limits.max_data_bytes:
        raise LimitExceededError(
            f"{field} is {size} bytes as JSON, over the limit of {limits.max_data_bytes}",
            limit="max_data_bytes", field=field, maximum=limits.max_data_bytes,
        )


def _check_keys(node: dict[Any, Any], field: str) -> None:
    if not all(isinstance(k, str) for k in node):
        raise LimitExceededError(f"{field} has an object key that is not a string",
                                 limit="json", field=field)
    if any("\x00" in k for k in node):
        raise _nul(field)


def _check_scalar(node: Any, field: str) -> None:
    """A value of :func:`check_value` that is neither an object nor an array."""
    if node is None or isinstance(node, bool):
        return
    if isinstance(node, str):
        if "\x00" in node:
            raise _nul(field)
    elif isinstance(node, int):
        if not INT64_MIN <= node <= INT64_MAX:
            raise _bad_integer(field)
    elif isinstance(node, float):
        if not math.isfinite(node):
            raise LimitExceededError(f"{field} holds NaN or Infinity", limit="number",
                                     field=field)
    else:
        raise LimitExceededError(f"{field} holds a {type(node).__name__}, which is not JSON",
                                 limit="json", field=field)


def check_text(text: str, limits: Limits, field: str) -> None:
    if len(text) > limits.max_text_chars:
        raise LimitExceededError(
            f"{field} has {len(text)} characters, over the limit of {limits.max_text_chars}",
            limit="max_text_chars", field=field, maximum=limits.max_text_chars,
        )
    if "\x00" in text:
        raise _nul(field)


def _nul(field: str) -> InvalidParamsError:
    """U+0000 cannot be stored on every backend (PostgreSQL's text and JSONB refuse it): it is
    refused on all of them, so a conversation never works on one server and fails on another."""
    return InvalidParamsError(
        f"{field} contains U+0000 (NUL), which cannot be stored",
        data={"field": field, "reason": "NUL character"},
    )


def check_id(value: str | None, limits: Limits, field: str) -> None:
    """An identifier a client chose: at most ``max_id_chars`` characters, none of them a control
    character (storage keys separate a caller's space from the id with one: core/principal.py)."""
    if value is None:
        return
    if len(value) > limits.max_id_chars:
        raise LimitExceededError(
            f"{field} has {len(value)} characters, over the limit of {limits.max_id_chars}",
            limit="max_id_chars", field=field, maximum=limits.max_id_chars,
        )
    if has_control_characters(value):
        raise InvalidParamsError(
            f"{field} must not contain control characters",
            data={"field": field, "reason": "control character in an id"},
        )
