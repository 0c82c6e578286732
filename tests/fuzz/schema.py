"""The official A2A v0.3 JSON Schema as Hypothesis strategies, and validation against it.

hypothesis-jsonschema would be the library for this, but its last release (0.23.1) fails on
current Hypothesis (it calls a private ``many.more`` that no longer exists). The A2A schema uses
a small subset of JSON Schema (``$ref``, ``anyOf``, ``const``, ``enum``, ``type``,
``properties``/``required``, ``additionalProperties``, ``items``), so a generator for exactly
that subset is a page; anything else in a definition is an error here, not a silent skip.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "tests" / "spec" / "a2a-v0.3.0.schema.json"

#: keywords that only document a schema
_ANNOTATIONS = frozenset({"description", "examples", "default", "title"})
_SUPPORTED = _ANNOTATIONS | {
    "$ref", "anyOf", "const", "enum", "type", "properties", "required",
    "additionalProperties", "items",
}


def schema_path() -> Path:
    """The repository's byte-identical copy (tests/spec/SOURCE.md)."""
    return SCHEMA_PATH


@cache
def a2a_schema() -> dict[str, Any]:
    path = schema_path()
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def schema_errors(definition: str, instance: Any) -> list[str]:
    """Validation errors of ``instance`` against one definition of the schema."""
    from jsonschema import Draft7Validator

    schema = a2a_schema()
    validator = Draft7Validator({**schema, "$ref": f"#/definitions/{definition}"})
    return sorted(f"{list(e.path)}: {e.message}" for e in validator.iter_errors(instance))


# ----------------------------------------------------------------------------- generation

#: text a client might send: any code point but lone surrogates (those go in as escapes, in
#: ``values.py``) and NUL (refused everywhere: ``values.hostile`` sends it), short, so that one
#: example stays cheap to send
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
_SMALL_INT = st.integers(-(2**53), 2**53)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False)


def any_json(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value of exact types (ints within 53 bits, finite floats), small."""
    leaves = st.none() | st.booleans() | _SMALL_INT | _FLOAT | _TEXT
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=max_leaves,
    )


class SchemaStrategies:
    """Strategies for the definitions of one schema; each built once (``$ref`` cycles work)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._definitions: dict[str, Any] = schema["definitions"]
        self._built: dict[str, st.SearchStrategy[Any]] = {}

    def definition(self, name: str) -> st.SearchStrategy[Any]:
        if name not in self._built:
            node = self._definitions[name]
            self._built[name] = st.deferred(lambda: self._node(node))
        return self._built[name]

    def _node(self, node: dict[str, Any]) -> st.SearchStrategy[Any]:
        unknown = set(node) - _SUPPORTED
        if unknown:
            raise ValueError(f"schema keywords not supported by this generator: {unknown}")
        if "$ref" in node:
            return self.definition(node["$ref"].rsplit("/", 1)[-1])
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        if "anyOf" in node:
            return st.one_of([self._node(option) for option in node["anyOf"]])
        kind = node.get("type")
        if kind is None:
            return any_json()
        if isinstance(kind, list):
            return st.one_of([self._node({**node, "type": k}) for k in kind])
        if kind == "object":
            return self._object(node)
        if kind == "array":
            items = self._node(node.get("items", {}))
            return st.lists(items, max_size=3)
        return {
            "string": _TEXT,
            "integer": _SMALL_INT,
            "number": _FLOAT,
            "boolean": st.booleans(),
            "null": st.none(),
        }[kind]

    def _object(self, node: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        properties: dict[str, Any] = node.get("properties", {})
        if not properties:
            extra = node.get("additionalProperties", {})
            values = any_json() if extra in ({}, True) else self._node(extra)
            return st.dictionaries(_TEXT, values, max_size=3)
        required = set(node.get("required", ()))
        fields = {name: self._node(sub) for name, sub in properties.items()}
        return st.fixed_dictionaries(
            {k: v for k, v in fields.items() if k in required},
            optional={k: v for k, v in fields.items() if k not in required},
        )


@cache
def strategies() -> SchemaStrategies:
    return SchemaStrategies(a2a_schema())
