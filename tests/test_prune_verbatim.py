"""A prune and an archive handle values in their stored form (`serde.Verbatim`): the
application's class of a value may have changed since it was stored (a field added, or a
required one, which no longer rebuilds it), and what a prune writes back, copies or
collects must not depend on it. Each test stores values of a class `t.P`, changes the class
and prunes, on SQLite and PostgreSQL (`new_db`), archiving into either (`archive_db`); or
reads and moves stored values as a prune does, in every saver (`saver`)."""

from __future__ import annotations

from contextlib import closing
from dataclasses import field, make_dataclass
from typing import Any, TypedDict

import pytest

from tests.clitools import Target
from tests.conftest import NewDb
from tests.test_prune import boundary, cfg
from tests.test_prune_contract import Killed, hooked, kill
from tests.test_saver_contract import config, make_checkpoint
from ttcli import END, START, Command, StateGraph, interrupt
from ttcli.errors import CorruptValueError
from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
from ttcli.savers import serde
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.uuid6 import new_id


class Typed(TypedDict):
    point: Any
    n: int


class Asking(TypedDict):
    point: Any
    answer: str


#: `t.P` as the application changes it: a field with a default, a field it needs
ADDED = [("x", int), ("y", int, field(default=0))]
REQUIRED = [("x", int), ("y", int)]


def _point_class(*fields: Any) -> type:
    """An application's class `t.P` (a short name, so that its values are stored inline in
    the checkpoints' rows), with these fields."""
    cls = make_dataclass("P", fields)
    cls.__module__ = "t"
    return cls


@pytest.mark.parametrize(
    "changed", [ADDED, REQUIRED], ids=["a field added", "a required field added"]
)
def test_a_prune_writes_back_the_values_it_keeps_as_stored(
    new_db: NewDb, changed: list[Any]
) -> None:
    """A kept checkpoint whose parent is pruned is rewritten in full: its values go back as
    they were stored, whatever the application's class has become since (rebuilt through a
    changed class, they came back with a field they never had, or stopped the prune)."""
    db, first = new_db("ttcli.db"), _point_class(("x", int))
    _count_beside_a_point(db, first)
    with closing(open_saver(db)) as saver:
        saver.serde.register(_point_class(*changed))
        plans = plan_prune(saver, PrunePolicy(older_than=boundary(), keep_last=1))
        assert execute_prune(saver, plans).checkpoints == 6
    assert _points(db, first) == [first(1)]


@pytest.mark.parametrize(
    ("changed", "rewritten"),
    [(ADDED, False), (REQUIRED, False), (REQUIRED, True)],
    ids=["a field added", "a required field added", "a required field added, written each step"],
)
def test_an_archive_copies_the_values_as_stored(
    new_db: NewDb, archive_db: Target, changed: list[Any], rewritten: bool
) -> None:
    """An archive's copies (and the source's kept rows) hold the values as they were stored,
    with the application's class changed since; and the pending writes it checks, the copied
    page's last among them (which a kept child held), are compared as stored."""
    db, first = new_db("ttcli.db"), _point_class(("x", int))
    _count_beside_a_point(db, first, rewritten=rewritten)
    with closing(open_saver(db)) as saver, closing(open_saver(archive_db)) as archive:
        saver.serde.register(_point_class(*changed))
        plans = plan_prune(saver, PrunePolicy(older_than=boundary(), keep_last=1))
        assert execute_prune(saver, plans, archive=archive).checkpoints == 6
    assert _points(db, first) == [first(1)]
    assert _points(archive_db, first) == [first(1)] * 6


def test_a_prune_collects_what_records_point_at_without_rebuilding_them(new_db: NewDb) -> None:
    """A map with a large entry is stored as a record whose small entries are inline: the
    values the pruned rows alone used are found through it, read as stored (rebuilt through
    a class given a required field since, it stopped the prune)."""
    db, first = new_db("ttcli.db"), _point_class(("x", int))
    document = {"text": "x" * 100, "point": first(1)}
    _count_beside_a_point(db, first, document)
    with closing(open_saver(db)) as saver:
        before = saver.thread_bytes(cfg("t")) or 0
        saver.serde.register(_point_class(*REQUIRED))
        plans = plan_prune(saver, PrunePolicy(older_than=boundary(), keep_last=1))
        assert execute_prune(saver, plans).checkpoints == 6
        assert 0 < (saver.thread_bytes(cfg("t")) or 0) < before
    assert _points(db, first) == [document]


