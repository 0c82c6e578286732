"""The A2A v1.0 wire types as ``tests/spec/v1.0/a2a.proto`` defines them, and a strict
ProtoJSON checker: the v1.0 counterpart of ``conftest.assert_valid`` (the v0.3 JSON Schema).

``parse_proto`` reads the subset of proto3 that ``a2a.proto`` uses: top-level messages and
enums, fields with ``repeated`` / ``optional``, ``oneof`` groups, ``map<K, V>`` fields and the
``(google.api.field_behavior) = REQUIRED`` option (the ``service`` block is skipped). Anything
else in the file fails the parse rather than being skipped quietly, so a new construct in a
later copy of the proto cannot make the checker lenient.

``proto_errors`` / ``assert_proto`` check a JSON value the way a strict ProtoJSON reader
would: camelCase JSON names only, each value of its field's JSON type (an ``int32`` a JSON
integer in range, ``bytes`` base64, an enum one of its names, ``google.protobuf.Struct`` an
object, ``Value`` any JSON, ``Timestamp`` RFC 3339 text, ``Empty`` ``{}``), at most one
member of a ``oneof``, every ``REQUIRED`` field present, and no ``null`` where a reader would
have to guess (only a ``Value`` may be ``null``). The ``google.rpc`` error details v1.0's
errors carry (``ErrorInfo``, ``BadRequest``) are checked from their own definitions below.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "PROTO_PATH",
    "Enum",
    "Field",
    "Message",
    "Proto",
    "assert_error_details",
    "assert_proto",
    "json_name",
    "proto",
    "proto_errors",
]

PROTO_PATH = Path(__file__).resolve().parent / "spec" / "v1.0" / "a2a.proto"
PACKAGE = "lf.a2a.v1"

#: ``google/rpc/error_details.proto`` (the two messages v1.0's errors use; nested messages
#: written at the top level, under their full names)
RPC_DETAILS = """
message google.rpc.ErrorInfo {
  string reason = 1;
  string domain = 2;
  map<string, string> metadata = 3;
}
message google.rpc.BadRequest {
  repeated google.rpc.BadRequest.FieldViolation field_violations = 1;
}
message google.rpc.BadRequest.FieldViolation {
  string field = 1;
  string description = 2;
  string reason = 3;
  google.rpc.LocalizedMessage localized_message = 4;
}
message google.rpc.LocalizedMessage {
  string locale = 1;
  string message = 2;
}
"""
ANY_PREFIX = "type.googleapis.com/"

_SCALARS = frozenset({"string", "bytes", "bool", "int32", "uint32", "sint32", "fixed32",
                      "sfixed32", "int64", "uint64", "sint64", "fixed64", "sfixed64", "float",
                      "double"})
_INT32 = {"int32": (-(2**31), 2**31 - 1), "sint32": (-(2**31), 2**31 - 1),
          "sfixed32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1),
          "fixed32": (0, 2**32 - 1)}
_INT64 = frozenset({"int64", "uint64", "sint64", "fixed64", "sfixed64"})
_WELL_KNOWN = frozenset({"google.protobuf.Struct", "google.protobuf.Value",
                         "google.protobuf.Timestamp", "google.protobuf.Empty"})
#: RFC 3339 as ProtoJSON writes a Timestamp (``Z`` or an offset; 0, 3, 6 or 9 digits)
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})")
_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<word>[A-Za-z_][\w.]*)'
                    r"|(?P<number>-?\d+)|(?P<punct>[{}\[\]()<>=;,:]))")
_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    number: int
    repeated: bool = False
    optional: bool = False
    required: bool = False
    #: the value type of a ``map<string, V>`` (``type`` is then the key type)
    map_value: str | None = None
    oneof: str | None = None

    @property
    def json(self) -> str:
        return json_name(self.name)


@dataclass
class Message:
    name: str
    fields: dict[str, Field] = field(default_factory=dict)  # by JSON name

    def oneofs(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for f in self.fields.values():
            if f.oneof is not None:
                groups.setdefault(f.oneof, []).append(f.json)
        return groups


@dataclass(frozen=True)
class Enum:
    name: str
    values: tuple[str, ...]  # by number


@dataclass
class Proto:
    messages: dict[str, Message]
    enums: dict[str, Enum]

    def resolve(self, type_name: str) -> str:
        """A type as a field names it -> its key here (``a2a.proto``'s own types are named
        without their package)."""
        if type_name in _SCALARS or type_name in _WELL_KNOWN:
            return type_name
        for candidate in (type_name, type_name.removeprefix(PACKAGE + ".")):
            if candidate in self.messages or candidate in self.enums:
                return candidate
        raise KeyError(f"unknown type {type_name}")


def json_name(proto_name: str) -> str:
    """protoc's JSON name: ``snake_case`` -> ``lowerCamelCase``."""
    head, *rest = proto_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# ---------------------------------------------------------------------------- the parser


