"""The turn worker: runs turns in a task group it owns, as uvicorn's ``Server`` owns its tasks.

::

    start(turn)  attach the turn to its claim, publish its first snapshot (stored when a client
                 sees the task before the turn ends), then run it in the group; a turn that only
                 reports a status ends at once
    _run(turn)   working ─► run_turn(graph) ─► Ending ─► publisher.end(); finally finish()
    finish(turn) release the claim, close the event log (not for a task parked for a reviewer),
                 wake the senders that wait
    __aexit__    running turns get ``shutdown_grace`` seconds, then are cancelled: a cancelled
                 turn is stored ``working`` and recovered at the next start

A turn runs in the worker's group, not in the request that started it: a client that goes
away does not stop its task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from types import TracebackType

from ..a2a.types import TERMINAL_STATES, Message
from ..human_review.node import TaskRejected
from ..stores.base import StoredTask
from ..stores.turn_writes import TurnWrites, holding
from .claims import Claim, ContextClaims
from .ending import Ending, ending_of, failure_message, rejection_message
from .live import LiveTurns
from .observer import NO_OBSERVER, TaskObserver, notify_resumed, notify_turn_ended
from .publisher import EventPublisher
from .runner import run_turn
from .served import ServedAgent
from .turn import Plan, Turn, config_for

__all__ = ["TurnWorker"]

log = logging.getLogger(__name__)

Parked = Callable[[StoredTask], Awaitable[None]]

_RECANCEL = 0.05  # seconds between cancels of a turn that has not seen the first
#: the longest a streamed turn waits for its stream to send the first event before it runs
FIRST_EVENT_WAIT = 0.1


class TurnWorker:
    """``on_parked`` is told of every task a turn left waiting for a reviewer: a decision the
    reviewer took while the turn still ran is applied then."""

    def __init__(
        self, publisher: EventPublisher, claims: ContextClaims, live: LiveTurns, *,
        shutdown_grace: float = 10.0, on_parked: Parked | None = None,
        observer: TaskObserver = NO_OBSERVER, hold_checkpoints: bool = False,
    ) -> None:
        self._observer = observer
        #: the task store commits the checkpointer's held writes with its rows
        #: (``stores/turn_writes.py``); otherwise a held write would never be stored
        self._hold_checkpoints = hold_checkpoints
        self._publisher = publisher
        self._claims = claims
        self._live = live
        self._grace = shutdown_grace
        self._on_parked = on_parked
        self._stack = AsyncExitStack()
        self._group: asyncio.TaskGroup | None = None

    async def __aenter__(self) -> TurnWorker:
        self._group = await self._stack.enter_async_context(asyncio.TaskGroup())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """A clean exit gives running turns the grace period; an exit on an error (a failed
        start) hands the error to the group, which cancels the turns instead of awaiting them."""
        running = [t.runner for t in self._live.running() if t.runner is not None]
        if running and exc is None:
            _, unfinished = await asyncio.wait(running, timeout=self._grace)
            for runner in unfinished:
                runner.cancel()
        await self._stack.__aexit__(exc_type, exc, tb)

    def holds_checkpoints(self, served: ServedAgent) -> bool:
        """Whether a turn of ``served`` holds LangGraph's checkpoint writes for the end's save
        (``stores/turn_writes.py``). LangGraph writes at the run's exit only with "exit": then
        its writes can wait for the end's save; an agent asking for "sync" or "async" wants
        each step stored at once."""
        return self._hold_checkpoints and served.agent.durability == "exit"

    async def start(self, turn: Turn) -> None:
        if turn.claim is not None:
            turn.claim.task_id = turn.record.id
        turn.on_stored = self._release  # a bound method: no turn <-> closure cycle
        writes = turn.writes = turn.writes or TurnWrites(turn.record.context_key)
        writes.checkpoints = self.holds_checkpoints(turn.served)
        self._live.add(turn)
        try:
            # stored first when a client may see the task before the turn ends, when the turn
            # only reports, and when a person's decision resumes it (``StoredTask.resuming``:
            # a takeover must find the decision, not ask again)
            with holding(writes):  # a fresh context's claim row goes with this first save
                if not turn.runs and turn.claim is not None:  # this save is the turn's end
                    self._claims.release_with(turn.claim, writes)
                await self._publisher.publish(turn, turn.record.task, save=(
                    turn.seen_early or not turn.runs or turn.record.resuming is not None))
        except BaseException:
            await self.finish(turn)
            raise
        if not turn.runs:  # the snapshot already says it all
            try:
                await self._publisher.publish_status(turn, final=True, save=False)
            finally:
                await self.finish(turn)
            return
        if self._group is None:
            await self.finish(turn)
            raise RuntimeError("the turn worker is not running (use it as an async context)")
        if not isinstance(turn.graph_input, dict):  # a resume, or a run continued
            notify_resumed(self._observer, turn.record)
        turn.runner = self._group.create_task(self._run(turn))

    async def finish(self, turn: Turn) -> None:
        # the claim went back when the end was stored: the task's next turn may have begun
        # on the same log already, and must keep it open
        newer = self._live.get(turn.record.id) not in (None, turn)
        self._live.remove(turn)
        await self._release(turn)
        if not turn.parked and not newer:  # a parked task's stream waits for the reviewer
            turn.log.close()
        turn.done.set()

    async def _release(self, turn: Turn) -> None:
        """Give the turn's claim back (once). The publisher calls it as soon as the turn's end
        is stored, before any client hears of it (``Turn.on_stored``): a client that answers
        the moment its stream shows the question must find the context free, also when the
        claim is a database row whose release takes a round trip."""
        claim, turn.claim = turn.claim, None
        if claim is not None:
            await self._claims.release(claim)

    async def report(
        self, plan: Plan, claim: Claim, state: str, message: Message | None = None
    ) -> None:
        """End a task that no turn runs (one waiting for an answer) in ``state``, under the
        context's ``claim``; stored before it is published."""
        claim.task_id = plan.record.id
        writes = TurnWrites(plan.record.context_key)
        turn = Turn.of(plan, self._publisher.open(plan.record.id, plan.record.event_seq), claim,
                       writes=writes)
        turn.on_stored = self._release  # a bound method: no turn <-> closure cycle
        try:
            with holding(writes):  # the claim goes back in the transaction of the state
                self._claims.release_with(claim, writes)
                await self._publisher.set_status(turn, state, message, final=True)
        finally:
            await self.finish(turn)

    async def cancel(self, task_id: str) -> Turn | None:
        """Cancel the task's running turn and wait for its end; ``None`` when none runs."""
        running = self._live.get(task_id)
        if running is None or running.runner is None:
            return None
        running.canceled = True
        while not running.done.is_set():
            # a runner cancelled before its first step never runs its ``finally`` (``_run``
            # sees ``canceled`` instead); one cancelled while a library awaits ``wait_for``
            # may lose the cancel on Python 3.11 (CPython gh-86296; redis-py does that on
            # every command), so it is cancelled again until the turn has seen it
            if running.started and not running.cancel_seen:
                running.runner.cancel()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(running.done.wait(), _RECANCEL)
        return running

    async def _run(self, turn: Turn) -> None:
        # the run's checkpoint writes, the task's row and the claim's release go to the store
        # in one commit at the turn's end (``stores/turn_writes.py``); a unit of its own, also
        # for a child turn started from a parent's node (whose context this task copied)
        assert turn.writes is not None  # made by ``start``
        with holding(turn.writes) as writes:
            await self._run_holding(turn, writes)
        if turn.parked and self._on_parked is not None:
            await self._on_parked(turn.record)

    async def _run_holding(self, turn: Turn, writes: TurnWrites) -> None:
        record = turn.record
        turn.started = True
        try:
            if turn.canceled:  # cancelled before it began: nothing ran
                await self._end(turn, Ending("canceled"), writes)
                return
            if turn.subscription is not None:  # a stream: its first event goes out first
                await turn.subscription.first_handled(FIRST_EVENT_WAIT)
            await self._publisher.set_status(turn, "working", save=False)
            started = time.monotonic()
            await self._end(turn, await self._ending(turn), writes)
            notify_turn_ended(self._observer, record, time.monotonic() - started)
        except asyncio.CancelledError:
            turn.cancel_seen = True
            if turn.canceled and record.state not in TERMINAL_STATES:  # while it reported
                await self._end(turn, Ending("canceled"), writes)
                return
            # shutdown: store the turn as running so that the next start recovers it
            log.warning("task %s stopped by shutdown; it is recovered at the next start", record.id)
            await self._publisher.save(record)
            raise
        except Exception:  # the store failed while reporting: nothing more can be said
            log.exception("task %s could not be finalised", record.id)
        finally:
            await self.finish(turn)

    async def _end(self, turn: Turn, ending: Ending, writes: TurnWrites) -> None:
        """Store and publish the turn's end; its save may release the claim as it commits
        (``finish`` then only forgets it)."""
        if turn.claim is not None:
            self._claims.release_with(turn.claim, writes)
        await self._publisher.end(turn, ending)

    async def _ending(self, turn: Turn) -> Ending:
        record = turn.record
        try:
            outcome = await run_turn(
                turn.served.graph,
                turn.graph_input,
                config_for(record.context_key, turn.run_context(save=self._publisher.save)),
                durability=turn.served.agent.durability,
                on_progress=lambda chunk: self._publisher.progress(turn, chunk),
            )
            return ending_of(outcome, record, turn.settings.language if turn.settings else None)
        except asyncio.CancelledError:
            turn.cancel_seen = True
            if not turn.canceled:
                raise
            return Ending("canceled")
        except TaskRejected as exc:
            return Ending("rejected", rejection_message(exc.message, record))
        except Exception as exc:
            log.exception("task %s failed", record.id)
            return Ending("failed", failure_message(exc, record))
