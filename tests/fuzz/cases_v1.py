"""What the fuzzer sends over A2A v1.0: JSON-RPC requests of every v1.0 method, generated from
``a2a.proto``'s message shapes (``proto_gen.py``), aimed at the scene's waiting tasks, then
mutated like the v0.3 ones (``cases.py``: valid, soft, hard).

The scene asks its questions over v0.3 (``scene.py``), so a v1.0 ``SendMessage`` addressed to a
slot is a v1.0 answer to a v0.3 question: the case the two versions must agree on. Each case
also draws the ``A2A-Version`` it names (mostly ``1.0``; also none, ``0.3``, versions this
server does not speak, garbage; in the header or, now and then, the query) and, for valid and
soft cases, the error it must get when it is refused on purpose (``RpcV1Case.expect``): a
v1.0 method without ``1.0`` is ``-32009``, a tenant or a data part that is not a JSON object
``-32602``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from tests.proto import proto

from .cases import AGENT_IDS, ANSWERS, LANGUAGES, PUSH_URLS
from .proto_gen import INT32_MAX, TIMESTAMPS, enum_value, int32, proto_names, proto_strategies
from .scene import CONTEXT, INTERRUPT, SLOTS, STALE, STREAMABLE_SLOTS, TASK
from .values import Mutation, mutated

#: (method, the proto message of its params), repeated for weight
METHODS: list[tuple[str, str]] = [
    *[("SendMessage", "SendMessageRequest")] * 8,
    *[("GetTask", "GetTaskRequest")] * 2,
    *[("ListTasks", "ListTasksRequest")] * 2,
    ("CancelTask", "CancelTaskRequest"),
    *[("SendStreamingMessage", "SendMessageRequest")] * 2,
    ("SubscribeToTask", "SubscribeToTaskRequest"),
    ("CreateTaskPushNotificationConfig", "TaskPushNotificationConfig"),
    ("GetTaskPushNotificationConfig", "GetTaskPushNotificationConfigRequest"),
    ("ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfigsRequest"),
    ("DeleteTaskPushNotificationConfig", "DeleteTaskPushNotificationConfigRequest"),
    ("GetExtendedAgentCard", "GetExtendedAgentCardRequest"),
]
STREAMING = frozenset({"SendStreamingMessage", "SubscribeToTask"})
V1_METHODS = frozenset(name for name, _ in METHODS)
#: v0.3 methods called with v1.0 params and ``A2A-Version: 1.0``: -32009 (the version decides)
CROSSED = ["message/send", "tasks/get", "tasks/cancel", "message/stream",
           "tasks/pushNotificationConfig/set"]
#: names no version has, in v1.0's style: -32601 whatever the version
UNKNOWN = ["sendMessage", "GetTasks", "ListTask", "SendMessage ", "Sendmessage",
           "GetAuthenticatedExtendedCard", "ListTaskPushNotificationConfig", "Subscribe"]

#: ``A2A-Version`` values by what they name; ``None`` is no header at all
V1_VERSIONS = ["1.0", "1.0.0", "1.0.1"]
V03_VERSIONS: list[str | None] = [None, "", "0.3", "0.3.0"]
BAD_VERSIONS = ["2.0", "1.1", "0.2", "1", "v1.0", "1.0-rc1", "1.0.0.0", "latest", "1.0,0.3",
                "0.3 1.0", "-1.0", "x" * 300, "1.0.1234567", "\u00e91.0"]
TASK_STATES = proto().enums["TaskState"].values
ROLES = proto().enums["Role"].values
#: mostly 1.0: Hypothesis draws the first entry most often
_VERSION_KINDS = ["v1", "v1", "v03", "v1", "v1", "v1", "bad", "v1", "v1", "v1", "v1", "v1"]

#: ``data`` part values v0.3 cannot hold (it holds objects): -32602
NOT_OBJECTS: list[Any] = ["passport", 1, [], [{"value": "passport"}], True, 2.5, None]
#: the rest of a push config beside its webhook (one of ``cases.PUSH_URLS``)
_PUSH_IDS = ["", "c1", "c2"]
_PUSH_AUTH: list[dict[str, str] | None] = [None, {"scheme": "Bearer", "credentials": "k-1"},
                                           {"scheme": "Basic"}]
_KINDS = ["soft", "hard", "valid", "hard", "valid", "soft", "hard", "valid", "hard", "valid"]
_PUSH_KINDS = ["valid", "soft", "valid", "hard", "valid", "valid", "soft", "valid", "hard"]


@dataclass(frozen=True)
class RpcV1Case:
    tree: Any
    kind: str  # valid, soft, hard
    slot: int | None
    version: str | None  # the A2A-Version named, None for none
    in_query: bool = False  # named as the ``A2A-Version`` query parameter, not the header
    #: the error code a valid or soft case must get (None: any reply that has the properties)
    expect: int | None = None
    mutations: tuple[Mutation, ...] = field(default=())
    language: str | None = None
    #: the reply must be about the slot's waiting task (a known answer to its question)
    answers: bool = False

    def headers(self) -> dict[str, str]:
        headers = {} if self.language is None else {"Accept-Language": self.language}
        if self.version is not None and not self.in_query:
            headers["A2A-Version"] = self.version
        return headers

    def path(self) -> str:
        if self.version is None or not self.in_query:
            return "/"
        return "/?A2A-Version=" + quote(self.version, safe="")

    def method(self) -> Any:
        return self.tree.get("method") if isinstance(self.tree, dict) else None

    def names_v1(self) -> bool:
        return self.version in V1_VERSIONS

    def names_unsupported(self) -> bool:
        return self.version in BAD_VERSIONS


def v1_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """v0.3 parts (``cases.ANSWERS``) as v1.0 writes them: one-of members, no ``kind``."""
    return [{k: v for k, v in part.items() if k != "kind"} for part in parts]


#: the scene's answers, right and wrong, in v1.0's shape
ANSWERS_V1 = {agent: [v1_parts(parts) for parts in answers] for agent, answers in ANSWERS.items()}


def _message_id() -> st.SearchStrategy[str]:
    return st.uuids().map(str)


def _once_in(draw: st.DrawFn, n: int) -> bool:
    """True about once in ``n`` draws. Not ``integers(0, n - 1) == 0``: Hypothesis draws the
    lowest integer (and the first entry of a list) far more often than the others."""
    return bool(draw(st.sampled_from([False] * (n - 1) + [True])))


def _aim_push(draw: st.DrawFn, config: Any) -> None:
    """A config a client would send, most of the time (a webhook of ``PUSH_URLS``)."""
    if not isinstance(config, dict):
        return
    config.pop("tenant", None)  # only the request's own tenant is this suite's business
    if _once_in(draw, 4):
        return
    config["url"] = draw(st.sampled_from(PUSH_URLS))
    for name, values in (("id", _PUSH_IDS), ("token", ["", "tok"]),
                         ("authentication", _PUSH_AUTH)):
        value = draw(st.sampled_from(values))
        if value in (None, ""):
            config.pop(name, None)
        else:
            config[name] = value


@st.composite
def _aim_send(draw: st.DrawFn, params: dict[str, Any], streaming: bool,
              blocking_loans: bool) -> int | None:
    """A user's message, new or answering a waiting task (its slot), now and then with a
    data part v0.3 cannot hold."""
    message = params["message"]
    message["role"] = draw(st.sampled_from(["ROLE_USER", 1]))
    message["messageId"] = draw(_message_id())
    for key in ("taskId", "contextId", "referenceTaskIds"):
        message.pop(key, None)
    if not _once_in(draw, 4):  # generated extension URIs hold control characters: refused
        message.pop("extensions", None)
    if not _once_in(draw, 4):  # else the parts as generated: file parts, any data
        message["parts"] = [{"text": "hello"}]
    (params.get("metadata") or {}).pop("agentId", None)
    config = params.get("configuration")
    if config is None or not _once_in(draw, 3):
        params.pop("configuration", None)
        config = None
    else:
        if not _once_in(draw, 3):
            config.pop("taskPushNotificationConfig", None)
        else:
            _aim_push(draw, config.get("taskPushNotificationConfig"))
        if "historyLength" in config:
            config["historyLength"] = draw(int32(0, 50))
        if not _once_in(draw, 4):  # generated modes are refused (-32005)
            modes = draw(st.sampled_from([None, ["text/plain"], ["application/json", "*/*"]]))
            if modes is None:
                config.pop("acceptedOutputModes", None)
            else:
                config["acceptedOutputModes"] = modes
    slot: int | None = None
    address = draw(st.sampled_from(["new", "agent", "context", "context", "task", "both",
                                    "interrupt", "stale", "task"]))
    agent: str | None = None
    if address in ("new", "agent"):
        if draw(st.booleans()):
            message["contextId"] = draw(_message_id())
        if address == "agent":
            agent = draw(st.sampled_from([a for a in AGENT_IDS
                                          if not (streaming and a == "loan")]))
            params.setdefault("metadata", {})["agentId"] = agent
    else:
        slot = draw(st.sampled_from(STREAMABLE_SLOTS if streaming else range(len(SLOTS))))
        agent = SLOTS[slot][0]
        if address in ("context", "both", "interrupt", "stale"):
            message["contextId"] = CONTEXT
        if address in ("task", "both"):
            message["taskId"] = TASK
        if address in ("interrupt", "stale"):
            message.setdefault("metadata", {})["interruptId"] = (
                INTERRUPT if address == "interrupt" else STALE)
        if not _once_in(draw, 4):
            message["parts"] = draw(st.sampled_from(ANSWERS_V1[agent]))
    if agent == "loan" and not blocking_loans:
        # a blocking loan answer waits for the reviewer: the real server's loans do not block
        params.setdefault("configuration", {})["returnImmediately"] = True
    if _once_in(draw, 10):
        message["parts"] = [{"data": draw(st.sampled_from(NOT_OBJECTS))}]
    return slot


@st.composite
def _aim_task(draw: st.DrawFn, method: str, params: dict[str, Any]) -> int | None:
    """The params of a method about one task, aimed at a slot (most of the time)."""
    key = "taskId" if "PushNotificationConfig" in method else "id"
    if "historyLength" in params:
        params["historyLength"] = draw(int32(0, 50))
    if method == "CreateTaskPushNotificationConfig":
        _aim_push(draw, params)
    elif method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        params["id"] = draw(st.sampled_from(["c1", "c2", params["id"]]))
    elif method == "ListTaskPushNotificationConfigs":
        if not _once_in(draw, 4):
            params.pop("pageToken", None)
        if "pageSize" in params:
            params["pageSize"] = draw(int32(0, 100))
    if _once_in(draw, 4):
        return None  # the generated id: an unknown task
    slot: int = draw(st.sampled_from(STREAMABLE_SLOTS if method in STREAMING
                                     else range(len(SLOTS))))
    params[key] = TASK
    return slot


@st.composite
def _aim_list(draw: st.DrawFn, params: dict[str, Any]) -> int | None:
    """A page of tasks: of a waiting task's context or of every context, by state."""
    slot: int | None = None
    if draw(st.booleans()):
        slot = draw(st.sampled_from(range(len(SLOTS))))
        params["contextId"] = CONTEXT
    elif not _once_in(draw, 4):
        params.pop("contextId", None)
    if draw(st.booleans()):
        params["status"] = draw(enum_value(TASK_STATES))
    if "pageSize" in params and not _once_in(draw, 4):
        params["pageSize"] = draw(int32(1, 100))
    if not _once_in(draw, 4):
        params.pop("pageToken", None)
    if "historyLength" in params:
        params["historyLength"] = draw(int32(0, 50))
    if "statusTimestampAfter" in params and draw(st.booleans()):
        params["statusTimestampAfter"] = draw(st.sampled_from(TIMESTAMPS[:5]))
    return slot


