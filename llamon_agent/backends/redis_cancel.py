"""``RedisCancelRelay``: cancel requests between replicas over Redis pub/sub
(``runtime.cancel_relay.CancelRelay``).

Every replica subscribes to one channel, ``<prefix>cancel``; ``request(task_id)`` PUBLISHes the
task id there, and each other replica's subscriber hands it to the handlers ``listen``
registered (the ``TaskManager`` cancels the turn if it runs in its process). A message is the
sender's id, a space and the task id (UTF-8): a replica ignores its own requests, and ids over
256 characters, empty or not UTF-8 (nothing a replica would send). Pub/sub delivers at most
once, to whoever is subscribed at that moment: a request made while a replica is reconnecting
is lost, and the asking replica, which watches the stored task, answers "busy" after its wait
(``runtime/remote_cancel.py``), as one server answers while a context is held.

One background task reads the subscription; each handler call runs in a task of its own (at
most ``_HANDLING`` at once, then the reader waits), so a slow or failing handler neither holds
up nor ends the reader: a handler's error is logged. After a Redis error the reader subscribes
again, waiting 0.2 s, then twice as long after each failure, up to 10 s.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

from ..core.background import stop_task
from ..runtime.cancel_relay import CancelHandler

__all__ = ["MAX_TASK_ID", "RedisCancelRelay"]

log = logging.getLogger(__name__)

MAX_TASK_ID = 256  # characters of a task id a request may carry
_MAX_MESSAGE = 32 + 1 + 4 * MAX_TASK_ID  # bytes: sender, space, the id in UTF-8
_SENDER = re.compile(rb"^[0-9a-f]{32}$")
_FIRST_DELAY = 0.2  # seconds before subscribing again after a Redis error; doubles
_MAX_DELAY = 10.0
_CONFIRM = 5.0  # seconds Redis has to confirm a SUBSCRIBE
_READ = 30.0  # seconds a read waits before reading again (a health check may run between)
_HANDLING = 64  # handler calls running at once


class RedisCancelRelay:
    """An async context manager: entering connects (given a URL), subscribes (Redis away:
    entering fails) and starts the reader; leaving stops the reader and the handler calls in
    flight, and closes the connection it opened (a client passed in is left open; it must
    answer bytes, redis-py's default, as ``RedisPublisher``'s does)."""

    def __init__(self, redis: Any, *, prefix: str = "llamon:") -> None:
        self._url = redis if isinstance(redis, str) else None
        self._redis: Any = None if isinstance(redis, str) else redis
        self.channel = f"{prefix}cancel"
        self._id = uuid.uuid4().hex  # tells this relay's own requests from the others'
        self._handlers: dict[object, CancelHandler] = {}
        self._handling: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self._subscriptions = 0

    @property
    def reaches_others(self) -> bool:
        return True

    @property
    def subscriptions(self) -> int:
        """How often the relay subscribed: 1 once entered, one more after each lost connection
        (for tests and logs)."""
        return self._subscriptions

    async def __aenter__(self) -> RedisCancelRelay:
        if self._url is not None:
            from redis.asyncio import Redis

            # a health check (PING) before a read, at most every 30 s: a connection that died
            # silently is noticed, and the reader subscribes again
            self._redis = Redis.from_url(self._url, health_check_interval=_READ)
        try:
            pubsub = await self._subscribe()
            self._reader = asyncio.create_task(self._read_forever(pubsub),
                                               name="llamon-redis-cancel")
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            await stop_task(self._reader)
            self._reader = None
        for task in list(self._handling):
            await stop_task(task)
        if self._url is not None and self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    # ------------------------------------------------------------------ CancelRelay

    async def request(self, task_id: str) -> None:
        """Publish the request; Redis failing is logged (the asker's wait then ends in
        "busy"), and an id no replica would accept is not sent."""
        data = _encode(self._id, task_id)
        if data is None:
            log.warning("a cancel request for a task id of %d characters was not sent",
                        len(task_id))
            return
        try:
            await self._redis.publish(self.channel, data)
        except Exception:
            log.exception("the cancel request for task %s could not be published", task_id)

    def listen(self, handler: CancelHandler) -> Callable[[], None]:
        token = object()
        self._handlers[token] = handler

        def stop() -> None:
            self._handlers.pop(token, None)

        return stop

    # ------------------------------------------------------------------ reader

    async def _subscribe(self) -> Any:
        """A pub/sub connection whose SUBSCRIBE Redis confirmed (so no request published
        after it returns is missed)."""
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(self.channel)
            while True:
                message = await pubsub.get_message(timeout=_CONFIRM)
                if message is None:
                    raise TimeoutError(f"Redis did not confirm SUBSCRIBE {self.channel}")
                if message["type"] == "subscribe":
                    self._subscriptions += 1
                    return pubsub
        except BaseException:
            await _close(pubsub)
            raise

    async def _read_forever(self, pubsub: Any) -> None:
        delay = _FIRST_DELAY
        while True:
            try:
                if pubsub is None:
                    pubsub = await self._subscribe()
                    log.info("the cancel relay is subscribed to %s again", self.channel)
                    delay = _FIRST_DELAY
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True,
                                                       timeout=_READ)
                    if message is not None and message["type"] == "message":
                        await self._received(message["data"])
            except asyncio.CancelledError:
                await _close(pubsub)
                raise
            except Exception:  # Redis away: subscribe again, later and later
                log.warning("the cancel relay lost Redis; subscribing again in %.1f s", delay,
                            exc_info=True)
            await _close(pubsub)
            pubsub = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    async def _received(self, data: Any) -> None:
        task_id = _decode(data, self._id)
        if task_id is None:
            return
        for handler in list(self._handlers.values()):
            while len(self._handling) >= _HANDLING:  # let the calls in flight end first
                await asyncio.wait(set(self._handling), return_when=asyncio.FIRST_COMPLETED)
            task = asyncio.create_task(_call(handler, task_id),
                                       name="llamon-redis-cancel-handler")
            self._handling.add(task)
            task.add_done_callback(self._handling.discard)


async def _call(handler: CancelHandler, task_id: str) -> None:
    try:
        await handler(task_id)
    except Exception:
        log.exception("cancelling task %s on request of another replica failed", task_id)


async def _close(pubsub: Any) -> None:
    if pubsub is None:
        return
    try:
        await pubsub.aclose()
    except Exception:  # the connection is gone already
        log.debug("closing the cancel relay's subscription failed", exc_info=True)


def _encode(sender: str, task_id: str) -> bytes | None:
    if not task_id or len(task_id) > MAX_TASK_ID:
        return None
    try:
        return sender.encode() + b" " + task_id.encode()
    except UnicodeEncodeError:  # lone surrogates: no replica could read it back
        return None


def _decode(data: Any, own: str) -> str | None:
    """The task id another replica asks for, or ``None`` (its own, or unreadable)."""
    if not isinstance(data, bytes) or len(data) > _MAX_MESSAGE:
        log.warning("ignored a cancel request that is not a task id")
        return None
    sender, _, raw = data.partition(b" ")
    if not _SENDER.match(sender):
        log.warning("ignored a cancel request that is not a task id")
        return None
    if sender == own.encode():
        return None
    try:
        task_id = raw.decode()
    except UnicodeDecodeError:
        log.warning("ignored a cancel request whose task id is not UTF-8")
        return None
    if not task_id or len(task_id) > MAX_TASK_ID:
        log.warning("ignored a cancel request for a task id of %d characters", len(task_id))
        return None
    return task_id
