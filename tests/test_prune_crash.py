"""`ttcli prune --archive` SIGKILLed at random SQL statements, several seeds (SPEC §5), on a
SQLite file and on PostgreSQL, into a SQLite file and into a PostgreSQL database.

Between kills a paused thread may be answered, so a checkpoint already copied into the
archive gains pending writes before the prune that deletes it runs again. After every kill
both files pass `PRAGMA integrity_check` and every checkpoint the live file held before the
run is still there reading the same, or is in the archive reading the same; a run left alone
finishes, and a last run finds nothing more to do.

A power cut loses what the operating system had not written to the disk yet: the archive's
copies must be on the disk before the live file's deletion is written.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import graphs
from tests.clitools import Target
from tests.conftest import NewDb, exists
from tests.test_crash import KILLED, ROOT, Content, contents, integrity, worker
from tests.test_prune import boundary
from tests.workers import INPUT, loop_graph
from ttcli import END, START, Command, StateGraph, interrupt
from ttcli.savers.locate import open_saver
from ttcli.uuid6 import id_time

PAUSED = {"configurable": {"thread_id": "review"}}
API = SimpleNamespace(StateGraph=StateGraph, START=START, END=END, interrupt=interrupt)
review = graphs.review(API)


def build(db: Target) -> None:
    with closing(open_saver(db)) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        for i in range(3):
            graph.invoke(INPUT, {"configurable": {"thread_id": f"t{i}"}})
        review.compile(checkpointer=saver).invoke({"plan": "", "log": []}, PAUSED)


def answer_if_paused(db: Target) -> None:
    """Answer the paused thread if its checkpoint is still in the live database."""
    with closing(open_saver(db)) as saver:
        app = review.compile(checkpointer=saver)
        if app.get_state(PAUSED).next == ("review",):
            app.invoke(Command(resume="approved"), PAUSED)


def nothing_lost(before: dict[tuple[str, str], Content], db: Target, archive: Target) -> None:
    assert integrity(db) == "ok"
    live = contents(db)
    kept = contents(archive) if exists(archive) else {}
    if exists(archive):
        assert integrity(archive) == "ok"
    for key, content in before.items():
        assert live.get(key, kept.get(key)) == content, key


# seeds whose kills land between the paused thread's copy and its delete on main (the
# archive kept the copy from before the answer); any seed must pass
@pytest.mark.parametrize("seed", [3, 8, 13])
def test_a_killed_archive_prune_loses_nothing_and_a_rerun_finishes(
    new_db: NewDb, archive_db: Target, seed: int
) -> None:
    rng = random.Random(seed)
    db, archive = new_db("live.db"), archive_db
    build(db)
    # what was there before the first run goes; what answering the paused thread adds stays
    bound = boundary()
    prune = ["--db", str(db), "prune", "--older-than", bound.isoformat(), "--keep-last", "0"]
    prune += ["--archive", str(archive), "--yes"]
    kills = 0
    for round_ in range(12):  # bounded: at most 10 kills, then left alone
        before = contents(db)
        # a whole run is about 800 statements; the paused thread is archived first
        kill = rng.randint(1, 300) if round_ < 10 else 0
        done = worker("cli", str(kill), *prune)
        assert done.returncode in (0, KILLED), done.stderr
        nothing_lost(before, db, archive)
        if done.returncode == 0:
            break
        kills += 1
        answer_if_paused(db)
    assert done.returncode == 0
    assert kills >= 1
    again = worker("cli", "0", *prune)
    assert (again.returncode, again.stderr) == (0, "")
    assert all(id_time(checkpoint_id) >= bound for _, checkpoint_id in contents(db))


#: a write or a sync of a file, as `strace -y` prints it: the call and the file's path
SYSCALL = re.compile(r"\b(pwrite64|write|fdatasync|fsync)\(\d+<([^>]*)>")


def file_syscalls(tmp_path: Path, argv: list[str]) -> list[tuple[str, str]]:
    """The writes and syncs of files (call, path) of a process run from the project root."""
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set, so the sync tests must run: install strace")
        pytest.skip("strace is not installed: cannot watch the syncs (apt install strace)")
    trace = tmp_path / "trace"
    done = subprocess.run(
        [strace, "-f", "-y", "-qq", "-o", str(trace), "-e", "trace=pwrite64,write,fdatasync,fsync"]
        + [sys.executable, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return SYSCALL.findall(trace.read_text())


@pytest.mark.parametrize("archived", ["none", "some, gone stale"])
def test_the_archive_is_on_the_disk_before_the_live_file_is_written(
    tmp_path: Path, archived: str
) -> None:
    """Watches the syscalls of `prune --archive` between two SQLite files: no write of the
    live file's WAL (a page's deletion committing) may come while the archive's WAL holds
    writes not synced yet (with synchronous=NORMAL, a commit is not synced). Copies that an
    earlier run left in the archive and that went stale since are copied again: so too."""
    db, archive = tmp_path / "live.db", tmp_path / "archive.db"
    build(db)
    if archived != "none":
        with closing(open_saver(db)) as saver, closing(open_saver(archive)) as target:
            for thread in ("t0", "review"):
                config = {"configurable": {"thread_id": thread}}
                ids = saver.checkpoint_ids(config)
                saver.copy_rows(config, "ffffffff-ffff-ffff-ffff-ffffffffffff", target)
                for checkpoint_id in ids[::2]:  # pending writes the copies lack
                    at = {"configurable": {"thread_id": thread, "checkpoint_id": checkpoint_id}}
                    saver.put_writes(at, [("late", 1)], f"late-{checkpoint_id}", "p")
    before = contents(db)
    calls = file_syscalls(
        tmp_path,
        ["-m", "ttcli", "--db", str(db), "prune", "--archive", str(archive), "--keep-last", "0"]
        + ["--older-than", boundary().isoformat(), "--yes"],
    )
    live_wal, archive_wal = (os.path.realpath(f"{path}-wal") for path in (db, archive))
    unsynced, archived_writes, deleted = False, 0, 0
    for call, path in calls:
        if path == archive_wal:
            unsynced = call in ("pwrite64", "write")
            archived_writes += unsynced
        elif path == live_wal and call in ("pwrite64", "write"):
            assert not unsynced, "the live file deleted rows whose copies were not on the disk"
            deleted += 1
    assert archived_writes and deleted  # both files were written while watched
    assert contents(archive) == before and contents(db) == {}


ORDINARY_AFTER_DURABLE = """
import os, sys
from tests.test_saver_contract import config, put_chain
from ttcli.savers.sqlite import SqliteSaver
saver = SqliteSaver(sys.argv[1])
(head,) = put_chain(saver, steps=1)
with saver.batch(durable=True):
    saver.put_writes(config("t", head), [("log", ["durable"])], "task-0", "p")
os.write(1, b"durable done")
for task in range(1, 21):
    saver.put_writes(config("t", head), [("log", [task])], f"task-{task}", "p")
os.write(1, b"ordinary done")
saver.close()
"""


def test_saves_after_a_durable_batch_are_not_synced_one_by_one(tmp_path: Path) -> None:
    """A durable batch syncs its commit; the saves after it are back to synchronous=NORMAL
    (a sync a commit would cost every superstep)."""
    db = tmp_path / "app.db"
    calls = file_syscalls(tmp_path, ["-c", ORDINARY_AFTER_DURABLE, str(db)])
    wal = os.path.realpath(f"{db}-wal")
    marks = [i for i, (call, path) in enumerate(calls) if path.startswith("pipe:")]
    durable_done, ordinary_done = marks[:2]
    syncs = [call in ("fdatasync", "fsync") and path == wal for call, path in calls]
    assert sum(syncs[:durable_done]) >= 1  # the durable batch's commit
    assert sum(syncs[durable_done:ordinary_done]) == 0  # 20 commits, none synced