@st.composite
def _version(draw: st.DrawFn) -> tuple[str | None, bool]:
    which = draw(st.sampled_from(_VERSION_KINDS))
    values: list[str | None] = {"v1": list(V1_VERSIONS), "v03": V03_VERSIONS,
                                "bad": list(BAD_VERSIONS)}[which]
    value = draw(st.sampled_from(values))
    # header values are Latin-1 text: a version that is not goes in the query
    in_query = _once_in(draw, 8) or (value is not None and not value.isascii())
    return value, in_query


def _request_id() -> st.SearchStrategy[str | int]:
    return st.one_of(st.integers(0, INT32_MAX), _message_id())


@st.composite
def rpc_v1_cases(draw: st.DrawFn, blocking_loans: bool = True) -> RpcV1Case:
    method, message_name = draw(st.sampled_from(METHODS))
    params: dict[str, Any] = draw(proto_strategies().message(message_name))
    tenant = params.pop("tenant", "")
    slot: int | None = None
    if method in ("SendMessage", "SendStreamingMessage"):
        slot = draw(_aim_send(params, method in STREAMING, blocking_loans))
    elif method == "ListTasks":
        slot = draw(_aim_list(params))
    elif method != "GetExtendedAgentCard":
        slot = draw(_aim_task(method, params))
    if tenant and _once_in(draw, 8):
        params["tenant"] = tenant
    if _once_in(draw, 8):  # the proto's own field names: ProtoJSON readers take both
        params = proto_names(params, message_name)
    named = method
    route = draw(st.sampled_from(["own"] * 18 + ["crossed", "unknown"]))
    if route == "crossed":
        named = draw(st.sampled_from(CROSSED))
    elif route == "unknown":
        named = draw(st.sampled_from(UNKNOWN))
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(_request_id()), "method": named,
                               "params": params}
    if method == "GetExtendedAgentCard" and not params and draw(st.booleans()):
        del request["params"]  # v1.0: an empty request message may be left out
    version, in_query = draw(_version())
    push = method.endswith(("PushNotificationConfig", "PushNotificationConfigs"))
    kind = draw(st.sampled_from(_PUSH_KINDS if push else _KINDS))
    language = draw(st.sampled_from(LANGUAGES))
    if kind == "valid":
        return RpcV1Case(request, kind, slot, version, in_query, expected(request, version),
                         language=language)
    soft = kind == "soft"
    count = draw(st.integers(1, 2 if soft else 3))
    tree, applied = draw(mutated(request, count, soft_only=soft))
    return RpcV1Case(tree, kind, slot, version, in_query,
                     expected(tree, version) if soft else None, tuple(applied), language)


