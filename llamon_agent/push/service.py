"""``PushNotifications``: webhook configs per task, and the deliveries of the changes a client
acts on (A2A v0.3 §10; docs/operations.md, "Push notifications").

* **Configs** (``tasks/pushNotificationConfig/*``, ``configuration.pushNotificationConfig``):
  the caller owns the task (the runtime checked), the edge checked every value's size; here
  the webhook is checked (``guard.py``) and the authentication is one the server can apply.
* **Enqueue** (``saved``, called by the publisher after every stored write of a task): a task
  stored in a notified state (``input-required``, ``auth-required``, a terminal state) gets one
  delivery per config that has not seen that change, in the database of the task, and the first
  attempt starts at once in the background (``dispatcher.py``).
* **Reconciliation** (the sweep): the enqueue runs after the task's write, in a transaction of
  its own, so a server that dies in between (or whose enqueue fails) stored a change that no
  delivery names. Each sweep compares the tasks that have configs with what their configs saw
  (``PushStore.stale_tasks``) and enqueues what is missing. Nothing is lost that a client still
  needs: a task waits in ``input-required`` until its client acts, and a terminal state never
  changes, so the state to tell is still the stored one when the sweep comes (a few seconds
  later, or at the next start). The same change is never enqueued twice (``seen_seq``).
* **Retries** (the sweep): due deliveries are claimed (a lease: one server at a time) and
  attempted, with a backoff that doubles, until one answers 2xx or ``max_attempts`` failed.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from types import TracebackType

from ..a2a.types import (
    PushNotificationConfig,
    TaskPushNotificationConfig,
)
from ..core.bounds import Limits
from ..core.clock import Clock
from ..errors import InvalidParamsError, LimitExceededError
from ..stores.base import StoredTask, TaskStore
from ..stores.push_base import NOTIFIED_STATES, Delivery, DeliveryKey, DeliveryRecord, PushStore
from .dispatcher import PushDispatcher
from .guard import Destination, Origin, WebhookRefused, check_webhook, parse_webhook
from .policy import PushPolicy

__all__ = ["SCHEMES", "PushNotifications"]

log = logging.getLogger(__name__)

#: authentication schemes the server applies: ``Authorization: <scheme> <credentials>``
SCHEMES = ("Bearer", "Basic")


class PushNotifications:
    """An async context manager: entering opens the HTTP client of the deliveries; leaving
    stops the attempts in flight (the store keeps them for later)."""

    name = "push"  # the sweep job's name (``runtime/sweeper.py``)

    def __init__(self, store: PushStore, tasks: TaskStore, *, policy: PushPolicy,
                 limits: Limits, clock: Clock, public_url: str | None = None) -> None:
        self._store = store
        self._tasks = tasks
        self._policy = policy
        self._limits = limits
        self._clock = clock
        #: the server itself: its public URL, and every local address a request arrived on
        self._own: set[Origin] = set()
        if public_url is not None:
            with contextlib.suppress(WebhookRefused):  # a public URL no webhook could name
                webhook = parse_webhook(public_url)
                self._own.add(Origin(webhook.host, webhook.port))
        self._dispatcher = PushDispatcher(store, policy, clock, self._destination, _headers)

    async def __aenter__(self) -> PushNotifications:
        await self._dispatcher.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._dispatcher.__aexit__(exc_type, exc, tb)

    # ------------------------------------------------------------------ configs

    async def vet(self, config: PushNotificationConfig, field: str,
                  own: Collection[Origin] = ()) -> None:
        """Refuse (``-32602``, ``data.reason``) a config the server must not or cannot apply:
        a webhook it must not call (``guard.py``; ``own``: the local address the request
        arrived on), an authentication it cannot send."""
        self._own.update(own)
        authentication = config.authentication
        if authentication is not None and authentication.schemes:
            where = f"{field}.authentication"
            supported = [s for s in authentication.schemes if s.lower() in _LOWER_SCHEMES]
            if not supported:
                raise _config_refused("unsupported authentication scheme",
                                      f"schemes {authentication.schemes!r}: the server sends "
                                      f"{' or '.join(SCHEMES)}", f"{where}.schemes")
            if not authentication.credentials:
                raise _config_refused("missing credentials",
                                      f"{supported[0]} needs authentication.credentials",
                                      f"{where}.credentials")
            _header_value(authentication.credentials, f"{where}.credentials")
        if config.token is not None:
            _header_value(config.token, f"{field}.token")
        try:
            await self._destination(config.url)
        except WebhookRefused as refused:
            # the category only: the addresses a name resolves to stay with the server (a
            # client must not map an internal network through the answers)
            raise InvalidParamsError(
                f"The webhook URL is refused: {refused.why}",
                data={"reason": f"webhook refused: {refused.why}", "field": f"{field}.url"},
            ) from None

    async def set(self, record: StoredTask, config: PushNotificationConfig,
                  field: str = "params.pushNotificationConfig") -> TaskPushNotificationConfig:
        """Store ``config`` for the caller's task (checked by ``vet``): with the client's id
        (replacing a config of that id), else a new one."""
        if config.id is None:
            config = config.model_copy(update={"id": str(uuid.uuid4())})
        limit = self._limits.max_push_configs
        if not await self._store.put_config(record, config, max_configs=limit):
            raise LimitExceededError(
                f"task {record.id} has {limit} push notification configs already",
                limit="max_push_configs", field=field, maximum=limit)
        return TaskPushNotificationConfig(task_id=record.id, push_notification_config=config)

    async def get(self, record: StoredTask, config_id: str | None
                  ) -> TaskPushNotificationConfig:
        """The config ``config_id``; without one, the task's first."""
        for config in await self._store.get_configs(record.id):
            if config_id is None or config.id == config_id:
                return TaskPushNotificationConfig(task_id=record.id,
                                                  push_notification_config=config)
        raise InvalidParamsError(
            f"task {record.id} has no push notification config"
            + (f" {config_id!r}" if config_id is not None else ""),
            data={"reason": "unknown push notification config", "taskId": record.id,
                  "pushNotificationConfigId": config_id},
        )

    async def configs(self, record: StoredTask) -> list[TaskPushNotificationConfig]:
        return [TaskPushNotificationConfig(task_id=record.id, push_notification_config=c)
                for c in await self._store.get_configs(record.id)]

    async def delete(self, record: StoredTask, config_id: str) -> None:
        """Also its deliveries not made yet; an unknown id is no error (it is gone)."""
        await self._store.delete_config(record.id, config_id)

    # ------------------------------------------------------------------ deliveries

    async def saved(self, record: StoredTask) -> None:
        """The publisher stored ``record``: enqueue its change and attempt it at once. A
        failure is logged; the next sweep enqueues what is missing."""
        if record.state not in NOTIFIED_STATES:
            return
        try:
            keys = await self._enqueue(record, just_saved=True)
        except Exception:
            log.exception("push deliveries of task %s could not be enqueued; the next sweep "
                          "catches up", record.id)
            return
        self._dispatcher.kick(keys)

    async def _enqueue(self, record: StoredTask, now: float | None = None, *,
                       just_saved: bool = False) -> list[DeliveryKey]:
        history = self._policy.history_length
        at = self._clock().timestamp() if now is None else now
        return await self._store.enqueue(record, lambda: _body(record, history), at,
                                         just_saved=just_saved)

    async def sweep(self, now: datetime) -> int:
        """The sweep job: catch up on changes not enqueued, then start the attempts due
        (as many as there are places); returns how many of both."""
        handled = 0
        at = now.timestamp()  # what the sweep enqueues is due in the same sweep
        for task_id in await self._store.stale_tasks(self._policy.reconcile_batch):
            record = await self._tasks.get(task_id)
            if record is None:
                continue
            keys = await self._enqueue(record, at)
            if keys:
                log.info("push: %d deliveries of task %s (%s) enqueued by the sweep",
                         len(keys), task_id, record.state)
            handled += len(keys)
        claimed = await self._store.claim_due(at, at + self._policy.lease,
                                              self._dispatcher.free())
        self._dispatcher.start(claimed)
        return handled + len(claimed)

    async def settle(self) -> None:
        """Return once no attempt is in flight."""
        await self._dispatcher.settle()

    async def deliveries(self, task_id: str) -> list[DeliveryRecord]:
        """What was delivered, is pending or was given up, for the task (operators, tests)."""
        return await self._store.deliveries(task_id)

    async def delete_tasks(self, task_ids: Sequence[str]) -> None:
        """Retention deleted these tasks: their configs and deliveries go too."""
        await self._store.delete_tasks(task_ids)

    async def _destination(self, url: str) -> Destination:
        policy = self._policy
        return await check_webhook(url, allow_private=policy.allow_private,
                                   resolve=policy.resolve,
                                   resolve_timeout=policy.resolve_timeout, own=self._own)


