"""bench/long_history.py answers one ``until-done`` task again and again on a real server's
storage and times an answer and a ``tasks/get`` at each count; small counts here, on SQLite
and PostgreSQL."""

from __future__ import annotations

import pytest

from bench.long_history import CALLS, Mark, Task, measure, report
from llamon_agent.stores import kept_tasks


async def test_each_mark_has_its_history_and_every_call_is_timed() -> None:
    marks = await measure("sqlite", [0, 5], chars=3, repeat=2)
    # the first message, then two an answer (the question it answered, the answer); the
    # answers timed at the first mark (2 + 2) count toward the second
    assert [(m.answers, m.messages) for m in marks] == [(0, 1), (5, 11)]
    for mark in marks:
        assert all(len(mark.ms[c]) == len(mark.stall_ms[c]) == 2 for c in CALLS)
        assert all(mark.cpu_ms[c] > 0 for c in CALLS)
        assert mark.task_bytes > 0
    # the row the messages are counted in: the first question alone (not the row after the
    # answers the mark measured, ~3.5 KB here)
    assert marks[0].task_bytes < 1_000 < marks[1].task_bytes
    assert "| 5 | 11 |" in report("sqlite", marks, 2, 3)


@pytest.mark.usefixtures("postgres_url")
async def test_a_postgres_database_is_answered_and_measured_the_same_way() -> None:
    marks = await measure("postgres", [2], chars=1, repeat=1)
    assert [(m.answers, m.messages) for m in marks] == [(2, 5)]
    assert marks[0].task_bytes > 0
    assert all(marks[0].cpu_ms[c] > 0 and len(marks[0].ms[c]) == 1 for c in CALLS)


@pytest.mark.usefixtures("postgres_url")
async def test_two_replicas_take_the_requests_in_turn_each_with_its_own_kept_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served: list[int] = []
    next_app = Task.app

    def counted(self: Task) -> object:
        app = next_app(self)
        served.append(self.apps.index(app))
        assert kept_tasks.KEPT is self.kept[served[-1]]
        return app

    monkeypatch.setattr(Task, "app", counted)
    suite_kept = kept_tasks.KEPT
    marks = await measure("postgres", [2], chars=1, repeat=1, replicas=2)
    assert [(m.answers, m.messages) for m in marks] == [(2, 5)]
    assert served == [0, 1] * (len(served) // 2) and len(served) >= 6
    assert kept_tasks.KEPT is suite_kept  # put back


def test_the_report_reads_the_means_and_medians() -> None:
    mark = Mark(answers=2000, messages=4001, task_bytes=1_228_800)
    mark.cpu_ms = {"answer": 12.5, "get": 0.75}
    for call in CALLS:
        mark.ms[call] = [3.0, 1.0, 2.0]
        mark.stall_ms[call] = [0.5, 0.1, 0.3]
    text = report("sqlite", [mark], 3, 1)
    assert "| 2,000 | 4,001 | 1,228,800 | 12.50 | 2.00 | 0.30 | 0.75 | 2.00 | 0.30 |" in text, text
