"""`ttcli import` from another ttcli database: threads move between a SQLite file and
PostgreSQL, both ways, and read exactly as they did."""

from __future__ import annotations

from pathlib import Path

from tests.clitools import Target, data, ttcli
from tests.pg import new_dsn


def _everything(db: Target) -> dict[str, object]:
    """Each thread's history, and every checkpoint as `show` prints it."""
    found: dict[str, object] = {}
    for thread in data(ttcli(db, "threads", "--json")):
        tid = thread["thread_id"]
        history = data(ttcli(db, "history", "-t", tid, "--ns", thread["checkpoint_ns"], "--json"))
        found[f"{tid}|{thread['checkpoint_ns']}"] = [
            data(ttcli(db, "show", row["checkpoint_id"], "-t", tid, "--json")) for row in history
        ]
    return found


def test_threads_move_between_sqlite_and_postgres(
    db: Target, paused_db: Target, fan_db: Target, tmp_path: Path
) -> None:
    """The fixtures' databases are of the test's backend (each test runs on both): the order
    agent's thread, a paused review and a Send fan-out; they go to the other backend, with
    the graph recorded for each thread, and read the same there."""
    target: Target = tmp_path / "moved.db" if isinstance(db, str) else new_dsn()
    for source in (db, paused_db, fan_db):
        moved = ttcli(target, "import", str(source))
        assert moved.exit_code == 0, moved.stderr
    expected = {**_everything(db), **_everything(paused_db), **_everything(fan_db)}
    assert _everything(target) == expected
    assert ttcli(target, "verify").exit_code == 0
    # the paused thread resumes on its new database
    resumed = ttcli(target, "resume", "-t", "t", "--value", '"approve"')
    assert resumed.exit_code in (0, 4), resumed.stderr


def test_a_database_is_not_imported_into_itself(db: Target) -> None:
    result = ttcli(db, "import", str(db))
    assert result.exit_code == 2
    assert "is the database being imported into" in result.stderr


def test_a_second_import_skips_what_is_there_and_counts_only_what_it_imports(
    db: Target, tmp_path: Path
) -> None:
    target: Target = tmp_path / "moved.db" if isinstance(db, str) else new_dsn()
    first = data(ttcli(target, "import", str(db), "--json"))
    again = data(ttcli(target, "import", str(db), "--json"))
    assert first["threads"] >= 1 and first["bytes_before"] > 0
    assert again == {**{k: 0 for k in first}, "skipped": first["threads"]}
