"""What the fuzzer sends: JSON-RPC requests generated from the A2A schema's ``*Request``
definitions, aimed at realistic state, then mutated; malformed bodies; reviewer decisions.

A case is generated without touching the server (Hypothesis strategies must be pure): ids of
the waiting tasks are placeholders (``scene.TASK`` ...) that the scene fills in when the case
is sent. Each case is one of three kinds, drawn in a fixed proportion:

* ``valid``: the request as generated and aimed (unusual text included: any code point);
* ``soft``: one or two client values replaced by unusual values that are within every limit
  (NUL, right-to-left marks, int64 edges, nesting below the limit ...);
* ``hard``: one to three positions anywhere (envelope included) replaced, deleted or added
  with hostile values (``values.hostile``).

The first two kinds are meant to get past the envelope (text valid by the schema can still
hold what the edge refuses, such as a control character in an id); the suite asserts that at
least half of them do (``Stats.reached_kinds``). The push config methods are drawn valid more
often (``_PUSH_KINDS``): their value is in the sequences they make on real tasks (set, get,
list, delete, deliveries running in the background), and their envelope is the one every other
method's mutations already hit.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from .scene import CONTEXT, INTERRUPT, SLOTS, STALE, STREAMABLE_SLOTS, TASK
from .schema import any_json, strategies
from .values import (
    INT64_MAX,
    INT64_MIN,
    LONE_SURROGATES,
    LONG_STRINGS,
    NUMBER_TEXTS,
    UNICODE,
    Deep,
    Mutation,
    Raw,
    encode,
    hostile,
    mutated,
)

AGENT_IDS = ["document-review", "until-done", "email-assistant", "loan", "risk", "finalize"]

#: (method, the schema definition of its request), repeated for weight
_METHODS: list[tuple[str | None, str]] = [
    *[("message/send", "SendMessageRequest")] * 9,
    *[("tasks/get", "GetTaskRequest")] * 3,
    ("tasks/cancel", "CancelTaskRequest"),
    *[("message/stream", "SendStreamingMessageRequest")] * 2,
    ("tasks/resubscribe", "TaskResubscriptionRequest"),
    ("tasks/pushNotificationConfig/set", "SetTaskPushNotificationConfigRequest"),
    ("tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfigRequest"),
    ("tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigRequest"),
    ("tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfigRequest"),
    ("agent/getAuthenticatedExtendedCard", "GetAuthenticatedExtendedCardRequest"),
    (None, "SendMessageRequest"),  # a method that does not exist, with send's params
]
#: valid 4 : soft 2 : hard 4, and Hypothesis draws the first entry more often than the others
_KINDS = ["soft", "hard", "valid", "hard", "valid", "soft", "hard", "valid", "hard", "valid"]
_PUSH_KINDS = ["valid", "soft", "valid", "hard", "valid", "valid", "soft", "valid", "hard"]
_STREAMING = frozenset({"message/stream", "tasks/resubscribe"})
#: names no version has ("SendMessage" is v1.0's: without ``A2A-Version: 1.0`` it is -32009,
#: which ``test_jsonrpc_v1`` checks)
_UNKNOWN_METHODS = ["tasks/list", "sendMessage", "message/Send", "message/send ", "",
                    "rpc.discover", "__proto__", "message/sendx", "tasks/get/", "a" * 300,
                    "\u202emessage/send", "message\x00/send"]


def _text(text: str) -> list[dict[str, Any]]:
    return [{"kind": "text", "text": text}]


def _data(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"kind": "data", "data": data}]


_APPROVE = {"decisions": [{"type": "approve"}]}
_EDIT = {"decisions": [{"type": "edit", "edited_action": {
    "name": "send_email", "args": {"to": "bob@example.com", "subject": "s", "body": "b"}}}]}

#: answers each slot's question may get, right and wrong (placeholders filled when sent)
ANSWERS: dict[str, list[list[dict[str, Any]]]] = {
    "document-review": [
        _text("passport"), _text("여권"), _text("id_card"), _text("1990-01-01"),
        _text("I don't know"), _data({"value": "passport"}), _data({"resume": "id_card"}),
        _data({"resume": {INTERRUPT: "passport"}}), _data({"resume": {STALE: "passport"}}),
    ],
    "until-done": [_text("note one"), _text("done"), _text("DONE "), _data({"value": "done"}),
                   _data({"resume": {INTERRUPT: "a note"}})],
    "email-assistant": [
        _data(_APPROVE), _data(_EDIT), _data({"decisions": [{"type": "reject", "message": "no"}]}),
        _data({"decisions": []}), _data({"decisions": [{"type": "approve"}] * 2}),
        _data({"resume": _APPROVE}), _data({"decisions": [{"type": "respond", "message": "x"}]}),
        _data({"decisions": [{"type": "edit"}]}), _text("approve"),
    ],
    "loan": [_text("예"), _text("아니오"), _text("yes"), _data({"value": "no"}),
             _data({"collateral": "yes"})],
}


#: webhook URLs a push config may name (the fuzzed servers allow private targets): loopback and
#: link-local ones that refuse the connection at once (deliveries fail and are retried in the
#: background while the fuzzing goes on), and ones refused whatever the server allows
PUSH_URLS = ["http://127.0.0.1:9/hook", "http://[::1]:9/h?x=1", "https://127.0.0.1:9/",
             "http://[fe80::1]:9/", "HTTP://LOCALHOST:9/", "http://127.0.0.1:9/a",
             "http://127.0.0.1:9/b?c=d", "http://224.0.0.1/", "ftp://127.0.0.1/",
             "http://user:pw@127.0.0.1:9/", "http://0.0.0.0:9/", "http://nowhere.invalid/",
             "http://127.0.0.1:99999/", "javascript:alert(1)", "http://[::ffff:0.0.0.0]/",
             "http://\u202e127.0.0.1/"]


#: ``Accept-Language`` values a client may send (the texts of tool reviews follow it)
LANGUAGES = [None, None, None, "id", "en;q=0.5, id", "id;q=nan", "en;q=inf", "id;q=1e400",
             "*", ",,,;;;", "ID-id;Q=0.9", "x" * 8000, "id;q=-1, en;q=0"]

#: ``Last-Event-ID`` values for ``tasks/resubscribe`` (a llamon extension: replay after it)
LAST_EVENT_IDS = [None, "0", "1", "-1", "1e400", "9" * 30, "abc", "05", "", "0x10"]


@dataclass(frozen=True)
class RpcCase:
    tree: Any
    kind: str  # valid, soft, hard
    slot: int | None
    mutations: tuple[Mutation, ...] = field(default=())
    language: str | None = None
    last_event_id: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {} if self.language is None else {"Accept-Language": self.language}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def method(self) -> Any:
        return self.tree.get("method") if isinstance(self.tree, dict) else None


def _message_id() -> st.SearchStrategy[str]:
    return st.uuids().map(str)


@st.composite
def _aim_send(draw: st.DrawFn, request: dict[str, Any], streaming: bool,
              blocking_loans: bool) -> int | None:
    """A realistic ``message/send``: a user's message, new or answering a waiting task."""
    params = request["params"]
    message = params["message"]
    message["role"] = "user"
    message["messageId"] = draw(_message_id())
    for key in ("taskId", "contextId"):
        message.pop(key, None)
    if not message["parts"]:
        message["parts"] = _text("hello")
    (params.get("metadata") or {}).pop("agentId", None)
    if "configuration" not in params or draw(st.integers(0, 3)):
        params.pop("configuration", None)
    else:
        if draw(st.integers(0, 2)):
            params["configuration"].pop("pushNotificationConfig", None)
        else:
            _aim_push(draw, params["configuration"].get("pushNotificationConfig"))
        if draw(st.booleans()):
            params["configuration"].pop("acceptedOutputModes", None)
        if "historyLength" in params["configuration"]:
            params["configuration"]["historyLength"] = abs(params["configuration"]["historyLength"])
    address = draw(st.sampled_from(["new", "new", "agent", "context", "context", "task",
                                    "both", "interrupt", "stale"]))
    if address in ("new", "agent"):
        if draw(st.booleans()):
            message["contextId"] = draw(_message_id())
        if address == "agent":
            agents = [a for a in AGENT_IDS if not (streaming and a == "loan")]
            agent = draw(st.sampled_from(agents))
            params.setdefault("metadata", {})["agentId"] = agent
            if agent == "loan" and not blocking_loans:
                params.setdefault("configuration", {})["blocking"] = False
        return None
    slot = draw(st.sampled_from(STREAMABLE_SLOTS if streaming else range(len(SLOTS))))
    agent = SLOTS[slot][0]
    if address in ("context", "both", "interrupt", "stale"):
        message["contextId"] = CONTEXT
    if address in ("task", "both"):
        message["taskId"] = TASK
    if address in ("interrupt", "stale"):
        message.setdefault("metadata", {})["interruptId"] = (
            INTERRUPT if address == "interrupt" else STALE
        )
    if draw(st.integers(0, 3)):
        message["parts"] = draw(st.sampled_from(ANSWERS[agent]))
    if agent == "loan" and not blocking_loans:
        params.setdefault("configuration", {})["blocking"] = False
    return slot


