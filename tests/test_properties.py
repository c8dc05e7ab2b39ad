"""Properties (hypothesis): random graphs driven through random sequences of invoke,
update_state, replay, fork and prune on a SQLite file keep the history invariants, and
every storable value round-trips through the serialiser.

Invariants checked after every operation:
- history is newest first (ids strictly decrease), and `get_state` is its head;
- every parent exists in the thread, unless a prune deleted it;
- `list_threads` counts what `list` returns;
- a checkpoint's children (`child_ids`) are exactly the listed checkpoints naming it as parent;
- a blob's base is always an older blob;
- no checkpoint changes once written (forks and updates leave the old branch as it was),
  and only prune makes one disappear.
"""

from __future__ import annotations

import datetime as dt
import operator
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ttcli import END, START, StateGraph
from ttcli.configs import CheckpointRef
from ttcli.ops.fork import fork
from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
from ttcli.runtime.compiled import CompiledStateGraph
from ttcli.savers import serde
from ttcli.savers.base import BaseSaver
from ttcli.savers.sqlite import SqliteSaver
from ttcli.uuid6 import bytes_text

THREADS = ("a", "b")


class State(TypedDict):
    x: Annotated[int, operator.add]  # parallel nodes both add to it
    log: Annotated[list[str], operator.add]


def random_graph(stages: list[int]) -> StateGraph:
    """Stages run one after another; a stage of two nodes runs them in parallel."""
    builder = StateGraph(State)
    previous = [START]
    for number, width in enumerate(stages):
        names = [f"n{number}{side}" for side in "lr"[:width]]
        for name in names:
            builder.add_node(name, _node(name, number + 1))
            for before in previous:
                builder.add_edge(before, name)
        previous = names
    for before in previous:
        builder.add_edge(before, END)
    return builder


def _node(name: str, amount: int) -> Any:
    return lambda state: {"x": amount, "log": [name]}


operations = st.lists(
    st.one_of(
        st.tuples(st.just("invoke"), st.sampled_from(THREADS), st.integers(0, 9)),
        st.tuples(st.just("update"), st.sampled_from(THREADS), st.integers(0, 50)),
        st.tuples(st.just("replay"), st.sampled_from(THREADS), st.integers(0, 50)),
        st.tuples(st.just("fork"), st.sampled_from(THREADS), st.integers(0, 50)),
        st.tuples(st.just("prune"), st.sampled_from(THREADS), st.integers(0, 4)),
    ),
    min_size=1,
    max_size=12,
)


@dataclass
class Model:
    """What the file must still hold: each checkpoint as first read, and what prune took."""

    seen: dict[tuple[str, str], Any] = field(default_factory=dict)
    pruned: set[tuple[str, str]] = field(default_factory=set)


def config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    return CheckpointRef(thread).at(checkpoint_id).to_config()


def pick(saver: BaseSaver, thread: str, index: int) -> Any:
    """One of the thread's checkpoints, or None if it has none."""
    history = list(saver.list(config(thread)))
    return history[index % len(history)] if history else None


def apply(op: tuple[str, str, int], graph: CompiledStateGraph, saver: BaseSaver) -> set[Any]:
    """Run one operation; returns the (thread, id) pairs it deleted."""
    kind, thread, number = op
    if kind == "invoke":
        graph.invoke({"x": number, "log": []}, config(thread))
        return set()
    if kind == "prune":
        # keep the newest `number` checkpoints; ids are time-ordered, so the future cutoff
        # selects every other one
        policy = PrunePolicy(
            older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1),
            keep_last=number,
            thread=thread,
        )
        plans = plan_prune(saver, policy)
        doomed = {
            (thread, i)
            for plan in plans
            for i in saver.checkpoint_ids(config(thread), below=plan.below)
        }
        assert len(doomed) == sum(plan.count for plan in plans)
        execute_prune(saver, plans)
        return doomed
    saved = pick(saver, thread, number)
    if saved is None:
        return set()
    if kind == "update":
        nodes = sorted(name for name in graph.nodes if name != START)
        graph.update_state(saved.config, {"x": number}, as_node=nodes[number % len(nodes)])
    elif kind == "replay":
        graph.invoke(None, saved.config)
    else:
        fork(saver, saved)
    return set()


def check(saver: SqliteSaver, graph: CompiledStateGraph, model: Model) -> None:
    present: dict[tuple[str, str], Any] = {}
    listed = {t.thread_id: t.checkpoints for t in saver.list_threads()}
    for thread in THREADS:
        history = list(saver.list(config(thread)))
        assert listed.get(thread, 0) == len(history)  # the kept count matches the rows
        ids = [saved.checkpoint["id"] for saved in history]
        assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
        if history:
            head = graph.get_state(config(thread))
            assert head.config["configurable"]["checkpoint_id"] == ids[0]
        for saved in history:
            key = (thread, saved.checkpoint["id"])
            parent = saved.parent_config
            if parent is not None:
                parent_key = (thread, parent["configurable"]["checkpoint_id"])
                assert parent_key in model.pruned or parent_key[1] in ids
            present[key] = (saved.checkpoint, saved.metadata, parent)
        children: dict[str, list[str]] = {}
        for saved in history[::-1]:
            if saved.parent_config is not None:
                parent_id = saved.parent_config["configurable"]["checkpoint_id"]
                children.setdefault(parent_id, []).append(saved.checkpoint["id"])
        for saved in history:  # found by index, as the rows say
            assert saver.child_ids(saved.config) == children.get(saved.checkpoint["id"], [])
    # the invariants `ttcli verify` checks hold (a blob points only at older ones, a child
    # sorts after its parent, the kept counts are right)
    assert saver.integrity_problems() == []
    for key, content in model.seen.items():
        if key in model.pruned:
            assert key not in present
        else:
            assert present[key] == content  # never changed, never lost
    model.seen.update(present)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(stages=st.lists(st.integers(1, 2), min_size=1, max_size=3), ops=operations)
def test_history_invariants_hold_under_random_operations(
    stages: list[int], ops: list[tuple[str, str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        with SqliteSaver.from_conn_string(Path(folder) / "prop.db") as saver:
            graph = random_graph(stages).compile(checkpointer=saver)
            model = Model()
            for op in ops:
                model.pruned |= apply(op, graph, saver)
                check(saver, graph, model)


# -- serde

INTS = st.integers(-(2**63), 2**64 - 1)  # what msgpack stores; beyond is a SerializationError


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        INTS,
        st.floats(allow_nan=False),
        st.text(),
        st.binary(),
        st.datetimes(timezones=st.sampled_from([None, dt.UTC])),
        st.dates(),
        st.times(),
        st.timedeltas(),
        st.uuids(),
        st.decimals(allow_nan=False, allow_infinity=False),
    )


values = st.recursive(
    _scalars(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
        st.frozensets(INTS, max_size=4),
        st.sets(st.text(max_size=4), max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_every_storable_value_round_trips(value: Any) -> None:
    back = serde.loads(serde.dumps(value))
    assert back == value
    assert _types(back) == _types(value)


def _types(value: Any) -> Any:
    """The shape of a value with the type of every part, so 1 and 1.0 or a list and a tuple
    do not pass for each other."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return (type(value), [_types(v) for v in value])
    return type(value)


@given(data=st.binary(min_size=16, max_size=16))
def test_an_id_read_as_bytes_reads_as_uuid_writes_it(data: bytes) -> None:
    # every id a listing or a read hands out is made by bytes_text, from stored bytes
    assert bytes_text(data) == str(uuid.UUID(bytes=data))