_LOWER_SCHEMES = {s.lower(): s for s in SCHEMES}


def _headers(delivery: Delivery) -> dict[str, str]:
    config = delivery.config
    headers = {"X-A2A-Delivery-Id": delivery.key.delivery_id}
    if config.token is not None:
        headers["X-A2A-Notification-Token"] = config.token
    authentication = config.authentication
    if authentication is not None and authentication.credentials:
        scheme = next((_LOWER_SCHEMES[s.lower()] for s in authentication.schemes
                       if s.lower() in _LOWER_SCHEMES), None)
        if scheme is not None:
            headers["Authorization"] = f"{scheme} {authentication.credentials}"
    return headers


def _body(record: StoredTask, history_length: int) -> bytes:
    """The Task as ``tasks/get`` answers it, with the last ``history_length`` messages."""
    task = record.task
    if task.history is not None:
        task = task.model_copy(update={"history": task.history[-history_length:]
                                       if history_length else None})
    return task.to_json()


def _header_value(value: str, field: str) -> None:
    """A value sent as an HTTP header: visible ASCII and spaces, nothing that ends a line."""
    if not all(0x20 <= ord(c) < 0x7F for c in value):
        raise _config_refused("not a header value",
                              f"{field} must be printable ASCII (it is sent as a header)", field)


def _config_refused(why: str, detail: str, field: str) -> InvalidParamsError:
    return InvalidParamsError(f"The push notification config is refused: {detail}",
                              data={"reason": f"push config refused: {why}", "field": field})
