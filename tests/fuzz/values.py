"""Hostile JSON: values a client can send that a lax server mishandles, mutations of a valid
request, and a JSON writer that can say what a Python value cannot (``1e400`` as text, a lone
surrogate as a ``\\ud800`` escape, a value nested 5,000 levels deep).

What each family of values is for:

* **wrong types** for every leaf and container (the params' shape, the envelope's fields);
* **depth** around the edge limit (32) and around what pydantic and the store read back
  (~250), then far beyond;
* **numbers** at and past the signed 64-bit edges, as integers the store cannot hold, as text
  a JSON parser turns into floats (``1e400``, 400 digits), floats, NaN and Infinity;
* **unicode** a store or a log may trip on: NUL, right-to-left overrides, emoji sequences,
  combining marks, BOM, non-characters, lone surrogates (only as JSON escapes: they are not
  UTF-8), strings over the text and id limits.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


@dataclass(frozen=True)
class Raw:
    """JSON text written as it is: numbers a Python value cannot spell, literals like NaN."""

    text: str


@dataclass(frozen=True)
class Deep:
    """A value nested ``depth`` levels (arrays or objects) around ``leaf``, written without
    recursion, so that a 5,000-level value costs nothing to build."""

    depth: int
    objects: bool = False
    leaf: str = "1"


def dumps(value: Any) -> str:
    """JSON text of ``value``; ``Raw`` and ``Deep`` as described, lone surrogates escaped,
    every other character as UTF-8 (a client sends emoji as bytes, not escapes)."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def encode(value: Any) -> bytes:
    return dumps(value).encode("utf-8")


