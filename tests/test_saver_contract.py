"""The saver contract, written once: every backend in `conftest.SAVERS` must pass it."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from decimal import Decimal
from enum import StrEnum
from functools import reduce
from types import MappingProxyType
from typing import Any, cast

import pytest

from ttcli.errors import (
    CheckpointNotFoundError,
    ConfigError,
    InvalidFilterError,
    SerializationError,
    StorageError,
)
from ttcli.savers.base import BaseSaver, Checkpoint
from ttcli.uuid6 import new_id as checkpoint_id


class Text(StrEnum):
    U1 = "u1"


def make_checkpoint(step: int, **values: Any) -> Checkpoint:
    return Checkpoint(
        v=1,
        id=checkpoint_id(step),
        ts="2026-11-30T00:00:00+00:00",
        channel_values=dict(values),
        channel_versions={key: step + 2 for key in values},
        versions_seen={"__input__": {}},
        updated_channels=sorted(values),
    )


def config(thread: str = "t", checkpoint: str | None = None, ns: str = "") -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint:
        configurable["checkpoint_id"] = checkpoint
    return {"configurable": configurable}


def put_chain(
    saver: BaseSaver, thread: str = "t", steps: int = 3, ns: str = "", **extra: Any
) -> list[str]:
    """A chain of checkpoints, step -1 .. steps-2, each the parent of the next."""
    parent: str | None = None
    created = []
    for step in range(-1, steps - 1):
        checkpoint = make_checkpoint(step, n=step)
        metadata = {"source": "input" if step < 0 else "loop", "step": step, "parents": {}, **extra}
        saver.put(config(thread, parent, ns), checkpoint, metadata, checkpoint["channel_versions"])
        parent = checkpoint["id"]
        created.append(parent)
    return created


def listed(saver: BaseSaver, cfg: dict[str, Any] | None, **kwargs: Any) -> list[str]:
    return [t.checkpoint["id"] for t in saver.list(cfg, **kwargs)]


def test_put_then_get_by_id_and_latest(saver: BaseSaver) -> None:
    first, second, third = put_chain(saver)
    latest = saver.get_tuple(config())
    assert latest is not None
    assert latest.checkpoint["id"] == third
    assert latest.checkpoint["channel_values"] == {"n": 1}
    assert latest.parent_config == config("t", second)
    assert latest.config == config("t", third)
    assert latest.metadata == {"source": "loop", "step": 1, "parents": {}}
    by_id = saver.get_tuple(config("t", first))
    assert by_id is not None and by_id.parent_config is None and by_id.metadata["source"] == "input"
    assert saver.get(config("t", second)) == saver.get_tuple(config("t", second)).checkpoint  # type: ignore[union-attr]


def test_get_missing_returns_none(saver: BaseSaver) -> None:
    put_chain(saver)
    assert saver.get_tuple(config("other")) is None
    assert saver.get_tuple(config("t", "1f000000-0000-6000-8000-000000000000")) is None


def test_checkpoint_round_trips_exactly(saver: BaseSaver) -> None:
    checkpoint = make_checkpoint(0, text="héllo", items=[1, 2, {"k": None}], flag=True, num=1.5)
    checkpoint["versions_seen"] = {"__input__": {}, "a": {"branch:to:a": 2}}
    saver.put(
        config(),
        checkpoint,
        {"source": "loop", "step": 0, "parents": {}, "writes": {"a": {"x": 1}}},
        {},
    )
    found = saver.get_tuple(config())
    assert found is not None
    assert found.checkpoint == checkpoint
    assert found.metadata["writes"] == {"a": {"x": 1}}


def test_stored_values_cannot_be_changed_through_returned_objects(saver: BaseSaver) -> None:
    checkpoint = make_checkpoint(0, items=[1])
    saver.put(config(), checkpoint, {"source": "loop", "step": 0, "parents": {}}, {})
    checkpoint["channel_values"]["items"].append("after put")
    found = saver.get_tuple(config())
    assert found is not None
    found.checkpoint["channel_values"]["items"].append("after get")
    assert saver.get_tuple(config()).checkpoint["channel_values"]["items"] == [1]  # type: ignore[union-attr]


def test_list_newest_first_per_thread_and_namespace(saver: BaseSaver) -> None:
    t_ids = put_chain(saver, "t")
    u_ids = put_chain(saver, "u")
    sub_ids = put_chain(saver, "t", ns="child:1")
    assert listed(saver, config("t")) == t_ids[::-1]
    assert listed(saver, config("t", ns="child:1")) == sub_ids[::-1]
    assert listed(saver, None) == sorted(t_ids + u_ids + sub_ids, reverse=True)
    assert listed(saver, config("none")) == []


def test_list_before_limit_and_checkpoint_id(saver: BaseSaver) -> None:
    ids = put_chain(saver, steps=5)
    assert listed(saver, config(), limit=2) == ids[::-1][:2]
    assert listed(saver, config(), before=config("t", ids[3]), limit=2) == [ids[2], ids[1]]
    assert listed(saver, config(), before=config("t", ids[0])) == []
    assert listed(saver, config("t", ids[2])) == [ids[2]]


@pytest.mark.parametrize(
    ("filter_", "expected_steps"),
    [
        ({"source": "loop"}, [1, 0]),
        ({"step": 0}, [0]),
        ({"source": "loop", "step": 99}, []),
        ({"missing": None}, [1, 0, -1]),
        ({"user": "u1"}, [1, 0, -1]),
        ({"user": "u2"}, []),
        ({"nested.deep": 3}, [1, 0, -1]),
        ({"flag": True}, [1, 0, -1]),
        ({"flag": 1}, []),
        ({"inner": {"on": 1}}, []),
        ({"inner": {"on": True}}, [1, 0, -1]),
        ({"nested": {"deep": 3.0}}, [1, 0, -1]),
        ({"pair": {"b": [2, 1.5], "a": 1}}, [1, 0, -1]),
        ({"pair": {"a": 1, "b": [1.5, 2]}}, []),
        ({"pair": {"a": 1}}, []),
        ({"pair.b": [2.0, 1.5]}, [1, 0, -1]),
        ({"user": {"u1"}}, []),
        ({"big": Decimal(2**64 - 1)}, []),
        ({"user": Text.U1}, [1, 0, -1]),
        ({"pair": OrderedDict(b=[2, 1.5], a=1)}, [1, 0, -1]),
        ({"pair": MappingProxyType({"a": 1, "b": [2, 1.5]})}, []),
        ({"pair": {"a": 1, "b": [2, float("nan")]}}, []),
        ({"inner": {1: True}}, []),
        ({"arr.0": 1}, []),
        ({"arr.1": {"x": None}}, []),
        ({"arr.0": None}, [1, 0, -1]),
        ({"arr.1.x": None}, [1, 0, -1]),
        ({"unknown_key": "x"}, []),
        ({"step": 0.0}, [0]),
        ({"step": False}, []),
        ({"source": 1}, []),
        ({"big": 2**64 - 1}, [1, 0, -1]),
        ({"big": 2**63}, []),
        ({"big": 2**64 - 2}, []),
        ({"step": 2**64 - 1}, []),
        ({"step": -(2**63) - 1}, []),
        ({"step": 10**400}, []),
    ],
    ids=[
        "source",
        "step",
        "and-no-match",
        "none-matches-missing",
        "user-key",
        "user-key-other",
        "dotted-nested",
        "bool",
        "bool-is-not-int",
        "nested-bool-is-not-int",
        "nested-bool",
        "nested-float-is-int",
        "map-in-another-key-order",
        "list-in-another-order",
        "map-with-fewer-keys",
        "list-by-dotted-key",
        "not-json",
        "decimal-is-not-json",
        "text-enum-is-text",
        "ordered-dict-is-a-map",
        "mapping-proxy-is-not-json",
        "nan-inside-is-not-json",
        "number-key-is-not-json",
        "dotted-key-does-not-index-a-list",
        "dotted-key-does-not-index-a-list-for-a-map",
        "dotted-key-through-a-list-is-missing",
        "dotted-key-through-a-list-is-missing-deeper",
        "unknown-key-matches-nothing",
        "step-float",
        "step-bool-is-not-int",
        "source-int-is-not-text",
        "beyond-int64",
        "beyond-int64-other",
        "beyond-int64-neighbour",
        "step-beyond-int64",
        "step-below-int64",
        "step-beyond-float",
    ],
)
def test_list_filter(saver: BaseSaver, filter_: dict[str, Any], expected_steps: list[int]) -> None:
    put_chain(
        saver,
        user="u1",
        nested={"deep": 3},
        flag=True,
        big=2**64 - 1,
        inner={"on": True},
        pair={"a": 1, "b": [2, 1.5]},
        arr=[1, {"x": None}],
    )
    found = [t.metadata["step"] for t in saver.list(config(), filter=filter_)]
    assert found == expected_steps


def test_list_filters_on_what_nodes_wrote(saver: BaseSaver) -> None:
    """`writes` holds what each node returned: a filter on it, or on a key inside it, matches
    those values on every saver (the SQL ones store them as values, not in the metadata
    columns), and `limit` counts the checkpoints that match."""
    writes = [None, {"a": {"n": 1}}, {"b": {"n": 2}}, {"a": {"n": 3}, "b": None}, {"a": {"n": 1}}]
    ids: list[str] = []
    for step, written in enumerate(writes):
        checkpoint = make_checkpoint(step, n=step)
        metadata = {"source": "loop", "step": step, "parents": {}, "writes": written}
        saver.put(config("t", ids[-1] if ids else None), checkpoint, metadata, {})
        ids.append(checkpoint["id"])
    cases: list[tuple[dict[str, Any], list[int]]] = [
        ({"writes": {"a": {"n": 1}}}, [4, 1]),
        ({"writes.a.n": 1}, [4, 1]),
        ({"writes.a": {"n": 3}}, [3]),
        ({"writes.b": None}, [4, 3, 1, 0]),
        ({"writes": None}, [0]),
        ({"writes": ["a"]}, []),
        ({"writes.a.n": 1, "step": 1}, [1]),
        ({"writes.a.n": True}, []),
        ({"writes.a": {"n": True}}, []),
        ({"writes": {"a": {"n": 1.0}}}, [4, 1]),
    ]
    for filter_, steps in cases:
        assert [t.metadata["step"] for t in saver.list(config(), filter=filter_)] == steps, filter_
        found = saver.list_metadata(config(), filter=filter_)
        assert [t.metadata["step"] for t in found] == steps, filter_
    assert listed(saver, config(), filter={"writes.a.n": 1}, limit=1) == [ids[4]]
    assert listed(saver, None, filter={"writes.b.n": 2}) == [ids[2]]
    before = config("t", ids[4])
    assert listed(saver, config(), filter={"writes.a.n": 1}, before=before) == [ids[1]]


def test_a_filter_on_what_nodes_wrote_pages_through_a_long_thread(saver: BaseSaver) -> None:
    ids: list[str] = []
    for step in range(450):
        checkpoint = make_checkpoint(step, n=step)
        written = {"a": {"n": 1 if step % 100 == 7 else 0}}
        metadata = {"source": "loop", "step": step, "parents": {}, "writes": written}
        saver.put(config("t", ids[-1] if ids else None), checkpoint, metadata, {})
        ids.append(checkpoint["id"])
    wanted = {"writes.a.n": 1}
    assert [t.metadata["step"] for t in saver.list(config(), filter=wanted)] == [
        407,
        307,
        207,
        107,
        7,
    ]
    assert listed(saver, config(), filter=wanted, limit=3) == [ids[407], ids[307], ids[207]]
    before = config("t", ids[300])
    assert listed(saver, config(), filter=wanted, before=before, limit=2) == [ids[207], ids[107]]
    assert listed(saver, config(), filter=wanted, limit=0) == []


@pytest.mark.parametrize(
    "bad_key",
    ["source') OR 1=1 --", "a b", "$.source", "x;DROP TABLE checkpoints", ""],
    ids=["sql-injection", "space", "json-path", "statement", "empty"],
)
def test_list_rejects_filter_keys_that_are_not_plain_names(saver: BaseSaver, bad_key: str) -> None:
    put_chain(saver)
    with pytest.raises(InvalidFilterError, match="Invalid filter key"):
        list(saver.list(config(), filter={bad_key: "loop"}))


def test_put_writes_are_returned_in_apply_order(saver: BaseSaver) -> None:
    (head,) = put_chain(saver, steps=1)
    at = config("t", head)
    saver.put_writes(at, [("log", ["c"]), ("branch:to:d", None)], "task-c", "~__pregel_pull, c")
    saver.put_writes(at, [("log", ["b"])], "task-b", "~__pregel_pull, b")
    found = saver.get_tuple(at)
    assert found is not None
    assert found.pending_writes == [
        ("task-b", "log", ["b"]),
        ("task-c", "log", ["c"]),
        ("task-c", "branch:to:d", None),
    ]


def test_repeated_normal_writes_are_ignored_and_special_ones_replaced(saver: BaseSaver) -> None:
    (head,) = put_chain(saver, steps=1)
    at = config("t", head)
    saver.put_writes(at, [("log", ["first"])], "task", "p")
    saver.put_writes(at, [("log", ["second"])], "task", "p")
    saver.put_writes(at, [("__error__", "ValueError('one')")], "task", "p")
    saver.put_writes(at, [("__error__", "ValueError('two')")], "task", "p")
    found = saver.get_tuple(at)
    assert found is not None
    assert sorted(found.pending_writes or [], key=repr) == [
        ("task", "__error__", "ValueError('two')"),
        ("task", "log", ["first"]),
    ]


SCALAR_EDGES = [2**64 - 1, -(2**63), 0, True, False, None, -0.0, 1e308]


def test_scalars_at_the_edges_of_msgpack_round_trip_as_values_and_writes(
    saver: BaseSaver,
) -> None:
    values = {f"v{i}": value for i, value in enumerate(SCALAR_EDGES)}
    checkpoint = make_checkpoint(0, **values)
    saver.put(config(), checkpoint, {"source": "loop", "step": 0, "writes": {"a": values}}, {})
    at = config("t", checkpoint["id"])
    saver.put_writes(at, list(values.items()), "task", "p")
    found = saver.get_tuple(at)
    assert found is not None
    for stored in (found.checkpoint["channel_values"], found.metadata["writes"]["a"]):
        assert [(k, type(v), v) for k, v in stored.items()] == [
            (k, type(v), v) for k, v in values.items()
        ]
    assert [(c, type(v), v) for _t, c, v in found.pending_writes or []] == [
        (k, type(v), v) for k, v in values.items()
    ]


@pytest.mark.parametrize("where", ["value", "write"])
def test_an_integer_beyond_64_bits_is_refused_naming_its_channel(
    saver: BaseSaver, where: str
) -> None:
    (head,) = put_chain(saver, steps=1)
    with pytest.raises(
        SerializationError,
        match=r"cannot store \S*big\b.*: the integer 18446744073709551616 is outside",
    ):
        if where == "value":
            checkpoint = make_checkpoint(1, big=2**64)
            saver.put(config("t", head), checkpoint, {"source": "loop", "step": 1}, {"big": 3})
        else:
            saver.put_writes(config("t", head), [("big", 2**64)], "task", "p")


def test_writes_to_a_missing_checkpoint_are_refused(saver: BaseSaver) -> None:
    with pytest.raises(CheckpointNotFoundError):
        saver.put_writes(config("t", "1f000000-0000-6000-8000-000000000000"), [("x", 1)], "task")


def test_has_checkpoint_names_exactly_what_is_stored(saver: BaseSaver) -> None:
    first, second, third = put_chain(saver)
    put_chain(saver, thread="other")
    saver.delete_checkpoints(config(), [second])

    assert saver.has_checkpoint(config(checkpoint=first))
    assert saver.has_checkpoint(config(checkpoint=third))
    assert not saver.has_checkpoint(config(checkpoint=second))  # deleted
    assert not saver.has_checkpoint(config(checkpoint=checkpoint_id(9)))  # never stored
    assert not saver.has_checkpoint(config("other", first))  # another thread's id
    assert not saver.has_checkpoint(config(checkpoint=first, ns="sub"))
    assert not saver.has_checkpoint(config("nobody", first))
    assert not saver.has_checkpoint(config())  # no checkpoint named


def test_a_step_whose_config_names_no_thread_is_refused_before_anything_begins(
    saver: BaseSaver,
) -> None:
    (first,) = put_chain(saver, steps=1)
    no_thread = {"configurable": {"checkpoint_ns": ""}}
    with saver.batch():  # the batch it is refused in goes on
        with pytest.raises(ConfigError):
            saver.put_step(no_thread, [("task", "", [("x", 1)])], None)
        saver.put_writes(config(checkpoint=first), [("y", 2)], "t2")
    assert [w[1:] for w in saver.get_writes(config(checkpoint=first))] == [("", "y", 2)]


def test_delete_thread_removes_only_that_thread(saver: BaseSaver) -> None:
    put_chain(saver, "t")
    put_chain(saver, "t", ns="child:1")
    keep = put_chain(saver, "u")
    saver.delete_thread("t")
    assert saver.get_tuple(config("t")) is None
    assert saver.get_tuple(config("t", ns="child:1")) is None
    assert listed(saver, None) == keep[::-1]


def test_a_thread_deleted_while_listed_yields_none_of_the_thread_after_it(
    saver: BaseSaver,
) -> None:
    """Listing yields each checkpoint in a read of its own: if the thread is deleted
    meanwhile, and a new thread stores checkpoints with the same ids (SQLite may give it
    the deleted thread's key), none of the new thread's is yielded as the listed one's."""
    put_chain(saver, "a", steps=1)  # an older thread: "b" gets the newest key
    ids = put_chain(saver, "b", steps=3)
    listing = saver.list(config("b"))
    assert next(listing).checkpoint["id"] == ids[-1]
    saver.delete_thread("b")
    parent = None
    for step, known_id in enumerate(ids, start=-1):
        checkpoint = make_checkpoint(step, n=100 + step)
        checkpoint["id"] = known_id
        metadata = {"source": "loop", "step": step, "parents": {}}
        saver.put(config("c", parent), checkpoint, metadata, checkpoint["channel_versions"])
        parent = known_id
    for saved in listing:  # none (deleted), or "b"'s as they were (a saver that read ahead)
        assert saved.config["configurable"]["thread_id"] == "b"
        assert saved.checkpoint["channel_values"]["n"] == saved.metadata["step"]


def test_what_the_caller_deletes_while_it_lists_is_never_yielded(saver: BaseSaver) -> None:
    """A saver may read a few checkpoints ahead of the one it yields; the caller's own
    writes between two still count (a prune run from inside a loop over the history)."""
    ids = put_chain(saver, steps=60)
    listing = saver.list(config())
    assert [next(listing).checkpoint["id"] for _ in range(5)] == ids[::-1][:5]
    saver.delete_checkpoints(config(), ids[40:55])
    assert [saved.checkpoint["id"] for saved in listing] == ids[:40][::-1]


def test_a_listing_goes_on_whole_after_the_caller_writes_elsewhere(saver: BaseSaver) -> None:
    ids = put_chain(saver, steps=60)
    listing = saver.list(config())
    head = [next(listing) for _ in range(5)]
    put_chain(saver, "other", steps=2)
    rest = list(listing)
    assert [saved.checkpoint["id"] for saved in head + rest] == ids[::-1]
    assert [saved.checkpoint["channel_values"]["n"] for saved in rest] == list(range(53, -2, -1))


def test_branches_written_in_turns_read_back_as_written(saver: BaseSaver) -> None:
    """Two forks of one checkpoint, written in turns: each checkpoint's ancestors are not
    the checkpoints just before it, whose states are deltas on other parents."""
    (root,) = put_chain(saver, steps=1)
    heads, written, step = {"a": root, "b": root}, {}, 0
    for turn in range(40):
        for branch in ("a", "b"):
            step += 1
            values = {"n": step, "branch": branch, f"turn_{branch}": turn, f"k{turn % 7}": turn}
            checkpoint = make_checkpoint(step, **values)
            source = "fork" if turn == 0 else "loop"
            metadata: dict[str, Any] = {"source": source, "step": step, "parents": {}}
            versions = checkpoint["channel_versions"]
            saver.put(config("t", heads[branch]), checkpoint, metadata, versions)
            written[checkpoint["id"]] = (values, heads[branch])
            heads[branch] = checkpoint["id"]
    listed_back = list(saver.list(config()))
    assert [saved.checkpoint["id"] for saved in listed_back] == [*sorted(written)[::-1], root]
    for saved in [*listed_back[:-1], *(saver.get_tuple(config("t", i)) for i in written)]:
        assert saved is not None
        values, parent = written[saved.checkpoint["id"]]
        assert saved.checkpoint["channel_values"] == values
        assert saved.parent_config == config("t", parent)


def test_a_saver_missing_a_method_fails_at_construction() -> None:
    class Incomplete(BaseSaver):
        def get_tuple(self, config: Any) -> None:
            return None

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


def test_get_writes_keeps_task_paths_in_apply_order(saver: BaseSaver) -> None:
    (head,) = put_chain(saver, steps=1)
    at = config("t", head)
    saver.put_writes(at, [("log", ["c"]), ("__error__", "E")], "task-c", "~p, c")
    saver.put_writes(at, [("log", ["b"])], "task-b", "~p, b")
    assert saver.get_writes(at) == [
        ("task-b", "~p, b", "log", ["b"]),
        ("task-c", "~p, c", "__error__", "E"),
        ("task-c", "~p, c", "log", ["c"]),
    ]
    assert saver.get_writes(config("t", "1f000000-0000-6000-8000-000000000000")) == []


def test_delete_checkpoints_keeps_the_rest_readable(saver: BaseSaver) -> None:
    ids = put_chain(saver, steps=5)
    middle = config("t", ids[2])
    child = config("t", ids[3])
    saver.put_writes(middle, [("log", ["m"])], "task-m", "p")
    saver.put_writes(child, [("log", ["c"])], "task-c", "p")
    before = saver.get_tuple(child)
    saver.delete_checkpoints(config(), [ids[2], "1f000000-0000-6000-8000-000000000000"])
    assert saver.get_tuple(middle) is None
    assert saver.get_tuple(child) == before
    assert listed(saver, config()) == [ids[4], ids[3], ids[1], ids[0]]
    saver.delete_checkpoints(config(), [ids[2]])  # again: nothing to do
    saver.delete_checkpoints(config(), ids)
    assert saver.get_tuple(config()) is None
    assert list(saver.list_threads()) == []


def test_list_threads_by_prefix(saver: BaseSaver) -> None:
    put_chain(saver, "order:1", steps=2)
    latest = put_chain(saver, "order:2", steps=3)[-1]
    put_chain(saver, "order:2", steps=1, ns="sub:1")
    put_chain(saver, "user:1", steps=1)
    found = list(saver.list_threads("order:"))
    assert [(t.thread_id, t.checkpoint_ns, t.checkpoints) for t in found] == [
        ("order:1", "", 2),
        ("order:2", "", 3),
        ("order:2", "sub:1", 1),
    ]
    assert found[1].latest_id == latest
    assert found[1].latest_ts.endswith("+00:00")
    assert [t.thread_id for t in saver.list_threads("order%")] == []
    assert len(list(saver.list_threads())) == 4


def test_thread_info_is_recorded_and_merged(saver: BaseSaver) -> None:
    assert saver.get_thread_info("t") == {}
    saver.set_thread_info("t", {"target": "app.py:graph", "n": 1})
    saver.set_thread_info("t", {"n": 2})
    put_chain(saver, steps=1)
    assert saver.get_thread_info("t") == {"target": "app.py:graph", "n": 2}
    assert saver.get_thread_info("other") == {}
    saver.delete_thread("t")
    assert saver.get_thread_info("t") == {}


def put_one(saver: BaseSaver, parent: str | None, step: int, known_id: str | None = None) -> str:
    checkpoint = make_checkpoint(step, n=step)
    if known_id is not None:
        checkpoint["id"] = known_id
    metadata = {"source": "loop", "step": step, "parents": {}}
    saver.put(config("t", parent), checkpoint, metadata, checkpoint["channel_versions"])
    return checkpoint["id"]


def test_children_of_forks_and_of_a_checkpoint_stored_among_older_ones(saver: BaseSaver) -> None:
    root = put_one(saver, None, -1)
    first = put_one(saver, root, 0)
    saver.put_writes(config("t", first), [("log", ["w"])], "task-w", "p")
    early = checkpoint_id(1)  # made now, stored after a newer checkpoint
    later = put_one(saver, first, 1)  # takes over the parent's pending writes
    written = saver.get_writes(config("t", first))
    assert put_one(saver, first, 1, known_id=early) == early
    fork = put_one(saver, root, 0)
    assert saver.child_ids(config("t", root)) == sorted([first, fork])
    assert saver.child_ids(config("t", first)) == sorted([early, later])
    assert saver.child_ids(config("t", later)) == []
    assert saver.get_writes(config("t", first)) == written == [("task-w", "p", "log", ["w"])]
    assert listed(saver, config()) == [fork, later, early, first, root]
    saver.delete_checkpoints(config(), [first])
    assert saver.child_ids(config("t", root)) == [fork]


@pytest.mark.parametrize("then", ["child", "fork", "read", "nothing", "failure"])
def test_writes_put_in_a_batch_read_the_same_whatever_follows(saver: BaseSaver, then: str) -> None:
    root, head = put_chain(saver, steps=2)
    at = config("t", head)
    saver.put_writes(at, [("log", ["before"])], "task-0", "p")  # already in storage
    expected = [
        ("task-0", "p", "log", ["before"]),
        ("task-1", "p", "log", ["one"]),
        ("task-1", "p", "__error__", "E"),
        ("task-2", "p", "log", ["two"]),
    ]
    try:
        with saver.batch():
            saver.put_writes(at, [("log", ["one"]), ("__error__", "E")], "task-1", "p")
            saver.put_writes(at, [("log", ["two"])], "task-2", "p")
            if then == "child":
                put_one(saver, head, 1)
            elif then == "fork":
                put_one(saver, root, 1)
            elif then == "read":
                assert sorted(saver.get_writes(at)) == sorted(expected)
            elif then == "failure":
                raise RuntimeError("the batch fails")
    except RuntimeError:
        expected = expected[:1]  # a batch is all or nothing: none of it is kept
    assert sorted(saver.get_writes(at)) == sorted(expected)
    assert sorted(w for w in saver.get_tuple(at).pending_writes) == sorted(  # type: ignore[union-attr]
        (task, channel, value) for task, _path, channel, value in expected
    )


def test_writes_put_in_a_batch_stay_with_their_thread(saver: BaseSaver) -> None:
    from ttcli.ops.copy import copy_lineage

    (head,) = put_chain(saver, "a", steps=1)
    copy_lineage(saver, config("a", head), "b")  # the same checkpoint id in thread b
    saver.put_writes(config("b", head), [("log", ["b's"])], "task-b", "p")
    with saver.batch():
        saver.put_writes(config("a", head), [("log", ["a's"])], "task-a", "p")
        child = make_checkpoint(5, n=5)
        saver.put(config("b", head), child, {"source": "loop", "step": 5, "parents": {}}, {})
    assert saver.get_writes(config("a", head)) == [("task-a", "p", "log", ["a's"])]
    assert saver.get_writes(config("b", head)) == [("task-b", "p", "log", ["b's"])]


def test_deleting_a_child_keeps_its_parents_pending_writes(saver: BaseSaver) -> None:
    (head,) = put_chain(saver, steps=1)
    saver.put_writes(config("t", head), [("log", ["kept"])], "task-1", "p")
    child = put_one(saver, head, 1)  # the writes move into the child's row
    before = saver.get_tuple(config("t", head))
    saver.delete_checkpoints(config(), [child])
    assert saver.get_writes(config("t", head)) == [("task-1", "p", "log", ["kept"])]
    assert saver.get_tuple(config("t", head)) == before


def test_copy_thread_copies_every_checkpoint_and_its_writes(saver: BaseSaver) -> None:
    first, second, third = put_chain(saver)
    put_chain(saver, ns="inner", steps=2)
    saver.put_writes(config("t", third), [("n", 7)], "task-1", "path")
    saver.copy_thread("t", "copy")
    saver.copy_thread("t", "copy")  # again: nothing doubles
    for ns in ("", "inner"):
        original = list(saver.list(config("t", ns=ns)))
        copied = list(saver.list(config("copy", ns=ns)))
        assert [(t.checkpoint, t.metadata, t.pending_writes) for t in copied] == [
            (t.checkpoint, t.metadata, t.pending_writes) for t in original
        ]
    assert saver.get_writes(config("copy", third)) == [("task-1", "path", "n", 7)]
    assert listed(saver, config("copy")) == [third, second, first]


def test_prune_keeps_the_latest_or_deletes_the_threads(saver: BaseSaver) -> None:
    put_chain(saver, "a")
    *_, latest_b = put_chain(saver, "b")
    put_chain(saver, "c")
    saver.prune(["b"])
    saver.prune(["c"], strategy="delete")
    assert len(listed(saver, config("a"))) == 3
    assert listed(saver, config("b")) == [latest_b]
    assert listed(saver, config("c")) == []
    with pytest.raises(ValueError, match="unknown prune strategy"):
        saver.prune(["a"], strategy="oldest")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_metadata_that_is_not_json_is_refused_and_nothing_stored(
    saver: BaseSaver, bad: float
) -> None:
    """Filters read metadata as JSON: a NaN stored there would break every filtered list."""
    checkpoint = make_checkpoint(-1, n=1)
    metadata = {"source": "input", "step": -1, "parents": {}, "score": bad}
    with pytest.raises(SerializationError, match="cannot store checkpoint metadata"):
        saver.put(config("t"), checkpoint, metadata, checkpoint["channel_versions"])
    assert saver.get_tuple(config("t")) is None
    assert listed(saver, None, filter={"score": 1}) == []


def test_a_batch_in_which_a_write_failed_stores_nothing_even_if_it_caught_the_error(
    saver: BaseSaver,
) -> None:
    (head,) = put_chain(saver, steps=1)
    saver.set_thread_info("t", {"owner": "a"})
    before = saver.get_tuple(config("t", head))
    with pytest.raises(StorageError, match="in this batch failed: nothing of the batch"):
        with saver.batch():
            saver.put_writes(config("t", head), [("log", ["done"])], "task-1", "p")
            saver.set_thread_info("t", {"owner": "b"})
            try:
                bad = make_checkpoint(1, n=object())
                saver.put(config("t", head), bad, {"source": "loop", "step": 1}, {"n": 3})
            except SerializationError:
                pass  # caught: the batch goes on, but will store nothing
            with pytest.raises(StorageError, match="an earlier write"):
                saver.put_writes(config("t", head), [("log", ["more"])], "task-2", "p")
    assert saver.get_tuple(config("t", head)) == before
    assert saver.get_thread_info("t") == {"owner": "a"}
    assert saver.child_ids(config("t", head)) == []
    assert [t.checkpoints for t in saver.list_threads()] == [1]
    saver.put_writes(config("t", head), [("log", ["after"])], "task-3", "p")  # usable
    assert saver.get_writes(config("t", head)) == [("task-3", "p", "log", ["after"])]


def test_a_durable_batch_stores_its_writes_and_never_nests_in_one_that_is_not(
    saver: BaseSaver,
) -> None:
    """A durable batch's commit decides that its writes are on the disk: inside a batch that
    is not durable, the outer commit would decide, so it is refused (and the outer goes on)."""
    (head,) = put_chain(saver, steps=1)
    with saver.batch(durable=True):
        saver.put_writes(config("t", head), [("log", ["a"])], "task-1", "p")
        with saver.batch(durable=True):
            saver.put_writes(config("t", head), [("log", ["b"])], "task-2", "p")
    with saver.batch():
        with pytest.raises(StorageError, match="a durable batch .*inside one that is not"):
            with saver.batch(durable=True):
                saver.put_writes(config("t", head), [("log", ["never"])], "task-3", "p")
        saver.put_writes(config("t", head), [("log", ["c"])], "task-4", "p")
    assert [write[0] for write in saver.get_writes(config("t", head))] == [
        "task-1",
        "task-2",
        "task-4",
    ]


@pytest.mark.parametrize("delete", ["checkpoints", "thread"])
def test_deletes_in_a_batch_that_fails_are_undone(saver: BaseSaver, delete: str) -> None:
    ids = put_chain(saver, steps=3)
    saver.set_thread_info("t", {"owner": "a"})
    with pytest.raises(RuntimeError), saver.batch():
        if delete == "thread":
            saver.delete_thread("t")
        else:
            saver.delete_checkpoints(config("t"), ids[:2])
        raise RuntimeError("the caller's block fails after the delete")
    assert listed(saver, config("t")) == ids[::-1]
    assert saver.get_thread_info("t") == {"owner": "a"}


def test_metadata_without_a_source_reads_back_without_one(saver: BaseSaver) -> None:
    """LangGraph's DeltaChannel writes a first checkpoint whose metadata is a step alone."""
    checkpoint = make_checkpoint(-2)
    saver.put(config(), checkpoint, {"step": -2}, {})
    found = saver.get_tuple(config("t", checkpoint["id"]))
    assert found is not None and found.metadata == {"step": -2}
    assert [t.metadata for t in saver.list(config(), filter={"step": -2})] == [{"step": -2}]
    empty = make_checkpoint(0)
    saver.put(config("t", checkpoint["id"]), empty, {"source": "", "step": 0}, {})
    for filter_, steps in (({"source": ""}, [0]), ({"source": None}, [-2])):
        assert [t.metadata["step"] for t in saver.list(config(), filter=filter_)] == steps


@pytest.mark.parametrize("which", ["latest", "older"])
def test_a_stored_checkpoint_is_never_replaced(saver: BaseSaver, which: str) -> None:
    """Invariant 2: a put of a stored id again is refused, alone or in a batch (which then
    fails whole), and the stored checkpoint, its writes and the thread read as before."""
    ids = put_chain(saver, steps=3)
    saver.put_writes(config("t", ids[1]), [("n", 5)], "task-1", "p")
    before = [(t.checkpoint, t.metadata, t.pending_writes) for t in saver.list(config())]
    again = dict(make_checkpoint(9, n=99), id=ids[-1] if which == "latest" else ids[1])
    parent = ids[-2] if which == "latest" else ids[0]
    meta = {"source": "update", "step": 9, "parents": {}}
    with pytest.raises(ConfigError, match="is already stored in thread 't'.*never changes"):
        saver.put(config("t", parent), again, meta, {"n": 11})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="is already stored"), saver.batch():
        saver.put_writes(config("t", ids[-1]), [("n", 6)], "task-2", "p")
        saver.put(config("t", parent), again, meta, {"n": 11})  # type: ignore[arg-type]
    assert [(t.checkpoint, t.metadata, t.pending_writes) for t in saver.list(config())] == before


