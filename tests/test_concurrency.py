"""Several processes on one database at once: writers, an archiving prune and readers
(SPEC §3, §6), on a SQLite file and on PostgreSQL, archiving into either.

Eight writers run graphs on their own threads while `prune --archive --keep-last 2` deletes
from every thread in a loop and two readers list and show: no process may see an error, and
every checkpoint a writer committed must afterwards be in the database or in the archive,
and read back whole.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import closing
from pathlib import Path

from tests.clitools import Target
from tests.conftest import NewDb
from tests.test_crash import ROOT, integrity, logged
from tests.workers import INPUT, loop_graph
from ttcli.configs import CheckpointRef
from ttcli.savers.locate import open_saver

WRITERS = 8
RUNS = 8  # per writer; each run of the loop graph commits 11 checkpoints


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_writers_an_archiving_prune_and_readers_share_one_database(
    tmp_path: Path, new_db: NewDb, archive_db: Target
) -> None:
    db, archive, stop = str(new_db("shared.db")), archive_db, tmp_path / "stop"
    threads = [f"w{i}" for i in range(WRITERS)]
    with closing(open_saver(db)) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        for name in threads:
            graph.invoke(INPUT, {"configurable": {"thread_id": name}})
    logs = [tmp_path / f"w{i}.log" for i in range(WRITERS)]
    writers = [start("write", db, f"w{i}", str(log), str(RUNS)) for i, log in enumerate(logs)]
    others = [start("archive", db, str(archive), str(stop), "2")] + [
        start("read", db, str(stop), *threads) for _ in range(2)
    ]
    try:
        results = [process.communicate(timeout=300) for process in writers]
    finally:
        stop.touch()
    results += [process.communicate(timeout=120) for process in others]

    for process, (_, err) in zip(writers + others, results, strict=True):
        assert (process.returncode, err) == (0, ""), (process.args, err[-600:])
    rounds = [int(out) for out, _ in results[WRITERS:]]
    assert all(r > 0 for r in rounds)  # the pruner and both readers really ran alongside
    assert integrity(db) == integrity(archive) == "ok"
    archived = 0
    with closing(open_saver(db)) as live, closing(open_saver(archive)) as kept:
        for i, log in enumerate(logs):
            committed = logged(log)
            assert len(committed) == RUNS * 11
            ref = CheckpointRef(f"w{i}")
            for checkpoint_id in committed:
                config = ref.at(checkpoint_id).to_config()
                saved = live.get_tuple(config)
                if saved is None:
                    saved, archived = kept.get_tuple(config), archived + 1
                assert saved is not None, f"{checkpoint_id} of w{i} is in neither database"
                assert saved.checkpoint["channel_values"]["log"][0] == "start"
            assert 2 <= len(live.checkpoint_ids(ref.to_config()))
    assert archived > 0