def _string(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only an escape can carry it
        return json.dumps(text, ensure_ascii=True)
    return json.dumps(text, ensure_ascii=False)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, Raw):
        out.append(value.text)
    elif isinstance(value, Deep):
        opening, closing = ('{"a":', "}") if value.objects else ("[", "]")
        out.append(opening * value.depth + value.leaf + closing * value.depth)
    elif value is None or isinstance(value, (bool, int, float)):
        out.append(json.dumps(value))  # floats: NaN, Infinity as Python writes them
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(_string(str(key)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


# ----------------------------------------------------------------------------- value families

WRONG_TYPES: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", [], {}, [1, "a"], {"a": 1}]

#: around the edge limit (32), around what pydantic reads back (~250), and far past both;
#: the dangerous ones first, as Hypothesis draws the first entries most often
DEPTHS = [253, 200, 33, 252, 5000, 32, 195, 300, 40, 1000, 31, 251, 194, 100]

EDGE_INTEGERS: list[Any] = [
    2**64 + 1, INT64_MAX, INT64_MAX + 1, 10**29, INT64_MIN, INT64_MIN - 1, 2**64, -(10**29),
    2**53 + 1, 10**400,
]
NUMBER_TEXTS = [
    "1e400", "-1e400", "1E+308", "1e19", "1e-400", "-0", "0.0", "1.0", "-0.0e0",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "9223372036854775807.0", "18446744073709551617",
    "123456789012345678901234567890", "1" + "0" * 400, "0." + "0" * 400 + "1",
    "NaN", "-NaN", "Infinity", "-Infinity", "1.7976931348623157e309",
]
FLOATS: list[Any] = [1.5, -0.0, 1e308, 5e-324, 2.0**63, -(2.0**63), 1e19,
                     float("nan"), float("inf"), float("-inf")]

UNICODE = [
    "\x00", "a\x00b", "\u202eevil\u202c", "\u200fRTL \u05e9\u05dc\u05d5\u05dd", "\ufeffbom",
    "\U0001f600", "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001f1f0\U0001f1f7", "e" + "\u0301" * 50, "\uffff\ufffe", "\U0010ffff", "\x7f\x1b[2J",
    "\\", '"', "\u2028\u2029", "여권", "passport\x00", " passport ", "\uff30\uff21\uff33\uff33\uff30\uff2f\uff32\uff34",
]
LONE_SURROGATES = ["\ud800", "\udfff", "a\ud83d", "\udc00\ud800", "\ud83d" * 3]
LONG_STRINGS = ["x" * 257, "y" * 5000, "z" * 70_000, "\u00e9" * 40_000, "\U0001f600" * 20_000]


@st.composite
def deep_values(draw: st.DrawFn, depths: list[int] = DEPTHS, leaves: tuple[str, ...] = (
        "1", '"x"', "null", "[]", "{}", str(2**64))) -> Deep:
    return Deep(draw(st.sampled_from(depths)), draw(st.booleans()), draw(st.sampled_from(leaves)))


def big_containers() -> st.SearchStrategy[Any]:
    return st.sampled_from([
        list(range(40)), [{"kind": "text", "text": "p"}] * 40, {f"k{i}": i for i in range(500)},
        {"k": "x" * 70_000}, ["x" * 1000] * 80,
    ])


def hostile() -> st.SearchStrategy[Any]:
    """Any value a hostile client may put where a well-formed one belongs; depth and numbers
    first (Hypothesis draws earlier branches more often): they are what a store cannot read
    back."""
    return st.one_of(
        deep_values(),
        st.sampled_from(EDGE_INTEGERS),
        st.sampled_from(NUMBER_TEXTS).map(Raw),
        st.sampled_from(WRONG_TYPES),
        st.sampled_from(FLOATS),
        st.sampled_from(UNICODE),
        st.sampled_from(LONE_SURROGATES),
        st.sampled_from(LONG_STRINGS),
        big_containers(),
    )


def soft() -> st.SearchStrategy[Any]:
    """Unusual values that are still within every limit: they must reach the handlers."""
    return st.one_of(
        st.sampled_from(UNICODE),
        st.sampled_from([INT64_MAX, INT64_MIN, 0, -1, 2**53 + 1, 1.5, -0.0, 1e308, 5e-324]),
        deep_values([5, 20, 30], ("1", '"x"', "null")),
        st.sampled_from([[], {}, None, True, "", "a" * 256]),
    )


# ----------------------------------------------------------------------------- mutation

Path = tuple[str | int, ...]

#: fields whose value is a client's own JSON, stored as it is
CLIENT_VALUES = frozenset({"data", "metadata", "edited", "args", "edited_action"})

#: fields whose value decides the route or the envelope: a "soft" mutation leaves them alone
_ROUTING = frozenset({"kind", "role", "jsonrpc", "method", "agentId", "interruptId", "id"})


def paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Every position in a (small, generated) JSON tree, the root excluded."""
    found: list[Path] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found.extend(paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.append((*prefix, i))
            found.extend(paths(item, (*prefix, i)))
    return found


def _parent(tree: Any, path: Path) -> Any:
    node = tree
    for step in path[:-1]:
        node = node[step]
    return node


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@dataclass(frozen=True)
class Mutation:
    op: str
    path: Path
    value: Any = None

    def apply(self, tree: Any) -> Any:
        parent = _parent(tree, self.path)
        key = self.path[-1]
        if self.op == "delete":
            del parent[key]
        else:  # replace, or insert: ``key`` names a new entry of the object at ``path[:-1]``
            # a copy: the value may be a shared constant that a later mutation changes inside
            parent[key] = _copy(self.value)
        return tree


_INSERT_KEYS = ["id", "method", "params", "metadata", "agentId", "interruptId", "taskId",
                "contextId", "data", "text", "parts", "extra", "__proto__", "\x00", ""]
#: keys no schema knows: a soft insertion is an ignored extra or an entry of a client object
_SOFT_KEYS = ["x-extra", "\u202ekey", "\U0001f600", "", "a" * 200, "__proto__"]

#: within every limit: NUL is refused in any stored string (docs/limits.md), so it is hostile
_SOFT_STRINGS = [*(u for u in UNICODE if "\x00" not in u), "a" * 256]
#: ids a client chooses refuse control characters (docs/limits.md)
_SOFT_IDS = [u for u in _SOFT_STRINGS if len(u) <= 128 and not any(
    unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in u)]
_ID_KEYS = frozenset({"messageId", "taskId", "contextId", "referenceTaskIds", "artifactId",
                      "pushNotificationConfigId"})
_SOFT_INTS = [INT64_MAX, INT64_MIN, 0, 2**53 + 1]
_SOFT_FLOATS = [1.5, -0.0, 1e308, 5e-324]


def _soft_like(current: Any) -> st.SearchStrategy[Any]:
    """An unusual value of the same JSON type as ``current`` (a type change is not soft)."""
    if isinstance(current, bool):
        return st.booleans()
    if isinstance(current, str):
        return st.sampled_from(_SOFT_STRINGS)
    if isinstance(current, int):
        return st.sampled_from(_SOFT_INTS)
    if isinstance(current, float):
        return st.sampled_from(_SOFT_FLOATS)
    return soft()


@st.composite
def mutation(draw: st.DrawFn, tree: Any, values: Callable[[], st.SearchStrategy[Any]],
             soft_only: bool = False) -> Mutation | None:
    """One change: replace, delete or add a value anywhere. ``soft_only``: under ``params``,
    outside the routing fields, a leaf replaced by an unusual value of its own type, or an
    unknown key added to an object."""
    candidates = paths(tree)
    if soft_only:
        candidates = [
            p for p in candidates
            if len(p) > 1 and p[0] == "params" and not any(step in _ROUTING for step in p)
        ]
    elif draw(st.booleans()):
        # half of the hostile changes land inside a client value (a data part, metadata,
        # edited arguments): what the server stores, where depth and numbers matter most
        inside = [p for p in candidates if any(step in CLIENT_VALUES for step in p[:-1])
                  or (p[-1] in CLIENT_VALUES and isinstance(_node(tree, p), dict))]
        candidates = inside or candidates
    if not candidates:
        return None
    path = draw(st.sampled_from(candidates))
    node = _node(tree, path)
    if soft_only:
        if isinstance(node, dict):
            return Mutation("insert", (*path, draw(st.sampled_from(_SOFT_KEYS))), draw(soft()))
        if isinstance(node, list):
            return None
        if isinstance(node, str) and any(step in _ID_KEYS for step in path):
            return Mutation("replace", path, draw(st.sampled_from(_SOFT_IDS)))
        return Mutation("replace", path, draw(_soft_like(node)))
    op = draw(st.sampled_from(["replace", "replace", "insert", "delete"]))
    if op == "insert":
        target = path if isinstance(node, dict) else path[:-1]
        return Mutation("insert", (*target, draw(st.sampled_from(_INSERT_KEYS))),
                        draw(values()))
    if op == "delete":
        return Mutation("delete", path)
    return Mutation("replace", path, draw(values()))


def _node(tree: Any, path: Path) -> Any:
    node = tree
    for step in path:
        node = node[step]
    return node


@st.composite
def mutated(draw: st.DrawFn, tree: Any, count: int, soft_only: bool = False
            ) -> tuple[Any, list[Mutation]]:
    """``tree`` (copied) with ``count`` mutations applied in turn."""
    tree = _copy(tree)
    applied: list[Mutation] = []
    for _ in range(count):
        if not isinstance(tree, (dict, list)):
            break
        change = draw(mutation(tree, soft if soft_only else hostile, soft_only))
        if change is None:
            break
        try:
            tree = change.apply(tree)
        except (KeyError, IndexError, TypeError):  # an earlier change removed the place
            continue
        applied.append(change)
    return tree, applied