def test_an_id_spelled_otherwise_is_the_same_checkpoint(saver: BaseSaver) -> None:
    """A UUID upper case or braced is one id: found by any spelling, listed lowercase and
    dashed, never stored a second time under another spelling."""
    first, second, third = put_chain(saver, steps=3)
    spellings: list[Callable[[str], str]] = [str.upper, lambda i: "{" + i + "}"]
    for spell in spellings:
        found = saver.get_tuple(config("t", spell(second)))
        assert found is not None and found.checkpoint["id"] == second
        assert listed(saver, config(), before=config("t", spell(third))) == [second, first]
        assert listed(saver, config("t", spell(second))) == [second]
        assert saver.checkpoint_ids(config(), below=spell(third)) == [second, first]
        assert saver.checkpoint_ids(config(), since=spell(second)) == [third, second]
        assert saver.count_checkpoints(config(), below=spell(third)) == 2
        assert saver.neighbour_ids(config(), [spell(second)]) == {first, third}
        with pytest.raises(ConfigError, match="is already stored"):
            again = make_checkpoint(5)
            again["id"] = spell(second)
            saver.put(config("t", first), again, {"source": "loop", "step": 5, "parents": {}}, {})
    upper = make_checkpoint(7, n=7)
    upper["id"] = upper["id"].upper()
    put = saver.put(config("t", third), upper, {"source": "loop", "step": 7, "parents": {}}, {})
    assert put == config("t", upper["id"].lower())
    assert listed(saver, config())[0] == upper["id"].lower()
    saver.put_writes(config("t", upper["id"]), [("n", 8)], "task-1", "p")
    assert [w[3] for w in saver.get_writes(config("t", upper["id"].lower()))] == [8]
    saver.delete_checkpoints(config(), [upper["id"]])
    assert listed(saver, config()) == [third, second, first]


