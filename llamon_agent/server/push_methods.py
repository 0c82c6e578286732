"""``tasks/pushNotificationConfig/set|get|list|delete`` and the config of a message, at the
JSON-RPC edge (docs/wire.md §10).

The params arrive validated and within the edge limits (``jsonrpc.parse``,
``a2a_limits.check_push_config``). The caller's task comes first: another principal's task is
``-32001`` exactly as an unknown one, before anything about the config is said. Then the
webhook is checked (``push/guard.py``), with the local address the request arrived on as the
server itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..a2a.types import (
    DeleteTaskPushNotificationConfigParams,
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigParams,
    MessageSendParams,
    TaskPushNotificationConfig,
)
from ..errors import PushNotificationNotSupportedError
from ..push.guard import Origin
from ..push.service import PushNotifications
from ..runtime.tasks import TaskManager

__all__ = ["PUSH_METHODS", "call", "local_origin", "vet_message"]

SET = "tasks/pushNotificationConfig/set"
GET = "tasks/pushNotificationConfig/get"
LIST = "tasks/pushNotificationConfig/list"
DELETE = "tasks/pushNotificationConfig/delete"
#: each method and its params' wire type
PUSH_METHODS: Mapping[str, type[Any]] = {
    SET: TaskPushNotificationConfig,
    GET: GetTaskPushNotificationConfigParams,
    LIST: ListTaskPushNotificationConfigParams,
    DELETE: DeleteTaskPushNotificationConfigParams,
}


def local_origin(scope: Mapping[str, Any]) -> list[Origin]:
    """The address this request arrived on (ASGI ``server``): a webhook there is the server."""
    server = scope.get("server")
    if not server or not server[0]:
        return []
    port = server[1] if server[1] is not None else (443 if scope.get("scheme") == "https" else 80)
    return [Origin(str(server[0]).lower(), int(port))]


def _push(manager: TaskManager) -> PushNotifications:
    if manager.push is None:
        raise PushNotificationNotSupportedError()
    return manager.push


async def call(manager: TaskManager, method: str, params: Any, *, space: str,
               own: Sequence[Origin], v1: bool = False) -> Any:
    """``v1``: the request speaks A2A v1.0, whose config is flat (``params.url``): errors
    name its fields."""
    push = _push(manager)
    if isinstance(params, TaskPushNotificationConfig):
        record = await manager.owned(params.task_id, space=space)
        field = "params" if v1 else "params.pushNotificationConfig"
        await push.vet(params.push_notification_config, field, own)
        return await push.set(record, params.push_notification_config, field)
    record = await manager.owned(params.id, space=space)
    if isinstance(params, GetTaskPushNotificationConfigParams):
        return await push.get(record, params.push_notification_config_id)
    if isinstance(params, ListTaskPushNotificationConfigParams):
        return await push.configs(record)
    await push.delete(record, params.push_notification_config_id)
    return None


async def vet_message(manager: TaskManager, params: MessageSendParams,
                      own: Sequence[Origin], *, v1: bool = False) -> None:
    """The webhook of ``configuration.pushNotificationConfig`` (v1.0:
    ``taskPushNotificationConfig``), before anything is routed."""
    config = params.configuration.push_notification_config if params.configuration else None
    if config is not None:
        name = "taskPushNotificationConfig" if v1 else "pushNotificationConfig"
        await _push(manager).vet(config, f"params.configuration.{name}", own)