_PUSH_AUTH = [None, {"schemes": ["Bearer"], "credentials": "k-1"},
              {"schemes": ["basic", "Bearer"], "credentials": "dTpw"}]


def _aim_push(draw: st.DrawFn, config: Any) -> None:
    """Most configs name a webhook from ``PUSH_URLS``, with an id, a token and authentication
    a client would send (the generated ones hold any code point: mostly refused); the others
    keep what was generated."""
    if not isinstance(config, dict) or not draw(st.integers(0, 3)):
        return
    config["url"] = draw(st.sampled_from(PUSH_URLS))
    for name, values in (("id", [None, "c1", "c2"]), ("token", [None, "tok"]),
                         ("authentication", _PUSH_AUTH)):
        value = draw(st.sampled_from(values))
        if value is None:
            config.pop(name, None)
        else:
            config[name] = value


@st.composite
def rpc_cases(draw: st.DrawFn, blocking_loans: bool = True) -> RpcCase:
    method, definition = draw(st.sampled_from(_METHODS))
    request: dict[str, Any] = draw(strategies().definition(definition))
    slot: int | None = None
    if method in ("message/send", "message/stream"):
        slot = draw(_aim_send(request, method in _STREAMING, blocking_loans))
    elif method is None:
        request["method"] = draw(st.sampled_from(_UNKNOWN_METHODS) | st.text(max_size=20))
    elif "params" in request and draw(st.integers(0, 2)):
        slot = draw(st.sampled_from(STREAMABLE_SLOTS if method in _STREAMING
                                    else range(len(SLOTS))))
        params = request["params"]
        params["taskId" if "taskId" in params else "id"] = TASK
        _aim_push(draw, params.get("pushNotificationConfig"))
        if "historyLength" in params:
            params["historyLength"] = abs(params["historyLength"])
    elif method == "tasks/get" and "historyLength" in request["params"]:
        request["params"]["historyLength"] = abs(request["params"]["historyLength"])
    push = isinstance(method, str) and method.startswith("tasks/pushNotificationConfig/")
    kind = draw(st.sampled_from(_PUSH_KINDS if push else _KINDS))
    language = draw(st.sampled_from(LANGUAGES))
    last = draw(st.sampled_from(LAST_EVENT_IDS)) if method == "tasks/resubscribe" else None
    if kind == "valid":
        return RpcCase(request, kind, slot, language=language, last_event_id=last)
    soft = kind == "soft"
    count = draw(st.integers(1, 2 if soft else 3))
    tree, applied = draw(mutated(request, count, soft_only=soft))
    return RpcCase(tree, kind, slot, tuple(applied), language, last)


