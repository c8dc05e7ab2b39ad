"""What a stored value decodes to depends on the saver's serializer, never on import order."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

from tests.clitools import REVIEW, ROOT, data, ttcli
from tests.conftest import SAVERS, NewDb
from tests.pg import new_dsn
from tests.test_saver_contract import config, make_checkpoint
from ttcli import (
    START,
    Command,
    InMemorySaver,
    Interrupt,
    Send,
    Serializer,
    SqliteSaver,
    StateGraph,
    values,
)
from ttcli.errors import SerializationError
from ttcli.graph import messages
from ttcli.runtime import commands
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.savers.postgres import PostgresSaver


def test_a_fresh_process_shows_what_a_paused_thread_waits_for(new_db: NewDb) -> None:
    db = new_db("review.db")
    request = json.dumps({"request": "refund 7", "plan": "", "log": []})
    asked = data(ttcli(db, "run", REVIEW, "-t", "r", "--input", request, "--json"))
    interrupt = asked["waiting"][0]["interrupts"][0]
    # a new interpreter that has imported nothing of the runtime reads the same file
    shown = subprocess.run(
        [sys.executable, "-m", "ttcli", "--db", str(db), "show", "-t", "r", "--json"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    assert (shown.returncode, shown.stderr) == (0, "")
    (task,) = json.loads(shown.stdout)["tasks"]
    assert task["name"] == "review" and task["waiting"] is True
    assert task["interrupts"] == [interrupt]
    assert interrupt["value"] == {
        "question": "Approve this plan?",
        "plan": "cancel the order (refund 7)",
    }


@dataclass(frozen=True)
class Parcel:
    weight: int
    label: str


@dataclass(frozen=True)
class Tag:
    """Small enough to be stored inline (see savers/blobs.py) under its short name."""

    n: int


Tag.__module__ = "m"  # an application's short module name

SaverFactory = Callable[[Serializer], BaseSaver]
LOOP = {"source": "loop", "step": 0}


@pytest.fixture(params=SAVERS, ids=SAVERS)
def new_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SaverFactory]:
    opened: list[SqliteSaver | PostgresSaver] = []

    def make(serde: Serializer) -> BaseSaver:
        if request.param == "memory":
            return InMemorySaver(serde=serde)
        if request.param == "postgres":
            opened.append(PostgresSaver(new_dsn(), serde=serde))
        else:
            opened.append(SqliteSaver(tmp_path / f"{len(opened)}.db", serde=serde))
        return opened[-1]

    yield make
    for made in opened:
        made.close()


def test_each_saver_decodes_with_its_own_serializer(new_saver: SaverFactory) -> None:
    parcel = Parcel(3, "box")
    plain = {"$type": f"{__name__}.Parcel", "data": {"weight": 3, "label": "box"}}
    knows, ignores = new_saver(Serializer(types=[Parcel])), new_saver(Serializer())
    for saver in (knows, ignores):
        checkpoint = make_checkpoint(0, parcel=parcel, asked=Interrupt("ok?", "i1"))
        stored = saver.put(config(), checkpoint, {"source": "loop", "step": 0}, {})
        saver.put_writes(stored, [("parcel", parcel), ("sent", Send("n", parcel))], "task")
    rebuilt, inert = knows.get_tuple(config()), ignores.get_tuple(config())
    assert rebuilt is not None and rebuilt.pending_writes is not None
    assert inert is not None and inert.pending_writes is not None
    assert rebuilt.checkpoint["channel_values"]["parcel"] == parcel
    assert inert.checkpoint["channel_values"]["parcel"] == plain
    # ttcli's own types are always known, whatever was registered or imported
    assert inert.checkpoint["channel_values"]["asked"] == Interrupt("ok?", "i1")
    assert [v for _, _, v in rebuilt.pending_writes] == [parcel, Send("n", parcel)]
    assert [v for _, _, v in inert.pending_writes] == [plain, Send("n", plain)]


@dataclass(frozen=True)
class Box:
    size: int


class Shipping(TypedDict):
    box: Box


def test_a_graph_registers_its_schema_types_on_its_own_saver_only(new_db: NewDb) -> None:
    builder = StateGraph(Shipping)
    builder.add_node("pack", lambda state: {"box": Box(state["box"].size + 1)})
    builder.add_edge(START, "pack")
    cfg: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    db = new_db("ttcli.db")
    with closing(open_saver(db)) as running:
        builder.compile(checkpointer=running).invoke({"box": Box(1)}, cfg)
        assert builder.compile(checkpointer=running).get_state(cfg).values == {"box": Box(2)}
        with closing(open_saver(db)) as reading:  # the same database
            latest = reading.get_tuple(cfg)
    assert latest is not None
    assert latest.checkpoint["channel_values"]["box"] == {
        "$type": f"{__name__}.Box",
        "data": {"size": 2},
    }


def test_every_old_import_of_the_value_types_still_works() -> None:
    moved = (values.Interrupt, values.Send, values.Command, values.Message, values.AIMessage)
    assert (Interrupt, Send, Command) == moved[:3]  # from ttcli
    assert (commands.Interrupt, commands.Send, commands.Command) == moved[:3]
    assert (messages.Message, messages.AIMessage) == moved[3:]


def test_every_saver_refuses_a_value_it_cannot_store(saver: BaseSaver) -> None:
    with pytest.raises(SerializationError, match="type builtins.object is not serialisable"):
        saver.put(config(), make_checkpoint(0, odd=object()), {"source": "loop", "step": 0}, {})
    assert saver.get_tuple(config()) is None


def test_a_saver_that_does_not_know_a_class_stores_and_copies_it_as_it_came(
    tmp_path: Path,
) -> None:
    # a small value is kept inline, as decoded by the writer: its class must survive that
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with SqliteSaver.from_conn_string(source) as writer:
        stored = writer.put(config(), make_checkpoint(0, small=Tag(1)), LOOP, {})
        writer.put_writes(stored, [("small", Tag(2))], "task")
        with SqliteSaver.from_conn_string(target) as copy:
            assert writer.copy_rows(config(), "f" * 32, copy) == 1
    for path in (source, target):
        with SqliteSaver.from_conn_string(path, serde=Serializer(types=[Tag])) as reader:
            found = reader.get_tuple(config())
        assert found is not None and found.pending_writes is not None
        assert found.checkpoint["channel_values"]["small"] == Tag(1)
        assert found.pending_writes == [("task", "small", Tag(2))]


def test_a_class_registered_after_a_read_is_rebuilt_by_the_next_read(saver: BaseSaver) -> None:
    stored = saver.put(config(), make_checkpoint(0, small=Tag(1)), LOOP, {})
    saver.put_writes(stored, [("small", Tag(2))], "task")
    before = saver.get_tuple(config())
    assert before is not None and before.checkpoint["channel_values"]["small"] == {
        "$type": "m.Tag",
        "data": {"n": 1},
    }
    saver.serde.register(Tag)
    after = saver.get_tuple(config())
    assert after is not None and after.checkpoint["channel_values"]["small"] == Tag(1)
    assert after.pending_writes == [("task", "small", Tag(2))]


COUNTER = """
from dataclasses import dataclass
from typing import TypedDict

from ttcli import START, StateGraph


@dataclass
class Tally:
    n: int


class S(TypedDict, total=False):
    tally: Tally
    note: str


def bump(state: S) -> S:
    tally = state.get("tally")
    return {"tally": Tally(tally.n + 1 if tally else 1)}


graph = StateGraph(S)
graph.add_node("bump", bump)
graph.add_edge(START, "bump")
"""


def test_the_command_line_rebuilds_the_state_schema_types_it_runs_on(
    tmp_path: Path, new_db: NewDb
) -> None:
    (tmp_path / "counter.py").write_text(COUNTER)
    target, db = f"{tmp_path / 'counter.py'}:graph", new_db("ttcli.db")
    for expected in (1, 2, 3):
        ran = ttcli(db, "run", target, "-t", "c", "--input", '{"note": "again"}', "--json")
        assert ran.exit_code == 0, ran.stderr
        assert data(ran)["values"]["tally"] == {"$type": "Tally", "n": expected}
