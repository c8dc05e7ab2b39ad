"""Checkpoint refs resolve through the id index: a prefix is an id range, `~N` walks parents
by id, and only the checkpoint named is read in full."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.clitools import Target, ttcli
from ttcli import END, START, StateGraph
from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.ops.refs import resolve
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.savers.memory import InMemorySaver


class Counting(InMemorySaver):
    """Records how a caller reads: full reads, id pages and whole-thread listings."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        self.calls.append(("get_tuple", None))
        return super().get_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        self.calls.append(("list", kwargs.get("limit")))
        return super().list(config, **kwargs)

    def checkpoint_ids(self, config: RunnableConfig, **kwargs: Any) -> builtins.list[str]:
        self.calls.append(("checkpoint_ids", kwargs.get("limit")))
        return super().checkpoint_ids(config, **kwargs)


@pytest.fixture
def counted() -> Counting:
    saver = Counting()
    api = SimpleNamespace(StateGraph=StateGraph, START=START, END=END)
    graph = graphs.linear(api).compile(checkpointer=saver)
    for x in range(20):  # 80 checkpoints
        graph.invoke({"x": x}, {"configurable": {"thread_id": "t"}})
    saver.calls.clear()
    return saver


def test_n_back_reads_only_the_checkpoint_it_names(counted: Counting) -> None:
    ref = CheckpointRef("t")
    found = resolve(counted, ref, "latest~50")
    full = [c for c in counted.calls if c[0] == "get_tuple"]
    assert len(full) == 2  # the head, and the checkpoint 50 back
    assert found.metadata["step"] == int(resolve(counted, ref, "latest").metadata["step"]) - 50


def test_a_prefix_is_an_id_range(counted: Counting) -> None:
    ref = CheckpointRef("t")
    target = resolve(counted, ref, "latest~30").checkpoint["id"]
    counted.calls.clear()
    assert resolve(counted, ref, target[:23]).checkpoint["id"] == target
    assert counted.calls[0] == ("checkpoint_ids", 6)  # the ids below the range's end
    assert ("checkpoint_ids", None) not in counted.calls  # never every id of the thread
    assert [c for c in counted.calls if c[0] == "get_tuple"] == [("get_tuple", None)]


def test_prefixes_and_n_back_on_a_long_thread(long_db: Target) -> None:
    listed = ttcli(long_db, "history", "-t", "long", "--limit", "1200", "--json")
    full = [e["checkpoint_id"] for e in json.loads(listed.stdout)]
    for ref, expected in [("latest~1000", full[1000]), (full[1100][:18], full[1100])]:
        shown = ttcli(long_db, "show", ref, "-t", "long", "--json")
        assert (shown.exit_code, json.loads(shown.stdout)["checkpoint_id"]) == (0, expected)


def test_ids_ending_finds_the_ids_a_short_id_names(saver: BaseSaver) -> None:
    api = SimpleNamespace(StateGraph=StateGraph, START=START, END=END)
    graph = graphs.linear(api).compile(checkpointer=saver)
    graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}})
    config = CheckpointRef("t").to_config()
    ids = saver.checkpoint_ids(config)
    for tail in (ids[1][-8:], ids[2][-7:], ids[0][-12:]):
        assert saver.ids_ending(config, tail) == [i for i in ids if i.endswith(tail)]
    assert saver.ids_ending(config, "zz") == []
    assert saver.ids_ending(CheckpointRef("nobody").to_config(), ids[0][-8:]) == []