def _tokens(text: str) -> list[str]:
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"cannot read the proto at {text[position:position + 40]!r}")
        tokens.append(match.group(match.lastgroup or "punct"))
        position = match.end()
    return tokens


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at]

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.at]
        if expected is not None and token != expected:
            raise ValueError(f"expected {expected!r}, found {token!r} (token {self.at})")
        self.at += 1
        return token

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def skip_statement(self) -> None:
        """Up to and including the next ``;`` at this depth."""
        while self.take() != ";":
            pass

    def skip_block(self) -> None:
        """From a ``{`` to its matching ``}``."""
        depth = 0
        while True:
            token = self.take()
            depth += token == "{"
            depth -= token == "}"
            if depth == 0:
                return


def parse_proto(text: str) -> Proto:
    reader = _Reader(_tokens(text))
    messages: dict[str, Message] = {}
    enums: dict[str, Enum] = {}
    while not reader.done():
        keyword = reader.take()
        if keyword in ("syntax", "package", "import", "option"):
            reader.skip_statement()
        elif keyword == "service":
            reader.take()
            reader.skip_block()
        elif keyword == "message":
            message = _message(reader, reader.take())
            messages[message.name] = message
        elif keyword == "enum":
            enum = _enum(reader, reader.take())
            enums[enum.name] = enum
        else:
            raise ValueError(f"unexpected {keyword!r} at the top level of the proto")
    return Proto(messages, enums)


def _message(reader: _Reader, name: str) -> Message:
    message = Message(name)
    reader.take("{")
    oneof: str | None = None
    while True:
        token = reader.peek()
        if token == "}":
            reader.take()
            if oneof is None:
                return message
            oneof = None
            continue
        if token == "oneof":
            if oneof is not None:
                raise ValueError(f"a oneof inside a oneof in {name}")
            reader.take()
            oneof = reader.take()
            reader.take("{")
            continue
        if token in ("message", "enum", "reserved", "extensions", "extend", "group"):
            raise ValueError(f"{token!r} in message {name}: not read by this parser")
        if token == "option":
            reader.skip_statement()
            continue
        parsed = _field(reader, oneof)
        if parsed.json in message.fields:
            raise ValueError(f"two fields with the JSON name {parsed.json} in {name}")
        message.fields[parsed.json] = parsed


def _field(reader: _Reader, oneof: str | None) -> Field:
    repeated = optional = False
    map_value: str | None = None
    label = reader.peek()
    if label in ("repeated", "optional", "required"):
        if label == "required":
            raise ValueError("proto2 'required' is not proto3")
        reader.take()
        repeated, optional = label == "repeated", label == "optional"
    type_name = reader.take()
    if type_name == "map":
        reader.take("<")
        type_name = reader.take()
        reader.take(",")
        map_value = reader.take()
        reader.take(">")
    name = reader.take()
    reader.take("=")
    number = int(reader.take())
    required = False
    if reader.peek() == "[":
        reader.take()
        while True:
            option: list[str] = []
            while reader.peek() not in (",", "]"):
                option.append(reader.take())
            if option == ["(", "google.api.field_behavior", ")", "=", "REQUIRED"]:
                required = True
            if reader.take() == "]":
                break
    reader.take(";")
    return Field(name, type_name, number, repeated, optional, required, map_value, oneof)


def _enum(reader: _Reader, name: str) -> Enum:
    reader.take("{")
    numbered: dict[int, str] = {}
    while reader.peek() != "}":
        if reader.peek() == "option":
            reader.skip_statement()
            continue
        value = reader.take()
        reader.take("=")
        number = int(reader.take())
        if reader.peek() == "[":
            while reader.take() != "]":
                pass
        reader.take(";")
        numbered[number] = value
    reader.take("}")
    if sorted(numbered) != list(range(len(numbered))):
        raise ValueError(f"enum {name} is not numbered 0..n-1")
    return Enum(name, tuple(numbered[n] for n in range(len(numbered))))


@cache
def proto() -> Proto:
    """``a2a.proto`` with the ``google.rpc`` error details."""
    parsed = parse_proto(PROTO_PATH.read_text())
    details = parse_proto(RPC_DETAILS)
    return Proto({**parsed.messages, **details.messages}, parsed.enums)


# ---------------------------------------------------------------------------- the checker


def proto_errors(message_name: str, value: Any, path: str = "$") -> list[str]:
    """What a strict ProtoJSON reader of ``message_name`` would refuse in ``value``."""
    definitions = proto()
    return _check_type(definitions, definitions.resolve(message_name), value, path)


def assert_proto(message_name: str, value: Any) -> None:
    errors = proto_errors(message_name, value)
    assert errors == [], f"not a ProtoJSON {message_name}:\n  " + "\n  ".join(errors)


