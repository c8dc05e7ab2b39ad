"""TtcliSaver through LangGraph's checkpointer interface: values come back as LangGraph's own
serializer gives them, and what real LangGraph sends (early writes, `v`, string versions,
config keys in metadata) is kept."""

from __future__ import annotations

import datetime as dt
import enum
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple, TypedDict

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, Interrupt, Send
from pydantic import BaseModel

from tests.clitools import ttcli
from tests.conftest import NewDb
from tests.pg import new_dsn
from ttcli.langgraph import TtcliSaver


class Color(enum.Enum):
    RED = "red"


@dataclass
class Order:
    order_id: str
    items: list[str]


class Customer(BaseModel):
    name: str
    since: dt.date


class Point(NamedTuple):
    x: int
    y: int


SERDE = JsonPlusSerializer(
    allowed_msgpack_modules=[
        (__name__, "Color"),
        (__name__, "Order"),
        (__name__, "Customer"),
        (__name__, "Point"),
    ]
)

VALUES: dict[str, Any] = {
    "human": HumanMessage("hi", id="h1"),
    "ai_tool_call": AIMessage(
        "",
        id="a1",
        tool_calls=[{"name": "refund", "args": {"order": 7}, "id": "call1"}],
        usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    ),
    "tool": ToolMessage("refunded", tool_call_id="call1", id="t1"),
    "system": SystemMessage([{"type": "text", "text": "be brief"}], id="s1"),
    "remove": RemoveMessage(id="h1"),
    "chunk": AIMessageChunk(content="par", id="c1"),
    "send": Send("worker", {"item": 1}),
    "interrupt": Interrupt(value={"question": "ok?"}, id="i1"),
    "command": Command(update={"x": 1}, goto=[Send("a", 1), "b"], resume="yes"),
    "pydantic": Customer(name="Ann", since=dt.date(2024, 1, 2)),
    "dataclass": Order("7", ["book"]),
    "enum": Color.RED,
    "named_tuple": Point(1, 2),
    "datetime": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
    "uuid": uuid.UUID(int=7),
    "set": {1, 2, 3},
    "frozenset": frozenset({"a"}),
    "tuple": (1, "a"),
    "decimal": Decimal("1.50"),
    "nested": {1: [Order("8", []), {"when": dt.time(1, 2)}], "bytes": b"\x00"},
}


def _checkpoint(values: dict[str, Any], **changes: Any) -> Checkpoint:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = str(uuid6(clock_seq=0))
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {name: 1 for name in values}
    checkpoint.update(changes)  # type: ignore[typeddict-item]
    return checkpoint


def _config(thread_id: str, checkpoint_id: str | None = None, **extra: Any) -> Any:
    configurable = {"thread_id": thread_id, "checkpoint_ns": "", **extra}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _metadata(step: int = 0) -> Any:
    return {"source": "loop", "step": step, "parents": {}}


@pytest.fixture
def saver(new_db: NewDb) -> Any:
    with TtcliSaver(new_db("app.db"), serde=SERDE) as opened:
        yield opened


@pytest.mark.parametrize("name", VALUES, ids=str)
def test_values_come_back_as_langgraph_serializer_gives_them(saver: TtcliSaver, name: str) -> None:
    value = VALUES[name]
    expected = SERDE.loads_typed(SERDE.dumps_typed(value))
    checkpoint = _checkpoint({name: value})
    stored = saver.put(_config("t"), checkpoint, _metadata(), checkpoint["channel_versions"])
    saver.put_writes(stored, [(name, value)], "task-1")

    found = saver.get_tuple(stored)

    assert found is not None and found.pending_writes is not None
    for got in (found.checkpoint["channel_values"][name], found.pending_writes[0][2]):
        assert got == expected
        assert type(got) is type(expected)
        assert repr(got) == repr(expected)