# ----------------------------------------------------------------------------- raw bodies

_VALID = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "x"}}
_SEND = {"jsonrpc": "2.0", "id": "s", "method": "message/send", "params": {"message": {
    "kind": "message", "messageId": "m", "role": "user", "parts": _text("hi")}}}
_BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
             b"\xe2\x82", b"\x80", b"\xfe\xff"]


def _raw_texts() -> list[bytes]:
    base = encode(_VALID)
    fixed = [
        b"", b" ", b"null", b"true", b"1", b'"x"', b"[]", b"[{}]", b"{}", b"[" + base + b"]",
        b"[" + base + b"," + base + b"]", b"\xef\xbb\xbf" + base, base.decode().encode("utf-16"),
        base + b"x", base + b"}", b"{" * 100_000, b"[" * 300 + b"]" * 300,
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"tasks/get","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"},}',
        b"{'jsonrpc':'2.0'}", b'{"jsonrpc":"2.0" // c\n}', b'{"a":"line\nbreak"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":"\\udfff","method":"tasks/get","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"\\u0000"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",'
        b'"messageId":"m","role":"user","parts":[{"kind":"data","data":{"n":NaN}}]}}}',
        b'{"jsonrpc":"2.0","id":Infinity,"method":"tasks/get","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":-0,"method":"tasks/get","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":1e400,"method":"tasks/get","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x","historyLength":'
        + b"9" * 400 + b"}}",
        b'{"jsonrpc":"2.0","id":' + b"1" * 5000 + b',"method":"tasks/get","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x","historyLength":1.0}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x","historyLength":-1}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}' + b"\x00",
        b"\x00" * 64, b"\r\n\t " + base + b"\r\n",
        b"[" + b" " * (1024 * 1024) + b"]",  # over the body limit: -32600, then the server closes
    ]
    return fixed


