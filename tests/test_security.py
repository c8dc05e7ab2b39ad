"""A hostile database: forged rows and crafted msgpack must never make ttcli import or run
anything, and `ttcli verify` must say what is wrong with the file."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

import msgpack
import pytest
from click.testing import CliRunner

from tests.clitools import ORDER, ORDER_AGENT, dump, edit_rows, ttcli
from tests.conftest import NewDb
from ttcli.cli import cli
from ttcli.savers import serde

PROBE = "ttcli_evil_probe"


def forged(code: int, payload: Any) -> bytes:
    return msgpack.packb(msgpack.ExtType(code, msgpack.packb(payload)))  # type: ignore[no-any-return]


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A real thread whose latest values and pending writes were replaced by crafted data,
    plus a probe module that would leave a file behind if anything imported it."""
    sentinel = tmp_path / "pwned"
    (tmp_path / f"{PROBE}.py").write_text(f"open({str(sentinel)!r}, 'w').write('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    db = tmp_path / "hostile.db"
    assert ttcli(db, "run", ORDER_AGENT, "-t", "t", "--input", json.dumps(ORDER)).exit_code == 0
    conn = sqlite3.connect(db)
    payloads = [
        forged(serde.OBJECT, ["os.system", {"command": f"touch {sentinel}"}]),
        forged(serde.ENUM, ["subprocess.Popen", f"touch {sentinel}"]),
        forged(serde.OBJECT, ["builtins.eval", {"source": f"open({str(sentinel)!r}, 'w')"}]),
        forged(serde.OBJECT, [f"{PROBE}.Boom", {"x": 1}]),
        forged(serde.SEND, ["n", msgpack.ExtType(serde.OBJECT, msgpack.packb(["os.system", {}]))]),
    ]
    keys = [
        int(conn.execute("INSERT INTO blobs (value) VALUES (?)", (p,)).lastrowid or 0)
        for p in payloads
    ]
    names = {name: key for key, name in conn.execute("SELECT name_key, name FROM names")}
    thread_key, checkpoint_id, state = conn.execute(
        "SELECT thread_key, checkpoint_id, state FROM checkpoints "
        "ORDER BY checkpoint_id DESC LIMIT 1"
    ).fetchone()
    depth, channels, seen, updated, writes = serde.loads(state)
    channels[names["tool"]] = [999, serde.Ref(keys[0])]
    channels[names["reply"]] = [999, serde.Ref(keys[1])]
    channels[names["order_id"]] = [999, {"probe": serde.Ref(keys[3])}]
    channels[names["request"]] = [999, serde.Ref(keys[4])]  # a Send to 'n' holding one
    conn.execute(
        "UPDATE checkpoints SET state = ? WHERE checkpoint_id = ?",
        (serde.dumps([depth, channels, seen, updated, writes]), checkpoint_id),
    )
    conn.execute(
        "INSERT INTO writes (thread_key, checkpoint_id, tasks) VALUES (?, ?, ?)",
        (
            thread_key,
            checkpoint_id,
            serde.dumps({"task": [names["tool"], [[0, names["tool"], serde.Ref(keys[2])]]]}),
        ),
    )
    conn.commit()
    conn.close()
    return db, sentinel, str(uuid.UUID(bytes=checkpoint_id))


def test_reading_a_hostile_file_runs_nothing(hostile: tuple[Path, Path, str]) -> None:
    db, sentinel, _ = hostile
    before = dump(db)
    real = CliRunner().invoke(cli, ["--db", str(db), "show", "latest", "-t", "t", "--json"])
    forged_view = json.loads(real.stdout)
    assert forged_view["values"]["tool"] == {
        "$type": "os.system",
        "data": {"command": f"touch {sentinel}"},
    }
    assert forged_view["values"]["reply"] == {
        "$type": "subprocess.Popen",
        "value": f"touch {sentinel}",
    }
    assert forged_view["values"]["order_id"] == {
        "probe": {"$type": f"{PROBE}.Boom", "data": {"x": 1}}
    }
    assert forged_view["tasks"][0]["result"] == {
        "tool": {"$type": "builtins.eval", "data": {"source": f"open({str(sentinel)!r}, 'w')"}}
    }
    for args in (
        ["history", "-t", "t"],
        ["diff", "latest~1", "latest", "-t", "t"],
        ["threads"],
        ["tree", "-t", "t"],
    ):
        result = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 0, (args, result.stderr)
    assert not sentinel.exists()
    assert PROBE not in sys.modules
    assert dump(db) == before


def test_a_row_that_does_not_decode_is_exit_6_naming_it(hostile: tuple[Path, Path, str]) -> None:
    db, _, head = hostile
    conn = sqlite3.connect(db)
    conn.execute(  # not msgpack at all, and claiming to be the newest checkpoint
        "INSERT INTO checkpoints (thread_key, checkpoint_id, source, step, state) "
        "VALUES (1, ?, 'loop', 9, ?)",
        (b"\xff" * 16, b"\xc1 not msgpack"),
    )
    conn.commit()
    conn.close()
    before = dump(db)
    for args in (["show", "latest", "-t", "t"], ["history", "-t", "t"]):
        broken = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert broken.exit_code == 6
        assert broken.stderr.startswith(
            "Error: checkpoint ffffffff-ffff-ffff-ffff-ffffffffffff of thread 't' does not read: "
        )
        assert len(broken.stderr.splitlines()) == 1
    assert CliRunner().invoke(cli, ["--db", str(db), "show", head, "-t", "t"]).exit_code == 0
    verify = CliRunner().invoke(cli, ["--db", str(db), "verify", "--json"])
    assert verify.exit_code == 6
    assert any(f["checkpoint_id"].startswith("ffffffff") for f in json.loads(verify.stdout))
    assert dump(db) == before


def test_verify_reports_forged_data(hostile: tuple[Path, Path, str]) -> None:
    db, sentinel, _ = hostile
    result = CliRunner().invoke(cli, ["--db", str(db), "verify", "--json"])
    assert result.exit_code == 6
    findings = json.loads(result.stdout)
    problems = {(f["where"], f["what"].split(":")[0]) for f in findings if f["problem"]}
    assert ("values.tool", "value claims type os.system") in problems
    assert ("values.reply", "value claims type subprocess.Popen") in problems
    assert ("pending[task].tool", "value claims type builtins.eval") in problems
    assert ("values.request.arg", "value claims type os.system") in problems
    notes = [f for f in findings if not f["problem"]]
    assert [(n["where"], n["what"]) for n in notes] == [
        ("values.order_id.probe", f"value of type {PROBE}.Boom, kept as data (not registered here)")
    ]
    assert result.stderr == "checked 6 checkpoints in 1 threads: 4 problems\n"
    assert not sentinel.exists() and PROBE not in sys.modules


def test_verify_passes_a_healthy_file(new_db: NewDb) -> None:
    db = new_db("ok.db")
    ttcli(db, "run", ORDER_AGENT, "-t", "t", "--input", json.dumps(ORDER))
    result = ttcli(db, "verify")
    assert (result.exit_code, result.stdout) == (
        0,
        "checked 6 checkpoints in 1 threads: 0 problems\n",
    )


def test_verify_reports_a_thread_count_that_rows_written_behind_its_back_broke(
    new_db: NewDb,
) -> None:
    db = new_db("counted.db")
    ttcli(db, "run", ORDER_AGENT, "-t", "t", "--input", json.dumps(ORDER))
    edit_rows(db, "DELETE FROM checkpoints WHERE step = -1")  # another tool, not ttcli
    result = ttcli(db, "verify")
    assert result.exit_code == 6
    assert "thread 't' (namespace '') is recorded with 6 checkpoints but has 5" in result.stdout


def test_verify_reports_stored_values_two_threads_share(new_db: NewDb) -> None:
    """Each thread keeps its own stored values (copies copy them): rows another tool copied
    into a second thread point at the first one's, and a prune of either would delete what
    the other reads."""
    db = new_db("shared.db")
    ttcli(db, "run", ORDER_AGENT, "-t", "t", "--input", json.dumps(ORDER))
    assert ttcli(db, "verify").exit_code == 0
    columns = "checkpoint_id, parent_id, source, step, writers, metadata, created_at, state"
    edit_rows(
        db,
        "INSERT INTO threads (thread_id, checkpoint_ns, checkpoints) "
        "SELECT 'u', checkpoint_ns, checkpoints FROM threads WHERE thread_id = 't'",
        f"INSERT INTO checkpoints (thread_key, {columns}) "
        f"SELECT (SELECT thread_key FROM threads WHERE thread_id = 'u'), {columns} "
        "FROM checkpoints WHERE thread_key = "
        "(SELECT thread_key FROM threads WHERE thread_id = 't')",
    )
    result = ttcli(db, "verify")
    assert result.exit_code == 6
    assert re.search(
        r"stored value \d+ is used by thread 't' \(namespace ''\) and thread 'u' \(namespace ''\)",
        result.stdout,
    ), result.stdout


def test_verify_reports_damage_and_objects_ttcli_did_not_create(new_db: NewDb) -> None:
    """A child stored before its parent, and a trigger someone put on a ttcli table."""
    db = new_db("damaged.db")
    ttcli(db, "run", ORDER_AGENT, "-t", "t", "--input", json.dumps(ORDER))
    trigger = {
        # the same trigger in each database's dialect
        True: "CREATE FUNCTION noop() RETURNS trigger LANGUAGE plpgsql AS "
        "'BEGIN RETURN NEW; END'; CREATE TRIGGER audit AFTER INSERT ON checkpoints "
        "FOR EACH ROW EXECUTE FUNCTION noop()",
        False: "CREATE TRIGGER audit AFTER INSERT ON checkpoints BEGIN SELECT 1; END",
    }[isinstance(db, str)]
    edit_rows(
        db,
        "UPDATE checkpoints SET parent_id = checkpoint_id WHERE step = 1",  # its own parent
        trigger,
    )
    result = ttcli(db, "verify")
    assert result.exit_code == 6
    assert "trigger audit on checkpoints is not part of ttcli's schema" in result.stdout
    assert "does not sort after its parent" in result.stdout
