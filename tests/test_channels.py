"""Channels and reducers: how each kind of state key takes a superstep's writes."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from ttcli.errors import GraphDefinitionError, InvalidUpdateError
from ttcli.graph.channels import MISSING, BarrierChannel, EphemeralValue, LastValue, ReducerChannel
from ttcli.graph.state import schema_channels


def test_last_value_keeps_the_last_write() -> None:
    channel = LastValue("x").restore()
    assert not channel.is_available()
    assert channel.update([1]) is True
    assert channel.get() == 1
    assert channel.update([]) is False
    assert channel.get() == 1


def test_last_value_rejects_two_writes_in_one_superstep() -> None:
    channel = LastValue("x").restore()
    with pytest.raises(InvalidUpdateError, match="At key 'x': Can receive only one value per step"):
        channel.update([1, 2])


@pytest.mark.parametrize(
    ("reducer", "default", "writes", "expected"),
    [
        (operator.add, list, [["a"], ["b", "c"]], ["a", "b", "c"]),
        (operator.add, int, [1, 2, 3], 6),
        (max, None, [3, 9, 4], 9),
        (
            lambda left, right: {**left, **right},
            dict,
            [{"a": 1}, {"a": 2, "b": 3}],
            {"a": 2, "b": 3},
        ),
    ],
    ids=["list-add", "int-add", "max-no-default", "dict-merge"],
)
def test_reducer_folds_every_write(
    reducer: Any, default: Any, writes: list[Any], expected: Any
) -> None:
    channel = ReducerChannel("k", reducer, default).restore()
    assert channel.update(writes) is True
    assert channel.get() == expected


def test_reducer_channel_starts_from_its_types_empty_value() -> None:
    assert ReducerChannel("k", operator.add, list).restore().get() == []
    assert ReducerChannel("k", max, None).restore().get() is MISSING


def test_restore_never_shares_state_with_the_declared_channel() -> None:
    declared = ReducerChannel("k", operator.add, list)
    one, two = declared.restore(), declared.restore()
    one.update([["x"]])
    assert two.get() == []
    assert declared.value is MISSING


def test_ephemeral_value_clears_on_the_next_empty_update() -> None:
    channel = EphemeralValue("e", guard=False).restore()
    assert channel.update([None, None]) is True
    assert channel.is_available()
    assert channel.update([]) is True
    assert not channel.is_available()
    assert channel.update([]) is False


def test_guarded_ephemeral_value_takes_one_write() -> None:
    with pytest.raises(InvalidUpdateError):
        EphemeralValue("e").restore().update([1, 2])


def test_barrier_opens_when_every_source_wrote_and_resets_when_consumed() -> None:
    channel = BarrierChannel("join:b+c:d", ["b", "c"]).restore()
    assert channel.update(["b"]) is True
    assert not channel.is_available()
    assert channel.checkpoint() == ["b"]
    channel.update(["c"])
    assert channel.is_available()
    assert channel.consume() is True
    assert not channel.is_available()
    assert channel.checkpoint() is MISSING


def test_barrier_rejects_unknown_sources() -> None:
    with pytest.raises(InvalidUpdateError, match="'z' is not one of"):
        BarrierChannel("join", ["b", "c"]).restore().update(["z"])


class Mixed(TypedDict):
    plain: str
    items: Annotated[list[int], operator.add]
    described: Annotated[int, "just a note"]


def test_schema_maps_annotated_reducers_and_plain_keys() -> None:
    channels = schema_channels(Mixed)
    assert isinstance(channels["plain"], LastValue)
    assert isinstance(channels["items"], ReducerChannel)
    # metadata that is not a two-argument callable is not a reducer
    assert isinstance(channels["described"], LastValue)


def test_schema_without_keys_is_rejected() -> None:
    class Empty(TypedDict):
        pass

    with pytest.raises(GraphDefinitionError, match="declares no keys"):
        schema_channels(Empty)