def test_rows_the_archive_held_already_are_compared_as_stored(
    new_db: NewDb, archive_db: Target
) -> None:
    """A prune stopped once its archive committed leaves the rows in both files: the next
    compares their pending writes as stored, with the class given a required field since."""
    db, first = new_db("ttcli.db"), _point_class(("x", int))
    _count_beside_a_point(db, first)
    policy = PrunePolicy(older_than=boundary(), keep_last=1)
    with closing(open_saver(db)) as saver:
        with hooked(archive_db, kill) as target, pytest.raises(Killed):
            execute_prune(saver, plan_prune(saver, policy), archive=target)
        saver.serde.register(_point_class(*REQUIRED))
        with closing(open_saver(archive_db)) as archive:
            report = execute_prune(saver, plan_prune(saver, policy), archive=archive)
    assert (report.checkpoints, report.archived, report.left) == (6, 0, 0)
    assert _points(db, first) == [first(1)]
    assert _points(archive_db, first) == [first(1)] * 6


def test_an_archived_copy_refreshed_is_compared_as_stored(
    new_db: NewDb, archive_db: Target
) -> None:
    """An archived checkpoint whose pending writes grew since (an answer to its interrupt)
    is copied again and compared whole before it goes: as stored, with the class given a
    required field since."""
    db, first = new_db("ttcli.db"), _point_class(("x", int))
    with closing(open_saver(db)) as saver:
        saver.serde.register(first)
        app = _asking(saver)
        app.invoke({"point": first(1), "answer": ""}, cfg("t"))  # paused at its question
        question = saver.checkpoint_ids(cfg("t"))[0]
        paused = PrunePolicy(older_than=boundary(), keep_last=0)
        with hooked(archive_db, kill) as target, pytest.raises(Killed):
            execute_prune(saver, plan_prune(saver, paused), archive=target)
        app.invoke(Command(resume="this one"), cfg("t"))
        saver.serde.register(_point_class(*REQUIRED))
        answered = PrunePolicy(older_than=boundary(), keep_last=1)
        with closing(open_saver(archive_db)) as archive:
            report = execute_prune(saver, plan_prune(saver, answered), archive=archive)
    assert (report.checkpoints, report.left) == (2, 0)
    assert _points(db, first) == [first(1)]
    assert _points(archive_db, first) == [first(1)] * 2
    with closing(open_saver(archive_db)) as archive:
        writes = archive.stored_pending_writes(cfg("t"), [question])[question]
    # the copy refreshed: the answer's writes are archived beside the question's
    assert [channel for _task, _path, channel, _value in writes] == [
        "__resume__",
        "__interrupt__",
        "answer",
    ]


def test_a_refreshed_copy_the_archive_does_not_hold_is_left(
    new_db: NewDb, archive_db: Target
) -> None:
    """That whole comparison is what lets a refreshed row go: made once the archive
    committed, inside the live file's transaction, it leaves the row for the next run when
    the archive does not hold it as the live file does (here, lost right after it
    committed), where the copy's own check, before the commit, passed."""
    db = new_db("ttcli.db")
    with closing(open_saver(db)) as saver:
        app = _asking(saver)
        app.invoke({"point": None, "answer": ""}, cfg("t"))
        question = saver.checkpoint_ids(cfg("t"))[0]
        paused = PrunePolicy(older_than=boundary(), keep_last=0)
        with hooked(archive_db, kill) as target, pytest.raises(Killed):
            execute_prune(saver, plan_prune(saver, paused), archive=target)
        app.invoke(Command(resume="this one"), cfg("t"))

        def lose_the_copy() -> None:
            archive.delete_checkpoints(cfg("t"), [question])

        # the archive's first batch copies the page (nothing new), its second the refresh
        answered = PrunePolicy(older_than=boundary(), keep_last=1)
        with hooked(archive_db, lambda: setattr(archive, "after", lose_the_copy)) as archive:
            report = execute_prune(saver, plan_prune(saver, answered), archive=archive)
        assert (report.checkpoints, report.left) == (1, 1)
        assert saver.checkpoint_ids(cfg("t"))[1:] == [question]
        with closing(open_saver(archive_db)) as again:
            report = execute_prune(saver, plan_prune(saver, answered), archive=again)
        assert (report.checkpoints, report.left) == (1, 0)