def test_a_class_outside_the_allowlist_is_not_rebuilt(new_db: NewDb) -> None:
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    with TtcliSaver(new_db("strict.db"), serde=strict) as saver:
        checkpoint = _checkpoint({"order": Order("7", [])})
        stored = saver.put(_config("t"), checkpoint, _metadata(), {"order": 1})
        found = saver.get_tuple(stored)

        allowed = saver.with_allowlist([(__name__, "Order")]).get_tuple(stored)

    assert found is not None and allowed is not None
    assert found.checkpoint["channel_values"]["order"] == {"order_id": "7", "items": []}
    # LangGraph gives a compiled graph such a copy, allowing its state schema's types
    assert allowed.checkpoint["channel_values"]["order"] == Order("7", [])


def test_writes_sent_before_their_checkpoint_are_kept(saver: TtcliSaver) -> None:
    checkpoint = _checkpoint({"x": 1})
    at = _config("t", checkpoint["id"])
    saver.put_writes(at, [("x", 2)], "task-1", "~path")

    saver.put(_config("t"), checkpoint, _metadata(), {"x": 1})

    found = saver.get_tuple(at)
    assert found is not None and found.pending_writes == [("task-1", "x", 2)]


def test_v_and_string_versions_are_stored_as_they_are(saver: TtcliSaver) -> None:
    first, second = saver.get_next_version(None, None), saver.get_next_version("7.5", None)
    versions: dict[str, str | int | float] = {"x": first, "branch:to:a": second}
    seen = {"a": {"x": first}}
    checkpoint = _checkpoint({"x": 1}, v=4, channel_versions=versions, versions_seen=seen)

    stored = saver.put(_config("t"), checkpoint, _metadata(), versions)

    found = saver.get_tuple(stored)
    assert found is not None
    assert found.checkpoint["v"] == 4
    assert found.checkpoint["channel_versions"] == versions
    assert found.checkpoint["versions_seen"] == seen
    assert first.startswith("0" * 31 + "1.") and second.startswith("0" * 31 + "8.")


def test_config_keys_merge_into_metadata_so_filters_find_them(saver: TtcliSaver) -> None:
    checkpoint = _checkpoint({})
    saver.put(_config("t", user_id="u1", __secret="x"), checkpoint, _metadata(), {})

    found = [t.metadata for t in saver.list(None, filter={"user_id": "u1"})]

    assert found == [{"source": "loop", "step": 0, "parents": {}, "user_id": "u1"}]
    assert list(saver.list(None, filter={"user_id": "u2"})) == []


def test_a_child_id_that_sorts_before_its_parent_is_refused(saver: TtcliSaver) -> None:
    early = _checkpoint({})
    parent = _checkpoint({})
    stored = saver.put(_config("t"), parent, _metadata(), {})

    with pytest.raises(ValueError, match="must sort after its parent"):
        saver.put(stored, early, _metadata(1), {})

    assert [t.checkpoint["id"] for t in saver.list(_config("t"))] == [parent["id"]]


def test_a_postgresql_dsn_stores_in_postgresql_for_the_cli_to_read() -> None:
    dsn = new_dsn()
    with TtcliSaver(dsn) as saver:
        graph = StateGraph(Counter)
        graph.add_node("inc", lambda state: {"n": state["n"] + 1})
        graph.add_edge(START, "inc")
        graph.compile(checkpointer=saver).invoke({"n": 1}, _config("pg"))
    result = ttcli(dsn, "history", "-t", "pg", "--json")
    assert result.exit_code == 0, result.stderr
    assert [row["step"] for row in json.loads(result.stdout)] == [1, 0, -1]
    assert json.loads(ttcli(dsn, "show", "latest", "-t", "pg", "--json").stdout)["values"] == {
        "n": 2
    }


class Counter(TypedDict):
    n: int


#: ways a node changes a message of the history in place (the bridge hands ttcli's saver the
#: message it read for one stored again unchanged: each of these must be seen as a change)
IN_PLACE: dict[str, Callable[[Any], None]] = {
    "content": lambda m: setattr(m, "content", "edited"),
    "name": lambda m: setattr(m, "name", "edited"),
    "additional_kwargs": lambda m: m.additional_kwargs.update(note="edited"),
    "response_metadata": lambda m: m.response_metadata.update(note="edited"),
    "extra field": lambda m: setattr(m, "note", "edited"),
    "content through __dict__": lambda m: m.__dict__.update(content="edited"),
    "name and id swapped in __dict__": lambda m: _swap_names(m, "name", "id"),
    "artifact 0.0 to -0.0": lambda m: setattr(m, "artifact", -0.0),  # equal, stored apart
}


