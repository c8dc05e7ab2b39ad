"""msgpack serde: every supported type round-trips, and decoding never runs code."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import datetime as dt
import enum
import pickle
import subprocess
import sys
import uuid
from collections import namedtuple
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgpack
import pydantic
import pytest

from ttcli import (
    AIMessage,
    Command,
    HumanMessage,
    Interrupt,
    Message,
    Send,
    Serializer,
    ToolMessage,
)
from ttcli.errors import CorruptValueError, SerializationError
from ttcli.savers import serde


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    tags: tuple[str, ...] = ()


class User(pydantic.BaseModel):
    name: str
    age: int


Pair = namedtuple("Pair", ["left", "right"])

SERDE = Serializer(types=[Color, Point, User, Pair])

VALUES: list[tuple[str, Any]] = [
    ("none", None),
    ("bool", True),
    ("int", -(2**40)),
    ("float", 1.5),
    ("str", "héllo ✓"),
    ("bytes", b"\x00\xff"),
    ("list", [1, [2, "three"]]),
    ("dict", {"a": {"b": [1]}}),
    ("int-keys", {1: "one", (2, 3): "tuple key"}),
    ("tuple", (1, (2, 3))),
    ("set", {3, 1, 2}),
    ("frozenset", frozenset({"a", "b"})),
    ("datetime-aware", dt.datetime(2026, 11, 30, 6, 55, 1, 123456, tzinfo=dt.UTC)),
    ("datetime-naive", dt.datetime(2026, 11, 30, 6, 55)),
    ("date", dt.date(2026, 11, 30)),
    ("time", dt.time(6, 55, 1, 5)),
    ("timedelta", dt.timedelta(days=2, seconds=5, microseconds=7)),
    ("uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    ("decimal", Decimal("10.50")),
    ("enum", Color.RED),
    ("dataclass", Point(1, ("a",))),
    ("pydantic", User(name="ada", age=36)),
    ("namedtuple", Pair(1, 2)),
    ("human-message", HumanMessage("hi", id=str(uuid.uuid4()))),
    ("ai-message-custom-id", AIMessage("yo", id="custom-7", name="bot")),
    ("tool-message", ToolMessage("42", id=None, tool_call_id="call-1")),
    ("other-message", Message("x", type="function", id="f")),
    ("nested", {"messages": [HumanMessage("a", id="1")], "when": dt.date(2026, 1, 1)}),
    ("interrupt", Interrupt({"question": "ok?"}, "i1")),
    ("send", Send("node", Point(2))),
    ("command", Command(resume="yes", goto=[Send("n", 1)])),
]


@pytest.mark.parametrize("value", [v for _, v in VALUES], ids=[n for n, _ in VALUES])
def test_round_trip(value: Any) -> None:
    decoded = SERDE.loads(SERDE.dumps(value))
    assert decoded == value
    assert type(decoded) is type(value)


def test_message_round_trip_keeps_its_class_and_fields() -> None:
    message = AIMessage("yo", id="custom-7", name="bot")
    decoded = serde.loads(serde.dumps(message))
    assert isinstance(decoded, AIMessage)
    assert (decoded.content, decoded.id, decoded.name) == ("yo", "custom-7", "bot")


def test_unregistered_types_decode_to_inert_marked_data() -> None:
    @dataclasses.dataclass
    class Secret:
        token: str

    class Mood(enum.Enum):
        HAPPY = 1

    decoded = serde.loads(serde.dumps(Secret("t")))
    assert decoded["data"] == {"token": "t"}
    assert decoded[serde.TYPE_MARKER].endswith("<locals>.Secret")
    assert serde.loads(serde.dumps(Mood.HAPPY))["value"] == 1


def test_a_type_registered_on_one_serializer_is_unknown_to_another() -> None:
    data = serde.dumps(Point(1))
    assert Serializer(types=[Point]).loads(data) == Point(1)
    plain = {serde.TYPE_MARKER: f"{__name__}.Point", "data": {"x": 1, "tags": ()}}
    assert Serializer().loads(data) == plain
    registered = Serializer()
    registered.register(Point)
    assert registered.loads(data) == Point(1)
    assert serde.loads(data) == Serializer().loads(data)


@pytest.mark.parametrize("value", [Point(1, ("a",)), Color.RED, [{"p": Point(2)}]])
def test_a_class_the_serializer_does_not_know_is_stored_again_as_it_was(value: Any) -> None:
    data = serde.dumps(value)
    plain = Serializer().loads(data)
    assert serde.dumps(plain) == data
    assert serde.dumps(copy.deepcopy(plain)) == data
    assert serde.dumps(pickle.loads(pickle.dumps(plain))) == data
    assert SERDE.loads(serde.dumps(plain)) == value


def test_marked_data_changed_by_hand_is_stored_as_plain_data() -> None:
    plain = Serializer().loads(serde.dumps(Point(1)))
    plain["extra"] = 1
    assert serde.loads(serde.dumps(plain)) == plain
    assert SERDE.loads(serde.dumps(plain)) == plain  # no longer a Point's stored form


def test_ttcli_own_types_keep_the_names_they_were_first_stored_under() -> None:
    # the file format: Interrupt and Send were first defined in ttcli.runtime.commands
    fields = {"value": "q", "id": "i", "response_schema": None}
    stored = ["ttcli.runtime.commands.Interrupt", fields]
    expected = msgpack.packb(msgpack.ExtType(serde.OBJECT, msgpack.packb(stored)))
    assert serde.dumps(Interrupt("q", "i")) == expected
    assert Serializer().loads(expected) == Interrupt("q", "i")
    # a Send as files of version 6 and older hold it
    old = _forged(serde.OBJECT, ["ttcli.runtime.commands.Send", {"node": "n", "arg": {"i": 1}}])
    assert Serializer().loads(old) == Send("n", {"i": 1})


def test_a_send_is_stored_by_position_so_a_fan_out_task_s_stays_small() -> None:
    data = serde.dumps(Send("work", {"i": 7}))
    assert data == _forged(serde.SEND, ["work", {"i": 7}])
    assert len(data) == 13  # the ext header 3 bytes, [node, arg] 10


class Step(enum.StrEnum):
    WORK = "work"


def test_a_send_to_a_node_named_by_a_str_enum_is_stored_with_the_name_as_text() -> None:
    decoded = serde.loads(serde.dumps(Send(Step.WORK, {"i": 1})))
    assert decoded == Send("work", {"i": 1})
    assert type(decoded.node) is str


@pytest.mark.parametrize("node", [None, b"work", 3])
def test_a_send_whose_node_is_no_name_is_refused_when_written(node: Any) -> None:
    with pytest.raises(SerializationError) as info:
        serde.dumps({"tasks": [Send(node, 1)]}, path="state")
    assert str(info.value) == (
        "cannot store state.tasks[0]: a Send's node must be the name of a node (text), "
        f"not {type(node).__name__} {node!r}"
    )


def test_a_subclass_of_send_is_stored_as_its_own_class() -> None:
    @dataclasses.dataclass(frozen=True)
    class Retry(Send):
        attempt: int = 0

    data = serde.dumps(Retry("n", 1, attempt=2))
    assert Serializer(types=[Retry]).loads(data) == Retry("n", 1, attempt=2)
    assert serde.loads(data)["data"] == {"node": "n", "arg": 1, "attempt": 2}


def _forged(code: int, payload: Any) -> bytes:
    return msgpack.packb(msgpack.ExtType(code, msgpack.packb(payload)))  # type: ignore[no-any-return]


HOSTILE = {
    "object-os-system": lambda s: _forged(serde.OBJECT, ["os.system", {"command": f"touch {s}"}]),
    "enum-popen": lambda s: _forged(serde.ENUM, ["subprocess.Popen", f"touch {s}"]),
    "object-eval": lambda s: _forged(
        serde.OBJECT, ["builtins.eval", {"source": f"open('{s}','w')"}]
    ),
    # LangGraph's "call module.name(arg)" and pydantic ext codes
    "langgraph-ext0": lambda s: _forged(0, ["os", "system", f"touch {s}"]),
    "langgraph-ext5": lambda s: _forged(5, ["subprocess", "Popen", {"args": f"touch {s}"}, "x"]),
}


@pytest.mark.parametrize("forge", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_ext_types_never_import_or_run(
    forge: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentinel = tmp_path / "pwned"
    blob = forge(sentinel)
    imports: list[str] = []
    real_import = builtins.__import__

    def spy(name: str, *args: Any, **kwargs: Any) -> Any:
        imports.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", spy)
    try:
        value = serde.loads(blob)
    except CorruptValueError:
        value = None  # refusing the bytes is as safe as decoding them to data
    finally:
        monkeypatch.undo()
    assert imports == []
    assert not sentinel.exists()
    if value is not None:
        assert isinstance(value, dict)
        assert serde.TYPE_MARKER in value or "$undecodable" in value


@pytest.mark.parametrize(
    "data",
    [
        b"\xc1",
        serde.dumps("abcdef")[:3],
        b"\xd4\x0b",
        _forged(serde.TIMEDELTA, "not a list"),
        _forged(serde.SEND, "ab"),
        _forged(serde.SEND, ["node"]),
        _forged(serde.SEND, [1, "arg"]),
        _forged(serde.OBJECT, ["ttcli.runtime.commands.Send", {"node": 1, "arg": None}]),
        _forged(serde.OBJECT, ["ttcli.runtime.commands.Send", {"node": "n"}]),
    ],
    ids=[
        "reserved-byte",
        "truncated",
        "truncated-ext",
        "wrong-payload",
        "send-not-a-list",
        "send-without-arg",
        "send-node-not-text",
        "old-send-node-not-text",
        "old-send-without-arg",
    ],
)
def test_undecodable_bytes_raise_never_return_none(data: bytes) -> None:
    with pytest.raises(CorruptValueError, match="undecodable"):
        serde.loads(data)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"tool_calls": [object()]}, "messages.tool_calls[0]"),
        ([1, 2, lambda: None], "messages[2]"),
        ({"k": {1: builtins}}, "messages.k[1]"),
    ],
    ids=["object", "lambda", "module"],
)
def test_unserialisable_values_name_their_path_and_type(value: Any, path: str) -> None:
    with pytest.raises(SerializationError) as info:
        serde.dumps(value, path="messages")
    assert str(info.value).startswith(f"cannot store {path}: type ")
    assert str(info.value).endswith(
        "use plain data, a dataclass, a named tuple, an enum or a pydantic model"
    )


def _tuples(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = (value,)
    return value


def test_typed_values_nest_16_deep_and_no_deeper() -> None:
    assert serde.loads(serde.dumps(_tuples(serde.EXT_DEPTH_MAX))) == _tuples(serde.EXT_DEPTH_MAX)
    with pytest.raises(SerializationError) as info:
        serde.dumps({"a": _tuples(serde.EXT_DEPTH_MAX + 1)}, path="state")
    assert str(info.value) == (
        "cannot store state: it is nested too deeply (over 16 typed values: tuples, sets, "
        "dataclasses, messages, ... inside one another, or over about 1,000 lists and maps); "
        "store fewer levels"
    )
    forged = serde.dumps(1)
    for _ in range(100):  # as no ttcli writes them
        forged = msgpack.packb(msgpack.ExtType(serde.TUPLE, b"\x91" + forged))
    with pytest.raises(CorruptValueError, match="typed values nested over 16 deep"):
        serde.loads(forged)


def test_lists_nested_too_deep_for_msgpack_are_refused_as_too_deep() -> None:
    value: Any = 1
    for _ in range(2000):
        value = [value]
    with pytest.raises(SerializationError, match="^cannot store state: it is nested too deeply"):
        serde.dumps(value, path="state")


def test_typed_values_each_holding_a_thousand_lists_are_refused_not_a_crash() -> None:
    # in a process of its own: encoding 20 levels of them overflowed the stack
    script = (
        "from ttcli.savers import serde\n"
        "v = 1\n"
        "for _ in range(20):\n"
        "    for _ in range(1000): v = [v]\n"
        "    v = (v,)\n"
        "try: serde.dumps(v)\n"
        "except serde.SerializationError as e: print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cannot store value: it is nested too deeply")


def test_equal_sets_encode_to_equal_bytes() -> None:
    assert serde.dumps({"b", "a", "c"}) == serde.dumps({"c", "b", "a"})


def test_an_integer_beyond_64_bits_is_a_clear_error_naming_it() -> None:
    with pytest.raises(SerializationError) as info:
        serde.dumps({"totals": [1, 2**70]}, path="state")
    assert str(info.value) == (
        "cannot store state.totals[1]: the integer 1180591620717411303424 is outside the range "
        "msgpack stores (-2**63 to 2**64-1); store it as a string or a Decimal"
    )


def test_a_message_changed_after_it_was_stored_is_stored_as_it_is_now() -> None:
    flat = AIMessage("first", id=str(uuid.uuid4()))
    nested = AIMessage("call", id="not-a-uuid", tool_calls=[{"name": "a"}])
    stored = serde.dumps([flat, nested])
    assert serde.loads(stored) == [flat, nested]
    flat["content"] = "second"  # a field replaced
    nested["tool_calls"].append({"name": "b"})  # a nested value changed in place
    assert serde.loads(serde.dumps([flat, nested])) == [flat, nested]
    # read back and stored again: the same bytes
    again = serde.loads(stored)
    again.append(HumanMessage("next", id=str(uuid.uuid4())))
    assert serde.dumps(again)[1:].startswith(stored[1:])


@pytest.mark.parametrize(
    "text",
    [
        "6F9619FF-8B86-D011-B42D-00C04FC964FF",  # upper case: kept as text
        "6f9619ff8b86d011b42d00c04fc964ff",  # no dashes
        "6f9619ff-8b86-d011-b42d-00c04fc964f ",  # a space
        "{6f9619ff-8b86-d011-b42d-00c04fc964ff}",
    ],
)
def test_message_ids_that_are_not_canonical_uuids_come_back_unchanged(text: str) -> None:
    message = HumanMessage("hi", id=text)
    assert serde.loads(serde.dumps(message))["id"] == text


@pytest.mark.parametrize(
    "key", [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1]
)
def test_a_blob_reference_packs_as_msgpack_would(key: int) -> None:
    packed = serde.dumps(serde.Ref(key))
    assert packed == msgpack.packb(msgpack.ExtType(serde.REF, msgpack.packb(key)))
    assert serde.loads(packed) == serde.Ref(key)