def expected(request: Any, version: str | None) -> int | None:
    """The error a request with an intact envelope must get (``docs/versions.md``): the
    version first, then the method, then the params this suite breaks on purpose; ``None``
    when it may get anything that has the properties."""
    method = request.get("method")
    params = request.get("params")
    if version in BAD_VERSIONS or (method in V1_METHODS and version not in V1_VERSIONS):
        return -32009
    if method in CROSSED and version in V1_VERSIONS:
        return -32009
    if method in UNKNOWN:
        return -32601
    if method not in V1_METHODS or not isinstance(params, dict):
        return None
    if params.get("tenant") not in (None, ""):
        return -32602
    message = params.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    if isinstance(parts, list) and any(
        isinstance(part, dict) and "data" in part and not isinstance(part["data"], dict)
        for part in parts
    ):
        return -32602
    return None


# ----------------------------------------------------------------------------- known cases

_KNOWN_IDS = iter(range(1, 1000))


def _send(parts: list[dict[str, Any]], metadata: dict[str, Any] | None = None,
          **message: Any) -> Any:
    number = next(_KNOWN_IDS)
    params: dict[str, Any] = {"message": {
        "messageId": f"known-v1-{number}", "role": "ROLE_USER", "parts": parts, **message}}
    if metadata is not None:
        params["metadata"] = metadata
    return {"jsonrpc": "2.0", "id": number, "method": "SendMessage", "params": params}


