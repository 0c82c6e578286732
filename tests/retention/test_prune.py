"""``llamon-agent prune --older-than 30d [--dry-run] [--db URL]``: on SQLite with the server
stopped (a file a server holds is refused, exit 3, nothing changed), on PostgreSQL while a
server runs on the same database; ``--dry-run`` prints the counts and changes nothing."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from llamon_agent.cli import _parser
from llamon_agent.core.clock import iso
from llamon_agent.prune import EXIT_IN_USE, PruneReport, prune, run_prune
from llamon_agent.runtime.retention import Pruned
from llamon_agent.settings import Settings
from llamon_agent.stores.base import Prunable
from tests.orchestrator.helpers import Harness, serve_loan

from .helpers import DAY, has_checkpoint, task_error

ROOT = Path(__file__).resolve().parents[2]
LATER = datetime.now(UTC) + 31 * DAY  # the clock of a prune: a month and a day from now
CUTOFF = iso(LATER - 30 * DAY)


async def conversations(h: Harness) -> dict[str, dict[str, Any]]:
    """A: one ended task; B: an ended task, then one waiting; C: one waiting."""
    a1 = await h.client.send("note A", agent_id="until-done")
    a1 = await h.client.send("done", context_id=a1["contextId"])
    b1 = await h.client.send("note B", agent_id="until-done")
    b1 = await h.client.send("done", context_id=b1["contextId"])
    b2 = await h.client.send("note B again", context_id=b1["contextId"])
    c1 = await h.client.send("note C", agent_id="until-done")
    return {"a1": a1, "b1": b1, "b2": b2, "c1": c1}


async def cli(*argv: str) -> int:
    """The command's arguments parsed and run as ``main`` runs them (in a thread: it runs its
    own event loop), with the clock a month and a day ahead."""
    settings = Settings.from_env({})
    args = _parser(settings).parse_args(["prune", *argv])
    return await asyncio.to_thread(run_prune, args, settings, clock=lambda: LATER)


def rows(db: Path) -> tuple[set[str], set[str]]:
    """The stored task ids and the threads with checkpoints, read from the file."""
    conn = sqlite3.connect(db)
    try:
        tasks = {r[0] for r in conn.execute("SELECT id FROM llamon_tasks")}
        threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        return tasks, threads
    finally:
        conn.close()


async def test_sqlite_dry_run_counts_then_prune_deletes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "llamon.sqlite3"
    async with serve_loan(db=str(db)) as h:
        made = await conversations(h)
        # a server holds the file: refused, nothing changed
        before = rows(db)
        assert await cli("--older-than", "30d", "--db", str(db)) == EXIT_IN_USE
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (f"error: the database file {db} is in use by another llamon-agent server "
                       "(one server per SQLite file): stop that server or use another database "
                       "file; prune changed nothing (a server prunes its own file with "
                       "--retention)\n")
        assert rows(db) == before
    ids = {name: task["id"] for name, task in made.items()}
    contexts = {name: task["contextId"] for name, task in made.items()}

    assert await cli("--older-than", "30d", "--dry-run", "--db", str(db)) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (
        f"would delete 2 tasks in 2 contexts, ended before {CUTOFF} (older than 30d); 1 of "
        "these contexts would be left empty and lose their checkpoints; nothing was changed "
        "(--dry-run)\n", "")
    assert rows(db) == before

    assert await cli("--older-than", "30d", "--db", str(db)) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (
        f"deleted 2 tasks in 2 contexts, ended before {CUTOFF} (older than 30d); 1 of these "
        "contexts were left empty and lost their checkpoints\n", "")
    tasks, threads = rows(db)
    assert tasks == {ids["b2"], ids["c1"]}
    assert threads == {contexts["b1"], contexts["c1"]}
    assert await cli("--older-than", "30d", "--db", str(db)) == 0  # nothing left to delete
    assert capsys.readouterr().out.startswith("deleted 0 tasks in 0 contexts")

    async with serve_loan(db=str(db)) as h:  # the server carries on with what waits
        assert await task_error(h, ids["a1"]) == -32001
        done = await h.client.send("done", context_id=contexts["b2"])
        assert done["id"] == ids["b2"] and done["status"]["state"] == "completed"


def test_the_command_line_entry_point_and_its_errors(tmp_path: Path) -> None:
    db = tmp_path / "empty.sqlite3"
    run = [sys.executable, "-m", "llamon_agent.cli", "prune"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*run, "--older-than", "12h", "--dry-run", "--db", str(db)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("would delete 0 tasks in 0 contexts, ended before ")
    assert done.stdout.endswith(" (older than 12h); 0 of these contexts would be left empty and "
                                "lose their checkpoints; nothing was changed (--dry-run)\n")
    for bad, why in (("30", "expected a duration such as 30d, 12h, 90m or 45s (a whole number "
                            "and one unit: s, m, h or d), got '30'"),
                     ("0s", "a duration is from 1s to 36500d, got '0s'"),
                     ("36501d", "a duration is from 1s to 36500d, got '36501d'")):
        refused = subprocess.run([*run, "--older-than", bad, "--db", str(db)],
                                 capture_output=True, text=True, env=env, timeout=60,
                                 check=False)
        assert refused.returncode == 2
        assert refused.stderr.endswith(f"argument --older-than: {why}\n"), refused.stderr
    memory = subprocess.run([*run, "--older-than", "1d", "--db", ":memory:"],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (memory.returncode, memory.stderr) == (
        1, "error: memory storage ends with its process: there is nothing to prune\n")


async def test_postgres_prune_while_a_server_runs(postgres_url: str) -> None:
    async with serve_loan(db=postgres_url) as h:
        made = await conversations(h)
        preview = await prune(postgres_url, 30 * 86400.0, dry_run=True, clock=lambda: LATER)
        assert preview.preview == Prunable(tasks=2, contexts=2, emptied=1, undated=0)
        assert preview.line() == (
            f"would delete 2 tasks in 2 contexts, ended before {CUTOFF} (older than 30d); 1 of "
            "these contexts would be left empty and lose their checkpoints; nothing was "
            "changed (--dry-run)")
        assert await task_error(h, made["a1"]["id"]) is None

        report = await prune(postgres_url, 30 * 86400.0, clock=lambda: LATER)
        assert report.pruned == Pruned(tasks=2, contexts=2, emptied=1, dated=0, busy=0)
        assert await task_error(h, made["a1"]["id"]) == -32001
        assert await task_error(h, made["b1"]["id"]) == -32001
        assert not await has_checkpoint(h, made["a1"]["contextId"])
        assert await has_checkpoint(h, made["b2"]["contextId"])
        done = await h.client.send("done", context_id=made["b2"]["contextId"])
        assert done["id"] == made["b2"]["id"] and done["status"]["state"] == "completed"
        # the command line on the same database, beside the running server
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "llamon_agent.cli", "prune", "--older-than", "1d",
            "--dry-run", "--db", postgres_url, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        assert out.decode().startswith("would delete 0 tasks in 0 contexts, ended before ")


def test_the_line_names_dated_and_busy_contexts() -> None:
    pruned = Pruned(tasks=1, contexts=1, emptied=0, dated=2, busy=1)
    line = PruneReport(LATER - 30 * DAY, 30 * 86400.0, pruned=pruned).line()
    assert line == (f"deleted 1 tasks in 1 contexts, ended before {CUTOFF} (older than 30d); 0 "
                    "of these contexts were left empty and lost their checkpoints; 2 ended "
                    "tasks of unknown age were dated now (deleted 30d later); 1 contexts were "
                    "busy (a turn running) and were left for later")


async def test_prune_removes_the_push_configs_of_what_it_deletes(tmp_path: Path) -> None:
    """``llamon-agent prune`` deletes an ended task's push notification configs and deliveries
    with it, as the server's retention does."""
    from datetime import UTC, datetime, timedelta

    from llamon_agent.prune import prune
    from llamon_agent.stores.storage import open_storage
    from tests.conftest import serve
    from tests.runtime.helpers import doc_agent

    db = str(tmp_path / "llamon.sqlite3")
    config = {"url": "http://127.0.0.1:9/hook", "id": "c1"}
    async with serve([doc_agent()], db=db, push_allow_private=True) as client:
        task = await client.send("start", configuration={"pushNotificationConfig": config})
        await client.result("tasks/cancel", {"id": task["id"]})
    async with open_storage(db) as storage:
        assert [c.id for c in await storage.push.get_configs(task["id"])] == ["c1"]
    later = datetime.now(UTC) + timedelta(days=31)
    report = await prune(db, 30 * 24 * 3600.0, clock=lambda: later)
    assert report.pruned is not None
    async with open_storage(db) as storage:
        assert await storage.push.get_configs(task["id"]) == []
        assert await storage.push.deliveries(task["id"]) == []
        assert await storage.tasks.get(task["id"]) is None
