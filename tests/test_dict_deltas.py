"""A map channel of which each step changes a few keys reads back, at every checkpoint,
exactly as the node returned it: changed, added and deleted keys, nested values, the order
of its keys, and the types of its values (1, 1.0 and True are different values), whether
the node copied the map or changed the one it was given (or a nested one) in place; after
forks from the past, prunes of the checkpoints it was stored beside, and `ttcli verify`;
and whatever a reader does to the values it read."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.clitools import ttcli
from ttcli import END, START, StateGraph
from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
from ttcli.savers.base import BaseSaver
from ttcli.savers.sqlite import SqliteSaver

KEYS = [f"key{i}" for i in range(40)]


class Table(TypedDict):
    table: dict[str, Any]
    ops: list[list[Any]]  # per step, the changes the next step makes
    step: int


leaves = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=30)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
change = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(KEYS), values),
    st.tuples(st.just("delete"), st.sampled_from(KEYS)),
    st.tuples(st.just("nest"), st.sampled_from(KEYS), values),  # changed in place
    st.tuples(st.just("retype"), st.sampled_from(KEYS)),  # an equal value of another type
    st.tuples(st.just("reorder")),
    st.tuples(st.just("given")),  # the step changes the map it was given, in place
)
steps = st.lists(st.lists(change, max_size=4), min_size=1, max_size=40)


def changed(table: dict[str, Any], changes: list[Any]) -> dict[str, Any]:
    # the unchanged values are the very objects the state holds; with "given", the map too
    new = table if ("given",) in changes else dict(table)
    for kind, *args in changes:
        if kind == "set":
            new[args[0]] = args[1]
        elif kind == "delete":
            new.pop(args[0], None)
        elif kind == "nest" and isinstance(new.get(args[0]), dict):
            new[args[0]]["in place"] = args[1]
        elif kind == "retype" and args[0] in new:
            item = new[args[0]]
            if isinstance(item, dict):  # in place, in the map the state holds
                for field, inner in item.items():
                    item[field] = retyped(inner)
            else:
                new[args[0]] = retyped(item)
        elif kind == "reorder":
            reordered = list(reversed(new.items()))
            new.clear()  # the same map object, when it is the one given
            new.update(reordered)
    return new


def retyped(value: Any) -> Any:
    """An equal value of another type (True for 1, 1.0 for 1, 1 for 1.0), if there is one."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value) if abs(value) < 2**53 else value
    if isinstance(value, float) and value.is_integer():
        return bool(value) if value in (0, 1) else int(value)
    return value


def graph(saver: BaseSaver) -> Any:
    def step(state: Table) -> dict[str, Any]:
        return {
            "table": changed(state["table"], state["ops"][state["step"]]),
            "step": state["step"] + 1,
        }

    builder = StateGraph(Table)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges(
        "step", lambda state: "step" if state["step"] < len(state["ops"]) else END
    )
    return builder.compile(checkpointer=saver)