_RAW_FIXED = _raw_texts()


@st.composite
def raw_bodies(draw: st.DrawFn) -> bytes:
    """Bodies that are not well-formed JSON-RPC: broken JSON, bad UTF-8, odd literals."""
    how = draw(st.sampled_from(["fixed", "truncate", "utf8", "number", "literal", "bytes"]))
    base = encode(draw(st.sampled_from([_VALID, _SEND])))
    if how == "fixed":
        return draw(st.sampled_from(_RAW_FIXED))
    if how == "truncate":
        return base[: draw(st.integers(0, len(base) - 1))]
    if how == "utf8":
        at = draw(st.integers(0, len(base)))
        return base[:at] + draw(st.sampled_from(_BAD_UTF8)) + base[at:]
    if how in ("number", "literal"):
        text = draw(st.sampled_from(NUMBER_TEXTS)) if how == "number" else encode(
            draw(st.sampled_from(UNICODE + LONE_SURROGATES + LONG_STRINGS[:2]))).decode()
        where = draw(st.sampled_from(["id", "params.id", "data"]))
        if where == "id":
            return base.replace(b'"id":7', b'"id":' + text.encode()).replace(
                b'"id":"s"', b'"id":' + text.encode())
        if where == "params.id":
            return base.replace(b'"id":"x"', b'"id":' + text.encode()).replace(
                b'"text":"hi"', b'"text":' + text.encode())
        deep = encode({"n": Raw(text), "d": Deep(draw(st.sampled_from([30, 300])))})
        return encode(_SEND).replace(b'"kind":"text","text":"hi"',
                                     b'"kind":"data","data":' + deep)
    return draw(st.binary(max_size=200))


# ----------------------------------------------------------------------------- reviewer decisions


@st.composite
def decision_bodies(draw: st.DrawFn) -> tuple[Any, str]:
    """A ``POST /reviews/{id}/decision`` body and its kind (valid, soft, hard)."""
    kind = draw(st.sampled_from(["approve", "edit", "reject"]))
    body: dict[str, Any] = {"type": kind}
    if kind == "edit" or draw(st.integers(0, 4)) == 0:
        body["edited"] = draw(any_json())
    if kind != "approve" and draw(st.booleans()):
        body["message"] = draw(st.text(max_size=20))
    kind = draw(st.sampled_from(_KINDS))
    if kind == "valid":
        return body, kind
    if kind == "soft":  # the client values only: ``edited`` and ``message``
        values = {k: v for k, v in body.items() if k != "type"} or {"edited": {}}
        tree, _ = draw(mutated({"params": values}, draw(st.integers(1, 2)), soft_only=True))
        return {"type": body["type"], **tree["params"]}, kind
    if draw(st.booleans()):  # the edited answer itself hostile: what the store keeps
        body = {**body, "type": "edit", "edited": draw(hostile())}
    tree, _ = draw(mutated({"body": body}, draw(st.integers(0, 2))))
    return tree.get("body"), kind


def hostile_review_id() -> st.SearchStrategy[str]:
    """Review ids a client may put in the path (percent-encoded when sent). Not one with a
    ``/``: the server decodes the path before routing, so it names another (unknown) path."""
    return st.sampled_from([
        "0" * 32, "..", "%2e%2e", "x" * 5000, "\u202e", "\U0001f600", "\x00", " ", "review?x=1",
        "null", "...", "%00", "\ud7ff\ue000",
    ])


#: what a ``GET /reviews`` query names: its two parameters, and neighbours of them
LISTING_NAMES = ["pageSize", "pageToken", "page_size", "PAGESIZE", "pageToken[]", ""]


