"""`InMemoryStore`: items by namespace and key with their times, search by prefix and filter,
and the namespaces LangGraph refuses."""

from __future__ import annotations

import datetime as dt

import pytest

from ttcli import InMemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


def test_an_item_keeps_when_it_was_created_and_updated() -> None:
    clock = Clock()
    store = InMemoryStore(clock=clock)
    store.put(("users", "u1"), "prefs", {"tea": True})
    clock.now += dt.timedelta(hours=1)
    store.put(("users", "u1"), "prefs", {"tea": False})

    item = store.get(("users", "u1"), "prefs")

    assert item is not None
    assert (item.value, item.created_at, item.updated_at) == (
        {"tea": False},
        dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
        dt.datetime(2026, 12, 1, 1, tzinfo=dt.UTC),
    )
    store.put(("users", "u1"), "prefs", None)  # None deletes, as in LangGraph
    assert store.get(("users", "u1"), "prefs") is None


@pytest.mark.parametrize(
    ("wanted", "keys"),
    [({}, ["a", "b", "c"]), ({"n": 2}, ["b"]), ({"n": {"$gte": 2}}, ["b", "c"]),
     ({"n": {"$ne": 2}}, ["a", "c"]), ({"missing": {"$gt": 0}}, [])],
    ids=["all", "equal", "gte", "ne", "absent key"],
)  # fmt: skip
def test_search_by_prefix_and_filter(wanted: dict[str, object], keys: list[str]) -> None:
    store = InMemoryStore()
    for key, n in [("a", 1), ("b", 2), ("c", 3)]:
        store.put(("docs", key), key, {"n": n})
    store.put(("other",), "x", {"n": 2})
    assert [item.key for item in store.search(("docs",), filter=wanted)] == keys
    assert store.list_namespaces(prefix=("docs",)) == [("docs", "a"), ("docs", "b"), ("docs", "c")]


@pytest.mark.parametrize("namespace", [(), ("a", ""), ("a.b",)], ids=["empty", "blank", "dot"])
def test_a_namespace_langgraph_refuses_is_refused(namespace: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="Namespace labels"):
        InMemoryStore().put(namespace, "k", {})
