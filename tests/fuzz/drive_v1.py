"""One v1.0 fuzz case, sent and checked (``drive.rpc_case``'s counterpart for v1.0)."""

from __future__ import annotations

from typing import Any

from .cases_v1 import RpcV1Case
from .checks import Stats, shown
from .checks_v1 import check_rpc_v1, result_errors, v1_rpc
from .drive import Served
from .values import encode

#: what ``Stats.kinds`` counts for a v1.0 answer that reached the task the scene asked about
ANSWERED = "v1.0 answers to a v0.3 question"


def rpc_v1_case(served: Served, case: RpcV1Case, stats: Stats) -> None:
    scene = served.scene
    tree = case.tree if case.slot is None else scene.fill(case.tree, case.slot)
    waiting = None if case.slot is None else scene.slot(case.slot).task_id
    body = encode(tree)
    stats.kinds[case.kind] += 1
    reply = served.wire.request("POST", case.path(), body, case.headers())
    if case.slot is not None:
        scene.used(case.slot)
    result = check_rpc_v1(reply, case, tree, body, stats)
    answered = waiting is not None and waiting in _task_ids(result) \
        and case.method() in ("SendMessage", "SendStreamingMessage")
    if answered:
        stats.kinds[ANSWERED] += 1
    assert answered or not case.answers, (
        f"an answer to task {waiting} is not about it\nrequest: {shown(body)}\n"
        f"reply: {shown(reply.content, 600)}")
    healthy_v1(served)


def healthy_v1(served: Served) -> None:
    """A normal request still works, in both versions (on the same connection, for the real
    server)."""
    served.scene.healthy()
    answer = v1_rpc(served.wire, "GetTask", {"id": served.scene.anchor})
    assert "result" in answer, answer
    assert result_errors("Task", answer["result"]) == [], answer


def _task_ids(result: Any) -> set[str]:
    """The ids of the tasks a ``SendMessageResponse`` or a stream's results are about."""
    results = result if isinstance(result, list) else [result]
    ids: set[str] = set()
    for item in results:
        if not isinstance(item, dict):
            continue
        task = item.get("task")
        if isinstance(task, dict) and isinstance(task.get("id"), str):
            ids.add(task["id"])
        for update in ("statusUpdate", "artifactUpdate"):
            event = item.get(update)
            if isinstance(event, dict) and isinstance(event.get("taskId"), str):
                ids.add(event["taskId"])
    return ids
