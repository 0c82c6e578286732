"""The hub keeps the logs of running tasks and about ``keep_finished`` logs in all: opening a
log drops the oldest finished ones, looking a little past the bound (an eighth of the hub) for
them when running logs are among the oldest, and never drops a running one."""

from __future__ import annotations

from llamon_agent.runtime.events import EventHub


def _kept(hub: EventHub, names: list[str]) -> list[str]:
    return [name for name in names if hub.get(name) is not None]


def test_the_oldest_finished_logs_go_first() -> None:
    hub = EventHub(keep_finished=3)
    names = [f"t{i}" for i in range(10)]
    for count, name in enumerate(names, start=1):
        hub.open(name, 0).close()
        # the bound holds after each open; the newest logs are the ones kept
        assert _kept(hub, names) == names[max(0, count - 3):count]


def test_a_running_log_is_never_dropped_and_the_bound_still_holds() -> None:
    hub = EventHub(keep_finished=8)
    running = hub.open("running", 0)  # the oldest log of all, never finished
    names = [f"t{i}" for i in range(40)]
    for count, name in enumerate(names, start=1):
        hub.open(name, 0).close()
        assert hub.get("running") is running and not running.finished
        kept = _kept(hub, names)
        assert len(kept) + 1 <= 8  # the running log counts towards the bound
        assert kept == names[count - len(kept):count]  # the newest finished ones


def test_a_hub_of_running_logs_drops_only_finished_ones() -> None:
    hub = EventHub(keep_finished=2)
    logs = [hub.open(f"t{i}", 0) for i in range(5)]
    assert all(hub.get(f"t{i}") is log for i, log in enumerate(logs))
    logs[0].close()
    hub.open("t5", 0)  # six logs, four over the bound: only the finished one can go
    assert hub.get("t0") is None
    assert _kept(hub, [f"t{i}" for i in range(6)]) == ["t1", "t2", "t3", "t4", "t5"]


def test_a_log_opened_again_moves_to_the_newest_end() -> None:
    hub = EventHub(keep_finished=2)
    for name in ("a", "b"):
        hub.open(name, 0).close()
    hub.open("a", 1).close()  # the answer's turn of task a: a is now the newest
    hub.open("c", 0).close()
    assert _kept(hub, ["a", "b", "c"]) == ["a", "c"]