def assert_error_details(data: Any) -> list[dict[str, Any]]:
    """A v1.0 error's ``data``: a list of ``Any`` details, each a known ``google.rpc`` type
    under its ``@type``, the first an ``ErrorInfo`` of domain ``a2a-protocol.org``."""
    assert isinstance(data, list) and data, f"error data is not a non-empty list: {data!r}"
    errors: list[str] = []
    for index, detail in enumerate(data):
        where = f"$.data[{index}]"
        if not isinstance(detail, dict) or not isinstance(detail.get("@type"), str):
            errors.append(f"{where}: not an Any with an '@type'")
            continue
        type_url: str = detail["@type"]
        name = type_url.removeprefix(ANY_PREFIX)
        if not type_url.startswith(ANY_PREFIX) or name not in proto().messages:
            errors.append(f"{where}: unknown @type {type_url!r}")
            continue
        body = {k: v for k, v in detail.items() if k != "@type"}
        errors += proto_errors(name, body, where)
    assert errors == [], "error details:\n  " + "\n  ".join(errors)
    first = data[0]
    assert first["@type"] == ANY_PREFIX + "google.rpc.ErrorInfo", first
    assert isinstance(first.get("reason"), str) and first["reason"], first
    assert first.get("domain") == "a2a-protocol.org", first
    return data


def _check_type(definitions: Proto, type_name: str, value: Any, path: str) -> list[str]:
    if type_name in _WELL_KNOWN:
        return _well_known(type_name, value, path)
    if type_name in _SCALARS:
        return _scalar(type_name, value, path)
    if type_name in definitions.enums:
        names = definitions.enums[type_name].values
        if not isinstance(value, str):
            return [f"{path}: {type_name} must be written as its name, not {value!r}"]
        return [] if value in names else [f"{path}: {value!r} is not a {type_name}"]
    return _message_errors(definitions, definitions.messages[type_name], value, path)


def _message_errors(definitions: Proto, message: Message, value: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: {message.name} must be a JSON object, not {type(value).__name__}"]
    errors: list[str] = []
    for key, item in value.items():
        described = message.fields.get(key)
        where = f"{path}.{key}"
        if described is None:
            errors.append(f"{where}: {message.name} has no field {key!r}")
            continue
        if item is None and described.type != "google.protobuf.Value":
            errors.append(f"{where}: null (leave the field out)")
            continue
        errors += _field_errors(definitions, described, item, where)
    for group, members in message.oneofs().items():
        present = [m for m in members if m in value]
        if len(present) > 1:
            errors.append(f"{path}: more than one of oneof {group}: {present}")
    for described in message.fields.values():
        if described.required and described.json not in value:
            errors.append(f"{path}: {message.name}.{described.json} is REQUIRED")
    return errors


def _field_errors(definitions: Proto, described: Field, value: Any, path: str) -> list[str]:
    element = definitions.resolve(described.type)
    if described.map_value is not None:
        if not isinstance(value, dict):
            return [f"{path}: a map must be a JSON object"]
        if element != "string":
            return [f"{path}: map keys of type {element} are not read by this checker"]
        target = definitions.resolve(described.map_value)
        errors: list[str] = []
        for key, item in value.items():
            errors += _check_type(definitions, target, item, f"{path}[{key!r}]")
        return errors
    if described.repeated:
        if not isinstance(value, list):
            return [f"{path}: a repeated field must be a JSON array"]
        errors = []
        for index, item in enumerate(value):
            errors += _check_type(definitions, element, item, f"{path}[{index}]")
        return errors
    return _check_type(definitions, element, value, path)


def _scalar(type_name: str, value: Any, path: str) -> list[str]:
    wrong = [f"{path}: {value!r} is not a ProtoJSON {type_name}"]
    if type_name == "string":
        return [] if isinstance(value, str) else wrong
    if type_name == "bool":
        return [] if isinstance(value, bool) else wrong
    if type_name == "bytes":
        if not isinstance(value, str):
            return wrong
        try:
            standard = value.replace("-", "+").replace("_", "/")
            base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        except (binascii.Error, ValueError):
            return wrong
        return []
    if type_name in _INT32:
        low, high = _INT32[type_name]
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return [] if ok else wrong
    if type_name in _INT64:  # ProtoJSON writes 64-bit integers as decimal strings
        return [] if isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value) else wrong
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return [] if ok or value in ("NaN", "Infinity", "-Infinity") else wrong


def _well_known(type_name: str, value: Any, path: str) -> list[str]:
    if type_name == "google.protobuf.Value":
        return _json_errors(value, path)
    if type_name == "google.protobuf.Struct":
        if not isinstance(value, dict):
            return [f"{path}: a Struct must be a JSON object"]
        return _json_errors(value, path)
    if type_name == "google.protobuf.Empty":
        return [] if value == {} else [f"{path}: Empty must be {{}}"]
    ok = isinstance(value, str) and _TIMESTAMP.fullmatch(value) is not None
    return [] if ok else [f"{path}: {value!r} is not an RFC 3339 Timestamp"]


def _json_errors(value: Any, path: str) -> list[str]:
    """Any JSON (a ``Value``): no NaN or infinities, which JSON cannot hold."""
    if isinstance(value, dict):
        errors: list[str] = []
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(f"{path}: key {key!r} is not a string")
            errors += _json_errors(item, f"{path}.{key}")
        return errors
    if isinstance(value, list):
        return [e for index, item in enumerate(value) for e in _json_errors(item, f"{path}[{index}]")]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return [f"{path}: {value!r} is not JSON"]
    if value is None or isinstance(value, (str, int, float, bool)):
        return []
    return [f"{path}: {type(value).__name__} is not JSON"]
