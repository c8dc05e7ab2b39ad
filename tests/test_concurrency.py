"""Several processes on one file at once: writers, a prune loop and readers (SPEC §3, §6).

Four writers run graphs on their own threads while `prune` deletes from other threads and
two readers list and show: no process may see an error, and every checkpoint a writer
committed must be there afterwards and read back whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.test_crash import ROOT, integrity, logged
from tests.workers import INPUT, loop_graph
from ttcli.configs import CheckpointRef
from ttcli.savers.sqlite import SqliteSaver

WRITERS = 4
RUNS = 20  # per writer; each run of the loop graph commits 11 checkpoints
OLD_THREADS = 12


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_writers_prune_and_readers_share_one_file(tmp_path: Path) -> None:
    db, stop = tmp_path / "shared.db", tmp_path / "stop"
    with SqliteSaver.from_conn_string(db) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        for name in [f"w{i}" for i in range(WRITERS)] + [f"old:{i}" for i in range(OLD_THREADS)]:
            graph.invoke(INPUT, {"configurable": {"thread_id": name}})
    logs = [tmp_path / f"w{i}.log" for i in range(WRITERS)]
    writers = [start("write", str(db), f"w{i}", str(log), str(RUNS)) for i, log in enumerate(logs)]
    others = [start("prune", str(db), str(stop), str(OLD_THREADS))] + [
        start("read", str(db), str(stop), *[f"w{i}" for i in range(WRITERS)]) for _ in range(2)
    ]
    try:
        results = [process.communicate(timeout=120) for process in writers]
    finally:
        stop.touch()
    results += [process.communicate(timeout=60) for process in others]

    for process, (_, err) in zip(writers + others, results, strict=True):
        assert (process.returncode, err) == (0, ""), process.args
    rounds = [int(out) for out, _ in results[WRITERS:]]
    assert all(r > 0 for r in rounds)  # the pruner and both readers really ran alongside
    assert integrity(db) == "ok"
    with SqliteSaver.from_conn_string(db) as saver:
        for i, log in enumerate(logs):
            committed = logged(log)
            assert len(committed) == RUNS * 11
            ref = CheckpointRef(f"w{i}")
            assert len(saver.checkpoint_ids(ref.to_config())) == (RUNS + 1) * 11
            for checkpoint_id in committed:
                saved = saver.get_tuple(ref.at(checkpoint_id).to_config())
                assert saved is not None
                assert saved.checkpoint["channel_values"]["log"][0] == "start"
        assert [t.checkpoints for t in saver.list_threads("old:")] == []
