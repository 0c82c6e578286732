"""``server/admission.py`` on its own: who is held and when, with the loop's load read from
clocks the test sets (``cpu_clock``, ``clock``), so saturation is exact."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llamon_agent.server.admission import Admission, _read_demand, loop_thread_demand


@dataclass
class Load:
    """The loop's clocks as the test sets them: ``busy(share)`` makes the window that
    follows read ``share`` of its wall time as the loop thread's CPU (an admission reads the
    load of the time since it was made, so it is made first)."""

    wall: float = 0.0
    cpu: float = 0.0
    changes: list[int] = field(default_factory=list)

    def busy(self, share: float, seconds: float = 1.0) -> None:
        self.wall += seconds
        self.cpu += share * seconds

    def admission(self, limit: int | None, window: float = 0.5) -> Admission:
        return Admission(limit, window=window, cpu_clock=lambda: self.cpu,
                         clock=lambda: self.wall, observe=self.changes.append)


class Requests:
    """Requests that enter ``admission`` and stay in until finished by the test."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission
        self.admitted: list[int] = []
        self._finish: dict[int, asyncio.Event] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}

    def start(self, number: int) -> None:
        self._finish[number] = asyncio.Event()
        self.tasks[number] = asyncio.create_task(self._serve(number))

    async def _serve(self, number: int) -> None:
        async with self.admission.admitted():
            self.admitted.append(number)
            await self._finish[number].wait()

    def finish(self, number: int) -> None:
        self._finish[number].set()

    async def settle(self) -> None:
        for _ in range(5):  # enough turns of the loop for hand-overs to run
            await asyncio.sleep(0)


@asynccontextmanager
async def requests(admission: Admission) -> AsyncIterator[Requests]:
    served = Requests(admission)
    try:
        yield served
    finally:
        admission.close()
        for task in served.tasks.values():
            task.cancel()
        await asyncio.gather(*served.tasks.values(), return_exceptions=True)


@asynccontextmanager
async def saturated(limit: int, count: int, window: float = 0.5,
                    ) -> AsyncIterator[tuple[Load, Requests]]:
    """``count`` requests started, in order, at a loop that reads fully busy."""
    load = Load()
    admission = load.admission(limit, window=window)
    load.busy(1.0)
    async with requests(admission) as served:
        for number in range(count):
            served.start(number)
        await served.settle()
        yield load, served


async def test_no_limit_admits_everything_at_once() -> None:
    load = Load()
    admission = load.admission(None)
    load.busy(1.0)
    async with requests(admission) as served:
        for number in range(50):
            served.start(number)
        await served.settle()
        assert len(served.admitted) == 50
        assert served.admission.active == 50
        assert served.admission.waiting == 0


async def test_a_loop_with_time_to_spare_admits_beyond_the_limit() -> None:
    load = Load()
    admission = load.admission(2)
    load.busy(0.5)  # below 0.75: the requests use little of the loop (they wait on others)
    async with requests(admission) as served:
        for number in range(6):
            served.start(number)
        await served.settle()
        assert served.admitted == [0, 1, 2, 3, 4, 5]
        assert served.admission.waiting == 0
        assert load.changes == []


async def test_a_saturated_loop_holds_beyond_the_limit_and_hands_over_in_arrival_order() -> None:
    async with saturated(2, 5) as (load, served):
        assert served.admitted == [0, 1]
        assert (served.admission.active, served.admission.waiting) == (2, 3)
        assert load.changes == [1, 1, 1]

        served.finish(1)  # a finishing request hands its place to the first waiting one
        await served.settle()
        assert served.admitted == [0, 1, 2]
        assert (served.admission.active, served.admission.waiting) == (2, 2)
        served.finish(0)
        served.finish(2)
        await served.settle()
        assert served.admitted == [0, 1, 2, 3, 4]
        assert (served.admission.active, served.admission.waiting) == (2, 0)
        served.finish(3)
        served.finish(4)
        await served.settle()
        assert (served.admission.active, served.admission.waiting) == (0, 0)
        assert sum(load.changes) == 0 and load.changes.count(1) == 3


async def test_waiting_requests_all_go_in_once_the_loop_has_time_to_spare() -> None:
    async with saturated(1, 4, window=0.02) as (load, served):
        assert served.admitted == [0]
        await asyncio.sleep(0.05)  # rechecks while the loop still reads saturated: nobody
        assert served.admitted == [0]
        load.busy(0.1)  # the served request now waits on something else: the loop idles
        for _ in range(50):
            await asyncio.sleep(0.01)
            if len(served.admitted) == 4:
                break
        assert served.admitted == [0, 1, 2, 3]
        assert (served.admission.active, served.admission.waiting) == (4, 0)
        for number in range(4):
            served.finish(number)
        await served.settle()
        assert (served.admission.active, served.admission.waiting) == (0, 0)
        assert sum(load.changes) == 0