def listing_query(tokens: list[str]) -> st.SearchStrategy[list[tuple[str, str]]]:
    """A ``GET /reviews`` query: half of them a page the server serves (a size, and a page
    token it gave, from ``tokens``), the rest any names with values of every kind: sizes out
    of range, the tokens cut or changed, tokens of other shapes, any text. ``tokens`` is the
    run's list, read at each draw."""

    def token(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    # an index into the tokens given so far, not a choice among them: the list grows during
    # a run, and a strategy's shape must not change with it
    given = st.integers(0, 99).map(lambda i: tokens[i % len(tokens)] if tokens else "")
    # what no listing of ours writes: NUL (no text column holds it), other kinds, other shapes
    foreign = st.sampled_from([token(["\x00", ""]), token(["2026-12-07T00:00:00.000Z", "\x00"]),
                               token([1, "x"]), token(["x"]), token(["", ""]), token({})])
    served = st.tuples(st.integers(1, 4).map(str),
                       st.one_of(st.just(""), given, given, foreign)).map(
        lambda pair: [("pageSize", pair[0]), ("pageToken", pair[1])])
    value = st.one_of(
        st.integers(-5, 205).map(str),
        st.sampled_from(["", "1e2", "0x10", " 5", "5 ", "+5", "\u0663", "50.0", "9" * 40, "1" * 5000]),
        given,
        foreign,
        given.map(lambda t: t[:-1]),
        given.map(lambda t: t[:5] + ("A" if t[5:6] != "A" else "B") + t[6:]),
        st.lists(st.one_of(st.text(max_size=20), st.integers(), st.floats(allow_nan=False),
                           st.none(), st.booleans()), max_size=3).map(token),
        st.text(max_size=60),
    )
    name = st.one_of(st.sampled_from(LISTING_NAMES), st.text(max_size=12))
    return st.one_of(served, st.lists(st.tuples(name, value), max_size=3))


def mutate_body(body: Any) -> st.SearchStrategy[tuple[Any, list[Mutation]]]:
    """Hostile mutations of a REST body (the whole body is client values)."""

    @st.composite
    def _go(draw: st.DrawFn) -> tuple[Any, list[Mutation]]:
        tree, applied = draw(mutated({"body": body}, draw(st.integers(1, 3))))
        return tree.get("body"), applied

    return _go()


# ----------------------------------------------------------------------------- known cases

def _send(message: dict[str, Any], metadata: dict[str, Any] | None = None,
          request_id: Any = 1, method: str = "message/send") -> dict[str, Any]:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method,
                               "params": {"message": {"kind": "message", "role": "user",
                                                      **message}}}
    if metadata is not None:
        request["params"]["metadata"] = metadata
    return request


_LOAN_SLOT = next(i for i, (agent, _) in enumerate(SLOTS) if agent == "loan")
_DOC_SLOT = next(i for i, (agent, _) in enumerate(SLOTS) if agent == "document-review")

_ODD_IDS: list[Any] = [None, True, 1.5, {}, [], 2**64 + 1, INT64_MAX]

#: the issue's findings, always run first (Hypothesis ``@example``): a generated run reaches
#: them only by chance, and the suite must fail on the code that had them
KNOWN_RPC: list[RpcCase] = [
    # a data part nested 240 levels, sent as the answer to someone else's waiting loan
    RpcCase(_send({"messageId": "k1", "contextId": CONTEXT, "parts": _data(
        {"amount": 1000, "income": 20000, "x": Deep(240, objects=True)})}), "hard", _LOAN_SLOT),
    # 253 levels: past what the reply can be serialised with
    RpcCase(_send({"messageId": "k2", "parts": _data({"x": Deep(253)})},
                  {"agentId": "until-done"}), "hard", None),
    # integers the store cannot hold, in a data part and in metadata
    RpcCase(_send({"messageId": "k3", "contextId": CONTEXT, "parts": _data(
        {"n": 10**29, "m": 2**64 + 1})}), "hard", _DOC_SLOT),
    RpcCase(_send({"messageId": "k4", "parts": _text("hi")}, {"n": INT64_MIN - 1}), "hard",
            None),
    # the order of checks: no id, with an unknown method or bad params
    RpcCase({"jsonrpc": "2.0", "method": "tasks/list", "params": {}}, "hard", None),
    RpcCase({"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": 5}}, "hard", None),
    # ids of every wrong type
    *[RpcCase({**_send({"messageId": f"k5{i}", "parts": _text("hi")}), "id": request_id},
              "hard", None)
      for i, request_id in enumerate(_ODD_IDS)],
]

#: decision bodies a reviewer's client may send that the store cannot hold
KNOWN_DECISIONS: list[Any] = [
    {"type": "edit", "edited": {"decision": "approve", "n": 2**64 + 1}},
    {"type": "edit", "edited": {"x": Deep(240, objects=True)}},
    {"type": "edit", "edited": Deep(300)},
    {"type": "approve", "message": "\ud800"},
]