def test_stored_forms_are_read_without_the_applications_classes(saver: BaseSaver) -> None:
    """What a prune compares between a file and its archive reads values in their stored
    form, alike in every saver, where rebuilding them through a class changed since fails:
    inline, stored apart, and as a record's entries."""
    first = _point_class(("x", int))
    saver.serde.register(first)
    document = {"text": "x" * 100, "point": first(1)}
    checkpoint = make_checkpoint(0, point=first(2), document=document)
    at = saver.put(config(), checkpoint, {"source": "input", "step": 0, "parents": {}}, {})
    saver.put_writes(at, [("point", first(3)), ("document", document)], "task", "path")
    saver.serde.register(_point_class(*REQUIRED))
    with pytest.raises(CorruptValueError):
        saver.get_tuple(at)
    stored = saver.stored_tuple(at)
    assert stored is not None
    assert stored.checkpoint["channel_values"] == _as_stored(
        {"point": first(2), "document": document}
    )
    assert stored.metadata == {"source": "input", "step": 0, "parents": {}}
    missing = new_id(1)  # a checkpoint the thread lacks is left out
    assert saver.stored_pending_writes(config(), [checkpoint["id"], missing]) == {
        checkpoint["id"]: [
            ("task", "path", "point", _as_stored(first(3))),
            ("task", "path", "document", _as_stored(document)),
        ]
    }


def test_a_row_stored_among_older_ones_moves_their_pending_writes_as_stored(
    saver: BaseSaver,
) -> None:
    """A row stored between a checkpoint and its child (one that committed late, with an
    old id, or an archive copying such a row) takes the checkpoint's pending writes back
    from the child's row: as stored (rebuilt through the application's class as it is now,
    they came back with a field they never had)."""
    first = _point_class(("x", int))
    saver.serde.register(first)
    parent, late, child = (make_checkpoint(step, n=step) for step in range(3))  # ids in order
    at = saver.put(config(), parent, {"source": "loop", "step": 0, "parents": {}}, {"n": 2})
    saver.put_writes(at, [("point", first(1))], "task")
    saver.put(at, child, {"source": "loop", "step": 2, "parents": {}}, {"n": 4})
    saver.serde.register(_point_class(*ADDED))
    saver.put(at, late, {"source": "loop", "step": 1, "parents": {}}, {"n": 3})
    assert saver.stored_pending_writes(config(), [parent["id"]]) == {
        parent["id"]: [("task", "", "point", _as_stored(first(1)))]
    }


def _asking(saver: BaseSaver) -> Any:
    """A graph that asks a question (an interrupt) beside a point, compiled with `saver`."""
    builder = StateGraph(Asking)
    builder.add_node("ask", lambda state: {"answer": interrupt("which?")})
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def _as_stored(value: Any) -> Any:
    return serde.VERBATIM.loads(serde.dumps(value))


def _count_beside_a_point(
    db: Target, point_class: type, point: Any = None, *, rewritten: bool = False
) -> None:
    """Thread t: a counter counting to 5 beside a point (or `point`, a value holding one),
    unchanging, and written again at each step if `rewritten` (7 checkpoints)."""
    builder = StateGraph(Typed)
    builder.add_node(
        "count",
        lambda state: {"n": state["n"] + 1, **({"point": state["point"]} if rewritten else {})},
    )
    builder.add_edge(START, "count")
    builder.add_conditional_edges("count", lambda state: "count" if state["n"] < 5 else END)
    with closing(open_saver(db)) as saver:
        saver.serde.register(point_class)
        start = {"point": point_class(1) if point is None else point, "n": 0}
        builder.compile(checkpointer=saver).invoke(start, cfg("t"))


def _points(db: Target, point_class: type) -> list[Any]:
    """The points thread t's checkpoints hold (newest first), read with `point_class`; and
    the database checked."""
    with closing(open_saver(db)) as saver:
        saver.serde.register(point_class)
        assert saver.integrity_problems() == []
        return [
            found.checkpoint["channel_values"].get("point")
            or found.checkpoint["channel_values"]["__start__"]["point"]
            for found in saver.list(cfg("t"))
        ]