async def test_a_cancelled_waiting_request_leaks_no_place() -> None:
    async with saturated(1, 3) as (load, served):
        served.tasks[1].cancel()  # gives up while waiting
        await served.settle()
        assert served.admission.waiting == 1
        served.finish(0)
        await served.settle()
        assert served.admitted == [0, 2]  # the cancelled one is skipped
        served.finish(2)
        await served.settle()
        assert (served.admission.active, served.admission.waiting) == (0, 0)
        assert sum(load.changes) == 0


async def test_a_request_cancelled_as_it_is_handed_a_place_passes_it_on() -> None:
    async with saturated(1, 3) as (load, served):
        served.finish(0)  # hands its place to 1 ...
        await asyncio.sleep(0)  # ... whose wait is resolved but has not resumed yet
        served.tasks[1].cancel()
        await served.settle()
        assert 1 not in served.admitted
        assert served.admitted == [0, 2]
        assert (served.admission.active, served.admission.waiting) == (1, 0)
        served.finish(2)
        await served.settle()
        assert served.admission.active == 0
        assert sum(load.changes) == 0


async def test_close_lets_every_waiting_request_in() -> None:
    async with saturated(1, 4) as (load, served):
        admission = served.admission
        admission.close()
        await served.settle()
        assert served.admitted == [0, 1, 2, 3]
        assert (served.admission.active, served.admission.waiting) == (4, 0)
        assert load.changes.count(1) == 3 and sum(load.changes) == 0


@pytest.mark.parametrize("arguments", [
    {"limit": 0}, {"limit": -1}, {"limit": 1, "window": 0}, {"limit": 1, "busy": 0},
    {"limit": 1, "busy": 1.5},
])
def test_bad_arguments_are_refused(arguments: dict[str, float]) -> None:
    limit = int(arguments.pop("limit"))
    with pytest.raises(ValueError):
        Admission(limit, **arguments)


# ------------------------------------------------------------------------------- property

STEPS = st.lists(st.one_of(
    st.tuples(st.just("start"), st.just(0)),
    st.tuples(st.just("finish"), st.integers(0, 30)),
    st.tuples(st.just("cancel"), st.integers(0, 30)),
    st.tuples(st.just("load"), st.sampled_from([0.1, 0.9])),
), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limit=st.integers(1, 4), steps=STEPS)
def test_any_sequence_keeps_the_counts_and_leaks_nothing(
    limit: int, steps: list[tuple[str, float]],
) -> None:
    asyncio.run(_drive(limit, steps))


async def _drive(limit: int, steps: list[tuple[str, float]]) -> None:
    load = Load()
    admission = load.admission(limit, window=1.0)
    load.busy(0.9)
    served = Requests(admission)
    started = 0
    for action, argument in steps:
        if action == "start":
            full = served.admission.active >= limit
            waiting_before = served.admission.waiting
            served.start(started)
            await served.settle()
            if not full:  # below the limit nobody is held, whatever the load
                assert served.admission.waiting == waiting_before
                assert started in served.admitted
            started += 1
        elif action == "load":
            load.busy(float(argument))
        else:
            live = sorted(n for n, task in served.tasks.items() if not task.done())
            if live:
                number = live[int(argument) % len(live)]
                if action == "finish" and number in served.admitted:
                    served.finish(number)
                elif action == "cancel":
                    served.tasks[number].cancel()
            await served.settle()
        assert served.admission.waiting == sum(load.changes)  # observe's count is the waiting count
        assert served.admission.active == sum(
            1 for n in served.admitted if not served.tasks[n].done())
    # everyone still in finishes, and the rest get in in turn (or at close) and finish too
    admission.close()
    await served.settle()
    for number in list(served.tasks):
        served.finish(number)
    await asyncio.gather(*served.tasks.values(), return_exceptions=True)
    assert (served.admission.active, served.admission.waiting) == (0, 0)
    assert sum(load.changes) == 0


def test_the_loop_threads_demand_counts_its_time_on_a_core() -> None:
    demand = loop_thread_demand()
    before, cpu_before = demand(), time.thread_time()
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        pass
    spun = time.thread_time() - cpu_before
    assert spun > 0.02
    # on a core, or (Linux) ready and waiting for one: at least the CPU time it used
    assert demand() - before >= 0.9 * spun


def test_schedstat_reads_running_plus_waiting() -> None:
    assert _read_demand(b"1000000000 500000000 3\n") == 1.5
