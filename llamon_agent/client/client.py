"""``A2AClient``: an async A2A v0.3 JSON-RPC client on httpx."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from ..a2a.types import (
    DataPart,
    Message,
    MessageSendConfiguration,
    MessageSendParams,
    Part,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskStatusUpdateEvent,
    TextPart,
)
from .card import AgentCard, fetch_card
from .hitl import _UNSET, Question, answer_message
from .retry import NO_RETRY, RetryPolicy, call_with_retries
from .rpc import (
    check_status,
    decode_json,
    new_id,
    parse_send_result,
    parse_task,
    request_body,
    translate_errors,
    unwrap,
)
from .stream import EventStream

__all__ = ["DEFAULT_RETRY", "DEFAULT_TIMEOUT", "A2AClient", "user_message"]

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
"""Per request; for streams the read timeout is the longest silence between two chunks (our
server pings every 15 s)."""
DEFAULT_RETRY = RetryPolicy()

TimeoutTypes = httpx.Timeout | float | None


class A2AClient:
    """An A2A v0.3 agent over JSON-RPC.

    ``url`` is the JSON-RPC endpoint; :meth:`connect` finds it from the agent card instead.
    ``http``: an ``httpx.AsyncClient`` of yours (auth, proxies, transport); the client then
    never closes it. Without one, the client creates and owns one: use ``async with`` or
    :meth:`aclose`. ``agent_id`` goes into every send's ``params.metadata.agentId`` (how a llamon
    server with several agents picks one). ``timeout`` applies to every call,
    ``stream_timeout`` to streams; ``retry`` governs the idempotent reads only (agent card,
    ``tasks/get``, the connection setup of ``tasks/resubscribe``).
    """

    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient | None = None,
        card: AgentCard | None = None,
        agent_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        stream_timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=timeout)
        self.url = str(self._http.base_url.join(url)) if http is not None else url
        self.card = card
        self.card_url: str | None = None
        self.agent_id = agent_id
        self.retry = retry
        self._headers = dict(headers or {})
        self._timeout = httpx.Timeout(timeout)
        self._stream_timeout = httpx.Timeout(stream_timeout)
        self._closed = False

    @classmethod
    async def connect(
        cls, base_url: str, *, http: httpx.AsyncClient | None = None, **options: Any
    ) -> Self:
        """Resolve the agent card of ``base_url`` and talk to the JSON-RPC URL it gives."""
        client = cls(base_url, http=http, **options)
        try:
            card = await client.get_card()
            client.url = card.jsonrpc_url(client.card_url)
        except BaseException:
            await client.aclose()
            raise
        return client

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the httpx client if this client created it (never one that was passed in)."""
        if self._owns_http and not self._closed:
            self._closed = True
            await self._http.aclose()

    def __repr__(self) -> str:
        return f"A2AClient({self.url!r})"

    # ------------------------------------------------------------------ agent card

    async def get_card(self, *, refresh: bool = False) -> AgentCard:
        """The agent card, from the well-known paths of the URL's origin (retried reads)."""
        if self.card is None or self.card_url is None or refresh:
            self.card, self.card_url = await fetch_card(
                self._http, self.url, retry=self.retry, timeout=self._timeout,
                headers=self._headers,
            )
        return self.card

    # ------------------------------------------------------------------ methods

    async def send(
        self,
        message: Message | str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        data: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        blocking: bool = True,
        history_length: int | None = None,
    ) -> Task | Message:
        """``message/send`` (never retried). ``message`` is text or a ready ``Message``;
        ``data`` adds a data part; ``metadata`` is the request's ``params.metadata``."""
        params = self._send_params(
            message, context_id, task_id, data, metadata,
            MessageSendConfiguration(blocking=blocking, history_length=history_length),
        )
        return parse_send_result(await self._call("message/send", params, retry=False))

    def stream(
        self,
        message: Message | str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        data: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        history_length: int | None = None,
    ) -> EventStream:
        """``message/stream``: iterate the returned stream for typed events (never retried)."""
        configuration = (
            MessageSendConfiguration(history_length=history_length)
            if history_length is not None else None
        )
        params = self._send_params(message, context_id, task_id, data, metadata, configuration)
        return self._stream("message/stream", params, retry=False, task_id=task_id)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        """``tasks/get`` (retried on transient failures)."""
        params = TaskQueryParams(id=task_id, history_length=history_length).to_wire()
        return parse_task(await self._call("tasks/get", params, retry=True))

    async def cancel(self, task_id: str) -> Task:
        """``tasks/cancel`` (never retried)."""
        params = TaskIdParams(id=task_id).to_wire()
        return parse_task(await self._call("tasks/cancel", params, retry=False))

    def resubscribe(self, task_id: str, last_event_id: str | int | None = None) -> EventStream:
        """``tasks/resubscribe``; with ``last_event_id``, sent as ``Last-Event-ID`` (a llamon
        server then replays exactly the events after it). Connection setup is retried."""
        params = TaskIdParams(id=task_id).to_wire()
        last = None if last_event_id is None else str(last_event_id)
        return self._stream(
            "tasks/resubscribe", params, retry=True, task_id=task_id, last_event_id=last
        )

    async def answer(
        self,
        question: Question | Task | TaskStatusUpdateEvent,
        text: str | None = None,
        *,
        choice: Any = _UNSET,
        value: Any = _UNSET,
        decisions: Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        blocking: bool = True,
        history_length: int | None = None,
    ) -> Task | Message:
        """Answer an ``input-required`` question (see :func:`.hitl.answer_message`) with
        ``message/send``; for a stream, ``client.stream(answer_message(...))``."""
        message = answer_message(question, text, choice=choice, value=value, decisions=decisions)
        return await self.send(
            message, metadata=metadata, blocking=blocking, history_length=history_length
        )

    # ------------------------------------------------------------------ plumbing

    def _send_params(
        self,
        message: Message | str,
        context_id: str | None,
        task_id: str | None,
        data: Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
        configuration: MessageSendConfiguration | None,
    ) -> dict[str, Any]:
        merged = {**({"agentId": self.agent_id} if self.agent_id else {}), **(metadata or {})}
        return MessageSendParams(
            message=user_message(message, context_id=context_id, task_id=task_id, data=data),
            configuration=configuration,
            metadata=merged or None,
        ).to_wire()

    def _json_headers(self, accept: str) -> dict[str, str]:
        return {"Content-Type": "application/json", "Accept": accept, **self._headers}

    async def _call(self, method: str, params: dict[str, Any], *, retry: bool) -> Any:
        request_id = new_id()
        body = request_body(method, params, request_id)
        headers = self._json_headers("application/json")

        async def attempt() -> httpx.Response:
            response = await self._http.post(
                self.url, content=body, headers=headers, timeout=self._timeout
            )
            check_status(response)
            return response

        with translate_errors():
            response = await call_with_retries(self.retry if retry else NO_RETRY, attempt)
        return unwrap(decode_json(response.content, f"the {method} response"), request_id)

    def _stream(
        self,
        method: str,
        params: dict[str, Any],
        *,
        retry: bool,
        task_id: str | None,
        last_event_id: str | None = None,
    ) -> EventStream:
        request_id = new_id()
        body = request_body(method, params, request_id)
        headers = self._json_headers("text/event-stream")
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        policy = self.retry if retry else NO_RETRY

        async def attempt() -> httpx.Response:
            request = self._http.build_request(
                "POST", self.url, content=body, headers=headers, timeout=self._stream_timeout
            )
            response = await self._http.send(request, stream=True)
            if not response.is_success:
                try:
                    await response.aread()
                finally:
                    await response.aclose()
                check_status(response)
            return response

        async def open_response() -> httpx.Response:
            with translate_errors():
                return await call_with_retries(policy, attempt)

        return EventStream(open_response, request_id, task_id=task_id, last_event_id=last_event_id)


def user_message(
    content: Message | str,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    data: Mapping[str, Any] | None = None,
) -> Message:
    """A user ``Message``: text (or a given message), plus an optional data part; ``context_id``
    and ``task_id`` are set, and must not contradict ids the message already has."""
    if isinstance(content, Message):
        message = content
        if data is not None:
            extra = DataPart(kind="data", data=dict(data))
            message = message.model_copy(update={"parts": [*message.parts, extra]})
    else:
        parts: list[Part] = []
        if content or data is None:
            parts.append(TextPart(kind="text", text=content))
        if data is not None:
            parts.append(DataPart(kind="data", data=dict(data)))
        message = Message(message_id=new_id(), role="user", parts=parts)
    updates: dict[str, str] = {}
    for field, value in (("context_id", context_id), ("task_id", task_id)):
        if value is None:
            continue
        current = getattr(message, field)
        if current is not None and current != value:
            raise ValueError(f"the message already has {field}={current!r}, not {value!r}")
        updates[field] = value
    return message.model_copy(update=updates) if updates else message