_DOC_SLOT = next(i for i, (agent, _) in enumerate(SLOTS) if agent == "document-review")

#: always run first (Hypothesis ``@example``): the rules a generated run reaches only by chance
KNOWN_V1: list[RpcV1Case] = [
    # a v1.0 answer to the question the scene asked over v0.3, by task and by context
    RpcV1Case(_send([{"text": "passport"}], taskId=TASK, contextId=CONTEXT), "valid",
              _DOC_SLOT, "1.0", answers=True),
    RpcV1Case(_send([{"data": {"value": "id_card"}}], contextId=CONTEXT), "valid", _DOC_SLOT,
              "1.0", answers=True),
    RpcV1Case({**_send([{"text": "passport"}], taskId=TASK), "method": "SendStreamingMessage"},
              "valid", _DOC_SLOT, "1.0", answers=True),
    # the version decides: none, 0.3, unsupported, in the header and in the query
    RpcV1Case(_send([{"text": "hi"}]), "valid", None, None, expect=-32009),
    RpcV1Case(_send([{"text": "hi"}]), "valid", None, "0.3", expect=-32009),
    RpcV1Case(_send([{"text": "hi"}]), "valid", None, "2.0", in_query=True, expect=-32009),
    RpcV1Case({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "x"}},
              "valid", None, "1.0", expect=-32009),
    # what v0.3 cannot hold, and a tenant
    *[RpcV1Case(_send([{"data": value}]), "valid", None, "1.0", expect=-32602)
      for value in NOT_OBJECTS],
    RpcV1Case({"jsonrpc": "2.0", "id": 3, "method": "GetTask",
               "params": {"id": TASK, "tenant": "t1"}}, "valid", _DOC_SLOT, "1.0",
              expect=-32602),
    # enums as numbers, int32 as text
    RpcV1Case({"jsonrpc": "2.0", "id": 4, "method": "ListTasks",
               "params": {"status": 6, "pageSize": "2", "historyLength": "1"}}, "valid", None,
              "1.0"),
    RpcV1Case({"jsonrpc": "2.0", "id": 5, "method": "GetTask",
               "params": {"id": TASK, "historyLength": "0"}}, "valid", _DOC_SLOT, "1.0"),
    RpcV1Case(_send([{"text": "hi"}], role=1), "valid", None, "1.0"),
    # a role the proto has but a message cannot carry
    RpcV1Case(_send([{"text": "hi"}], role=ROLES.index("ROLE_UNSPECIFIED")), "valid", None,
              "1.0", expect=-32602),
    # ``bytes`` that are not base64: refused, or answered as base64 (ProtoJSON ``bytes``) ...
    RpcV1Case(_send([{"raw": "not base64!"}], {"agentId": "until-done"}), "valid", None, "1.0"),
    # ... and a v0.3 file part's ``bytes`` (base64 by v0.3's schema) that are not: the task must
    # still read back over v1.0 (the final check)
    RpcV1Case({"jsonrpc": "2.0", "id": 6, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "known-v03-bytes", "role": "user",
                    "parts": [{"kind": "file", "file": {"bytes": "not base64!"}}]},
        "metadata": {"agentId": "until-done"}}}, "valid", None, None),
]
