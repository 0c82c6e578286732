"""Realistic state for the fuzzer to hit: tasks of the example agents waiting for an answer.

A generated request that addresses "slot k" is sent to the waiting task in that slot (by its
``contextId``, its ``taskId`` or both, with its ``interruptId`` or a stale one), so that the
answer path runs, not only the new-task path. A slot is refilled after every request that
addressed it (the answer may have been taken).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from .wire import Wire

EMAIL_PROMPT = "Send an email to alice@example.com about Meeting: The meeting is at 10."

#: agents with a question to answer, by slot; each entry: (agent id, first message parts)
SLOTS: list[tuple[str, list[dict[str, Any]]]] = [
    ("document-review", [{"kind": "text", "text": "이 서류를 검증해줘"}]),
    ("until-done", [{"kind": "text", "text": "take notes"}]),
    ("email-assistant", [{"kind": "text", "text": EMAIL_PROMPT}]),
    ("loan", [{"kind": "data", "data": {"applicant": "Kim", "amount": 90000, "income": 20000}}]),
]
STREAMABLE_SLOTS = [i for i, (agent, _) in enumerate(SLOTS) if agent != "loan"]

#: the placeholders a generated request carries until it is sent
TASK, CONTEXT, INTERRUPT, STALE = "$TASK", "$CONTEXT", "$INTERRUPT", "$STALE"


@dataclass
class Waiting:
    agent: str
    task_id: str
    context_id: str
    interrupt_id: str | None


class Scene:
    """The slots of one server, filled over ``wire``."""

    def __init__(self, wire: Wire, *, blocking_loans: bool) -> None:
        self.wire = wire
        self.blocking_loans = blocking_loans
        self._slots: dict[int, Waiting] = {}
        self._stale: dict[int, str] = {}
        self._thread: tuple[str, str] | None = None
        self.stale_thread: tuple[str, str] | None = None
        anchor = self.send(SLOTS[1][1], "until-done")
        self.anchor = anchor["id"]  # a task the health check reads after every example

    def rpc(self, method: str, params: Any) -> dict[str, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        reply = self.wire.request("POST", "/", body.encode())
        assert reply.status == 200, reply
        answer: dict[str, Any] = json.loads(reply.content)
        return answer

    def send(self, parts: list[dict[str, Any]], agent: str, **message: Any) -> dict[str, Any]:
        params: dict[str, Any] = {
            "message": {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user",
                        "parts": parts, **message},
            "metadata": {"agentId": agent},
        }
        if agent == "loan" and not self.blocking_loans:
            params["configuration"] = {"blocking": False}
        answer = self.rpc("message/send", params)
        assert "result" in answer, answer
        task: dict[str, Any] = answer["result"]
        return task

    def slot(self, index: int) -> Waiting:
        if index not in self._slots:
            agent, parts = SLOTS[index]
            task = self.send(parts, agent)
            if agent == "loan":
                task = self.wait(task["id"], {"input-required"})
            assert task["status"]["state"] == "input-required", task["status"]
            metadata = task["status"].get("message", {}).get("metadata") or {}
            self._slots[index] = Waiting(agent, task["id"], task["contextId"],
                                         metadata.get("interruptId"))
        return self._slots[index]

    def used(self, index: int) -> None:
        """The request addressed this slot: fill it again before the next one."""
        waiting = self._slots.pop(index, None)
        if waiting is not None and waiting.interrupt_id is not None:
            self._stale[index] = waiting.interrupt_id

    def fill(self, tree: Any, index: int) -> Any:
        """``tree`` with the placeholders replaced by the slot's ids."""
        waiting = self.slot(index)
        values = {
            TASK: waiting.task_id, CONTEXT: waiting.context_id,
            INTERRUPT: waiting.interrupt_id or "no-interrupt",
            STALE: self._stale.get(index, "0" * 32),
        }
        return _replace(tree, values)

    def get(self, task_id: str) -> dict[str, Any]:
        answer = self.rpc("tasks/get", {"id": task_id})
        assert "result" in answer, answer
        task: dict[str, Any] = answer["result"]
        return task

    def wait(self, task_id: str, states: set[str], timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            task = self.get(task_id)
            if task["status"]["state"] in states:
                return task
            assert time.monotonic() < deadline, f"task {task_id} stays {task['status']}"
            time.sleep(0.01)

    def healthy(self) -> None:
        """A normal request still works (on the same connection, for ``OneConnection``)."""
        task = self.get(self.anchor)
        assert task["id"] == self.anchor

    def pending_thread(self) -> tuple[str, str]:
        """A ``/hitl/chat`` thread whose email waits for approval: (thread_id, interrupt_id)."""
        if self._thread is None:
            body = json.dumps({"message": EMAIL_PROMPT}).encode()
            reply = self.wire.request("POST", "/hitl/chat", body)
            assert reply.status == 200, reply.content
            turn = json.loads(reply.content)
            assert turn["pending_review"] is not None, turn
            self._thread = (turn["thread_id"], turn["interrupt_id"])
        return self._thread

    def has_thread(self, thread_id: Any) -> bool:
        return self._thread is not None and self._thread[0] == thread_id

    def thread_used(self) -> None:
        if self._thread is not None:
            self.stale_thread, self._thread = self._thread, None

    def parked_review(self) -> str:
        """A new loan task waiting for a reviewer; returns the review id."""
        task = self.send([{"kind": "data", "data": {"applicant": "Lee", "amount": 50000,
                                                    "income": 20000}}], "loan")
        deadline = time.monotonic() + 10.0
        while True:
            message = task["status"].get("message") or {}
            for part in message.get("parts") or []:
                if part.get("kind") == "data" and "review" in part.get("data", {}):
                    review_id: str = part["data"]["review"]["id"]
                    return review_id
            assert time.monotonic() < deadline, f"no review for task {task['id']}"
            time.sleep(0.01)
            task = self.get(task["id"])


def _replace(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return values.get(value, value)
    if isinstance(value, dict):
        return {values.get(k, k) if isinstance(k, str) else k: _replace(v, values)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, values) for v in value]
    return value
