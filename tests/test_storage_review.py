"""Storage review: regressions found after the SQLite package split (each failed before its
fix), through the public saver API and the CLI."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
import time
import uuid
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

from tests import graphs
from tests.clitools import ROOT, data, dump, ttcli
from tests.conftest import NewDb
from tests.test_invariants import API, COUNTER
from tests.test_saver_contract import config, make_checkpoint, put_one
from ttcli.errors import ConfigError, SerializationError
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.savers.sqlite import SqliteSaver
from ttcli.uuid6 import id_time, lowest_id_at

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


@pytest.mark.parametrize(
    "spelling",
    [
        lambda i: "{" + i + "}",
        lambda i: i.upper(),
        lambda i: "urn:uuid:" + i,
        lambda i: i.replace("-", ""),
    ],
    ids=["braces", "upper", "urn", "no-dashes"],
)
def test_a_child_id_spelled_otherwise_that_sorts_before_its_parent_is_refused(
    saver: BaseSaver, spelling: object
) -> None:
    root = put_one(saver, None, -1)
    parent = put_one(saver, root, 0)
    # a UUID a second older than the parent, in a spelling that sorts after it as text
    older = lowest_id_at(id_time(parent) - timedelta(seconds=1))
    assert uuid.UUID(older).bytes < uuid.UUID(parent).bytes
    odd = spelling(older)  # type: ignore[operator]
    with pytest.raises(ConfigError, match="sort after its parent"):
        put_one(saver, parent, 1, known_id=odd)
    latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == parent
    saver.delete_checkpoints(config("t"), [root])
    assert saver.get_tuple(config("t", parent)) is not None


TWO_STEPS = textwrap.dedent(
    """
    import os, sys
    from typing import TypedDict
    from ttcli import StateGraph, START, END

    class S(TypedDict):
        n: int

    def a(state):
        # fill the pipe stdout is, so that the CLI's next line waits for the test to read
        sys.stdout.write("#" * (int(os.environ["PAD"]) - 1) + "\\n")
        sys.stdout.flush()
        return {"n": state["n"] + 1}

    builder = StateGraph(S)
    builder.add_node("a", a)
    builder.add_node("b", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    """
)


def test_a_run_whose_thread_a_prune_emptied_before_it_reported_ends_in_one_line(
    tmp_path: Path, new_db: NewDb
) -> None:
    """`prune --keep-last 0` deletes every checkpoint of a thread, which may be just after
    a run (or `resume`) committed its last one and before it prints where it ended: the run
    says so in one line (exit 3), never "a bug in ttcli" (exit 1, KeyError)."""
    (tmp_path / "two.py").write_text(TWO_STEPS)
    db = new_db("live.db")
    read_end, write_end = os.pipe()
    capacity = fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    line_a = len('{"a": {"n": 1}}\n')  # what --stream prints for node a
    process = subprocess.Popen(
        [sys.executable, "-m", "ttcli", "--db", str(db), "run", f"{tmp_path}/two.py:builder",
         "-t", "t", "--input", '{"n": 0}', "--stream", "--interrupt-before", "b"],
        cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PAD": str(capacity - line_a)},
    )  # fmt: skip
    os.close(write_end)
    try:
        # the run commits node a's checkpoint (step 1), then blocks printing that it paused:
        # the prune must come after that commit, not after an earlier one of the run
        for _ in range(600):
            listed = ttcli(db, "threads", "--json")  # exit 3 until the run has made the tables
            if listed.exit_code == 0 and [t["last_step"] for t in data(listed)] == [1]:
                break
            time.sleep(0.05)
        assert ttcli(db, "prune", "--older-than", "0s", "--keep-last", "0", "--yes").exit_code == 0
    finally:
        with os.fdopen(read_end, "rb") as out:
            out.read()
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    assert err.startswith("Error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("version", [1, 4, 7])
def test_a_thread_whose_latest_id_is_another_kind_of_uuid_goes_on(
    saver: BaseSaver, version: int
) -> None:
    """A checkpoint stored with an id that is a UUID but not a UUIDv6 (LangGraph code and
    imports make such ids) that sorts above the clock: the runtime's next id must still sort
    after it, or every later step of the thread is refused ("must sort after its parent")."""
    app = graphs.linear(API).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, config("t"))
    head = saver.get_tuple(config("t"))
    assert head is not None
    foreign = dict(head.checkpoint)
    raw = (0xF7 << 120) | (version << 76) | (0x8 << 60) | 0x1234
    foreign["id"] = str(uuid.UUID(int=raw))
    saver.put(head.config, foreign, {"source": "update", "step": 9, "parents": {}}, {})  # type: ignore[arg-type]
    updated = app.update_state(config("t"), {"x": 5})
    latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.config == updated
    assert latest.parent_config is not None
    assert latest.parent_config["configurable"]["checkpoint_id"] == foreign["id"]


@pytest.mark.parametrize("last", ["\ud7ff", "\U0010ffff"], ids=["before-surrogates", "largest"])
def test_a_thread_prefix_ending_in_an_edge_character_lists_and_prunes(
    tmp_path: Path, new_db: NewDb, last: str
) -> None:
    """`--prefix` is matched as a range of thread ids: its upper end must exist for every
    prefix (not a lone surrogate or a character past U+10FFFF: exit 1, "a bug in ttcli")."""
    (tmp_path / "tiny.py").write_text(COUNTER)
    db = new_db("t.db")
    names = [f"q{last}1", f"q{last}{last}", "q", "r"]
    for name in names:
        assert ttcli(db, "run", f"{tmp_path}/tiny.py:builder", "-t", name, "--input",
                     '{"n": 0}').exit_code == 0  # fmt: skip
    listed = data(ttcli(db, "threads", "--prefix", f"q{last}", "--json"))
    assert sorted(t["thread_id"] for t in listed) == sorted(names[:2])
    pruned = ttcli(db, "prune", "--prefix", f"q{last}", "--older-than", "0s", "--keep-last", "0",
                   "--yes")  # fmt: skip
    assert pruned.exit_code == 0, pruned.stderr
    assert sorted(t["thread_id"] for t in data(ttcli(db, "threads", "--json"))) == ["q", "r"]


def test_fork_to_thread_while_a_prune_archives_the_source_copies_writes_as_stored(
    tmp_path: Path, new_db: NewDb
) -> None:
    """`ttcli fork --to-thread` reads a lineage, then copies it row by row; a prune that
    archives the source meanwhile must not leave copies without the pending writes their
    source had (they were read as "no writes" from rows already gone)."""
    db, archive = new_db("live.db"), tmp_path / "archive.db"
    with closing(open_saver(db)) as saver, saver.batch():
        parent = None
        for step in range(1500):
            parent = put_one(saver, parent, step - 1)
            saver.put_writes(config("t", parent), [("log", [f"w{step}"])], f"task{step}", "p")
    fork = subprocess.Popen(
        [sys.executable, "-m", "ttcli", "--db", str(db), "fork", "latest", "--thread", "t",
         "--to-thread", "copy"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with closing(open_saver(db, readonly=True)) as reader:
            for _ in range(2000):  # until the copy has begun
                if list(reader.list_threads("copy")) or fork.poll() is not None:
                    break
                time.sleep(0.005)
        pruned = ttcli(db, "prune", "--thread", "t", "--older-than", "0s", "--keep-last", "1",
                       "--archive", str(archive), "--yes")  # fmt: skip
        assert pruned.exit_code == 0, pruned.stderr
    finally:
        _out, err = fork.communicate(timeout=120)
    assert fork.returncode == 0, err
    with closing(open_saver(db)) as live, SqliteSaver.from_conn_string(archive) as kept:
        copied = live.checkpoint_ids(config("copy"))
        assert copied[0] == live.checkpoint_ids(config("t"))[0]  # the head was copied
        for checkpoint_id in copied:
            source = live if live.get_tuple(config("t", checkpoint_id)) else kept
            copy, original = (s.get_tuple(config(t, checkpoint_id)) for s, t in
                              ((live, "copy"), (source, "t")))  # fmt: skip
            assert copy is not None and original is not None
            assert copy.checkpoint == original.checkpoint
            assert live.get_writes(config("copy", checkpoint_id)) == source.get_writes(
                config("t", checkpoint_id)
            ), checkpoint_id


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_a_checkpoint_time_outside_the_calendar_in_utc_is_refused_not_stored_unreadable(
    saver: BaseSaver, ts: str
) -> None:
    """A `ts` that is a valid time where it was written but falls before year 1 or after
    9999 in UTC was stored by SQLite and then never read again ("does not read"), its thread
    with it; the memory saver read it. Both refuse it when it is written."""
    root = put_one(saver, None, -1)
    checkpoint = make_checkpoint(0, n=0)
    checkpoint["ts"] = ts
    with pytest.raises(SerializationError, match="outside the years"):
        saver.put(config("t", root), checkpoint, {"source": "loop", "step": 0, "parents": {}}, {})
    latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == root


#: thread ids no database can take: bytes in another encoding, as a shell passes them on
#: (`-t $'\\xff'` reaches Python as a lone surrogate), and ids too long for an index
BAD_IDS = {
    "not-utf-8": ("caf\udce9", "UTF-8"),
    "too-long": ("x" * 1025, "1,025 bytes long"),
    "too-long-in-utf-8": ("\u00e9" * 513, "1,026 bytes long"),
}


@pytest.mark.parametrize("bad", BAD_IDS, ids=list(BAD_IDS))
@pytest.mark.parametrize(
    "args",
    [
        ["run", "{graph}", "-t", "{bad}", "--input", '{"n": 0}'],
        ["history", "-t", "{bad}"],
        ["show", "latest", "-t", "{bad}"],
        ["threads", "--prefix", "{bad}"],
        ["prune", "--thread", "{bad}", "--older-than", "1d", "--yes"],
        ["prune", "--prefix", "{bad}", "--older-than", "1d", "--yes"],
    ],
    ids=["run", "history", "show", "threads", "prune-thread", "prune-prefix"],
)
def test_a_thread_id_no_database_can_take_is_a_usage_error(
    tmp_path: Path, new_db: NewDb, args: list[str], bad: str
) -> None:
    """Not UTF-8 (it was exit 1, "unexpected UnicodeEncodeError ... a bug in ttcli"), or
    over 1,024 bytes (PostgreSQL's index refused it, exit 6): one line, exit 2, the database
    unchanged, on every backend."""
    thread_id, said = BAD_IDS[bad]
    (tmp_path / "tiny.py").write_text(COUNTER)
    db = new_db("t.db")
    assert ttcli(db, "run", f"{tmp_path}/tiny.py:builder", "-t", "ok", "--input",
                 '{"n": 0}').exit_code == 0  # fmt: skip
    before = dump(db)
    graph = f"{tmp_path}/tiny.py:builder"
    result = ttcli(db, *[a.replace("{graph}", graph).replace("{bad}", thread_id) for a in args])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert said in result.stderr and len(result.stderr) < 300
    assert dump(db) == before


@pytest.mark.parametrize("bad", BAD_IDS, ids=list(BAD_IDS))
def test_the_savers_refuse_a_thread_id_no_database_can_take_alike(
    saver: BaseSaver, bad: str
) -> None:
    thread_id, said = BAD_IDS[bad]
    checkpoint = make_checkpoint(-1, n=0)
    with pytest.raises(ConfigError, match=said):
        saver.put(config(thread_id), checkpoint, {"source": "input", "step": -1}, {})
    assert list(saver.list_threads()) == []


@pytest.mark.parametrize("case", ["first-run", "after-a-stopped-run", "archive-of-other-names"])
def test_prune_archives_a_checkpoint_holding_nan(tmp_path: Path, case: str) -> None:
    """A node's score of float('nan') (in a pending write or a channel) is not equal to
    itself: compared by `==`, the archive check failed for every `prune --archive` (exit 6,
    "nothing was deleted", every night), and after a stopped run the row was "left for the
    next run" forever."""
    db, archive = tmp_path / "live.db", tmp_path / "archive.db"
    if case == "archive-of-other-names":  # rows are then copied with their keys translated
        with SqliteSaver.from_conn_string(archive) as target:
            first = make_checkpoint(-1, zzz=1, yyy=[1] * 40)
            target.put(config("other"), first, {"source": "input", "step": -1, "q": 1}, {})
            target.put_writes(config("other", first["id"]), [("www", [1] * 30)], "tk", "pp")
    with SqliteSaver.from_conn_string(db) as saver:
        checkpoint = make_checkpoint(-1, n=float("nan"), scores=[float("nan")] * 30)
        root = checkpoint["id"]
        saver.put(config("t"), checkpoint, {"source": "input", "step": -1}, {})
        writes = [("score", float("nan")), ("scores", [float("nan")] * 20)]
        saver.put_writes(config("t", root), writes, "task", "p")
        head = put_one(saver, root, 0)
        if case == "after-a-stopped-run":  # a prune killed after its archive committed
            with SqliteSaver.from_conn_string(archive) as target:
                assert saver.copy_rows(config("t"), head, target) == 1
    for _ in range(2):
        result = ttcli(db, "prune", "--thread", "t", "--older-than", "0s", "--keep-last", "1",
                       "--archive", str(archive), "--yes")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        assert "left" not in result.stdout
    with SqliteSaver.from_conn_string(db) as live, SqliteSaver.from_conn_string(archive) as kept:
        assert live.checkpoint_ids(config("t")) == [head]
        kept_writes = kept.get_writes(config("t", root))
        assert [(t, p, c) for t, p, c, _v in kept_writes] == [("task", "p", "score"),
                                                              ("task", "p", "scores")]  # fmt: skip
        assert kept_writes[0][3] != kept_writes[0][3]  # NaN
        archived = kept.get_tuple(config("t", root))
        assert archived is not None and len(archived.checkpoint["channel_values"]["scores"]) == 30
