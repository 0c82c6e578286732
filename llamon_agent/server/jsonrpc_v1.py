"""The A2A v1.0 methods at the JSON-RPC edge: their params, validated (``a2a/v1.py``) and
turned into the v0.3 params the runtime takes; their results, written in v1.0's shapes.

Every v1.0 method but ``ListTasks`` is a v0.3 method under another name with other shapes
(``OPERATIONS``); ``ListTasks`` is v1.0's own and is served here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..a2a import types as v03
from ..a2a import v1
from ..a2a.v1_convert import (
    V03_STATE,
    push_config_in,
    push_config_out,
    send_params_in,
    stream_event_out,
    task_out,
)
from ..core.bounds import Limits, check_id
from ..core.clock import parse_iso
from ..core.principal import context_key
from ..errors import InvalidParamsError
from ..runtime.messages import response_copy
from ..runtime.tasks import TaskManager
from ..stores.base import TaskCursor, TaskQuery
from . import push_methods
from .extended_card import METHOD as EXTENDED_CARD
from .page_tokens import parts_of, token_of

__all__ = ["LIST_TASKS", "METHODS", "OPERATIONS", "ListTasksParams", "list_tasks", "params_of",
           "result_of"]

LIST_TASKS = "ListTasks"
#: a v1.0 method -> the v0.3 operation it is
OPERATIONS: dict[str, str] = {
    "SendMessage": "message/send",
    "SendStreamingMessage": "message/stream",
    "GetTask": "tasks/get",
    "CancelTask": "tasks/cancel",
    "SubscribeToTask": "tasks/resubscribe",
    "CreateTaskPushNotificationConfig": push_methods.SET,
    "GetTaskPushNotificationConfig": push_methods.GET,
    "ListTaskPushNotificationConfigs": push_methods.LIST,
    "DeleteTaskPushNotificationConfig": push_methods.DELETE,
    "GetExtendedAgentCard": EXTENDED_CARD,
    LIST_TASKS: LIST_TASKS,
}
_MODELS: dict[str, type[BaseModel]] = {
    "SendMessage": v1.SendMessageRequest,
    "SendStreamingMessage": v1.SendMessageRequest,
    "GetTask": v1.GetTaskRequest,
    "CancelTask": v1.CancelTaskRequest,
    "SubscribeToTask": v1.SubscribeToTaskRequest,
    "CreateTaskPushNotificationConfig": v1.TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": v1.GetTaskPushNotificationConfigRequest,
    "ListTaskPushNotificationConfigs": v1.ListTaskPushNotificationConfigsRequest,
    "DeleteTaskPushNotificationConfig": v1.DeleteTaskPushNotificationConfigRequest,
    "GetExtendedAgentCard": v1.GetExtendedAgentCardRequest,
    LIST_TASKS: v1.ListTasksRequest,
}
METHODS = frozenset(OPERATIONS)
_DEFAULT_PAGE = 50


@dataclass(frozen=True)
class ListTasksParams:
    query_context: str | None
    state: str | None
    page_size: int
    after: TaskCursor | None
    history_length: int
    updated_since: float | None
    include_artifacts: bool


def params_of(method: str, raw: dict[str, Any], limits: Limits) -> Any:
    """The v0.3 params (or ``ListTasksParams``) of a v1.0 call; pydantic's ``ValidationError``
    or an ``A2AError`` (``-32602``) for params that are not valid."""
    typed = _MODELS[method].model_validate(raw)
    if getattr(typed, "tenant", ""):
        raise _invalid("params.tenant", "this server serves no tenants: leave tenant empty")
    return _CONVERT[method](typed, limits)


def _invalid(field: str, message: str) -> InvalidParamsError:
    return InvalidParamsError(f"{field}: {message}",
                              data={"errors": [{"field": field, "message": message}]})


def _send(typed: v1.SendMessageRequest, limits: Limits) -> v03.MessageSendParams:
    return send_params_in(typed)


def _get(typed: v1.GetTaskRequest, limits: Limits) -> v03.TaskQueryParams:
    return v03.TaskQueryParams(id=typed.id, history_length=typed.history_length)


def _cancel(typed: v1.CancelTaskRequest, limits: Limits) -> v03.TaskIdParams:
    return v03.TaskIdParams(id=typed.id, metadata=typed.metadata)


def _subscribe(typed: v1.SubscribeToTaskRequest, limits: Limits) -> v03.TaskIdParams:
    return v03.TaskIdParams(id=typed.id)


def _push_create(typed: v1.TaskPushNotificationConfig,
                 limits: Limits) -> v03.TaskPushNotificationConfig:
    if not typed.task_id:
        raise _invalid("params.taskId", "the task the config is for is required")
    return v03.TaskPushNotificationConfig(task_id=typed.task_id,
                                          push_notification_config=push_config_in(typed))


def _push_get(typed: v1.GetTaskPushNotificationConfigRequest,
              limits: Limits) -> v03.GetTaskPushNotificationConfigParams:
    return v03.GetTaskPushNotificationConfigParams(id=typed.task_id,
                                                   push_notification_config_id=typed.id)


def _push_list(typed: v1.ListTaskPushNotificationConfigsRequest,
               limits: Limits) -> v03.ListTaskPushNotificationConfigParams:
    if typed.page_token:  # every config of a task fits one page (limits.max_push_configs)
        raise _invalid("params.pageToken", "this server never gives page tokens for configs")
    return v03.ListTaskPushNotificationConfigParams(id=typed.task_id)


def _push_delete(typed: v1.DeleteTaskPushNotificationConfigRequest,
                 limits: Limits) -> v03.DeleteTaskPushNotificationConfigParams:
    return v03.DeleteTaskPushNotificationConfigParams(id=typed.task_id,
                                                      push_notification_config_id=typed.id)


def _card(typed: v1.GetExtendedAgentCardRequest, limits: Limits) -> None:
    return None


def _list(typed: v1.ListTasksRequest, limits: Limits) -> ListTasksParams:
    check_id(typed.context_id or None, limits, "params.contextId")
    updated_since = None
    if typed.status_timestamp_after is not None:
        try:
            updated_since = parse_iso(typed.status_timestamp_after).timestamp()
        except ValueError:
            raise _invalid("params.statusTimestampAfter",
                           "must be an RFC 3339 time with a timezone") from None
    return ListTasksParams(
        query_context=typed.context_id or None,
        state=None if typed.status == "TASK_STATE_UNSPECIFIED" else V03_STATE[typed.status],
        page_size=typed.page_size or _DEFAULT_PAGE,
        after=_cursor_of(typed.page_token) if typed.page_token else None,
        # a listing shows no history unless asked: a page of 100 tasks stays small
        history_length=typed.history_length or 0,
        updated_since=updated_since,
        include_artifacts=typed.include_artifacts,
    )


_CONVERT: dict[str, Callable[[Any, Limits], Any]] = {
    "SendMessage": _send,
    "SendStreamingMessage": _send,
    "GetTask": _get,
    "CancelTask": _cancel,
    "SubscribeToTask": _subscribe,
    "CreateTaskPushNotificationConfig": _push_create,
    "GetTaskPushNotificationConfig": _push_get,
    "ListTaskPushNotificationConfigs": _push_list,
    "DeleteTaskPushNotificationConfig": _push_delete,
    "GetExtendedAgentCard": _card,
    LIST_TASKS: _list,
}


# ---------------------------------------------------------------------------- page tokens


def _token_of(cursor: TaskCursor) -> str:
    return token_of(cursor.updated, cursor.id)


def _cursor_of(token: str) -> TaskCursor:
    """The cursor a page token holds; ``-32602`` for one this server did not write."""
    try:
        updated, task_id = parts_of(token, float, str)
    except ValueError:
        raise _invalid("params.pageToken",
                       "not a page token of this server (use the nextPageToken of a "
                       "previous page)") from None
    return TaskCursor(updated, task_id)


# ---------------------------------------------------------------------------- results


async def list_tasks(manager: TaskManager, params: ListTasksParams, space: str) -> dict[str, Any]:
    page = await manager.list_tasks(TaskQuery(
        space=space,
        context_key=None if params.query_context is None
        else context_key(space, params.query_context),
        state=params.state,
        updated_since=params.updated_since,
    ), params.page_size, params.after, history=params.history_length)
    return {
        "tasks": [task_out(response_copy(listed.record, params.history_length),
                           artifacts=params.include_artifacts) for listed in page.tasks],
        "nextPageToken": "" if page.next is None else _token_of(page.next),
        "pageSize": params.page_size,
        "totalSize": page.total,
    }


def result_of(operation: str, result: Any) -> Any:
    """A v0.3 operation's result in the shape of its v1.0 method."""
    if operation == "message/send":
        return stream_event_out(result)
    if operation in ("tasks/get", "tasks/cancel"):
        return task_out(result)
    if operation in (push_methods.SET, push_methods.GET):
        return push_config_out(result)
    if operation == push_methods.LIST:
        return {"configs": [push_config_out(c) for c in result], "nextPageToken": ""}
    if operation == push_methods.DELETE:
        return {}
    return result