def exactly(value: Any) -> Any:
    """A value with its types and its maps' key order made comparable."""
    if isinstance(value, dict):
        return ("map", [(key, exactly(item)) for key, item in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [exactly(item) for item in value])
    return (type(value).__name__, repr(value))


def expected_tables(start: dict[str, Any], ops: list[list[Any]]) -> list[Any]:
    tables, table = [exactly(start)], copy.deepcopy(start)
    for changes in ops:
        table = changed(table, changes)
        tables.append(exactly(table))
    return tables


def read_tables(app: Any, config: dict[str, Any]) -> dict[int, Any]:
    return {
        snapshot.values["step"]: exactly(snapshot.values["table"])
        for snapshot in app.get_state_history(config)
        if "table" in snapshot.values and snapshot.metadata["source"] == "loop"
    }


def scramble(value: Any) -> None:
    """Change every map and list in a value in place, as deep as they go."""
    if isinstance(value, dict):
        for item in value.values():
            scramble(item)
        value.clear()
        value["scrambled"] = True
    elif isinstance(value, list):
        for item in value:
            scramble(item)
        value[:] = ["scrambled"]
    elif isinstance(value, tuple):
        for item in value:
            scramble(item)


def read_and_scramble(app: Any, saver: BaseSaver, config: dict[str, Any]) -> None:
    """Read every checkpoint (values, metadata and pending writes) and change it all."""
    for snapshot in app.get_state_history(config):
        saved = saver.get_tuple(snapshot.config)
        assert saved is not None
        for read in (snapshot.values, snapshot.metadata, saved.checkpoint, saved.metadata):
            scramble(read)
        scramble(saved.pending_writes)


def start_table(text: int = 0) -> dict[str, Any]:
    """The map the graph starts with; with `text`, its entries are texts that long, each
    stored apart (the map is a record) in its full copies."""
    if text:
        return {key: f"{i}:" + "x" * text for i, key in enumerate(KEYS)}
    return {key: {"n": i, "text": "x" * (i % 7)} for i, key in enumerate(KEYS)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps)
def test_every_checkpoint_reads_the_map_its_step_returned(ops: list[list[Any]]) -> None:
    with SqliteSaver.from_conn_string(":memory:") as saver:
        app = graph(saver)
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
        # computed first: a value changed in place is the very object the ops hold
        tables = expected_tables(start_table(), copy.deepcopy(ops))
        app.invoke({"table": start_table(), "ops": ops, "step": 0}, config)
        read_and_scramble(app, saver, config)  # what readers do to their values stays theirs
        read = read_tables(app, config)
        assert read == {step: tables[step] for step in read}
        assert sorted(read) == list(range(len(ops) + 1))


@pytest.mark.parametrize("text", [0, 60], ids=["small entries", "entries stored apart"])
def test_a_map_reads_back_after_a_restart_a_fork_and_a_prune(tmp_path: Path, text: int) -> None:
    db = tmp_path / "ttcli.db"
    ops = [[("set", KEYS[i % 40], {"v": i})] for i in range(100)]
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    with SqliteSaver.from_conn_string(db) as saver:
        graph(saver).invoke({"table": start_table(text), "ops": ops, "step": 0}, config)
    tables = expected_tables(start_table(text), ops)
    with SqliteSaver.from_conn_string(db) as saver:  # nothing remembered: read from the file
        app = graph(saver)
        assert read_tables(app, config) == dict(enumerate(tables))
        past = next(s for s in app.get_state_history(config) if s.values.get("step") == 37)
        forked = app.update_state(
            past.config, {"table": changed(past.values["table"], [("delete", "key3")])}
        )
        fork = app.get_state(forked)
        assert exactly(fork.values["table"]) == exactly(
            changed(past.values["table"], [("delete", "key3")])
        )
        policy = PrunePolicy(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(days=1), keep_last=5)
        execute_prune(saver, plan_prune(saver, policy))
        assert app.get_state(forked).values == fork.values
        kept = list(app.get_state_history(config))
        assert [s.config for s in kept[:1]] == [fork.config]
        assert len(kept) == 5
        for snapshot in kept[1:]:
            assert exactly(snapshot.values["table"]) == tables[snapshot.values["step"]]
    result = ttcli(db, "verify")
    assert (result.exit_code, result.stdout) == (
        0,
        "checked 5 checkpoints in 1 threads: 0 problems\n",
    )


def test_a_map_written_by_a_node_is_its_pending_write_too(tmp_path: Path) -> None:
    """An interrupted step's write of a map reads back whole, as the value it wrote."""
    with SqliteSaver.from_conn_string(tmp_path / "ttcli.db") as saver:
        app = graph(saver)
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
        ops = [[("set", "key1", i)] for i in range(10)]
        app.invoke({"table": start_table(), "ops": ops, "step": 0}, config)
        latest = app.get_state(config)
        parent = next(s for s in app.get_state_history(config) if s.values["step"] == 9)
        saved = saver.get_tuple(parent.config)
        assert saved is not None
        written = [
            value for _task, channel, value in saved.pending_writes or [] if channel == "table"
        ]
        assert [exactly(v) for v in written] == [exactly(latest.values["table"])]
        assert json.dumps(written[0], sort_keys=True) == json.dumps(
            latest.values["table"], sort_keys=True
        )


def test_one_map_changed_in_place_every_step_reads_as_it_was_at_each(tmp_path: Path) -> None:
    """A node that returns the same map object every step, having changed a nested value in
    place to an equal one of another type (1, then True, then 1.0): every checkpoint and
    every pending write reads the map as it was when stored."""
    table = {key: {"n": 1, "text": "x" * i} for i, key in enumerate(KEYS)}
    seen: list[Any] = []

    def step(state: Table) -> dict[str, Any]:
        item = table[KEYS[state["step"] % 3]]
        item["n"] = retyped(item["n"]) if state["step"] % 4 else True
        seen.append(exactly(table))
        return {"table": table, "step": state["step"] + 1}

    builder = StateGraph(Table)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["step"] < 40 else END)
    with SqliteSaver.from_conn_string(tmp_path / "ttcli.db") as saver:
        app = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
        first = exactly(table)
        app.invoke({"table": table, "ops": [], "step": 0}, config)
        expected = [first, *seen]
        for snapshot in app.get_state_history(config):
            if (snapshot.metadata or {}).get("source") != "loop":
                continue
            at = snapshot.values["step"]
            assert exactly(snapshot.values["table"]) == expected[at]
            saved = saver.get_tuple(snapshot.config)
            assert saved is not None
            written = [v for _t, c, v in saved.pending_writes or [] if c == "table"]
            assert [exactly(v) for v in written] == expected[at + 1 : at + 2]


