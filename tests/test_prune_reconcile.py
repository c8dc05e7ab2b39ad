"""Reconciliation: writers, `ttcli update`/`resume` and `prune --archive` at once (SPEC §5).

Two processes write one thread (the application starting the review workflow, which pauses
for a person, and a person's `ttcli update` and `ttcli resume`), a third writes another
thread, and `ttcli prune --archive` runs in a loop meanwhile. Every writer records what it
committed, after the commit. Afterwards every recorded checkpoint is in the live file or in
the archive and reads exactly as committed: values, metadata and pending writes. Zero lost,
zero changed. Bounded: the writers do a fixed number of runs; the pruner stops with them.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NewDb
from tests.pg import new_dsn
from tests.test_concurrency import start
from tests.test_crash import integrity
from tests.workers import canonical
from ttcli.configs import CheckpointRef
from ttcli.savers.base import WRITES_IDX_MAP, BaseSaver
from ttcli.savers.locate import open_saver

RUNS = 20

Key = tuple[str, str]  # (thread, checkpoint id)


def expected(logs: list[Path]) -> tuple[dict[Key, tuple[str, str]], dict[Key, dict[Any, str]]]:
    """What the writers committed: each checkpoint's (checkpoint, metadata), and its pending
    writes by (task, write index) for normal channels and (task, channel) for special ones
    (a later special write replaces an earlier one, a later normal one is ignored)."""
    puts: dict[Key, tuple[str, str]] = {}
    writes: dict[Key, dict[Any, str]] = {}
    for log in logs:
        for line in log.read_text().splitlines() if log.exists() else []:
            record = json.loads(line)
            if "put" in record:
                puts[record["thread"], record["put"]] = (record["checkpoint"], record["metadata"])
                continue
            found = writes.setdefault((record["thread"], record["task_writes"]), {})
            position = 0  # among the task's normal writes, as `stored` counts them
            for channel, value in record["writes"]:
                if channel in WRITES_IDX_MAP:
                    found[record["task"], channel] = value
                else:
                    found.setdefault((record["task"], position), value)
                    position += 1
    return puts, writes


def stored(saver: BaseSaver, key: Key) -> tuple[tuple[str, str], dict[Any, str]] | None:
    """A checkpoint as `expected` describes it, read from `saver` (None: not there)."""
    saved = saver.get_tuple(CheckpointRef(key[0]).at(key[1]).to_config())
    if saved is None:
        return None
    writes: dict[Any, str] = {}
    positions: dict[str, int] = {}
    for task, _path, channel, value in saver.get_writes(saved.config):
        if channel in WRITES_IDX_MAP:
            writes[task, channel] = canonical(value)
        else:
            writes[task, positions.get(task, 0)] = canonical(value)
            positions[task] = positions.get(task, 0) + 1
    return (canonical(saved.checkpoint), canonical(saved.metadata)), writes


@pytest.mark.parametrize(
    ("keep", "pruners", "archive_on"),
    [("0", 1, "sqlite"), ("1", 1, "sqlite"), ("0", 2, "sqlite"), ("0", 1, "postgres")],
    ids=["keep 0", "keep 1", "two prunes", "archive on postgres"],
)
def test_writers_update_resume_and_archive_prune_lose_and_change_nothing(
    tmp_path: Path, new_db: NewDb, keep: str, pruners: int, archive_on: str
) -> None:
    """The application and a person (`ttcli update`, `resume`) on one thread, another writer on
    a second, and `prune --archive` in a loop (twice at once: two cron jobs overlapping); the
    archive is a SQLite file (cold storage) or a PostgreSQL database."""
    db, stop = new_db("live.db"), tmp_path / "stop"
    archive = new_dsn() if archive_on == "postgres" else tmp_path / "archive.db"
    logs = [tmp_path / f"{name}.log" for name in ("app", "person", "other")]
    open_saver(db).close()
    writers = [
        start("ask", str(db), "shared", str(logs[0]), str(RUNS)),
        start("answer", str(db), "shared", str(logs[1]), str(RUNS)),
        start("ask", str(db), "other", str(logs[2]), str(RUNS)),
    ]
    pruning = [start("archive", str(db), str(archive), str(stop), keep) for _ in range(pruners)]
    try:
        results = [process.communicate(timeout=180) for process in writers]
    finally:
        stop.touch()
    results += [pruner.communicate(timeout=180) for pruner in pruning]
    for process, (_, err) in zip([*writers, *pruning], results, strict=True):
        assert (process.returncode, err) == (0, ""), (process.args, err[-800:])
    assert int(results[-1][0]) > 0  # the pruner really ran alongside
    assert integrity(db) == integrity(archive) == "ok"

    puts, writes = expected(logs)
    assert len(puts) >= 3 * RUNS
    with closing(open_saver(db)) as live, closing(open_saver(archive)) as kept:
        assert live.integrity_problems() == kept.integrity_problems() == []
        archived = 0
        for key, committed in puts.items():
            found = stored(live, key)
            if found is None:
                found, archived = stored(kept, key), archived + 1
            assert found is not None, f"checkpoint {key} is in neither file"
            assert found == (committed, writes.get(key, {})), key
    assert archived > 0