def _swap_names(message: Any, one: str, other: str) -> None:
    """The same objects in the same places of the message's `__dict__`, under each other's
    names."""
    names, values = list(message.__dict__), list(message.__dict__.values())
    i, j = names.index(one), names.index(other)
    names[i], names[j] = names[j], names[i]
    message.__dict__.clear()
    message.__dict__.update(zip(names, values, strict=True))


def _chat(saver: Any, change: Callable[[Any], None]) -> list[list[dict[str, Any]]]:
    """Four turns of a chat whose third turn changes the first message in place; every
    checkpoint's messages, newest first, as LangChain dumps them. Each checkpoint is stored
    before the next step runs (`durability="sync"`): a checkpoint stored in the background
    may be stored with a change the next step made meanwhile, on LangGraph's own savers too."""
    turn = {"n": 0}

    def bot(state: MessagesState) -> dict[str, Any]:
        turn["n"] += 1
        if turn["n"] == 3:
            change(state["messages"][0])
        return {"messages": [AIMessage(f"reply {turn['n']}", id=f"a{turn['n']}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("bot", bot)
    graph.add_edge(START, "bot")
    app = graph.compile(checkpointer=saver)
    config = _config("chat")
    for n in range(4):
        question: Any = HumanMessage(f"question {n}", id=f"h{n}", name=f"asker {n}")
        if n == 0:  # a field that holds any value
            question = ToolMessage(
                "question 0", tool_call_id="c0", id="h0", name="asker 0", artifact=0.0
            )
        app.invoke({"messages": [question]}, config, durability="sync")
    return [
        [m.model_dump() for m in snapshot.values.get("messages", [])]
        for snapshot in app.get_state_history(config)
    ]


@pytest.mark.parametrize("how", IN_PLACE, ids=str)
def test_a_message_changed_in_place_is_stored_changed_and_the_past_stays(
    new_db: NewDb, how: str
) -> None:
    path = new_db("chat.db")
    with TtcliSaver(path) as saver:
        ours = _chat(saver, IN_PLACE[how])
    theirs = _chat(InMemorySaver(), IN_PLACE[how])  # LangGraph's own saver, the oracle

    assert repr(ours) == repr(theirs)  # repr: 0.0 == -0.0
    latest, before_change = ours[0][0], ours[-4][0]  # the first message, now and then
    assert latest != before_change or repr(latest) != repr(before_change)
    with TtcliSaver(path) as reopened:  # as stored, not as kept in memory
        assert _states(reopened) == [[m["content"] for m in state] for state in ours]


def _states(saver: TtcliSaver) -> list[list[Any]]:
    return [
        [m.content for m in saved.checkpoint["channel_values"].get("messages", [])]
        for saved in saver.list(_config("chat"))
    ]


def test_messages_stored_again_read_back_as_written(new_db: NewDb) -> None:
    with TtcliSaver(new_db("chat.db")) as saver:
        ours = _chat(saver, lambda m: None)
    assert ours == _chat(InMemorySaver(), lambda m: None)
    assert [m["content"] for m in ours[0]][-2:] == ["question 3", "reply 4"]


def test_a_message_made_where_a_stored_one_was_is_stored_as_itself(saver: TtcliSaver) -> None:
    # messages come and go, and a new one often takes the place (and id()) of one gone: what
    # the bridge knew of the old one is never taken for the new one
    parent = _config("t")
    for n in range(50):
        checkpoint = _checkpoint({"messages": [HumanMessage(f"m{n}", id="same")]})
        parent = saver.put(parent, checkpoint, _metadata(n), {"messages": 1})
        found = saver.get_tuple(parent)
        assert found is not None
        assert [m.content for m in found.checkpoint["channel_values"]["messages"]] == [f"m{n}"]
