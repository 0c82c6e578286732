"""The A2A v1.0 proto's messages as Hypothesis strategies: ProtoJSON as a client may write it.

The counterpart of ``schema.py`` for v1.0: the message definitions come from
``tests/proto.py``'s parse of ``tests/spec/v1.0/a2a.proto``, so a field the proto adds is
generated without an edit here. What a ProtoJSON reader accepts, the generator writes in every
form: an enum as its name or its number, an ``int32`` as a JSON number or a decimal string,
``bytes`` as base64, a field under its JSON name or its proto name (``proto_names``). A ``oneof`` gets one of its members (none is a hard mutation's job); a
``REQUIRED`` field is always there, every other field sometimes.
"""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

from hypothesis import strategies as st

from tests.proto import Field, Message, Proto, proto

from .schema import _TEXT, any_json

__all__ = ["INT32_MAX", "ProtoStrategies", "enum_value", "int32", "proto_names",
           "proto_strategies"]

INT32_MAX = 2**31 - 1
#: RFC 3339 texts a ``Timestamp`` may hold, valid and not (a reader must refuse the latter)
TIMESTAMPS = ["2026-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "2020-02-29T12:00:00.123+09:00",
              "9999-12-31T23:59:59.999999999Z", "2026-12-02T06:00:00.5-00:30",
              "2026-13-01T00:00:00Z", "2026-01-01", "yesterday", "2026-01-01T00:00:00"]


def int32(low: int = -(2**31), high: int = INT32_MAX) -> st.SearchStrategy[int | str]:
    """An ``int32`` in ``[low, high]`` (small ones often), as a number or a decimal string."""
    small = st.integers(max(low, 0), min(high, 100)) if low <= 100 and high >= 0 else st.nothing()
    number = small | st.integers(low, high)
    return st.one_of(number, number.map(str))


def enum_value(names: tuple[str, ...]) -> st.SearchStrategy[str | int]:
    """An enum value as its name or its number."""
    return st.one_of(st.sampled_from(names), st.integers(0, len(names) - 1))


def _bytes() -> st.SearchStrategy[str]:
    return st.binary(max_size=12).map(lambda raw: base64.b64encode(raw).decode())


class ProtoStrategies:
    """Strategies for the messages of one parsed proto; each built once."""

    def __init__(self, definitions: Proto) -> None:
        self._proto = definitions
        self._built: dict[str, st.SearchStrategy[Any]] = {}

    def message(self, name: str) -> st.SearchStrategy[dict[str, Any]]:
        if name not in self._built:
            message = self._proto.messages[name]
            self._built[name] = st.deferred(lambda: self._message(message))
        return self._built[name]

    def _message(self, message: Message) -> st.SearchStrategy[dict[str, Any]]:
        plain = [f for f in message.fields.values() if f.oneof is None]
        required = {f.json: self._field(f) for f in plain if f.required}
        optional = {f.json: self._field(f) for f in plain if not f.required}
        base = st.fixed_dictionaries(required, optional=optional)
        groups = message.oneofs()
        if not groups:
            return base
        members = [st.tuples(st.just(member), self._field(message.fields[member]))
                   for group in groups.values() for member in group]
        # one member of (the one) oneof: a2a.proto's messages have at most one group
        return st.builds(lambda fields, chosen: {**fields, chosen[0]: chosen[1]},
                         base, st.one_of(members))

    def _field(self, described: Field) -> st.SearchStrategy[Any]:
        if described.map_value is not None:
            return st.dictionaries(_TEXT, self._type(described.map_value), max_size=3)
        element = self._type(described.type)
        if described.repeated:
            return st.lists(element, max_size=3)
        return element

    def _type(self, type_name: str) -> st.SearchStrategy[Any]:
        resolved = self._proto.resolve(type_name)
        if resolved in self._proto.enums:
            return enum_value(self._proto.enums[resolved].values)
        if resolved in self._proto.messages:
            return self.message(resolved)
        scalars: dict[str, st.SearchStrategy[Any]] = {
            "string": _TEXT,
            "bytes": _bytes(),
            "bool": st.booleans(),
            "int32": int32(),
            "google.protobuf.Struct": st.dictionaries(_TEXT, any_json(), max_size=3),
            "google.protobuf.Value": any_json(),
            "google.protobuf.Timestamp": st.sampled_from(TIMESTAMPS),
            "google.protobuf.Empty": st.just({}),
        }
        if resolved not in scalars:
            raise ValueError(f"no strategy for the proto type {resolved}")
        return scalars[resolved]


@cache
def proto_strategies() -> ProtoStrategies:
    return ProtoStrategies(proto())


def proto_names(value: Any, message_name: str) -> Any:
    """``value`` (a ProtoJSON ``message_name``) with every field under its proto name
    (``message_id``), as ProtoJSON readers also accept; the JSON a client wrote (a ``Struct``,
    a ``Value``, a map's keys) left as it is."""
    definitions = proto()
    message = definitions.messages.get(definitions.resolve(message_name))
    if message is None or not isinstance(value, dict):
        return value
    renamed: dict[str, Any] = {}
    for key, item in value.items():
        described = message.fields.get(key)
        if described is None:
            renamed[key] = item
            continue
        inner = described.map_value or described.type
        if described.map_value is not None and isinstance(item, dict):
            item = {k: proto_names(v, inner) for k, v in item.items()}
        elif described.repeated and isinstance(item, list):
            item = [proto_names(v, inner) for v in item]
        else:
            item = proto_names(item, inner)
        renamed[described.name] = item
    return renamed
