"""Real LangGraph graphs (tests/langgraph_programs/) run the same on TtcliSaver as on
LangGraph's own InMemorySaver, in sync and async apps, and the ttcli command line reads what
TtcliSaver wrote."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.clitools import data, ttcli
from tests.langgraph_programs import PROGRAMS, SERDE, chat, interrupt_resume, subgraph_interrupt
from ttcli.langgraph import TtcliSaver


def normalise(found: Any) -> Any:
    """Histories with ids as positions, and without what differs between two runs (times,
    task and interrupt ids, derived from checkpoint ids, and random message ids)."""
    return _without_uuids(_normalise(found))


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _without_uuids(found: Any) -> Any:
    # a random message id, or none: LangGraph sends a task's writes to the saver from a
    # background thread while add_messages gives the same message objects their ids, so
    # whether a pending ToolMessage has one depends on timing, whatever the saver
    return re.sub(r"\bid='ID', ", "", re.sub(UUID, "ID", repr(found)))


def _normalise(found: Any) -> Any:
    if isinstance(found, list) and found and hasattr(found[0], "next"):
        ids = {snap.config["configurable"]["checkpoint_id"]: i for i, snap in enumerate(found)}
        return [
            {
                "values": repr(snap.values),
                "next": snap.next,
                "metadata": snap.metadata,
                "parent": snap.parent_config
                and ids.get(snap.parent_config["configurable"]["checkpoint_id"]),
                "tasks": [
                    (t.name, t.error, [i.value for i in t.interrupts], repr(t.result))
                    for t in snap.tasks
                ],  # fmt: skip
                "interrupts": [i.value for i in snap.interrupts],
            }
            for snap in found
        ]
    return repr(found)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "app.db"


@pytest.mark.parametrize("name", PROGRAMS, ids=str)
def test_same_as_langgraphs_own_saver(name: str, mode: str, db: Path) -> None:
    expected = PROGRAMS[name](InMemorySaver(serde=SERDE), mode)
    with TtcliSaver(db, serde=SERDE) as saver:
        found = PROGRAMS[name](saver, mode)

    assert [normalise(part) for part in found] == [normalise(part) for part in expected]
    _every_thread_reads(db)


def _every_thread_reads(db: Path) -> None:
    """Every reading command works on every thread and namespace the graph left."""
    assert ttcli(db, "verify").exit_code == 0  # typed data is noted, not a problem
    for thread in data(ttcli(db, "threads", "--json")):
        where = ["--thread", thread["thread_id"], "--ns", thread["checkpoint_ns"]]
        history = data(ttcli(db, "history", *where, "--json"))
        assert len(history) == thread["checkpoints"]
        for args in (["show", "latest"], ["tree"], ["show", history[-1]["checkpoint_id"]]):
            assert ttcli(db, *args, *where).exit_code == 0, args
        if len(history) > 1:
            assert ttcli(db, "diff", "latest~1", "latest", *where).exit_code == 0


def test_the_cli_reads_what_ttcli_saver_wrote(db: Path) -> None:
    with TtcliSaver(db) as saver:
        chat(saver, "sync")
        interrupt_resume(saver, "sync")

    history = data(ttcli(db, "history", "--thread", "chat", "--json"))
    shown = data(ttcli(db, "show", "latest", "--thread", "chat", "--json"))
    waiting = data(ttcli(db, "show", "latest~2", "--thread", "review", "--json"))
    threads = data(ttcli(db, "threads", "--json"))

    assert [(c["step"], c["source"], c["next"]) for c in history][:3] == [
        (7, "loop", []),
        (6, "loop", ["bot"]),
        (5, "input", ["__start__"]),
    ]
    assert history[0]["metadata"] == {"user_id": "u1"}
    assert shown["values"]["messages"][:2] == [
        {"type": "human", "content": "hi", "id": "h0"},
        {"type": "ai", "content": "echo: hi", "id": "ai-1"},
    ]
    assert [t["name"] for t in waiting["tasks"]] == ["review"]
    asked = waiting["tasks"][0]["interrupts"][0]["value"]
    assert asked == {"question": "approve?", "plan": "refund"}
    assert {t["thread_id"]: t["status"] for t in threads} == {"chat": "done", "review": "done"}


def test_the_cli_reads_a_subgraphs_namespace(db: Path) -> None:
    with TtcliSaver(db) as saver:
        subgraph_interrupt(saver, "sync")

    threads = data(ttcli(db, "threads", "--prefix", "sub-sync", "--json"))
    (ns,) = [t["checkpoint_ns"] for t in threads if t["checkpoint_ns"]]
    inner = data(ttcli(db, "history", "--thread", "sub-sync", "--ns", ns, "--json"))

    assert ns.startswith("sub:")
    assert [(c["step"], c["source"], c["next"]) for c in inner] == [
        (1, "loop", []),
        (0, "loop", ["ask"]),
        (-1, "input", ["__start__"]),
    ]
