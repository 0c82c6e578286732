"""A 1.x client connection held by the driver, with ProtoJSON v1 message builders."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.sdk1.harness import DEFAULT_TIMEOUT, GRACE, Driver, Exchange, Reply, RpcError


@dataclass(frozen=True)
class Connected:
    """What ``ClientFactory.create`` chose for the card the server sent."""

    transport: str
    interface: dict[str, Any]
    card: dict[str, Any]
    wire: list[Exchange]

    @property
    def version(self) -> str:
        return str(self.interface.get("protocolVersion", ""))


@dataclass(frozen=True)
class Sent:
    """A send's outcome: every ``StreamResponse`` the client yielded, the task they make up,
    and the HTTP exchanges (or the error the client raised, with the events before it)."""

    task: dict[str, Any] | None
    events: list[dict[str, Any]]
    wire: list[Exchange]
    error: RpcError | None

    @property
    def done(self) -> dict[str, Any]:
        if self.error is not None:
            raise AssertionError(f"the 1.x client raised {self.error}\nevents: {self.events}\n"
                                 f"wire: {self.wire}")
        assert self.task is not None, self.events
        return self.task

    @property
    def rpc(self) -> list[Exchange]:
        return [e for e in self.wire if e.rpc_method is not None]


def _sent(reply: Reply) -> Sent:
    task = reply.result.get("task") if isinstance(reply.result, dict) else None
    return Sent(task, reply.events, reply.wire, reply.error)


class Sdk1Client:
    """One named connection of the driver (``connect`` first)."""

    def __init__(self, driver: Driver, name: str) -> None:
        self.driver = driver
        self.name = name

    def connect(self, url: str, *, streaming: bool, mode: str = "native",
                headers: dict[str, str] | None = None) -> Connected:
        reply = self.driver.call("connect", client=self.name, url=url, streaming=streaming,
                                 mode=mode, headers=headers or {})
        result = reply.ok()
        return Connected(result["transport"], result["interface"] or {}, result["card"],
                         reply.wire)

    def start_send(self, message: dict[str, Any], *, metadata: dict[str, Any] | None = None,
                   configuration: dict[str, Any] | None = None,
                   timeout: float = DEFAULT_TIMEOUT) -> int:
        """Send without waiting (a stream that stays open); ``finish`` collects it."""
        fields: dict[str, Any] = {"client": self.name, "message": message}
        if metadata:
            fields["metadata"] = metadata
        if configuration:
            fields["configuration"] = configuration
        return self.driver.submit("send", timeout=timeout, **fields)

    def finish(self, cid: int, timeout: float = DEFAULT_TIMEOUT) -> Sent:
        return _sent(self.driver.wait(cid, timeout + GRACE))

    def send(self, message: dict[str, Any], *, metadata: dict[str, Any] | None = None,
             configuration: dict[str, Any] | None = None,
             timeout: float = DEFAULT_TIMEOUT) -> Sent:
        cid = self.start_send(message, metadata=metadata, configuration=configuration,
                              timeout=timeout)
        return self.finish(cid, timeout)

    def get_task(self, task_id: str, history_length: int | None = None) -> Reply:
        fields: dict[str, Any] = {"client": self.name, "id": task_id}
        if history_length is not None:
            fields["historyLength"] = history_length
        return self.driver.call("get_task", **fields)

    def cancel(self, task_id: str) -> Reply:
        return self.driver.call("cancel", client=self.name, id=task_id)

    def subscribe(self, task_id: str, timeout: float = DEFAULT_TIMEOUT) -> Sent:
        return _sent(self.driver.call("subscribe", client=self.name, id=task_id,
                                      timeout=timeout))

    def list_tasks(self, **request: Any) -> Reply:
        return self.driver.call("list_tasks", client=self.name, **request)

    def close(self) -> None:
        self.driver.call("close", client=self.name).ok()


@contextmanager
def sdk1_client(driver: Driver, url: str, *, streaming: bool, mode: str = "native",
                headers: dict[str, str] | None = None) -> Iterator[tuple[Sdk1Client, Connected]]:
    """A fresh connection for one test, closed on leaving."""
    client = Sdk1Client(driver, f"c-{uuid.uuid4().hex[:8]}")
    connected = client.connect(url, streaming=streaming, mode=mode, headers=headers)
    try:
        yield client, connected
    finally:
        client.close()


def user_message(*parts: dict[str, Any], context_id: str | None = None,
                 task_id: str | None = None,
                 metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ProtoJSON v1 ``Message`` from the user (parts: ``text(...)``, ``data(...)``)."""
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                               "parts": list(parts)}
    if context_id is not None:
        message["contextId"] = context_id
    if task_id is not None:
        message["taskId"] = task_id
    if metadata is not None:
        message["metadata"] = metadata
    return message


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def data(value: dict[str, Any]) -> dict[str, Any]:
    return {"data": value}