def test_metadata_keys_holding_none_read_back(saver: BaseSaver) -> None:
    """A user's key set to None is data (a reviewer not yet known), not an absent key."""
    metadata = {"source": "input", "step": 0, "parents": {}, "reviewer": None, "a": {"b": None}}
    checkpoint = make_checkpoint(0)
    saver.put(config(), checkpoint, metadata, {})
    found = saver.get_tuple(config("t", checkpoint["id"]))
    assert found is not None and found.metadata == metadata
    for filter_ in ({"reviewer": None}, {"a": {"b": None}}, {"a.b": None}):
        assert [t.metadata for t in saver.list(config(), filter=filter_)] == [metadata], filter_
    assert [t.metadata for t in saver.list(config(), filter={"a": {}})] == []


def test_metadata_nested_past_the_limit_is_refused_and_up_to_it_reads_back(
    saver: BaseSaver,
) -> None:
    """Metadata nested deeper than every reader's JSON can read (SQLite's functions, Python's
    `json`) is refused when stored, not stored to fail each filtered list after."""
    deepest = reduce(lambda v, _: {"a": v}, range(498), cast(Any, {}))  # 500 levels with the top
    checkpoint = make_checkpoint(0)
    saver.put(config(), checkpoint, {"source": "input", "step": 0, "deep": deepest}, {})
    found = [t.metadata["deep"] for t in saver.list(config(), filter={"source": "input"})]
    assert found == [deepest]
    assert [t.checkpoint["id"] for t in saver.list(config(), filter={"deep": deepest})] == [
        checkpoint["id"]
    ]
    for deeper in ({"a": deepest}, [deepest], reduce(lambda v, _: [v], range(5000), cast(Any, []))):
        with pytest.raises(SerializationError, match="nests more than 500 levels"):
            saver.put(config(), make_checkpoint(1), {"source": "loop", "step": 1, "x": deeper}, {})
    assert [t.checkpoint["id"] for t in saver.list(config())] == [checkpoint["id"]]


@pytest.mark.parametrize(
    "metadata",
    [{"source": 3, "step": 0}, {"source": "loop"}, {"source": "loop", "step": 2**63}],
    ids=["source-not-text", "no-step", "step-beyond-64-bits"],
)
def test_metadata_without_a_storable_step_or_source_is_refused(
    saver: BaseSaver, metadata: dict[str, Any]
) -> None:
    with pytest.raises(SerializationError, match="needs an integer 'step'"):
        saver.put(config(), make_checkpoint(0), metadata, {})
    assert saver.get_tuple(config()) is None


@pytest.mark.parametrize("writes", ["plan", ["plan"], 5], ids=["text", "list", "number"])
def test_metadata_whose_writes_map_no_nodes_is_refused(saver: BaseSaver, writes: Any) -> None:
    """`writes` maps each node to what it returned (or is None): anything else is refused on
    every saver, not stored as nothing by some."""
    metadata = {"source": "loop", "step": 0, "parents": {}, "writes": writes}
    with pytest.raises(SerializationError, match="'writes' maps each node"):
        saver.put(config(), make_checkpoint(0), metadata, {})
    assert saver.get_tuple(config()) is None
