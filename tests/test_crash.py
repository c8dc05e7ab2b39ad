"""Crash safety: real processes SIGKILLed at random SQL statements, many times (SPEC §3, §5),
on a SQLite file and on PostgreSQL.

After every kill the database passes `ttcli verify`'s checks (a file: `PRAGMA
integrity_check` first), every checkpoint that committed is still there and reads the same,
and resuming finishes with what an uninterrupted run gives. The kill points come from a
seeded generator, so a failure replays exactly.
"""

from __future__ import annotations

import random
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.clitools import Target
from tests.conftest import NewDb, exists
from tests.workers import INPUT, loop_graph
from ttcli import InMemorySaver
from ttcli.configs import CheckpointRef
from ttcli.savers.locate import open_saver

ROOT = Path(__file__).parent.parent
SEED = 20261130
KILLED = -9

Content = tuple[Any, ...]


def worker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def integrity(target: Target) -> str:
    """ "ok", or what `ttcli verify` finds wrong beyond the values (for a SQLite file, the
    first is SQLite's own integrity check)."""
    with closing(open_saver(target)) as saver:
        return "; ".join(saver.integrity_problems()) or "ok"


def contents(path: Target) -> dict[tuple[str, str], Content]:
    """Every checkpoint in the database, read in full: (thread, id) -> what it holds."""
    found = {}
    with closing(open_saver(path)) as saver:
        for summary in saver.list_threads():
            config = CheckpointRef(summary.thread_id).to_config()
            for saved in saver.list(config):
                found[summary.thread_id, saved.checkpoint["id"]] = (
                    saved.checkpoint,
                    saved.metadata,
                    saved.parent_config,
                    saver.get_writes(saved.config),
                )
    return found


def logged(log: Path) -> set[str]:
    return set(log.read_text().split()) if log.exists() else set()


def steps(saver: Any, thread: str) -> list[tuple[Any, ...]]:
    """A thread's history as the user sees it, without ids and times."""
    graph = loop_graph().compile(checkpointer=saver)
    return [
        (s.values, s.next, s.metadata and s.metadata["step"], s.metadata and s.metadata["source"])
        for s in graph.get_state_history({"configurable": {"thread_id": thread}})
    ]


def test_killed_runs_lose_nothing_and_resume_to_the_same_result(
    tmp_path: Path, new_db: NewDb
) -> None:
    rng = random.Random(SEED)
    db = new_db("crash.db")
    expected = InMemorySaver()
    loop_graph().compile(checkpointer=expected).invoke(INPUT, {"configurable": {"thread_id": "t"}})
    seen: dict[tuple[str, str], Content] = {}
    kills = 0
    for thread in (f"t{i}" for i in range(12)):
        log = tmp_path / f"{thread}.log"
        # up to five kills at random statements (a whole run is about 165 on SQLite and 110
        # on PostgreSQL, a superstep's task writes going with its checkpoint, and kills land
        # early more often), then a clean run
        for kill in [*(rng.randint(1, 100) for _ in range(5)), 0]:
            done = worker("run", str(db), thread, str(log), str(kill))
            assert done.returncode in (0, KILLED), done.stderr
            assert integrity(db) == "ok"
            now = contents(db)
            assert {(thread, i) for i in logged(log)} <= now.keys()
            for key, (checkpoint, metadata, parent, writes) in seen.items():
                # nothing lost or changed; pending writes only grow as the step's tasks finish
                assert now[key][:3] == (checkpoint, metadata, parent)
                assert set(map(repr, writes)) <= set(map(repr, now[key][3]))
            seen = now
            if done.returncode == 0:
                break
            kills += 1
        with closing(open_saver(db)) as saver:
            assert steps(saver, thread) == steps(expected, "t")
    assert kills >= 20  # of up to 60 (PostgreSQL runs fewer statements than SQLite)


def test_a_killed_archive_prune_loses_nothing_and_a_rerun_finishes(
    new_db: NewDb, archive_db: Target
) -> None:
    rng = random.Random(SEED)
    db, archive = new_db("live.db"), archive_db
    with closing(open_saver(db)) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        for i in range(4):
            graph.invoke(INPUT, {"configurable": {"thread_id": f"t{i}"}})
    original = contents(db)
    threads = {thread for thread, _ in original}
    latest = {(t, max(i for owner, i in original if owner == t)) for t in threads}
    prune = ["prune", "--older-than", "0s", "--keep-last", "1", "--archive", str(archive), "--yes"]
    kills = 0
    # a whole prune of these 40 checkpoints is about 500 statements (a rerun, fewer): kill it
    # at random points up to eight times, then let it finish
    for kill in [*(rng.randint(1, 200) for _ in range(8)), 0]:
        done = worker("cli", str(kill), "--db", str(db), *prune)
        assert done.returncode in (0, KILLED), done.stderr
        assert integrity(db) == "ok"
        live = contents(db)
        kept = contents(archive) if exists(archive) else {}
        if exists(archive):
            assert integrity(archive) == "ok"
        for key, content in original.items():
            assert live.get(key, kept.get(key)) == content, key
        if done.returncode == 0:
            break
        kills += 1
    assert kills >= 5
    assert live.keys() == latest
    assert kept.keys() == original.keys() - latest