def test_past_maps_read_in_any_order_are_each_readers_own(tmp_path: Path) -> None:
    """Past checkpoints read after the history was listed (their maps made from the maps
    and deltas read before), in any order and again: each read is the map as stored, and
    what a reader does to its values, metadata and tasks no later reader sees."""
    ops = [[("set", KEYS[i % 40], {"v": i, "s": "z" * (i % 5)})] for i in range(90)]
    tables = expected_tables(start_table(), ops)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    with SqliteSaver.from_conn_string(tmp_path / "ttcli.db") as saver:
        app = graph(saver)
        app.invoke({"table": start_table(), "ops": ops, "step": 0}, config)
        past = [s.config for s in app.get_state_history(config) if s.metadata["source"] == "loop"]
        order = [*past[::7], *past[3::5], *past[::-4]]
        for pick in order:
            snapshot = app.get_state(pick)
            at = snapshot.values["step"]
            assert exactly(snapshot.values["table"]) == tables[at]
            if at > 0:
                assert exactly(snapshot.metadata["writes"]["step"]["table"]) == tables[at]
            if snapshot.tasks:
                assert exactly(snapshot.tasks[0].result["table"]) == tables[at + 1]
            scramble(snapshot.values)
            scramble(snapshot.metadata)
            for task in snapshot.tasks:
                scramble(task.result)
        assert read_tables(app, config) == dict(enumerate(tables))


def test_a_nested_value_a_later_step_replaced_reads_back_after_a_reader_changed_it(
    tmp_path: Path,
) -> None:
    """A step sets a nested value that the next step replaces with a flat one: reading the
    later checkpoint first, then the earlier one (changing what it read), then the earlier
    one again, gives the nested value as stored each time."""
    nested: Any = {"deep": [1, {"deeper": [2]}]}
    ops: list[list[Any]] = [[("set", "key0", nested)], [("set", "key0", {"v": 1})], []]
    tables = expected_tables(start_table(), copy.deepcopy(ops))
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    db = tmp_path / "ttcli.db"
    with SqliteSaver.from_conn_string(db) as saver:
        graph(saver).invoke({"table": start_table(), "ops": ops, "step": 0}, config)
    with SqliteSaver.from_conn_string(db) as saver:  # nothing remembered from the writes
        app = graph(saver)
        history = app.get_state_history(config)
        at = {s.values["step"]: s.config for s in history if s.metadata["source"] == "loop"}
        assert exactly(app.get_state(at[2]).values["table"]) == tables[2]
        for _ in range(2):
            snapshot = app.get_state(at[1])
            assert exactly(snapshot.values["table"]) == tables[1]
            assert exactly(snapshot.metadata["writes"]["step"]["table"]) == tables[1]
            scramble(snapshot.values)
            scramble(snapshot.metadata)
